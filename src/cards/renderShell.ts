import type { KnownBlock } from '@slack/types';
import type { ApprovalStage, ApprovalSubject } from '../msp/protocol.js';
import { section } from './blocks.js';
import type { CardBudget } from './budget.js';
import { clip, codeBlock, inlineCode } from './escape.js';
import { fitLines } from './fitLines.js';

type StageResolution = ApprovalStage['resolution'];

// Satisfied stages stay on the card so a reviewer sees the whole pipeline and how far it got
// (msp-approvals.md §9); the host names why each was allowed.
function describeResolution(resolution: StageResolution, max: number): string {
  const kind = clip(resolution.kind, 40);
  if (resolution.kind === 'policyAllow' && resolution.diagnostic) {
    return `${kind}: ${clip(resolution.diagnostic, max)}`;
  }
  if (resolution.kind === 'policyAmendment' && resolution.argvPrefix) {
    return `${kind}: ${inlineCode(resolution.argvPrefix.join(' '), max)}`;
  }
  return kind;
}

function stageLine(stage: ApprovalStage, isCurrent: boolean, max: number): string {
  const mark = isCurrent ? '▶' : stage.resolution.kind === 'unresolved' ? '○' : '✓';
  const lead = `${mark} ${stage.position}/${stage.totalStages} `;
  let tail = '';
  if (isCurrent) tail = ' ← *decide this one*';
  else if (stage.resolution.kind !== 'unresolved') {
    tail = ` (${describeResolution(stage.resolution, Math.floor(max / 3))})`;
  }
  if (stage.argvComplete === false) tail += ' _(not fully parsed)_';
  const room = Math.max(24, max - lead.length - tail.length);
  return `${lead}${inlineCode(stage.argv.join(' '), room)}${tail}`;
}

/**
 * The full command and every stage, the one being decided marked ▶ and satisfied ones ✓.
 * `currentIndex` is the sourceIndex being decided, or undefined once nothing is.
 */
export function renderShell(
  subject: ApprovalSubject,
  currentIndex: number | undefined,
  budget: CardBudget,
): KnownBlock[] {
  const blocks: KnownBlock[] = [];
  if (subject.command !== undefined) {
    blocks.push(section(`*Command*\n${codeBlock(subject.command, budget.command)}`));
  }
  const stages = subject.stages ?? [];
  if (stages.length > 0) {
    const current = stages.findIndex((s) => s.requirementId.sourceIndex === currentIndex);
    const line = (i: number) => stageLine(stages[i]!, i === current, budget.stageLine);
    const keep = current >= 0 ? current : undefined;
    const shown = fitLines(stages.length, line, budget.stages, ['stage', 'stages'], keep);
    blocks.push(section(`*Stages* (${stages.length})\n${shown.join('\n')}`));
  }
  return blocks;
}
