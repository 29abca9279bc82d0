import { z } from 'zod';
import {
  ApprovalChoice,
  ApprovalSubject,
  CuaCardFacts,
  RequirementRef,
  SubagentOrigin,
} from '../msp/protocol.js';

/**
 * `unavailable`: pending at the host, but no decision from here can work right now (another
 * client holds the session, the host said it does not know the approval, or that it moved to a
 * stage whose choices are being asked for again); the card shows why, without buttons.
 */
export const Phase = z.enum([
  'reviewing',
  'pending',
  'deciding',
  'unavailable',
  'resolved',
  'superseded',
  'orphaned',
]);
export type Phase = z.infer<typeof Phase>;

const TERMINAL_PHASES: ReadonlySet<Phase> = new Set(['resolved', 'superseded', 'orphaned']);

/** A remembered grant as a record names it: enough to say whose it is and until when. */
export const GrantRef = z.object({
  grantId: z.string(),
  grantedBy: z.string(),
  expiresAt: z.string().optional(),
  /** A grant by uses: how many it had left once this was decided (or granted). */
  usesLeft: z.number().optional(),
});
export type GrantRef = z.infer<typeof GrantRef>;

/** Those of a quorum's voters who voted as someone's delegate: voter → the person away. */
export const StoodInFor = z.record(z.string(), z.string());

/** What the host said about saving a rule (policyPersistence): `failed`, or its other words. */
export const RulePersistence = z.object({ status: z.string(), reason: z.string().optional() });
export type RulePersistence = z.infer<typeof RulePersistence>;

export const Resolution = z.object({
  decision: z.string(),
  /** user | policy | llmJudge | … as the host says it. */
  resolvedBy: z.string(),
  policyResult: z.string().optional(),
  amendment: z
    .object({
      durability: z.string(),
      rulePreview: z.string(),
      /** What the host said about saving the rule (policyPersistence), when it said anything. */
      persistence: z.string().optional(),
      persistenceReason: z.string().optional(),
    })
    .optional(),
  /**
   * What the host said about saving the rule when no amendment carries it (the host sent none,
   * or one the bot could not read): the card must not say a rule was saved when it was not.
   * Never beside an amendment, which says it itself (as on records resolved before this was kept).
   */
  persistence: RulePersistence.optional(),
  /** When it was decided, as the host says (its clock, perhaps whole seconds): the audit's `at`. */
  decidedAt: z.string(),
  /**
   * When the bot recorded it, by the clock of `openedAt` and the escalation's start: waits and
   * SLAs are measured to it (waitedFor). Absent where decidedAt is the bot's own time already,
   * and on records resolved before it was kept.
   */
  recordedAt: z.string().optional(),
  /** The Slack user whose click produced the decision, when it was one of ours. */
  slackUserId: z.string().optional(),
  /** The choice that Slack user pressed: the audit line names it by its label. */
  choiceId: z.string().optional(),
  feedback: z.string().optional(),
  /** The approvers whose picks made a quorum (the decider, slackUserId, among them). */
  voters: z.array(z.string()).optional(),
  stoodInFor: StoodInFor.optional(),
  /** slackUserId decided as the delegate of this Slack user, who was away. */
  onBehalfOf: z.string().optional(),
  /** Our decision that resolved it came from a remembered grant (Slack user absent), or a timeout. */
  via: z.enum(['click', 'grant', 'timeout']).optional(),
  grant: GrantRef.optional(),
});
export type Resolution = z.infer<typeof Resolution>;

/** One person's approving pick for a stage, counted toward its quorum. */
export const Vote = z.object({
  sourceIndex: z.number().int(),
  choiceId: z.string(),
  userId: z.string(),
  /** userId voted as the delegate of this Slack user, who is away: the vote counts as theirs. */
  onBehalfOf: z.string().optional(),
  /**
   * The question voted on (questionDigest): a stage the host asks again with another command or
   * other risks is not what this person agreed to, so the vote stops counting. Absent on votes
   * stored before it was kept.
   */
  asked: z.string().optional(),
  at: z.string(),
});
export type Vote = z.infer<typeof Vote>;

/**
 * Who decided an earlier stage of a multi-stage request through us (a person, a quorum, a grant,
 * a timeout): the final resolution names only the last stage's, and the audit names these too.
 */
export const StageDecision = z.object({
  sourceIndex: z.number().int(),
  via: z.enum(['click', 'grant', 'timeout']),
  userId: z.string().optional(),
  voters: z.array(z.string()).optional(),
  stoodInFor: StoodInFor.optional(),
  onBehalfOf: z.string().optional(),
  grantId: z.string().optional(),
  choiceId: z.string(),
  /** The decision of that choice, as the record offered it. */
  decision: z.string().optional(),
  /**
   * A quorum's votes as they were cast (record.votes lets them go as the stage moves on): should
   * the request close without a decision entry naming this stage (withdrawn, superseded), each
   * is audited as a vote, once by its time (auditVotesLeft). Not in the entry's `stages`, which
   * names the voters. Absent on stage decisions stored before it was kept.
   */
  votes: z.array(Vote).optional(),
});
export type StageDecision = z.infer<typeof StageDecision>;

/** A decision in flight: who is deciding which stage, and the commandId that decision uses. */
export const Claim = z.object({
  sourceIndex: z.number().int(),
  /** The Slack user who decided; absent when the bot decided on its own (a grant, a timeout). */
  userId: z.string().optional(),
  /** A quorum's approvers, when the decision needed more than one. */
  voters: z.array(z.string()).optional(),
  stoodInFor: StoodInFor.optional(),
  /** userId decides as the delegate of this Slack user, who is away. */
  onBehalfOf: z.string().optional(),
  /** What made the decision; a click when absent. */
  via: z.enum(['click', 'grant', 'timeout']).optional(),
  /** The grant that decided, when `via` is grant. */
  grant: GrantRef.optional(),
  choiceId: z.string(),
  /**
   * What was pressed, kept when the stage was claimed (claimed()): the decision of that choice
   * then, and the question it was pressed on (a questionDigest less the stages' progress,
   * claimQuestion). The host may ask the stage again while the decision is in flight, the same
   * choiceId now meaning another decision or another command: nobody is credited with what they
   * were not shown. Absent on claims stored before they were kept.
   */
  decision: z.string().optional(),
  question: z.string().optional(),
  /**
   * The scope of that choice then: a host may answer "Allow once" with a rule saved for good and
   * the same decision word, and only the rule the choice asks for is credited to it (ruleAsPressed).
   * Absent on claims stored before it was kept (pressedScope).
   */
  scope: z.string().optional(),
  commandId: z.string(),
  feedback: z.string().optional(),
  claimedAt: z.string(),
  /** How many times the host left this decision unanswered and was asked again. */
  unanswered: z.number().int().optional(),
});
export type Claim = z.infer<typeof Claim>;

/** What intake did to one part of a request (relay/intake/): secrets masked, text cut. */
export const IntakePart = z.object({
  maskedSecrets: z.number().int(),
  /** Text was cut. */
  truncated: z.boolean(),
  /** Shell stages left out of the subject. */
  stagesOmitted: z.number().int().optional(),
  /** Choices not offered: the host named other choices with their choiceId too. */
  choicesWithheld: z.number().int().optional(),
  /**
   * The host sent the field in a shape the bot does not read, so it was dropped (msp/protocol.ts,
   * REQUEST_DROPPABLE): the card says it is not shown, and no grant answers the request.
   */
  unreadable: z.boolean().optional(),
});
export type IntakePart = z.infer<typeof IntakePart>;

/**
 * What intake did to the request as it is stored now. A record without it was stored before
 * intake existed: nothing is known about it.
 */
export const Intake = z.object({
  maskedSecrets: z.number().int(),
  /** Text was cut or stages were left out: the record does not hold the whole request. */
  truncated: z.boolean(),
  stagesOmitted: z.number().int().optional(),
  /** Per record field that was masked or cut, so that a field the host replaces is counted anew. */
  parts: z.record(z.string(), IntakePart),
});
export type Intake = z.infer<typeof Intake>;

/** One escalation step that fired: which, when, and whom it reached (a name, for the card). */
export const FiredStep = z.object({
  step: z.number().int(),
  action: z.enum(['remind', 'mention', 'dm', 'page', 'timeout']),
  /** Since the clock started: the card says "at 10 min". */
  afterMs: z.number(),
  at: z.string(),
  who: z.string().optional(),
  /** It could not reach anyone (Slack or PagerDuty refused, nobody on call): the card says so. */
  failed: z.boolean().optional(),
});
export type FiredStep = z.infer<typeof FiredStep>;

/**
 * A risk rule a request matched, with what the rule asked of it, kept on the record: an open
 * approval keeps the care it was opened with whatever the file says after a restart.
 */
export const RiskMark = z.object({
  name: z.string(),
  warning: z.string(),
  quorum: z.number().int().optional(),
  approvers: z.object({ users: z.array(z.string()), usergroups: z.array(z.string()) }).optional(),
  /** Approving needs the target typed in a modal first (relay/deciding/typedConfirmation.ts). */
  confirm: z.literal('type').optional(),
});
export type RiskMark = z.infer<typeof RiskMark>;

export const Escalation = z.object({
  /** When the clock started: the first card of this request was posted (a superseded one's, carried over). */
  startedAt: z.string(),
  /** The approval whose page this one carries (the PagerDuty dedup_key): itself, or a predecessor. */
  origin: z.string(),
  fired: z.array(FiredStep),
  /** The ladder ended in a timeout that decided, after this long. */
  timedOutAfterMs: z.number().optional(),
});
export type Escalation = z.infer<typeof Escalation>;

export const ApprovalRecord = z.object({
  approvalId: z.string(),
  hostId: z.string(),
  /** The host process the approval was last (re-)asked by; see HostEvent. */
  incarnation: z.string(),
  /**
   * The host process that last asked it itself (a listing only says it is pending): a restart
   * recovery closes what an earlier one asked, and the asker withdraws what it asked.
   */
  openedBy: z.string().optional(),
  /** Name of the route that placed the card: later checks read that route's rules. */
  route: z.string().optional(),
  /**
   * The route's quorum when it placed the card, when more than 1: kept so that a route taken out
   * of the file (or lowered) never drops an open approval's quorum.
   */
  quorum: z.number().int().optional(),
  sessionId: z.string(),
  sessionTitle: z.string().optional(),
  turnId: z.string().optional(),
  itemId: z.string().optional(),
  toolCallId: z.string().optional(),
  caller: z.string(),
  tool: z.string(),
  title: z.string().optional(),
  rawArgs: z.string(),
  /**
   * SHA-256 (hex) of rawArgs as the host sent them, before masking and cutting: the audit line
   * names the arguments a decision was about without holding them. Absent on older records.
   * When masking hid a secret in them, of the arguments as masked instead (argsSha256Of
   * `masked`): a hash of the secret's whole command line would let it be guessed offline.
   */
  argsSha256: z.string().optional(),
  argsSha256Of: z.literal('masked').optional(),
  subject: ApprovalSubject,
  requiredCapabilities: z.array(z.string()),
  sandboxMode: z.string(),
  reason: z.string().optional(),
  reviewerReason: z.string().optional(),
  protectedWrite: z.boolean(),
  judgeEscalated: z.boolean(),
  subagentOrigin: SubagentOrigin.optional(),
  cuaCardFacts: CuaCardFacts.optional(),
  currentRequirementId: RequirementRef,
  availableChoices: z.array(ApprovalChoice),
  phase: Phase,
  claim: Claim.optional(),
  /**
   * For orphaned cards: the decision that was in flight when the host, which keeps nothing, went
   * away (its claim). The host may have applied it before it died: nobody can say now, and the
   * audit trail says so with the person who pressed it (unsettledEntry).
   */
  unsettledClaim: Claim.optional(),
  resolution: Resolution.optional(),
  /** Secrets masked and text cut on the way in; a masked or cut request is never grantable. */
  intake: Intake.optional(),
  /** For superseded cards: why, in one line. */
  supersededNote: z.string().optional(),
  /**
   * For unavailable cards: why no decision can be made from here right now. `stageMoved`: the
   * host answered a decide naming a later stage, whose choices are not known until it is re-read.
   * `alreadyTerminal`, `resolving`: the host said (approval/updated) that a recovery found it
   * already decided, or that it is resolving it itself (a computer-use takeover). `routeChanged`:
   * see `rerouted`.
   */
  unavailable: z
    .enum(['heldElsewhere', 'unknownToHost', 'stageMoved', 'alreadyTerminal', 'resolving', 'routeChanged'])
    .optional(),
  /**
   * The host asked this approvalId again (or updated it) with a question the record's route would
   * not have placed: another route (`from`, `to`: route names), another tool, or another session.
   * The card's channel, route, quorum and caller are the first question's, so no decision is taken
   * on it from then on, whatever is asked later (decisionCheck.ts); the host's approval stays
   * pending. Never cleared.
   */
  rerouted: z
    .object({
      change: z.enum(['route', 'tool', 'session']),
      from: z.string().optional(),
      to: z.string().optional(),
    })
    .optional(),
  /**
   * The host asked this approvalId again with other arguments (rawArgs) than it first did: from
   * then on the question digest covers them (questionDigest.ts), so a press on a card that showed
   * the earlier ones decides nothing.
   */
  argsReasked: z.literal(true).optional(),
  /** policyPersistence reported before the approval resolved, kept for its resolution. */
  persistence: RulePersistence.optional(),
  /**
   * `deferred`: the card waits while a remembered grant may answer; it is posted only if none
   * does. A request a grant answered has no card at all, only the grant's line in the channel.
   */
  slack: z.object({ channel: z.string(), ts: z.string().optional(), deferred: z.boolean().optional() }),
  /** Earlier stages our decisions resolved (a person's, a grant's, a timeout's), oldest first. */
  stageDecisions: z.array(StageDecision).optional(),
  /** Stages a remembered grant decided before the card was shown. */
  grantUses: z.array(GrantRef.extend({ sourceIndex: z.number().int() })).optional(),
  /** The grant a person made from this card ("don't ask again"). */
  remembered: GrantRef.extend({
    capabilities: z.array(z.string()),
    /** Whom it is bound to, when not the record's caller (a grant for the session). */
    caller: z.string().optional(),
  }).optional(),
  /** Risk rules the request matched (routing/risks.ts); absent when none did. */
  risks: z.array(RiskMark).optional(),
  /**
   * Approving picks of the current stage while a quorum is not yet reached; cleared when it moves
   * (those of a quorum that decided it are kept with its StageDecision).
   */
  votes: z.array(Vote).optional(),
  /** The escalation ladder so far (relay/escalator.ts): its clock and the steps that fired. */
  escalation: Escalation.optional(),
  openedAt: z.string(),
  updatedAt: z.string(),
  version: z.number().int(),
});
export type ApprovalRecord = z.infer<typeof ApprovalRecord>;

/** Where a card was posted. */
export interface CardPlace {
  channel: string;
  ts: string;
}

/**
 * Whose rights the picks of `choiceId` for the stage stand for: each voter, or the person away a
 * delegate voted for. A quorum counts these, so one person's rights never count twice (theirs and
 * their delegate's).
 */
export function principalsFor(
  record: Pick<ApprovalRecord, 'votes'>,
  sourceIndex: number,
  choiceId: string,
): Set<string> {
  return new Set(
    (record.votes ?? [])
      .filter((v) => v.sourceIndex === sourceIndex && v.choiceId === choiceId)
      .map((v) => v.onBehalfOf ?? v.userId),
  );
}

/** Who picked `choiceId` for the stage, in the order they picked it. */
export function votersFor(
  record: Pick<ApprovalRecord, 'votes'>,
  sourceIndex: number,
  choiceId: string,
): string[] {
  return (record.votes ?? [])
    .filter((v) => v.sourceIndex === sourceIndex && v.choiceId === choiceId)
    .map((v) => v.userId);
}

export function isTerminal(record: Pick<ApprovalRecord, 'phase'>): boolean {
  return TERMINAL_PHASES.has(record.phase);
}

/**
 * What the host said about saving the resolution's rule: on its amendment when it has one, else
 * on the resolution itself (an amendment the host did not send, or that was dropped unread).
 */
export function rulePersistence(
  resolution: Pick<Resolution, 'amendment' | 'persistence'>,
): RulePersistence | undefined {
  const { amendment } = resolution;
  if (!amendment) return resolution.persistence;
  return amendment.persistence === undefined
    ? undefined
    : { status: amendment.persistence, reason: amendment.persistenceReason };
}
