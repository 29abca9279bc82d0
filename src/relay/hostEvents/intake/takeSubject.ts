import type { ApprovalStage, ApprovalSubject } from '../../../msp/protocol.js';
import { MAX_LABEL_CHARS, MAX_SHELL_STAGES, MAX_SUBJECT_CHARS, MAX_SUBJECT_STRING_CHARS } from './limits.js';
import { type FieldTaker, PartIntake, type PartReport } from './partIntake.js';

/**
 * Which stages to keep of a long pipeline, in order: the first ones, and always the one being
 * decided (it is what the buttons answer).
 */
function keptStageIndexes(stages: readonly ApprovalStage[], currentIndex: number): number[] {
  const all = stages.map((_, i) => i);
  if (stages.length <= MAX_SHELL_STAGES) return all;
  const current = stages.findIndex((stage) => stage.requirementId.sourceIndex === currentIndex);
  if (current < MAX_SHELL_STAGES) return all.slice(0, MAX_SHELL_STAGES);
  return [...all.slice(0, MAX_SHELL_STAGES - 1), current];
}

function takeStage(stage: ApprovalStage, part: PartIntake): ApprovalStage {
  const text: FieldTaker = (value) => part.text(value as string, MAX_SUBJECT_STRING_CHARS);
  const label: FieldTaker = (value) => part.text(value as string, MAX_LABEL_CHARS);
  const strings: FieldTaker = (value) => part.strings(value as string[], MAX_SUBJECT_STRING_CHARS);
  const keep: FieldTaker = (value) => part.verbatim(value);
  return part.shaped(stage, {
    requirementId: keep,
    position: keep,
    totalStages: keep,
    argvComplete: keep,
    argv: strings,
    resolution: (value) =>
      part.shaped(value as Record<string, unknown>, { kind: label, diagnostic: text, argvPrefix: strings }),
    suggestedPrefix: (value) =>
      part.shaped(value as Record<string, unknown>, { argvPrefix: strings, label: text }),
  }) as ApprovalStage;
}

/** Shell stages within the subject's budget, the one being decided taken first. */
function takeStages(
  stages: readonly ApprovalStage[],
  currentIndex: number,
  part: PartIntake,
): ApprovalStage[] {
  const kept = keptStageIndexes(stages, currentIndex);
  part.stagesOmitted = stages.length - kept.length;
  const first = kept.filter((i) => stages[i]!.requirementId.sourceIndex === currentIndex);
  const taken = new Map<number, ApprovalStage>();
  for (const i of [...first, ...kept.filter((i) => !first.includes(i))])
    taken.set(i, takeStage(stages[i]!, part));
  return kept.map((i) => taken.get(i)!);
}

/**
 * The subject with every string masked and the whole cut to MAX_SUBJECT_CHARS. The stages'
 * requirement ids, positions and flags are kept as sent. Its `kind` is taken as a label: a kind
 * this bot knows is a short word that holds no secret, so it stays as sent; an unknown one is
 * shown on the card, so it is masked like any text. `currentIndex` is the sourceIndex being
 * decided.
 */
export function takeSubject(
  subject: ApprovalSubject,
  currentIndex: number,
): { subject: ApprovalSubject; report: PartReport } {
  const part = new PartIntake(MAX_SUBJECT_CHARS);
  const text: FieldTaker = (value) => part.text(value as string, MAX_SUBJECT_STRING_CHARS);
  const keep: FieldTaker = (value) => part.verbatim(value);
  const label: FieldTaker = (value) => part.text(value as string, MAX_LABEL_CHARS);
  const taken = part.shaped(subject, {
    kind: label,
    stages: (value) => takeStages(value as ApprovalStage[], currentIndex, part),
    command: text,
    workspaceRoot: text,
    toolName: text,
    path: text,
    access: text,
    host: text,
    port: keep,
    protocol: text,
    target: text,
    origin: (value) => part.shaped(value as Record<string, unknown>, { kind: label }),
    holder: (value) => part.json(value),
  });
  return { subject: taken as ApprovalSubject, report: part.report() };
}
