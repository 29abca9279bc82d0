import type {
  ApprovalRequestParams,
  ApprovalResolvedParams,
  ApprovalUpdatedParams,
} from '../msp/protocol.js';
import type { ApprovalRecord, Phase } from '../store/record.js';
import { isTerminal } from '../store/record.js';
import { requiredCapabilities } from './capabilities.js';
import { intakeWith, newIntake } from './intake/intakeReport.js';
import { takeAmendmentRule, takeQuestion, takeRequest } from './intake/takeRequest.js';

// Pure functions from (record, event) to the next record; undefined means "nothing changed".
// The store applies them under compare-and-set, so they may run more than once.

export interface NewRecordContext {
  hostId: string;
  incarnation: string;
  channel: string;
  sandboxMode: string;
  phase: Phase;
  now: Date;
  sessionTitle?: string;
}

// Host text reaches a record only through intake (intake/takeRequest.ts): masked and bounded.
// Identifiers are copied from the params as they are.

export function newRecord(params: ApprovalRequestParams, ctx: NewRecordContext): ApprovalRecord {
  const now = ctx.now.toISOString();
  const taken = takeRequest(params, ctx.sessionTitle);
  return {
    approvalId: params.approvalId,
    hostId: ctx.hostId,
    incarnation: ctx.incarnation,
    sessionId: params.sessionId,
    sessionTitle: taken.sessionTitle,
    turnId: params.turnId,
    itemId: params.itemId,
    toolCallId: params.toolCallId,
    caller: `session:${params.sessionId}`,
    tool: taken.tool,
    title: taken.title,
    rawArgs: taken.rawArgs,
    subject: taken.subject,
    requiredCapabilities: requiredCapabilities(taken.subject, taken.tool),
    sandboxMode: ctx.sandboxMode,
    reason: taken.reason,
    reviewerReason: taken.reviewerReason,
    protectedWrite: params.protectedWrite,
    judgeEscalated: params.judgeEscalated,
    subagentOrigin: taken.subagentOrigin,
    cuaCardFacts: taken.cuaCardFacts,
    currentRequirementId: params.currentRequirementId,
    availableChoices: taken.availableChoices,
    intake: newIntake(taken.reports),
    phase: ctx.phase,
    slack: { channel: ctx.channel },
    openedAt: now,
    updatedAt: now,
    version: 1,
  };
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** A click in flight keeps the card in `deciding` while its stage is still the current one. */
function phaseAfterRefresh(record: ApprovalRecord, sourceIndex: number): Phase {
  return record.claim && record.claim.sourceIndex === sourceIndex ? 'deciding' : 'pending';
}

/**
 * approval/request, approval/requested or a listPending entry for an approval we may know.
 * One question per (approvalId, currentRequirementId): a redelivery of the same question changes
 * nothing, so the card is not touched.
 */
export function reopened(params: ApprovalRequestParams, incarnation: string, phase: 'pending' | 'reviewing') {
  // Taken once, outside the mutation: compare-and-set may run it again.
  const question = takeQuestion(params);
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (record.phase === 'resolved') return undefined;
    const sourceIndex = params.currentRequirementId.sourceIndex;
    const nextPhase = phase === 'reviewing' ? 'reviewing' : phaseAfterRefresh(record, sourceIndex);
    const revived = isTerminal(record);
    const next: ApprovalRecord = {
      ...record,
      incarnation,
      subject: question.subject,
      currentRequirementId: params.currentRequirementId,
      availableChoices: question.availableChoices,
      judgeEscalated: params.judgeEscalated,
      protectedWrite: params.protectedWrite,
      reviewerReason: question.reviewerReason ?? record.reviewerReason,
      cuaCardFacts: question.cuaCardFacts ?? record.cuaCardFacts,
      requiredCapabilities: requiredCapabilities(question.subject, record.tool),
      intake: intakeWith(record.intake, question.reports),
      phase: nextPhase,
      claim: nextPhase === 'deciding' && !revived ? record.claim : undefined,
      supersededNote: undefined,
    };
    if (
      !revived &&
      record.incarnation === incarnation &&
      record.phase === next.phase &&
      sameJson(record.currentRequirementId, next.currentRequirementId) &&
      sameJson(record.availableChoices, next.availableChoices) &&
      sameJson(record.subject, next.subject) &&
      record.judgeEscalated === next.judgeEscalated
    ) {
      return undefined;
    }
    return next;
  };
}

export function updated(params: ApprovalUpdatedParams) {
  // An update replaces the subject and the choices only; the reasons stay as they were.
  const { subject, currentRequirementId, availableChoices } = params;
  const question = takeQuestion({ subject, currentRequirementId, availableChoices });
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (isTerminal(record)) return undefined;
    const kind = params.change.kind;
    const sourceIndex = params.currentRequirementId.sourceIndex;
    let phase: Phase = phaseAfterRefresh(record, sourceIndex);
    if (kind === 'reviewStarted') phase = 'reviewing';
    // A restart recovery under the same approvalId re-derives the question: an earlier click
    // is evidence, not authority, so it is never carried over.
    const dropClaim = kind === 'restartRecovered' || phase !== 'deciding';
    return {
      ...record,
      subject: question.subject,
      currentRequirementId: params.currentRequirementId,
      availableChoices: question.availableChoices,
      requiredCapabilities: requiredCapabilities(question.subject, record.tool),
      intake: intakeWith(record.intake, question.reports),
      phase: kind === 'restartRecovered' && phase === 'deciding' ? 'pending' : phase,
      claim: dropClaim ? undefined : record.claim,
    };
  };
}

/**
 * approval/resolved. A host that restarts closes every old pending identity as an `abort` with
 * no deciding command; when that lands on an approval asked by an earlier host process, it is a
 * supersession, not somebody's rejection.
 */
export function resolved(params: ApprovalResolvedParams, incarnation: string, now: Date) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (isTerminal(record)) return undefined;
    const closedByRecovery =
      params.decision === 'abort' && !params.decidedByCommandId && record.incarnation !== incarnation;
    if (closedByRecovery) return superseded('The agent host restarted and closed this request.')(record);
    const ours =
      record.claim && params.decidedByCommandId === record.claim.commandId ? record.claim : undefined;
    const rule = params.amendment ? takeAmendmentRule(params.amendment.rulePreview) : undefined;
    return {
      ...record,
      phase: 'resolved',
      intake: rule ? intakeWith(record.intake, { amendment: rule.report }) : record.intake,
      resolution: {
        decision: params.decision,
        resolvedBy: params.resolvedBy,
        policyResult: params.policyResult,
        amendment:
          params.amendment && rule
            ? { durability: params.amendment.durability, rulePreview: rule.rulePreview }
            : undefined,
        decidedAt: params.decidedAt ?? now.toISOString(),
        slackUserId: ours?.userId,
        feedback: ours?.feedback,
      },
    };
  };
}

/** The host answered approvalAlreadyResolved: record the winner it names, if we lack one. */
export function resolvedElsewhere(decision: string, resolvedBy: string, now: Date) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (isTerminal(record)) return undefined;
    return {
      ...record,
      phase: 'resolved',
      claim: undefined,
      resolution: { decision, resolvedBy, decidedAt: now.toISOString() },
    };
  };
}

export function superseded(note: string) {
  return (record: ApprovalRecord): ApprovalRecord | undefined =>
    isTerminal(record)
      ? undefined
      : { ...record, phase: 'superseded', claim: undefined, supersededNote: note };
}

export function orphaned(record: ApprovalRecord): ApprovalRecord | undefined {
  return isTerminal(record) ? undefined : { ...record, phase: 'orphaned', claim: undefined };
}

/**
 * A click took the stage. Checked again here, under compare-and-set, because the question may
 * have moved since the click was checked: a button pressed for one stage must never decide
 * another.
 */
export function claimed(claim: NonNullable<ApprovalRecord['claim']>) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (record.phase !== 'pending') return undefined;
    if (record.currentRequirementId.sourceIndex !== claim.sourceIndex) return undefined;
    if (!record.availableChoices.some((choice) => choice.choiceId === claim.choiceId)) return undefined;
    return { ...record, phase: 'deciding', claim };
  };
}

/** Our decision was refused or abandoned: give the question back to the humans. */
export function unclaimed(commandId: string) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (isTerminal(record) || record.claim?.commandId !== commandId) return undefined;
    return { ...record, phase: record.phase === 'deciding' ? 'pending' : record.phase, claim: undefined };
  };
}
