import type { Logger } from 'pino';
import type { Grant, GrantStore } from '../../domain/grants/grant.js';
import { findGrant, type GrantQuestion, grantQuestion, sessionCallerOf } from '../../domain/grants/match.js';
import type { Metrics } from '../../domain/metrics.js';
import { type ApprovalRecord, type Claim, type GrantRef, isTerminal } from '../../domain/record.js';
import type { RouteGrants } from '../../domain/route.js';
import type { Decider, DecisionOutcome, DecisionRequest } from '../deciding/decider.js';
import { claimKept } from '../deciding/decision.js';
import type { NoticeLedger } from '../deciding/decisionNotices.js';
import { claimed } from '../records/decisionMutations.js';
import type { RecordKeeper } from '../records/recordKeeper.js';

type Next = 'done' | 'showCard';

/** How long a grant's answer makes a like request worth a lookup before its create. */
const HIT_MEMORY_MS = 5 * 60_000;
/** How many such requests (buckets) are remembered; past it, the oldest answer is forgotten. */
const HIT_MEMORY_MAX = 10_000;
/**
 * How long a replayed decision is remembered here once replayed() counted it (decideBy does not
 * count it again) or replayDropped() gave its use back (not given back twice).
 */
const REPLAY_MEMORY_MS = 60_000;

/** A request answered by a grant before its record exists: the record to create, already claimed. */
export interface ClaimedAtCreate {
  /** Its card deferred, its stage claimed by the grant (the claim the Decider would store). */
  record: ApprovalRecord & { claim: Claim };
  /** With its use taken, when it is a grant by uses. */
  grant: Grant;
  question: GrantQuestion;
}

/** The Slack side: the compact line a grant's use leaves in the channel instead of a card. */
export interface GrantLineSender {
  grantUsed(record: ApprovalRecord, grant: Grant, question: GrantQuestion): Promise<void>;
}

/** Where the answerer reads an approval afresh: it never writes one itself. */
export interface RecordReader {
  get(approvalId: string): Promise<ApprovalRecord | undefined>;
}

export interface GrantAnswererOptions {
  /** Grants are looked up, a use taken and given back, and a use counted. */
  grants: Pick<GrantStore, 'candidates' | 'reserveUse' | 'returnUse' | 'recordUse' | 'get'>;
  store: RecordReader;
  /** Shows a card no grant answered (reveal), and tracks the work so idle() waits for it. */
  keeper: Pick<RecordKeeper, 'reveal' | 'track'>;
  decider: Pick<Decider, 'decide' | 'claimFor' | 'grantStillAnswers'>;
  lines: GrantLineSender;
  /** Each line is sent once per stage, whichever replica or retry gets there. */
  ledger: NoticeLedger;
  /** The grants of the route a record names; undefined (none) for a route gone from the file. */
  grantsOf: (route: string | undefined) => RouteGrants | undefined;
  logger: Logger;
  now?: () => Date;
  /** Told of each request a grant decided. */
  metrics?: Pick<Metrics, 'grantUsed'>;
}

/**
 * Answers, stage by stage, what a remembered grant covers, before any card is shown. An approval
 * a grant may answer is stored with its card deferred (slack.deferred); this looks its grants up
 * (one Redis round trip), decides through the Decider with the offered once-choice, and leaves a
 * line in the channel. Whatever no grant covers, or a grant could not decide, gets its card.
 */
export class GrantAnswerer {
  private readonly now: () => Date;
  /** approvalId → the look in progress: one at a time per approval, each on a fresh read. */
  private readonly looks = new Map<string, Promise<void>>();
  /** approvalId → the grant the relay found for it before creating it (see expect()). */
  private readonly found = new Map<string, Grant>();
  /** A like request (bucketOf) → when a grant last answered one here (ms): see expectsGrant(). */
  private readonly answered = new Map<string, number>();
  /** Approvals decideBy is deciding: their use and line are its to leave, not replayed()'s. */
  private readonly deciding = new Set<string>();
  /**
   * Approvals whose replayed decision replayed() counted here lately: a decideBy of the same
   * claim that starts after (the host asked again before its first send) finds it sent and
   * leaves it be. It saves the writes only: the store counts a stage's use once whoever records
   * it again (GrantStore.recordUse), the old owner of a host that finishes a decision its new
   * owner replayed included.
   */
  private readonly countedOnReplay = new Set<string>();
  /**
   * Claims (commandIds) whose replay the host did not take and whose use was given back here
   * lately: the host lists an approval as it asks it again, so one claim may be replayed twice
   * before its drop is stored, and its use must come back once.
   */
  private readonly givenBackOnReplay = new Set<string>();

  constructor(private readonly options: GrantAnswererOptions) {
    this.now = options.now ?? (() => new Date());
  }

  /** The live grant that answers the record's current stage, if any: one round trip. Never rejects. */
  async find(record: ApprovalRecord): Promise<Grant | undefined> {
    const asked = this.askable(record);
    if (!asked) return undefined;
    const { question, sessionCaller } = asked;
    try {
      const now = this.now();
      return findGrant(await this.candidates(question, sessionCaller, now), question, now, sessionCaller);
    } catch (err) {
      // Not knowing is asking: the card is posted.
      this.options.logger.warn(
        { err, approvalId: record.approvalId },
        'could not look up grants; asking people',
      );
      return undefined;
    }
  }

  /**
   * Whether a grant answered a request like `record` here lately (bucketOf). Then its lookup goes
   * before its create, not with it (claimAtCreate): an agent repeats its commands, and a request
   * that no grant answered lately is not slowed by a round trip before its card.
   */
  expectsGrant(record: ApprovalRecord): boolean {
    // On the path of every card: nothing to work out while no grant has answered anything.
    if (this.answered.size === 0) return false;
    const asked = this.askable(record);
    const at = asked && this.answered.get(bucketOf(asked.question));
    return at !== undefined && this.now().getTime() - at < HIT_MEMORY_MS;
  }

  /**
   * The record to create for `fresh`, its stage already claimed by the grant that answers it and
   * its card deferred: one write, where a record answered after its create takes three (create,
   * deferral, claim). Undefined when no grant answers, or grants cannot be read: the caller
   * creates the record as usual, and its card is posted. A use of a grant by uses is taken here:
   * decideClaimed() spends it, dropClaimed() gives it back. Never rejects.
   */
  async claimAtCreate(fresh: ApprovalRecord): Promise<ClaimedAtCreate | undefined> {
    const asked = this.askable(fresh);
    if (!asked || fresh.phase !== 'pending') return undefined;
    const { question, sessionCaller } = asked;
    let grant: Grant | undefined;
    try {
      const now = this.now();
      grant = await this.take(
        await this.candidates(question, sessionCaller, now),
        question,
        now,
        sessionCaller,
      );
    } catch (err) {
      // Not knowing is asking: the card is posted.
      this.options.logger.warn(
        { err, approvalId: fresh.approvalId },
        'could not look up grants; asking people',
      );
      return undefined;
    }
    if (!grant) {
      this.answered.delete(bucketOf(question));
      return undefined;
    }
    const deferred: ApprovalRecord = { ...fresh, slack: { ...fresh.slack, deferred: true } };
    const claim = this.options.decider.claimFor(deferred, grantDecision(question, grant));
    const record = claim && claimed(claim)(deferred);
    if (!claim || !record) {
      await this.giveBack(grant);
      return undefined;
    }
    return { record, grant, question };
  }

  /**
   * Whether the grant of a record created claimed (claimAtCreate) still answers, as stored now:
   * one read, made with the create so that it costs no round trip of its own, which its
   * decision then goes on (decideClaimed). Never rejects.
   */
  readGrant(answer: ClaimedAtCreate): Promise<boolean> {
    return this.options.decider.grantStillAnswers(answer.record, answer.record.claim);
  }

  /**
   * Sends the decision of a record created claimed (claimAtCreate), as a look would have, on
   * its grant as read with its create (`grantRead`, readGrant): nothing is sent unless that read
   * says the grant still answers.
   */
  decideClaimed(answer: ClaimedAtCreate, grantRead?: Promise<boolean>): void {
    const { record, grant, question } = answer;
    this.schedule(record.approvalId, () =>
      this.decideBy(record, grant, question, { commandId: record.claim.commandId, grantRead }),
    );
  }

  /** A record claimed at its create was not created (it existed already): the use is given back. */
  dropClaimed(answer: ClaimedAtCreate): Promise<void> {
    return this.giveBack(answer.grant);
  }

  /** The relay found `grant` for an approval it is creating deferred: the first look uses it. */
  expect(approvalId: string, grant: Grant | undefined): void {
    if (grant) this.found.set(approvalId, grant);
    else this.found.delete(approvalId);
  }

  /** RecordKeeper follower: a deferred card of an open approval nobody is deciding is looked at. */
  follow(record: ApprovalRecord): void {
    if (!record.slack.deferred || isTerminal(record) || record.claim) return;
    this.consider(record.approvalId, record);
  }

  /**
   * Looks at an approval again (after the one in progress): answers it by grant or shows its
   * card. `known`, the record just stored, spares a read when no other look is in progress.
   */
  consider(approvalId: string, known?: ApprovalRecord): void {
    this.schedule(approvalId, (first) => this.look(approvalId, first ? known : undefined));
  }

  /**
   * Runs `task` after the look in progress for the approval, if any (`first`: none was), then
   * shows the card if it says so.
   */
  private schedule(approvalId: string, task: (first: boolean) => Promise<Next>): void {
    const previous = this.looks.get(approvalId);
    const looked = previous ? previous.then(() => task(false)) : task(true);
    const settled = looked
      .catch((err: unknown): Next => {
        this.options.logger.error({ err, approvalId }, 'answering by grant failed; showing the card');
        return 'showCard';
      })
      .then((next) => (next === 'showCard' ? this.options.keeper.reveal(approvalId) : undefined))
      .catch((err: unknown) => {
        // A post Slack refused is tried again later by the keeper; nothing more to do here.
        this.options.logger.warn({ err, approvalId }, 'could not show the card yet');
      });
    this.looks.set(approvalId, settled);
    this.options.keeper.track(settled);
    void settled.finally(() => {
      if (this.looks.get(approvalId) === settled) this.looks.delete(approvalId);
    });
  }

  /** Decides by grant what one covers; says whether the card must be shown instead. */
  private async look(approvalId: string, known?: ApprovalRecord): Promise<Next> {
    const { store } = this.options;
    const record = known ?? (await store.get(approvalId));
    if (!record?.slack.deferred || isTerminal(record) || record.claim) return 'done';
    // Under review or out of reach: there is nothing a grant could decide now, and people should see it.
    if (record.phase !== 'pending') return 'showCard';
    const asked = this.askable(record);
    if (!asked) return 'showCard';
    const { question, sessionCaller } = asked;
    const expected = this.found.get(approvalId);
    this.found.delete(approvalId);
    const now = this.now();
    // Found just before the record was created; matched again here in case the question moved since.
    const grant =
      (expected && findGrant([expected], question, now, sessionCaller)
        ? await this.take([expected], question, now, sessionCaller)
        : undefined) ??
      (await this.take(await this.candidates(question, sessionCaller, now), question, now, sessionCaller));
    if (!grant) return 'showCard';
    return this.decideBy(record, grant, question);
  }

  /**
   * Decides the record's stage by `grant` through the Decider; says whether the card must be
   * shown instead. `claimed`: the record holds the grant's claim already (claimAtCreate), and
   * maybe its grant read with its create (DecisionRequest.grantRead).
   */
  private async decideBy(
    record: ApprovalRecord,
    grant: Grant,
    question: GrantQuestion,
    claimed?: { commandId: string; grantRead: Promise<boolean> | undefined },
  ): Promise<Next> {
    const { decider, logger } = this.options;
    const { approvalId } = record;
    let outcome: Awaited<ReturnType<Decider['decide']>>;
    this.deciding.add(approvalId);
    try {
      try {
        outcome = await decider.decide({
          record,
          ...grantDecision(question, grant),
          // Found for this very record just now.
          warranted: true,
          ...(claimed ? { commandId: claimed.commandId } : {}),
          ...(claimed?.grantRead ? { grantRead: claimed.grantRead } : {}),
        });
      } catch (err) {
        await this.giveBack(grant);
        throw err;
      }
      if (outcome.kind === 'decided') {
        this.rememberAnswered(question);
        if (this.countedOnReplay.has(approvalId)) return 'done';
        this.options.metrics?.grantUsed();
        // Not behind the line's claim, so the count still rides the resolution: the store counts
        // it once per stage, should another replica have replayed and counted this decision
        // while this one was cut off from Redis (its writes landing after).
        await Promise.all([
          this.recordUse(record, grant, question.sourceIndex, { ride: true }),
          this.leaveLine(record, grant, question),
        ]);
        return 'done';
      }
    } finally {
      this.deciding.delete(approvalId);
    }
    if (outcome.kind === 'forwarded') {
      // Handed to the replica that owns the host now (this one lost it as it decided), which had
      // not answered in time: it may still carry the decision out, by this grant and on the use
      // taken here. Given back, that use would be spent twice. The card is shown all the same, so
      // a request the owner does not decide is not left without one; a press then races the
      // forwarded decision for the stage's claim, and one of them decides.
      logger.info(
        { approvalId, grantId: grant.grantId },
        'a grant’s decision was handed to the host’s new owner, which has not answered; showing the card',
      );
      return 'showCard';
    }
    if (usePending(outcome)) return 'done';
    await this.giveBack(grant);
    logger.info(
      { approvalId, grantId: grant.grantId, outcome: outcome.kind },
      'a grant matched but could not decide; showing the card',
    );
    return 'showCard';
  }

  /**
   * The question a grant of the record's route could answer, and the session's caller when the
   * route binds some grants to the session; undefined when no grant could answer.
   */
  private askable(record: ApprovalRecord): { question: GrantQuestion; sessionCaller?: string } | undefined {
    const settings = this.options.grantsOf(record.route);
    const question = settings?.enabled ? grantQuestion(record) : undefined;
    if (!question) return undefined;
    const sessionCaller = sessionCallerOf(record, settings!.choices);
    return sessionCaller === undefined ? { question } : { question, sessionCaller };
  }

  /** A grant answered a request like the question just now (expectsGrant). */
  private rememberAnswered(question: GrantQuestion): void {
    const bucket = bucketOf(question);
    // Newest last: the first entry is the oldest answer, forgotten first.
    this.answered.delete(bucket);
    this.answered.set(bucket, this.now().getTime());
    if (this.answered.size > HIT_MEMORY_MAX) this.answered.delete(this.answered.keys().next().value!);
  }

  /** The candidates of the question's bucket, and of the session's when the route binds some grants there. */
  private async candidates(question: GrantQuestion, sessionCaller: string | undefined, now: Date) {
    const { grants } = this.options;
    // Only the bucket of the record's own route: a grant of another route never answers it.
    const { caller, tool, sandboxMode, route } = question;
    if (sessionCaller === undefined) return grants.candidates({ caller, tool, sandboxMode, route }, now);
    const both = await Promise.all([
      grants.candidates({ caller, tool, sandboxMode, route }, now),
      grants.candidates({ caller: sessionCaller, tool, sandboxMode, route }, now),
    ]);
    return both.flat();
  }

  /**
   * The grant that answers, with its use taken when it is a grant by uses (before it decides, so
   * two requests never both spend the last one). A grant whose uses another request took first
   * is passed over for the next best. Time-bound grants cost nothing here.
   */
  private async take(
    candidates: readonly Grant[],
    question: GrantQuestion,
    now: Date,
    sessionCaller: string | undefined,
  ): Promise<Grant | undefined> {
    let left = candidates;
    for (;;) {
      const grant = findGrant(left, question, now, sessionCaller);
      if (!grant || grant.usesLeft === undefined) return grant;
      const usesLeft = await this.options.grants.reserveUse(grant, now);
      if (usesLeft !== undefined) return { ...grant, usesLeft };
      left = left.filter((g) => g.grantId !== grant.grantId);
    }
  }

  /** A use taken for a decision that did not go through is given back. Never rejects. */
  private async giveBack(grant: Pick<Grant, 'grantId' | 'usesLeft'>): Promise<void> {
    if (grant.usesLeft === undefined) return;
    try {
      await this.options.grants.returnUse(grant);
    } catch (err) {
      this.options.logger.warn({ err, grantId: grant.grantId }, 'a reserved grant use was not given back');
    }
  }

  /**
   * A decision by grant that the Decider carried out again went through: its first send was cut
   * short (the host was away, or the process that sent it died), and nothing counted its use or
   * left its line. Both are done now, as decideBy does after a first send (countAfterwards).
   * Never rejects.
   */
  async replayed(record: ApprovalRecord, claim: Claim): Promise<void> {
    const ref = claim.via === 'grant' ? claim.grant : undefined;
    // Deciding it here still: decideBy counts and leaves the line when the send it shares is done.
    if (!ref || this.deciding.has(record.approvalId)) return;
    await this.countAfterwards(record, ref, claim.sourceIndex);
  }

  /**
   * A decision forwarded to this replica, the host's owner, was carried out after its asker
   * stopped waiting (DecisionForwarding). The asker of a decision by grant then showed the card,
   * keeping the use it took and counting nothing: the use is counted and the line left here, as
   * the asker would have on hearing `decided` (countAfterwards); a decision that cannot go through
   * gives it back here, as the asker would have, or the grant would lose a use. Never rejects.
   */
  async decidedUnheard(request: DecisionRequest, outcome: DecisionOutcome): Promise<void> {
    if (request.by.via !== 'grant') return;
    const ref = request.by.grant;
    if (outcome.kind === 'decided') await this.countAfterwards(request.record, ref, request.sourceIndex);
    else if (!usePending(outcome)) await this.giveBack({ grantId: ref.grantId, usesLeft: ref.usesLeft });
  }

  /**
   * Counts the use of a decision by grant that went through without its first sender counting
   * it, and leaves its line, once the line's notice claim is won: a first send that got as far
   * as counting took that claim in the same write (both ride the resolution), and a decision
   * both replayed and carried out late is counted by whichever wins it. A first sender whose
   * writes land only after this (a partition) counts it too, and the store, which counts a
   * stage's use once (GrantStore.recordUse), keeps one. So a use is never counted twice. Never
   * rejects.
   */
  private async countAfterwards(record: ApprovalRecord, ref: GrantRef, sourceIndex: number): Promise<void> {
    const { approvalId } = record;
    const { ledger, logger } = this.options;
    this.countedOnReplay.add(approvalId);
    setTimeout(() => this.countedOnReplay.delete(approvalId), REPLAY_MEMORY_MS).unref();
    try {
      if (!(await ledger.claim(approvalId, lineKind(sourceIndex)))) return;
      const grant = await this.options.grants.get(ref.grantId);
      this.options.metrics?.grantUsed();
      if (!grant) {
        // The host took the decision all the same: its `used` entry is written by the id alone,
        // as a first send's is for a grant gone since (GrantStore.recordUse), once per stage.
        logger.warn(
          { approvalId, grantId: ref.grantId },
          'a grant’s decision went through, but its grant is gone; its use is recorded, no line is left',
        );
        await Promise.all([
          this.recordUse(record, { grantId: ref.grantId }, sourceIndex, { ride: false }),
          ledger.settle(approvalId, lineKind(sourceIndex), 'failed: the grant is gone'),
        ]);
        return;
      }
      const question = grantQuestion(record);
      await Promise.all([
        this.recordUse(record, grant, sourceIndex, { ride: false }),
        question?.sourceIndex === sourceIndex
          ? this.postLine(record, grant, question)
          : ledger.settle(approvalId, lineKind(sourceIndex), 'failed: the stage asks no grant question'),
      ]);
    } catch (err) {
      logger.warn(
        { err, approvalId, grantId: ref.grantId },
        'the use of a grant’s decision that went through was not recorded',
      );
    }
  }

  /**
   * A decision by grant that the Decider carried out again ended without the host taking it (the
   * host no longer asks, or the approval was resolved otherwise), and its claim was given back:
   * the use its first send took was never spent, and is given back, as decideBy does after a
   * first send that did not go through. Never rejects.
   */
  async replayDropped(record: ApprovalRecord, claim: Claim): Promise<void> {
    const ref = claim.via === 'grant' ? claim.grant : undefined;
    // Only a grant by uses took one; deciding it here still, decideBy gives its use back itself.
    if (ref?.usesLeft === undefined || this.deciding.has(record.approvalId)) return;
    if (this.givenBackOnReplay.has(claim.commandId)) return;
    this.givenBackOnReplay.add(claim.commandId);
    setTimeout(() => this.givenBackOnReplay.delete(claim.commandId), REPLAY_MEMORY_MS).unref();
    this.options.logger.info(
      { approvalId: record.approvalId, grantId: ref.grantId, commandId: claim.commandId },
      'a replayed decision by grant was not taken by the host; its use is given back',
    );
    await this.giveBack({ grantId: ref.grantId, usesLeft: ref.usesLeft });
  }

  private async recordUse(
    record: ApprovalRecord,
    grant: Pick<Grant, 'grantId'>,
    sourceIndex: number,
    how: { ride: boolean },
  ): Promise<void> {
    try {
      // `ride`: with the decision's resolution, a moment after the host's acknowledgement.
      await this.options.grants.recordUse(grant, record.approvalId, sourceIndex, this.now(), how);
    } catch (err) {
      this.options.logger.warn(
        { err, approvalId: record.approvalId, grantId: grant.grantId },
        'grant use not counted',
      );
    }
  }

  /** At most once per stage (see DecisionNotices for why not at least once). */
  private async leaveLine(record: ApprovalRecord, grant: Grant, question: GrantQuestion): Promise<void> {
    try {
      // The claim rides the decision's resolution, as the use's count does (recordUse).
      if (
        !(await this.options.ledger.claim(record.approvalId, lineKind(question.sourceIndex), { ride: true }))
      )
        return;
      await this.postLine(record, grant, question);
    } catch (err) {
      this.options.logger.warn(
        { err, approvalId: record.approvalId, grantId: grant.grantId },
        'grant line bookkeeping failed',
      );
    }
  }

  /** Posts the line whose notice claim was just won, and settles that claim with how it went. */
  private async postLine(record: ApprovalRecord, grant: Grant, question: GrantQuestion): Promise<void> {
    const { ledger, lines, logger } = this.options;
    const { approvalId } = record;
    let outcome = 'sent';
    try {
      await lines.grantUsed(record, grant, question);
    } catch (err) {
      outcome = `failed: ${err instanceof Error ? err.message : String(err)}`.slice(0, 200);
      logger.error({ err, approvalId, grantId: grant.grantId }, 'grant line not posted');
    }
    await ledger.settle(approvalId, lineKind(question.sourceIndex), outcome);
  }
}

/**
 * Whether a decision by grant that did not go through (yet) keeps the use it took. The claim is
 * kept and replayed when the host is back (or the next process starts), so the use stays taken
 * and a grant by uses is never spent twice over; so when the host refused it but Redis did not
 * store the claim dropped: the record holds it still, and its replay counts the use or gives it
 * back (replayed, replayDropped). A decision handed to another replica may still be carried out
 * there, on this use.
 */
function usePending(outcome: DecisionOutcome): boolean {
  return (
    outcome.kind === 'hostUnavailable' ||
    outcome.kind === 'stopping' ||
    outcome.kind === 'forwarded' ||
    claimKept(outcome)
  );
}

/** The notice a grant's line is sent under: one per stage. */
function lineKind(sourceIndex: number): string {
  return `grant-${sourceIndex}`;
}

/** The decision a grant makes: the question's once-choice, by that grant. */
function grantDecision(question: GrantQuestion, grant: Grant) {
  return {
    sourceIndex: question.sourceIndex,
    choiceId: question.once.choiceId,
    by: { via: 'grant' as const, grant: grantRef(grant) },
  };
}

/**
 * Requests alike for expectsGrant(): the same caller, tool, sandbox mode, route and capabilities
 * (an agent running the same command again), not merely the same grant bucket, where a shell
 * tool's other commands would be looked up first for nothing.
 */
function bucketOf(question: GrantQuestion): string {
  const { caller, tool, sandboxMode, route, capabilities } = question;
  return JSON.stringify([caller, tool, sandboxMode, route, capabilities]);
}

export function grantRef(grant: Grant): GrantRef {
  return {
    grantId: grant.grantId,
    grantedBy: grant.grantedBy,
    ...(grant.expiresAt ? { expiresAt: grant.expiresAt } : {}),
    ...(grant.usesLeft === undefined ? {} : { usesLeft: grant.usesLeft }),
  };
}
