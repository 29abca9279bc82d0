import type { KnownBlock } from '@slack/types';
import type { CuaCardFacts } from '../msp/protocol.js';
import { toJson } from '../util/toJson.js';
import { plainSection, section } from './blocks.js';
import type { CardBudget } from './budget.js';
import { inlineCode, quote } from './escape.js';
import { fitLines } from './fitLines.js';
import { clipProse, truncateProse } from './prose.js';

// Step and data-row fields are not documented (msp-approvals.md §6.12): show a step's own words
// when it has them, else the whole value as JSON; never guess at meaning.

const STEP_TEXT_FIELDS = ['text', 'summary', 'description'] as const;

function stepText(step: unknown): string {
  if (typeof step === 'string') return step;
  if (typeof step === 'object' && step !== null) {
    const fields = step as Record<string, unknown>;
    for (const key of STEP_TEXT_FIELDS) {
      const value = fields[key];
      if (typeof value === 'string' && value !== '') return value;
    }
  }
  return toJson(step);
}

/**
 * A row's JSON is the page's own text: shown as inline code, where Slack draws no bold, emoji or
 * strike of the page's, and no backtick of the page's opens a code span or block across rows.
 */
function dataRow(row: unknown, max: number): string {
  if (typeof row === 'object' && row !== null && !Array.isArray(row)) {
    const { kind, ...rest } = row as Record<string, unknown>;
    const label = typeof kind === 'string' ? clipProse(kind, 40) : 'data';
    const body = Object.keys(rest).length > 0 ? `: ${inlineCode(toJson(rest), max)}` : '';
    return `• ${label}${body}`;
  }
  return `• data: ${inlineCode(toJson(row), max)}`;
}

/** Page host, window title (the page controls it: quoted plain text), steps and data rows. */
export function renderCuaFacts(facts: CuaCardFacts, budget: CardBudget): KnownBlock[] {
  const blocks: KnownBlock[] = [];
  if (facts.page) {
    const { host, hostAscii } = facts.page;
    const ascii = hostAscii && hostAscii !== host ? ` (${inlineCode(hostAscii, budget.field)})` : '';
    blocks.push(section(`*Page:* ${inlineCode(host, budget.field)}${ascii}`));
  }
  if (facts.windowTitle !== undefined && facts.windowTitle !== '') {
    blocks.push(plainSection(`Window title: ${quote(facts.windowTitle, budget.windowTitle)}`));
  }
  const steps = facts.steps ?? [];
  const data = facts.data ?? [];
  const share = steps.length > 0 && data.length > 0 ? Math.floor(budget.cua / 2) : budget.cua;
  if (steps.length > 0) {
    const line = (i: number) => `Step ${i + 1}: ${truncateProse(stepText(steps[i]), budget.cuaLine)}`;
    blocks.push(section(`*Steps*\n${fitLines(steps.length, line, share, ['step', 'steps']).join('\n')}`));
  }
  if (data.length > 0) {
    const line = (i: number) => dataRow(data[i], budget.cuaLine);
    const shown = fitLines(data.length, line, share, ['data row', 'data rows']);
    blocks.push(section(`*Data it would send*\n${shown.join('\n')}`));
  }
  return blocks;
}
