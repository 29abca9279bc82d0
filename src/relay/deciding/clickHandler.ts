import type { Logger } from 'pino';
import type { AuditEntry, AuditTrail } from '../../domain/audit.js';
import { needsQuorum, outlastsRequest } from '../../domain/decisionWords.js';
import type { RememberOffer } from '../../domain/grants/match.js';
import { offeredScope } from '../../domain/grants/scope.js';
import type { Metrics } from '../../domain/metrics.js';
import { questionDigest } from '../../domain/questionDigest.js';
import type { ApprovalRecord } from '../../domain/record.js';
import type { Refusal } from '../../domain/refusal.js';
import { OPEN_RULES } from '../../domain/route.js';
import { confirmsTarget } from '../../domain/typedConfirmation.js';
import type { ApprovalStore } from '../../store/approvalStore.js';
import type { RefusalNotifier } from '../ports.js';
import type { RecordKeeper } from '../records/recordKeeper.js';
import type { Authorizer } from './authorizer.js';
import {
  type Answerable,
  Asker,
  askerOf,
  type CastVote,
  type Click,
  type ClickCheck,
  deadlineOf,
} from './click.js';
import { auditVoteCast, countedAt, countVote, namesVoter, recordNamesVoter } from './clickVotes.js';
import type { Decider, DecisionOutcome } from './decider.js';
import { whyNotDecidable } from './decisionCheck.js';
import { reasonMissing } from './reasonRule.js';
import { refusalFor } from './refusals.js';
import { typedConfirmationFor } from './typedConfirmation.js';

export { type Click, type ClickCheck, RECORD_WITHIN_MS } from './click.js';

/**
 * Where the ClickHandler finds a click's approval: it only ever reads it (changes go through the
 * RecordKeeper and the Decider).
 */
export type ClickRecords = Pick<ApprovalStore, 'recentCard' | 'getForMessage' | 'get' | 'findByMessage'>;

/** Checks of one click against an approval that keeps changing under it, before giving up. */
const MAX_CHECKS = 5;

/** Refusals that mean the card showed something no longer true: it is re-rendered. */
const RESYNC_AFTER: ReadonlySet<Refusal['code']> = new Set([
  'cannotRemember',
  'questionChanged',
  'alreadyResolved',
  'superseded',
  'orphaned',
  'underReview',
  'sessionElsewhere',
  'settledByHost',
  'routeChanged',
]);

/** Where "don't ask again" is offered and kept (GrantMaker). */
export interface Remembering {
  offer(record: ApprovalRecord): RememberOffer | undefined;
  /**
   * `stage`: the sourceIndex pressed; nothing is remembered unless it is still the record's
   * current stage. `scope`: a scopeToken; nothing is remembered unless the route offers it now.
   */
  remember(record: ApprovalRecord, userId: string, stage: number, scope: string): Promise<unknown>;
}

export interface ClickHandlerOptions {
  store: ClickRecords;
  decider: Decider;
  keeper: RecordKeeper;
  /** Tells the person who clicked, and only them, what came of it (slack/ words it). */
  notifier: RefusalNotifier;
  /** Who may decide: checked on every click and modal submit, before anything is claimed. */
  authorizer: Authorizer;
  /** Where refused attempts are recorded, when there is an audit trail. */
  audit?: AuditTrail;
  /** Without it, a "don't ask again" click is refused. */
  remembering?: Remembering;
  /** Told how long each click took to become a decision the host accepted. */
  metrics?: Pick<Metrics, 'clickDecided'>;
  logger: Logger;
}

/**
 * A click becomes at most one decision: find the approval from the message (never from the
 * button alone), check that the question is still the one shown, hand it to the Decider, and
 * tell the person, and only them, whatever they need to know.
 */
export class ClickHandler {
  private readonly clicks = new Set<Promise<void>>();
  private accepting = true;

  constructor(private readonly options: ClickHandlerOptions) {}

  /** Looks the click's approval up and checks the click against it. Rejects when Redis does. */
  /** `quiet`: a refusal is neither logged nor audited (it was, for this attempt, already). */
  async check(click: Click, how: { quiet?: boolean } = {}): Promise<ClickCheck> {
    const { store } = this.options;
    // A card this process read or wrote lately is checked without a read, unless this process is
    // changing it right now. Only a check that lets the click through is taken from it: the claim
    // is refused if the record changed since (then everything is checked again, see handle()); a
    // refusal is only ever said from Redis. A decision another replica carries out is claimed
    // there, without that guard: it is checked against what Redis holds.
    const hint = click.approvalHint;
    const recent =
      hint && !this.options.keeper.busy(hint) ? store.recentCard(click.channel, click.ts, hint) : undefined;
    if (recent && this.options.decider.decidesHere(recent.hostId)) {
      const checked = await this.checkFound(recent, click, { quiet: true });
      if (checked.ok) return checked;
    }
    if (click.approvalHint) {
      const found = await store.getForMessage(click.channel, click.ts, click.approvalHint);
      if (found.mappedTo === click.approvalHint) return this.checkFound(found.record, click, how);
      if (!found.mappedTo) return { ok: false, refusal: { code: 'unknownCard' } };
      // The button named another approval than the message is mapped to: trust the mapping.
      return this.checkFound(await store.get(found.mappedTo), click, how);
    }
    const approvalId = await store.findByMessage(click.channel, click.ts);
    return approvalId
      ? this.checkFound(await store.get(approvalId), click, how)
      : { ok: false, refusal: { code: 'unknownCard' } };
  }

  /**
   * A check already under way, bounded by the click's deadline: when Redis does not answer in
   * time the click cannot count, and the person is told so at once.
   */
  async checkInTime(click: Click, checking: Promise<ClickCheck>): Promise<ClickCheck> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<ClickCheck>((resolve) => {
      timer = setTimeout(
        () => resolve({ ok: false, refusal: { code: 'notRecorded' } }),
        Math.max(0, deadlineOf(click) - Date.now()),
      );
    });
    const answered = checking.catch((err: unknown): ClickCheck => {
      this.options.logger.error({ err, channel: click.channel, ts: click.ts }, 'click lookup failed');
      return { ok: false, refusal: { code: 'notRecorded' } };
    });
    try {
      return await Promise.race([answered, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * Handles one click; drain() waits for it from the first read to the host's answer. `checked`
   * is the caller's check of this click (see checkInTime), so it is not made again.
   */
  click(click: Click, checked?: ClickCheck): Promise<void> {
    if (!this.accepting) return this.tell(click, { code: 'stopping' });
    const task = this.handle(click, checked).catch((err: unknown) => {
      this.options.logger.error({ err, channel: click.channel, ts: click.ts }, 'click failed');
    });
    this.clicks.add(task);
    return task.finally(() => this.clicks.delete(task));
  }

  /**
   * One decision of a batch (batchDecider.ts), checked as a click by check(): decided as the click
   * would be, but its outcome is handed back for the batch's one answer instead of told. A refusal
   * where it was claimed is audited as the click's would be, unless `quiet` (this attempt was
   * audited already). The batch leaves quorum routes alone, so no vote is ever counted here.
   */
  decideAsPartOfBatch(
    click: Click,
    checked: Extract<ClickCheck, { ok: true }>,
    how: { quiet?: boolean } = {},
  ): Promise<DecisionOutcome | undefined> {
    const task = this.decideChecked(click, checked).then(({ record, outcome }) => {
      if (outcome && !how.quiet) this.auditRefusedWhereClaimed(click, record, outcome);
      return outcome;
    });
    const tracked = task.then(
      () => undefined,
      () => undefined,
    );
    this.clicks.add(tracked);
    void tracked.finally(() => this.clicks.delete(tracked));
    return task;
  }

  /** Tells one person, and only them, why their click changed nothing. */
  refuse(click: Pick<Click, 'channel' | 'userId'>, refusal: Refusal): Promise<void> {
    return this.tell(click, refusal);
  }

  /** Stop taking clicks; resolves when every click already taken has been answered. */
  async drain(): Promise<void> {
    this.accepting = false;
    while (this.clicks.size > 0) await Promise.allSettled([...this.clicks]);
  }

  /** `quiet`: a refusal is neither logged nor audited (a check against a record held in memory). */
  private async checkFound(
    record: ApprovalRecord | undefined,
    click: Click,
    how: { quiet?: boolean } = {},
  ): Promise<ClickCheck> {
    if (!record) return { ok: false, refusal: { code: 'unknownCard' } };
    const why = whyNotDecidable(record, click);
    if (why)
      return { ok: false, refusal: refusalFor(why, click.userId), approvalId: record.approvalId, record };
    const choice = record.availableChoices.find((c) => c.choiceId === click.choiceId)!;
    // Asked on every click and again at modal submit: rules and group membership may change
    // while a modal is open.
    const authorization = await this.options.authorizer.check(click.userId, record);
    if (!authorization.allowed) {
      const action = click.from === 'modal' ? 'modalSubmit' : choice.acceptsFeedback ? 'modalOpen' : 'click';
      if (!how.quiet) this.audited(record, click.userId, action, authorization.why);
      return { ok: false, refusal: { code: 'notAuthorized', refused: authorization } };
    }
    // A stand-in's rights end when the absence does: nothing they pick may outlast the request.
    if (authorization.because === 'delegate' && (click.remember || outlastsRequest(choice))) {
      const refusal: Refusal = { code: 'standInOnce', for: authorization.for };
      return { ok: false, refusal, approvalId: record.approvalId };
    }
    // The button or modal showed one question; the host may have asked another since on the same
    // stage (another command, say). Checked before the confirmation modal, which shows the new one.
    if (click.namesNoQuestion) {
      // Told of what was submitted: a modal is a form, not the card's button.
      const refusal: Refusal = {
        code: 'questionChanged',
        why: click.from === 'modal' ? 'unnamedForm' : 'unnamed',
      };
      return { ok: false, refusal, approvalId: record.approvalId };
    }
    if (click.askedAs !== undefined && click.askedAs !== questionDigest(record)) {
      return { ok: false, refusal: { code: 'questionChanged' }, approvalId: record.approvalId };
    }
    // Who may grant is who may decide: checked above. The offer, and the scope pressed among the
    // route's choices, are checked again as they stand now. A press that names no scope is
    // refused: every card that offers "don't ask again" names one per button, and no default may
    // stand in for it (the route's ttl would outlast a route that offers only uses or the session).
    if (click.remember) {
      const offer = this.options.remembering?.offer(record);
      const scopeOffered =
        click.rememberScope !== undefined &&
        offer !== undefined &&
        offeredScope(offer.scopes, click.rememberScope) !== undefined;
      if (offer?.choiceId !== click.choiceId || !scopeOffered) {
        return { ok: false, refusal: { code: 'cannotRemember' }, approvalId: record.approvalId };
      }
    }
    // After who may decide: the confirmation modal only opens for someone who may submit it.
    const confirmation = typedConfirmationFor(record, choice);
    if (confirmation && click.typed === undefined) {
      const refusal: Refusal = { code: 'confirmationNeeded', confirmation };
      return { ok: false, refusal, approvalId: record.approvalId, record };
    }
    if (confirmation && !confirmsTarget(click.typed, confirmation.target)) {
      return {
        ok: false,
        refusal: { code: 'confirmationMismatch', confirmation },
        approvalId: record.approvalId,
      };
    }
    const rules = this.options.authorizer.authority(record).rules ?? OPEN_RULES;
    const onBehalfOf = authorization.because === 'delegate' ? authorization.for : undefined;
    return { ok: true, record, choice, rules, ...(onBehalfOf ? { onBehalfOf } : {}) };
  }

  /**
   * A refused attempt is logged and audited, never posted where others would see it: a click, a
   * modal, a decision refused where it was claimed, or "View full".
   */
  audited(
    record: Pick<ApprovalRecord, 'approvalId' | 'hostId' | 'route'>,
    userId: string,
    action: RefusedAction,
    reason: string,
  ): void {
    const entry: AuditEntry = {
      kind: 'refusal',
      approvalId: record.approvalId,
      hostId: record.hostId,
      ...(record.route ? { route: record.route } : {}),
      userId,
      action,
      reason,
      at: new Date().toISOString(),
    };
    this.options.logger.info(entry, 'decision refused: user may not decide on this route');
    this.options.audit?.append(entry).catch((err: unknown) => {
      this.options.logger.warn({ err, approvalId: record.approvalId }, 'could not append to the audit trail');
    });
  }

  private async handle(click: Click, alreadyChecked?: ClickCheck): Promise<void> {
    let checked = alreadyChecked ?? (await this.checkInTime(click, this.check(click)));
    // The vote this press stored that completed a quorum: audited as a vote unless it decides.
    let cast: CastVote | undefined;
    for (let attempt = 1; ; attempt++) {
      if (!checked.ok) {
        // Checked again after a change: a co-voter's decision naming this vote may stand in its way.
        if (cast && !recordNamesVoter(checked.record, click)) auditVoteCast(cast, this.options);
        await this.tell(click, checked.refusal);
        // A card that showed a question no longer open gets the current state back.
        if (checked.approvalId) this.resync(checked.approvalId, checked.refusal);
        return;
      }
      const decided = await this.decideChecked(click, checked, cast);
      cast ??= decided.cast;
      if (!decided.outcome) {
        // Counted again after a change, the vote completes nothing now (and was stored before).
        if (cast) auditVoteCast(cast, this.options);
        return;
      }
      const { record, outcome } = decided;
      if (outcome.kind !== 'changed' || attempt === MAX_CHECKS) {
        if (cast && !namesVoter(outcome, click.userId)) auditVoteCast(countedAt(cast, outcome), this.options);
        await this.answer(click, record, outcome);
        return;
      }
      // The approval changed between the check and the claim: everything is checked again against
      // what it is now, who may decide included (a new stage may carry other risks).
      checked = await this.checkInTime(click, this.check(click));
    }
  }

  /**
   * Counts the pick toward a quorum when one is needed, then decides; no outcome when the vote
   * ended it. `cast`: the vote stored anew that completed the quorum. `castBefore`: the vote an
   * earlier try of this press stored, counted again now (so not stored anew).
   */
  private async decideChecked(
    click: Click,
    checked: Extract<ClickCheck, { ok: true }>,
    castBefore?: CastVote,
  ): Promise<{ record: ApprovalRecord; outcome?: DecisionOutcome; cast?: CastVote }> {
    let record = checked.record;
    // Every decision a person makes passes here: a press, a modal's submit, a batch's member. The
    // modals ask for a reason the route requires before they close (feedbackSubmission.ts, the
    // batch's "Reject all"); one that reaches here without it, from a press that opened no modal
    // (sent with no trigger_id), is refused rather than sent without one, before any vote counts.
    // The replica that claims it asks again, by its own configuration (DecisionWarrant).
    const missing = reasonMissing(record, checked.choice, checked.rules, click.feedback);
    if (missing) return { record, outcome: missing };
    let voters: string[] | undefined;
    let stoodInFor: Record<string, string> | undefined;
    let cast: CastVote | undefined;
    const quorum = this.options.authorizer.quorum(record);
    // Stopping the agent needs one person; letting it go ahead, or anything not known to stop it,
    // may need several.
    if (quorum > 1 && needsQuorum(checked.choice.decision)) {
      const counted = await countVote(click, record, quorum, this.options, checked.onBehalfOf);
      if (!counted.complete) {
        await this.tell(click, counted.refusal);
        if (counted.approvalId) this.resync(counted.approvalId, counted.refusal);
        return { record };
      }
      ({ record, voters, stoodInFor, cast } = counted);
    }
    const outcome = await this.options.decider.decide({
      record,
      sourceIndex: click.sourceIndex,
      choiceId: checked.choice.choiceId,
      feedback: click.feedback,
      by: {
        via: 'click',
        userId: click.userId,
        ...(voters ? { voters } : {}),
        ...(stoodInFor ? { stoodInFor } : {}),
        // Checked again by the replica that claims it, on the record it holds (DecisionWarrant).
        ...(click.typed !== undefined ? { typed: click.typed } : {}),
        ...(checked.onBehalfOf ? { onBehalfOf: checked.onBehalfOf } : {}),
        // Likewise the question the person saw, where what they saw must still be asked.
        ...(click.askedAs !== undefined ? { askedAs: click.askedAs } : {}),
        // And a "don't ask again": its grant is stored in the person's name once this decision
        // goes through, so they must not be deciding only as someone's stand-in when it is claimed.
        ...(click.remember ? { remember: true as const } : {}),
      },
      recordBy: deadlineOf(click),
      // Should the decision be handed on and end after its asker stopped waiting, the owner
      // audits the vote that completed the quorum (answerLate): on a try after a change too,
      // where the count found it stored already and the asker audits nothing on `forwarded`.
      asker: askerOf(click, cast ?? castBefore),
      onChange: 'return',
      // Checked just now against this record (checkFound). Not a quorum's record: the vote stored
      // it afresh, so the stage may ask otherwise now and each voter must still be one who may
      // decide; the DecisionWarrant checks it all against the record as it stands. Nor a "don't
      // ask again": who the person stands in for is read again as it is claimed, here as at the
      // host's owner, since the grant it leaves outlasts the request.
      warranted: voters === undefined && !click.remember,
      ...(click.onSent ? { onSent: click.onSent } : {}),
    });
    if (outcome.kind === 'decided' && click.receivedAt !== undefined) {
      this.options.metrics?.clickDecided((Date.now() - click.receivedAt) / 1000);
    }
    return { record, outcome, ...(cast ? { cast } : {}) };
  }

  /**
   * The outcome of a decision whose asker stopped waiting (it was carried out by the replica that
   * owns the host, after the one that took the click had told the person it was handed on). The
   * vote that completed the quorum is audited here when the decision did not go through.
   */
  answerLate(asker: Record<string, unknown>, approvalId: string, outcome: DecisionOutcome): void {
    const parsed = Asker.safeParse(asker);
    if (!parsed.success) return;
    const click = parsed.data;
    // Heard `forwarded`, the asker audited no vote: the decision could yet have named it.
    if (click.vote && !namesVoter(outcome, click.userId))
      auditVoteCast(countedAt(click.vote, outcome), this.options);
    const task = (async () => {
      // A grant is made from the record as it is now, and a refusal audited with its route.
      const needsRecord = (outcome.kind === 'decided' && click.remember) || outcome.kind === 'notAuthorized';
      const record = needsRecord ? await this.options.store.get(approvalId) : undefined;
      if (outcome.kind === 'decided' && click.remember && !record) {
        await this.tell(click, { code: 'grantNotStored' });
        return;
      }
      await this.answer(click, record, outcome, approvalId, { late: true });
    })().catch((err: unknown) => {
      this.options.logger.warn({ err, approvalId }, 'could not answer a forwarded decision');
    });
    this.clicks.add(task);
    void task.finally(() => this.clicks.delete(task));
  }

  /**
   * Tells the person how their decision went: nothing when it went through, else why not. A
   * refusal of who may decide found where the decision was claimed (another replica) is audited
   * here, as one found by the click's own check is.
   */
  private async answer(
    click: Answerable,
    record: ApprovalRecord | undefined,
    outcome: DecisionOutcome,
    approvalId = record?.approvalId,
    how: { late: boolean } = { late: false },
  ): Promise<void> {
    if (outcome.kind === 'decided') {
      if (click.remember) await this.rememberPressed(click, record, how);
      return;
    }
    if (record) this.auditRefusedWhereClaimed(click, record, outcome);
    const refusal = refusalFor(outcome, click.userId);
    await this.tell(click, refusal);
    if (approvalId) this.resync(approvalId, refusal);
  }

  /** Who may decide, refused by the replica that claimed it: not seen by the click's own check. */
  private auditRefusedWhereClaimed(
    click: Answerable,
    record: ApprovalRecord,
    outcome: DecisionOutcome,
  ): void {
    if (outcome.kind !== 'notAuthorized') return;
    const action = click.from === 'modal' ? 'modalSubmit' : 'click';
    this.audited(record, click.userId, action, outcome.refused.why);
  }

  /**
   * The "don't ask again" of a decision that went through, for the stage pressed only: when the
   * approval has moved on since (a forwarded press answered late), nothing is remembered.
   */
  private async rememberPressed(
    click: Answerable,
    record: ApprovalRecord | undefined,
    how: { late: boolean },
  ): Promise<void> {
    const stage = click.sourceIndex;
    if (record && stage === record.currentRequirementId.sourceIndex && !sawQuestion(click, record, how)) {
      this.options.logger.info(
        { approvalId: record.approvalId, userId: click.userId, stage },
        'the stage "don\'t ask again" was pressed on is asked otherwise now; nothing remembered',
      );
      await this.tell(click, { code: 'grantNotStored', why: 'askedOtherwise' });
      return;
    }
    // A press that names no scope was refused where it was taken; an asker of an earlier release
    // may still name none, and then nothing is remembered.
    const scope = click.rememberScope;
    const grant =
      record && stage !== undefined && scope !== undefined
        ? await this.options.remembering?.remember(record, click.userId, stage, scope)
        : undefined;
    if (grant) return;
    const moved = !record || stage !== record.currentRequirementId.sourceIndex;
    await this.tell(click, { code: 'grantNotStored', ...(record && moved ? { why: 'stageMoved' } : {}) });
  }

  private resync(approvalId: string, refusal: Refusal): void {
    if (!RESYNC_AFTER.has(refusal.code)) return;
    this.options.keeper.resync(approvalId).catch((err: unknown) => {
      this.options.logger.warn({ err, approvalId }, 'could not refresh the card');
    });
  }

  private async tell(click: Pick<Click, 'channel' | 'userId'>, refusal: Refusal): Promise<void> {
    try {
      await this.options.notifier.refuse(click.channel, click.userId, refusal);
    } catch (err) {
      this.options.logger.warn(
        { err, userId: click.userId, refusal: refusal.code },
        'could not send ephemeral message',
      );
    }
  }
}

type RefusedAction = Extract<AuditEntry, { kind: 'refusal' }>['action'];

export type { DecisionOutcome };

/**
 * Whether `record` asks what the person saw when they pressed. A decision answered at once is
 * answered with the record its claim proved unchanged; one answered late (the owner carried it
 * out after the asker stopped waiting) is answered with the record as it is now, which the host
 * may have asked otherwise on the same stage meanwhile: then only the press's own digest can say,
 * and a press that names none remembers nothing.
 */
function sawQuestion(click: Answerable, record: ApprovalRecord, how: { late: boolean }): boolean {
  if (click.askedAs === undefined) return !how.late;
  return click.askedAs === questionDigest(record);
}
