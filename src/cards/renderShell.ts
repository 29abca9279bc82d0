import type { KnownBlock } from '@slack/types';
import { argvText } from '../domain/argvText.js';
import type { ApprovalStage, ApprovalSubject } from '../msp/protocol.js';
import { section } from './blocks.js';
import type { CardBudget } from './budget.js';
import { codeBlock, codeBlockFits, inlineCode, inlineCodeFits } from './escape.js';
import { fitLines } from './fitLines.js';
import { clipProse } from './prose.js';

type StageResolution = ApprovalStage['resolution'];

// Satisfied stages stay on the card so a reviewer sees the whole pipeline and how far it got
// (msp-approvals.md §9); the host names why each was allowed.
function describeResolution(resolution: StageResolution, max: number): string {
  const kind = clipProse(resolution.kind, 40);
  if (resolution.kind === 'policyAllow' && resolution.diagnostic) {
    return `${kind}: ${clipProse(resolution.diagnostic, max)}`;
  }
  if (resolution.kind === 'policyAmendment' && resolution.argvPrefix) {
    return `${kind}: ${inlineCode(argvText(resolution.argvPrefix), max)}`;
  }
  return kind;
}

function stageLine(stage: ApprovalStage, isCurrent: boolean, max: number): { line: string; cut: boolean } {
  const mark = isCurrent ? '▶' : stage.resolution.kind === 'unresolved' ? '○' : '✓';
  const lead = `${mark} ${stage.position}/${stage.totalStages} `;
  let tail = '';
  if (isCurrent) tail = ' ← *decide this one*';
  else if (stage.resolution.kind !== 'unresolved') {
    tail = ` (${describeResolution(stage.resolution, Math.floor(max / 3))})`;
  }
  if (stage.argvComplete === false) tail += ' _(not fully parsed)_';
  const room = Math.max(24, max - lead.length - tail.length);
  // Quoted as a grant writes them: a word holding a space or a line break stays one word.
  const argv = argvText(stage.argv);
  return { line: `${lead}${inlineCode(argv, room)}${tail}`, cut: !inlineCodeFits(argv, room) };
}

export interface RenderedShell {
  blocks: KnownBlock[];
  /** The command or a stage shows less than the subject holds. */
  shortened: boolean;
}

/**
 * The full command and every stage, the one being decided marked ▶ and satisfied ones ✓.
 * `currentIndex` is the sourceIndex being decided, or undefined once nothing is.
 */
export function renderShell(
  subject: ApprovalSubject,
  currentIndex: number | undefined,
  budget: CardBudget,
): RenderedShell {
  const blocks: KnownBlock[] = [];
  let shortened = false;
  if (subject.command !== undefined) {
    blocks.push(section(`*Command*\n${codeBlock(subject.command, budget.command)}`));
    shortened = !codeBlockFits(subject.command, budget.command);
  }
  const stages = subject.stages ?? [];
  if (stages.length > 0) {
    const current = stages.findIndex((s) => s.requirementId.sourceIndex === currentIndex);
    const lines = new Map<number, string>();
    const line = (i: number) => {
      const rendered = stageLine(stages[i]!, i === current, budget.stageLine);
      if (rendered.cut) shortened = true;
      lines.set(i, rendered.line);
      return rendered.line;
    };
    const keep = current >= 0 ? current : undefined;
    const shown = fitLines(stages.length, line, budget.stages, ['stage', 'stages'], keep);
    // Stages left out are named in a note line in their place.
    if (shown.length !== stages.length || shown.some((l, i) => l !== lines.get(i))) shortened = true;
    blocks.push(section(`*Stages* (${stages.length})\n${shown.join('\n')}`));
  }
  return { blocks, shortened };
}
