import { isDeepStrictEqual } from 'node:util';
import { askedOtherwise, pressedDecision, pressedScope, ruleAsPressed } from '../../domain/claimCredit.js';
import { stageCapabilities } from '../../domain/grants/capabilities.js';
import type {
  ApprovalRecord,
  Claim,
  Escalation,
  FiredStep,
  Phase,
  RiskMark,
  StageDecision,
  Vote,
} from '../../domain/record.js';
import { isTerminal } from '../../domain/record.js';
import type {
  ApprovalRequestParams,
  ApprovalResolvedParams,
  ApprovalUpdatedParams,
} from '../../msp/protocol.js';
import { intakeWith, newIntake } from '../hostEvents/intake/intakeReport.js';
import type { PartReport } from '../hostEvents/intake/partIntake.js';
import { fullTextFields } from '../hostEvents/intake/takeFullText.js';
import {
  argsSha256AsSent,
  type TakenArgs,
  type TakenRequest,
  takeArgs,
  takeNote,
  takeQuestion,
  takeRequest,
} from '../hostEvents/intake/takeRequest.js';

// Pure functions from (record, event) to the next record; undefined means "nothing changed".
// The store applies them under compare-and-set, so they may run more than once.

export interface NewRecordContext {
  hostId: string;
  incarnation: string;
  channel: string;
  /** The route that chose the channel. */
  route: string;
  /** That route's quorum, when more than 1. */
  quorum?: number;
  sandboxMode: string;
  /** Whom a remembered grant is bound to (routes[].grants.caller): `session:…`, `user:…`, `host:…`. */
  caller: string;
  phase: 'pending' | 'reviewing';
  /** Another client holds the session: the card starts without buttons. */
  heldElsewhere?: boolean;
  now: Date;
  sessionTitle?: string;
  /** What was done to `sessionTitle` before (knownSessions.ts takes it in when the host says it). */
  sessionTitleIntake?: PartReport;
  /** Risk rules the request matched. */
  risks?: RiskMark[];
}

// Host text reaches a record only through intake (intake/takeRequest.ts): masked and bounded.
// Identifiers are copied from the params as they are.

export function newRecord(params: ApprovalRequestParams, ctx: NewRecordContext): ApprovalRecord {
  return recordOf(params, ctx, takeRequest(params, ctx.sessionTitle, ctx.sessionTitleIntake));
}

/** A new record, and what is kept beside it for "View full". */
export interface OpenedRecord {
  record: ApprovalRecord;
  /** fullTextFields: undefined when intake cut nothing, as for every ordinary request. */
  fullText: Record<string, string> | undefined;
}

/**
 * newRecord, with its full text: a request whose arguments intake cut has them masked once, for
 * their hash, and that masking makes their full text too (up to 256 KB masked again cost about
 * 2 ms more on the event loop for a 500 KB request; docs/performance.md).
 */
export function openRecord(params: ApprovalRequestParams, ctx: NewRecordContext): OpenedRecord {
  const taken = takeRequest(params, ctx.sessionTitle, ctx.sessionTitleIntake);
  const record = recordOf(params, ctx, taken);
  const { subject, rawArgs } = params;
  return { record, fullText: fullTextFields(record, { subject, rawArgs, maskedArgs: taken.maskedArgs }) };
}

function recordOf(params: ApprovalRequestParams, ctx: NewRecordContext, taken: TakenRequest): ApprovalRecord {
  const now = ctx.now.toISOString();
  return {
    approvalId: params.approvalId,
    hostId: ctx.hostId,
    incarnation: ctx.incarnation,
    openedBy: ctx.incarnation,
    route: ctx.route,
    ...(ctx.quorum === undefined ? {} : { quorum: ctx.quorum }),
    sessionId: params.sessionId,
    sessionTitle: taken.sessionTitle,
    turnId: params.turnId,
    itemId: params.itemId,
    toolCallId: params.toolCallId,
    caller: ctx.caller,
    tool: taken.tool,
    title: taken.title,
    rawArgs: taken.rawArgs,
    argsSha256: taken.argsSha256,
    ...(taken.argsSha256Of ? { argsSha256Of: taken.argsSha256Of } : {}),
    subject: taken.subject,
    requiredCapabilities: stageCapabilities({
      tool: taken.tool,
      subject: taken.subject,
      currentRequirementId: params.currentRequirementId,
      protectedWrite: params.protectedWrite,
    }).capabilities,
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
    phase: ctx.heldElsewhere ? 'unavailable' : ctx.phase,
    unavailable: ctx.heldElsewhere ? 'heldElsewhere' : undefined,
    slack: { channel: ctx.channel },
    ...(ctx.risks && ctx.risks.length > 0 ? { risks: ctx.risks } : {}),
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

/** How an approval we may know came up again. */
export interface Reopening {
  /** Another client holds the session, so no decision from here can work until it lets go. */
  heldElsewhere?: boolean;
  /**
   * The host process asked it itself (approval/request, approval/requested, approval/reviewing),
   * rather than only listing it as pending: it is the process that asked it now (openedBy).
   */
  asked?: boolean;
}

/**
 * approval/request, approval/requested or a listPending entry for an approval we may know.
 * One question per (approvalId, currentRequirementId): a redelivery of the same question changes
 * nothing, so the card is not touched.
 */
export function reopened(
  params: ApprovalRequestParams,
  incarnation: string,
  phase: 'pending' | 'reviewing',
  { heldElsewhere = false, asked = false }: Reopening = {},
) {
  // Taken once, outside the mutation: compare-and-set may run it again.
  const question = takeQuestion(params);
  const askedArgs = argsAskedAgain(params.rawArgs);
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (record.phase === 'resolved') return undefined;
    const sourceIndex = params.currentRequirementId.sourceIndex;
    const args = askedArgs(record);
    const revived = isTerminal(record);
    let nextPhase: Phase = phase === 'reviewing' ? 'reviewing' : phaseAfterRefresh(record, sourceIndex);
    if (heldElsewhere) nextPhase = 'unavailable';
    const stage = stageResolvedByRequest(record, params);
    const stageAsks = stageAsked(
      record,
      question.subject,
      params.currentRequirementId,
      question.availableChoices,
    );
    const next: ApprovalRecord = {
      ...record,
      grantUses: withGrantUse(record, stage),
      stageDecisions: withStageDecision(record, stage, stageAsks),
      incarnation,
      // A listing by a new process does not make it the asker: its restart recovery may be
      // about to close what the earlier process asked (see resolved()).
      openedBy: asked ? incarnation : record.openedBy,
      subject: question.subject,
      currentRequirementId: params.currentRequirementId,
      availableChoices: question.availableChoices,
      judgeEscalated: params.judgeEscalated,
      protectedWrite: params.protectedWrite,
      reviewerReason: question.reviewerReason ?? record.reviewerReason,
      cuaCardFacts: question.cuaCardFacts ?? record.cuaCardFacts,
      requiredCapabilities: stageCapabilities({
        ...record,
        subject: question.subject,
        currentRequirementId: params.currentRequirementId,
      }).capabilities,
      ...(args ? withArgs(args) : {}),
      intake: intakeWith(
        record.intake,
        args ? { ...question.reports, rawArgs: args.report } : question.reports,
      ),
      phase: nextPhase,
      // Held elsewhere, a claim on the stage asked is kept as the session event keeps it
      // (heldElsewhere()): the host may have applied it.
      claim:
        (nextPhase === 'deciding' || (heldElsewhere && record.claim?.sourceIndex === sourceIndex)) && !revived
          ? record.claim
          : undefined,
      unavailable: heldElsewhere ? 'heldElsewhere' : undefined,
      supersededNote: undefined,
      unsettledClaim: undefined,
    };
    if (
      !revived &&
      record.incarnation === incarnation &&
      record.openedBy === next.openedBy &&
      record.phase === next.phase &&
      record.unavailable === next.unavailable &&
      sameJson(record.currentRequirementId, next.currentRequirementId) &&
      sameJson(record.availableChoices, next.availableChoices) &&
      sameJson(record.subject, next.subject) &&
      !args &&
      record.judgeEscalated === next.judgeEscalated &&
      // Who may decide a protected write, and what the card shows of the screen, follow these.
      record.protectedWrite === next.protectedWrite &&
      sameJson(record.cuaCardFacts, next.cuaCardFacts)
    ) {
      return undefined;
    }
    return next;
  };
}

/**
 * The arguments of a request asked again, when they are not the record's: the card shows them
 * (and the digest covers them from then on), so it must not keep the first ask's. Undefined when
 * unchanged, told by their hash without masking them again when the record's is of them as sent.
 * Taken at most once however often compare-and-set runs the mutation.
 */
function argsAskedAgain(raw: string): (record: ApprovalRecord) => TakenArgs | undefined {
  let taken: TakenArgs | undefined;
  let asSent: string | undefined;
  return (record) => {
    if (record.argsSha256 !== undefined && record.argsSha256Of === undefined) {
      asSent ??= argsSha256AsSent(raw);
      if (asSent === record.argsSha256) return undefined;
    }
    taken ??= takeArgs(raw);
    const same =
      record.argsSha256 === undefined
        ? taken.rawArgs === record.rawArgs
        : taken.argsSha256 === record.argsSha256 && taken.argsSha256Of === record.argsSha256Of;
    return same ? undefined : taken;
  };
}

function withArgs(args: TakenArgs): Partial<ApprovalRecord> {
  return {
    rawArgs: args.rawArgs,
    argsSha256: args.argsSha256,
    argsSha256Of: args.argsSha256Of ?? undefined,
    argsReasked: true,
  };
}

/** What a question asked again changed of how its card was placed (record.rerouted). */
export type Rerouting = NonNullable<ApprovalRecord['rerouted']>;

/**
 * A record asked again (or updated) on another route, tool or session than its card was placed
 * for, or one marked so before: no decision is taken on it (decisionCheck.ts), its card says why
 * without buttons, a claim or votes made for the earlier question are dropped (a claim is never
 * replayed on the new question), and the host's approval stays pending. Applied after every
 * re-ask and update, so that a later question placed where the first was does not make it
 * decidable again. Undefined when nothing changes.
 */
export function rerouted(change: Rerouting | undefined) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (isTerminal(record)) return undefined;
    const mark = record.rerouted ?? change;
    if (!mark) return undefined;
    const already =
      record.rerouted !== undefined &&
      record.phase === 'unavailable' &&
      record.unavailable === 'routeChanged' &&
      record.claim === undefined &&
      record.votes === undefined;
    if (already) return undefined;
    return {
      ...record,
      rerouted: mark,
      phase: 'unavailable',
      unavailable: 'routeChanged',
      claim: undefined,
      votes: undefined,
    };
  };
}

export function updated(params: ApprovalUpdatedParams) {
  // An update replaces the subject and the choices only; the reasons stay as they were.
  const { subject, currentRequirementId, availableChoices } = params;
  const question = takeQuestion({ subject, currentRequirementId, availableChoices });
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    const kind = params.change.kind;
    const persistence = kind === 'policyPersistence' ? persistenceReported(params.change) : undefined;
    if (isTerminal(record)) return persistence?.(record);
    const sourceIndex = params.currentRequirementId.sourceIndex;
    let phase: Phase = phaseAfterRefresh(record, sourceIndex);
    if (kind === 'reviewStarted') phase = 'reviewing';
    // A decision in flight is answered by the host all the same: the card waits for that answer.
    const settling = phase === 'deciding' ? undefined : settledByHost(kind);
    if (settling) phase = 'unavailable';
    // A restart recovery under the same approvalId re-derives the question: an earlier click
    // is evidence, not authority, so it is never carried over.
    const dropClaim = kind === 'restartRecovered' || phase !== 'deciding';
    const stage = stageResolvedByUpdate(params.change);
    const stageAsks = stageAsked(
      record,
      question.subject,
      params.currentRequirementId,
      question.availableChoices,
    );
    const next: ApprovalRecord = {
      ...record,
      grantUses: withGrantUse(record, stage),
      stageDecisions: withStageDecision(record, stage, stageAsks),
      subject: question.subject,
      currentRequirementId: params.currentRequirementId,
      availableChoices: question.availableChoices,
      requiredCapabilities: stageCapabilities({
        ...record,
        subject: question.subject,
        currentRequirementId: params.currentRequirementId,
      }).capabilities,
      intake: intakeWith(record.intake, question.reports),
      phase: kind === 'restartRecovered' && phase === 'deciding' ? 'pending' : phase,
      claim: dropClaim ? undefined : record.claim,
      unavailable: settling,
    };
    return persistence?.(next) ?? next;
  };
}

/**
 * Updates after which the host takes no decision from anyone for now (§6.6): a recovery found
 * the approval already decided (its approval/resolved follows), or a computer-use takeover is
 * being resolved (a decide is answered "not found"). The card loses its buttons until the host
 * says more.
 */
function settledByHost(kind: string): 'alreadyTerminal' | 'resolving' | undefined {
  return kind === 'alreadyTerminal' || kind === 'resolving' ? kind : undefined;
}

/** Longer than any status a host has: kept as `unknown` rather than stored whole. */
const MAX_STATUS_CHARS = 64;

/**
 * Whether the host saved the rule a decision asked for. It may say so before or after the
 * approval resolves; either way the card must not claim a rule was saved when it was not.
 */
function persistenceReported(change: ApprovalUpdatedParams['change']) {
  const reason = change.reason === undefined ? undefined : takeNote(change.reason);
  // A status is a word (`succeeded`, `failed`); the schema bounds none, and the record keeps it.
  const status =
    change.status === undefined || change.status.length > MAX_STATUS_CHARS ? 'unknown' : change.status;
  const report = { status, reason: reason?.text };
  const intakeOf = (record: ApprovalRecord) =>
    reason ? intakeWith(record.intake, { persistence: reason.report }) : record.intake;
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (record.phase === 'resolved') {
      const resolution = record.resolution;
      if (!resolution) return undefined;
      const amendment = resolution.amendment;
      if (amendment) {
        if (amendment.persistence === report.status) return undefined;
        return {
          ...record,
          intake: intakeOf(record),
          resolution: {
            ...resolution,
            amendment: { ...amendment, persistence: report.status, persistenceReason: report.reason },
          },
        };
      }
      // No amendment (none sent, or dropped unread): the report stands on the resolution itself.
      if (sameJson(resolution.persistence, report)) return undefined;
      return { ...record, intake: intakeOf(record), resolution: { ...resolution, persistence: report } };
    }
    if (isTerminal(record) || sameJson(record.persistence, report)) return undefined;
    return { ...record, intake: intakeOf(record), persistence: report };
  };
}

/**
 * Our claim's commandId came back with a decision other than the one of the choice pressed, or
 * after the host asked the stage again (askedOtherwise).
 */
export interface ClaimContradicted {
  approvalId: string;
  choiceId: string;
  /**
   * The decision of that choice as it was pressed; on a claim stored before that was kept, as the
   * record offers it now, when it still does.
   */
  choiceDecision?: string;
  reported: string;
  /**
   * The host asked the stage again while the decision was in flight (another command, other
   * choices): the choiceId it applied is not what was pressed, whatever decision it reports.
   */
  askedOtherwise?: true;
  /**
   * The host said the decision left a rule the choice pressed does not ask for (ruleAsPressed):
   * the scope of that choice (when known), and the durability of the rule reported.
   */
  choiceScope?: string;
  ruleDurability?: string;
}

/**
 * approval/resolved. An `abort` that no decide produced (no decidedByCommandId, and not our own
 * claim's answer) is never somebody's rejection: a restarting host closes every pending identity
 * it recovers that way (and re-asks under a new id), and a host withdraws a request whose turn
 * ended the same way. `contradicted` hears of a resolution naming our claim's commandId with
 * another decision than the claimed choice's, or of a question other than the one it was pressed
 * on (it may be called more than once, as the mutation may run more than once).
 */
export function resolved(
  params: ApprovalResolvedParams,
  incarnation: string,
  now: Date,
  contradicted?: (facts: ClaimContradicted) => void,
) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (isTerminal(record)) return undefined;
    // Only the deciding command's id says a resolution was ours: a host names it on every
    // terminal a decide produced, and a restart closing the request while our reject was in
    // flight has the same decision word without being ours. And it is ours only as the choice
    // that was pressed: a host that answers "Allow once" with a saved rule (even under the same
    // decision word, `approved`), a session choice with a rule kept for good, or a Reject with an
    // approval, decided that itself, and no person (grant, timeout) is named for it. Nor when
    // the host asked the stage again while it was in flight: the same choiceId may mean another
    // decision, or the same one about another command, that nobody here was shown.
    const claim = record.claim;
    const named = claim && params.decidedByCommandId === claim.commandId ? claim : undefined;
    const choiceDecision = named && pressedDecision(record, named);
    const otherQuestion = named !== undefined && askedOtherwise(record, named);
    const choiceScope = named && pressedScope(record, named);
    const otherRule = named !== undefined && !ruleAsPressed(choiceScope, params.amendment);
    const ours =
      named && !otherQuestion && !otherRule && choiceDecision === params.decision ? named : undefined;
    if (named && !ours) {
      contradicted?.({
        approvalId: record.approvalId,
        choiceId: named.choiceId,
        ...(choiceDecision !== undefined ? { choiceDecision } : {}),
        reported: params.decision,
        ...(otherQuestion ? { askedOtherwise: true as const } : {}),
        ...(otherRule && params.amendment
          ? {
              ...(choiceScope !== undefined ? { choiceScope } : {}),
              ruleDurability: params.amendment.durability,
            }
          : {}),
      });
    }
    if (params.decision === 'abort' && !params.decidedByCommandId && !ours && params.resolvedBy === 'user') {
      // Closed by another process than the one that last asked it: a restart recovery's close.
      const restarted = (record.openedBy ?? record.incarnation) !== incarnation;
      return superseded(
        restarted
          ? 'The agent host restarted and closed this request; if it still needs a decision, it is asked again on a new card.'
          : 'The agent host withdrew this request without a decision (its turn ended).',
      )(record);
    }
    const rule = params.amendment ? takeNote(params.amendment.rulePreview) : undefined;
    const amendment = params.amendment &&
      rule && {
        durability: params.amendment.durability,
        rulePreview: rule.text,
        persistence: record.persistence?.status,
        persistenceReason: record.persistence?.reason,
      };
    return {
      ...record,
      phase: 'resolved',
      claim: undefined,
      unavailable: undefined,
      stageDecisions: stagesBefore(record, ours),
      intake: rule ? intakeWith(record.intake, { amendment: rule.report }) : record.intake,
      resolution: {
        decision: params.decision,
        resolvedBy: params.resolvedBy,
        policyResult: params.policyResult,
        amendment,
        // Without an amendment to carry it, a failure reported before still reaches the card.
        ...(!amendment && record.persistence ? { persistence: record.persistence } : {}),
        decidedAt: params.decidedAt ?? now.toISOString(),
        // Only when the host's time stands in decidedAt: otherwise that is ours already.
        ...(params.decidedAt ? { recordedAt: now.toISOString() } : {}),
        slackUserId: ours?.userId,
        voters: ours?.voters,
        stoodInFor: ours?.stoodInFor,
        onBehalfOf: ours?.onBehalfOf,
        choiceId: ours?.choiceId,
        feedback: ours?.feedback,
        via: ours?.via,
        grant: ours?.grant,
      },
    };
  };
}

export function superseded(note: string) {
  return (record: ApprovalRecord): ApprovalRecord | undefined =>
    isTerminal(record)
      ? undefined
      : { ...record, phase: 'superseded', claim: undefined, unavailable: undefined, supersededNote: note };
}

/** The host no longer lists the approval as pending, and nothing of ours closed it. */
export const noLongerListed = superseded('The agent host no longer has this request pending.');

/**
 * The host, which keeps nothing, went away with the approval. A decision in flight (its claim)
 * may have been applied before it did, and no host will ever say: it is kept as `unsettledClaim`
 * for the card and the audit trail to name, rather than dropped as if nothing was pressed.
 */
export function orphaned(record: ApprovalRecord): ApprovalRecord | undefined {
  return isTerminal(record)
    ? undefined
    : {
        ...record,
        phase: 'orphaned',
        claim: undefined,
        unavailable: undefined,
        ...(record.claim ? { unsettledClaim: record.claim } : {}),
      };
}

/**
 * No decision from here can work for now: the buttons go until the host says more (the
 * session is re-read, or the other client lets go of it). A claim in flight is dropped with them,
 * unless `keepClaim`: see heldElsewhere.
 */
export function unavailable(
  reason: NonNullable<ApprovalRecord['unavailable']>,
  { keepClaim = false }: { keepClaim?: boolean } = {},
) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (isTerminal(record) || (record.phase === 'unavailable' && record.unavailable === reason))
      return undefined;
    return {
      ...record,
      phase: 'unavailable',
      unavailable: reason,
      claim: keepClaim ? record.claim : undefined,
    };
  };
}

/**
 * Another client holds the session (session/resume said sessionInUse). A decision in flight keeps
 * its claim: the host may have applied it already (a decide sent before a restart), and then its
 * approval/resolved, or the session's listing once it no longer lists the approval (settled with
 * the same commandId), credits whoever pressed it. Dropped, the resolution would name nobody
 * here, or the card would end superseded with no decision entry at all. Clicks are refused
 * meanwhile (unavailable), and once the other client lets go the listing makes it `deciding`
 * again and the claim is replayed, as after a restart.
 */
export const heldElsewhere = unavailable('heldElsewhere', { keepClaim: true });

/** A stage the host says was resolved, with the choice and decision when it names them. */
interface ResolvedStage {
  sourceIndex: number;
  choiceId?: string;
  decision?: string;
}

/** An approval/updated `stageResolved`. */
function stageResolvedByUpdate(change: ApprovalUpdatedParams['change']): ResolvedStage | undefined {
  if (change.kind !== 'stageResolved' || !change.requirementId) return undefined;
  return {
    sourceIndex: change.requirementId.sourceIndex,
    ...(change.choiceId !== undefined ? { choiceId: change.choiceId } : {}),
    ...(change.decision !== undefined ? { decision: change.decision } : {}),
  };
}

/**
 * The decision a stage resolution (§6.8) stands for, when a choice pressed here leaves it: a
 * policy's (`knownSafe`, `policyAllow`) or an unknown kind is nobody's here.
 */
const DECIDED_AS: Record<string, string> = {
  allowOnce: 'approved',
  policyAmendment: 'approvedPolicyAmendment',
};

/**
 * The claimed stage, when a request asking a later stage (§4.1, §5.3: the host may announce a
 * stage advance with an updated approval/request alone) marks it resolved as the claim decided.
 */
function stageResolvedByRequest(
  record: ApprovalRecord,
  params: ApprovalRequestParams,
): ResolvedStage | undefined {
  const { claim } = record;
  if (!claim || params.currentRequirementId.sourceIndex <= claim.sourceIndex) return undefined;
  const stage = params.subject.stages?.find((s) => s.requirementId.sourceIndex === claim.sourceIndex);
  const decision =
    stage && Object.hasOwn(DECIDED_AS, stage.resolution.kind) ? DECIDED_AS[stage.resolution.kind] : undefined;
  return decision === undefined ? undefined : { sourceIndex: claim.sourceIndex, decision };
}

/** A stage our grant decided has resolved: the card, if one is shown later, says so. */
function withGrantUse(
  record: ApprovalRecord,
  resolved: ResolvedStage | undefined,
): ApprovalRecord['grantUses'] {
  const { claim } = record;
  if (!resolved || !claim?.grant || resolved.sourceIndex !== claim.sourceIndex) return record.grantUses;
  return [...(record.grantUses ?? []), { ...claim.grant, sourceIndex: resolved.sourceIndex }];
}

/**
 * The question the frame resolving the claimed stage asks of that stage: its subject, and, while
 * it stays at that stage, its choices too (a later stage's choices are that stage's own, §5.3).
 */
function stageAsked(
  record: ApprovalRecord,
  subject: ApprovalRecord['subject'],
  current: ApprovalRecord['currentRequirementId'],
  availableChoices: ApprovalRecord['availableChoices'],
): ApprovalRecord {
  return current.sourceIndex === record.claim?.sourceIndex
    ? { ...record, subject, currentRequirementId: current, availableChoices }
    : { ...record, subject };
}

/**
 * A stage our claim was on has resolved: who decided it is kept for the audit, since the final
 * resolution names only the last stage's. Not when the host says another choice or decision than
 * the one claimed resolved it, or asked the stage again since it was claimed, even in the very
 * frame that resolves it (`asked`, stageAsked): that stage was not decided as we asked.
 */
function withStageDecision(
  record: ApprovalRecord,
  resolved: ResolvedStage | undefined,
  asked: ApprovalRecord,
): ApprovalRecord['stageDecisions'] {
  const { claim } = record;
  if (!resolved || !claim || resolved.sourceIndex !== claim.sourceIndex) return record.stageDecisions;
  const stage = resolved.sourceIndex;
  const decision = pressedDecision(record, claim);
  if (decision === undefined || askedOtherwise(record, claim) || askedOtherwise(asked, claim)) {
    return record.stageDecisions;
  }
  if (resolved.choiceId !== undefined && resolved.choiceId !== claim.choiceId) return record.stageDecisions;
  if (resolved.decision !== undefined && resolved.decision !== decision) return record.stageDecisions;
  const decided: StageDecision = {
    sourceIndex: stage,
    via: claim.via ?? 'click',
    ...(claim.userId !== undefined ? { userId: claim.userId } : {}),
    ...(claim.voters ? { voters: claim.voters } : {}),
    ...(claim.stoodInFor ? { stoodInFor: claim.stoodInFor } : {}),
    ...(claim.onBehalfOf !== undefined ? { onBehalfOf: claim.onBehalfOf } : {}),
    ...(claim.grant ? { grantId: claim.grant.grantId } : {}),
    choiceId: claim.choiceId,
    decision,
  };
  const votes = claim.voters ? quorumVotes(record, claim) : [];
  if (votes.length > 0) decided.votes = votes;
  return [...(record.stageDecisions ?? []).filter((d) => d.sourceIndex !== stage), decided];
}

/**
 * The votes of a quorum's claim, as cast: the stage moving on clears them from record.votes, and
 * a request closed before a decision entry names the stage audits them from its StageDecision.
 * Without `asked`, which only counts them while the stage is asked.
 */
function quorumVotes(record: ApprovalRecord, claim: Claim): Vote[] {
  return (record.votes ?? [])
    .filter(
      (v) =>
        v.sourceIndex === claim.sourceIndex &&
        v.choiceId === claim.choiceId &&
        claim.voters?.includes(v.userId),
    )
    .map(({ asked: _asked, ...vote }) => vote);
}

/**
 * The stage decisions a resolution by `claim` leaves for the audit: the host may report the last
 * stage resolved before the approval, and the resolution itself names whoever decided that one.
 */
export function stagesBefore(
  record: ApprovalRecord,
  claim: Claim | undefined,
): ApprovalRecord['stageDecisions'] {
  if (!claim || !record.stageDecisions) return record.stageDecisions;
  const earlier = record.stageDecisions.filter((d) => d.sourceIndex !== claim.sourceIndex);
  return earlier.length > 0 ? earlier : undefined;
}

/** The escalation clock of a posted card (its own, or carried over from a superseded one). */
export function escalationStarted(escalation: Escalation) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    const current = record.escalation;
    if (!current) return { ...record, escalation };
    // A step that fired first (due before this start was stored: a successor card of a request
    // whose clock ran on) must not hide the steps fired before it on the superseded card.
    const known = new Set(current.fired.map((f) => f.step));
    const missing = escalation.fired.filter((f) => !known.has(f.step));
    const sameStart = current.startedAt === escalation.startedAt && current.origin === escalation.origin;
    if (missing.length === 0 && sameStart) return undefined;
    return {
      ...record,
      escalation: {
        ...current,
        startedAt: escalation.startedAt,
        origin: escalation.origin,
        fired: [...current.fired, ...missing].sort((a, b) => a.step - b.step),
      },
    };
  };
}

/**
 * An escalation step fired; the card's line says so. Once per step: the same firing again changes
 * nothing, and a later one takes the place of what the card showed for the step, which was carried
 * over from a superseded approval whose claim on it was given up (Escalator.release).
 */
export function escalationFired(fired: FiredStep, start: Omit<Escalation, 'fired'>) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    const current = record.escalation ?? { ...start, fired: [] };
    const shown = current.fired.find((f) => f.step === fired.step);
    if (shown && isDeepStrictEqual(shown, fired)) return undefined;
    return {
      ...record,
      escalation: {
        ...current,
        fired: [...current.fired.filter((f) => f !== shown), fired].sort((a, b) => a.step - b.step),
        ...(fired.action === 'timeout' ? { timedOutAfterMs: fired.afterMs } : {}),
      },
    };
  };
}

/**
 * Risk rules a later question of the same approval matched (`marksOf` is given the record's tool)
 * join those it had: a request never becomes less risky on the way.
 */
export function riskMarked(marksOf: (tool: string) => readonly RiskMark[]) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    const added = marksOf(record.tool).filter((mark) => !record.risks?.some((m) => m.name === mark.name));
    if (added.length === 0 || isTerminal(record)) return undefined;
    return { ...record, risks: [...(record.risks ?? []), ...added] };
  };
}
