import type { Logger } from 'pino';
import type { Grant, GrantStore } from '../../domain/grants/grant.js';
import { findGrant, type GrantQuestion, grantQuestion, sessionCallerOf } from '../../domain/grants/match.js';
import type { Metrics } from '../../domain/metrics.js';
import { type ApprovalRecord, type GrantRef, isTerminal } from '../../domain/record.js';
import type { RouteGrants } from '../../domain/route.js';
import type { Decider } from '../deciding/decider.js';
import type { NoticeLedger } from '../deciding/decisionNotices.js';
import type { RecordKeeper } from '../records/recordKeeper.js';

type Next = 'done' | 'showCard';

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
  grants: Pick<GrantStore, 'candidates' | 'reserveUse' | 'returnUse' | 'recordUse'>;
  store: RecordReader;
  /** Shows a card no grant answered (reveal), and tracks the work so idle() waits for it. */
  keeper: Pick<RecordKeeper, 'reveal' | 'track'>;
  decider: Pick<Decider, 'decide'>;
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

  constructor(private readonly options: GrantAnswererOptions) {
    this.now = options.now ?? (() => new Date());
  }

  /** The live grant that answers the record's current stage, if any: one round trip. Never rejects. */
  async find(record: ApprovalRecord): Promise<Grant | undefined> {
    const settings = this.options.grantsOf(record.route);
    const question = settings?.enabled ? grantQuestion(record) : undefined;
    if (!question) return undefined;
    try {
      const now = this.now();
      const sessionCaller = sessionCallerOf(record, settings!.choices);
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
    const previous = this.looks.get(approvalId);
    const looked = previous ? previous.then(() => this.look(approvalId)) : this.look(approvalId, known);
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
    const { store, decider, logger } = this.options;
    const record = known ?? (await store.get(approvalId));
    if (!record?.slack.deferred || isTerminal(record) || record.claim) return 'done';
    // Under review or out of reach: there is nothing a grant could decide now, and people should see it.
    if (record.phase !== 'pending') return 'showCard';
    const settings = this.options.grantsOf(record.route);
    const question = settings?.enabled ? grantQuestion(record) : undefined;
    if (!question) return 'showCard';
    const expected = this.found.get(approvalId);
    this.found.delete(approvalId);
    const now = this.now();
    const sessionCaller = sessionCallerOf(record, settings!.choices);
    // Found just before the record was created; matched again here in case the question moved since.
    const grant =
      (expected && findGrant([expected], question, now, sessionCaller)
        ? await this.take([expected], question, now, sessionCaller)
        : undefined) ??
      (await this.take(await this.candidates(question, sessionCaller, now), question, now, sessionCaller));
    if (!grant) return 'showCard';

    let outcome: Awaited<ReturnType<Decider['decide']>>;
    try {
      outcome = await decider.decide({
        record,
        sourceIndex: question.sourceIndex,
        choiceId: question.once.choiceId,
        by: { via: 'grant', grant: grantRef(grant) },
        // Found for this very record just now.
        warranted: true,
      });
    } catch (err) {
      await this.giveBack(grant);
      throw err;
    }
    if (outcome.kind === 'decided') {
      this.options.metrics?.grantUsed();
      await Promise.all([this.recordUse(record, grant, question), this.leaveLine(record, grant, question)]);
      return 'done';
    }
    // The claim is kept and replayed when the host is back (or the next process starts): the use
    // it took stays taken, so a grant by uses is never spent twice over.
    if (outcome.kind === 'hostUnavailable' || outcome.kind === 'stopping') return 'done';
    await this.giveBack(grant);
    logger.info(
      { approvalId, grantId: grant.grantId, outcome: outcome.kind },
      'a grant matched but could not decide; showing the card',
    );
    return 'showCard';
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
  private async giveBack(grant: Grant): Promise<void> {
    if (grant.usesLeft === undefined) return;
    try {
      await this.options.grants.returnUse(grant);
    } catch (err) {
      this.options.logger.warn({ err, grantId: grant.grantId }, 'a reserved grant use was not given back');
    }
  }

  private async recordUse(record: ApprovalRecord, grant: Grant, question: GrantQuestion): Promise<void> {
    try {
      await this.options.grants.recordUse(grant, record.approvalId, question.sourceIndex, this.now());
    } catch (err) {
      this.options.logger.warn(
        { err, approvalId: record.approvalId, grantId: grant.grantId },
        'grant use not counted',
      );
    }
  }

  /** At most once per stage (see DecisionNotices for why not at least once). */
  private async leaveLine(record: ApprovalRecord, grant: Grant, question: GrantQuestion): Promise<void> {
    const { ledger, lines, logger } = this.options;
    const kind = `grant-${question.sourceIndex}`;
    const { approvalId } = record;
    try {
      if (!(await ledger.claim(approvalId, kind))) return;
      let outcome = 'sent';
      try {
        await lines.grantUsed(record, grant, question);
      } catch (err) {
        outcome = `failed: ${err instanceof Error ? err.message : String(err)}`.slice(0, 200);
        logger.error({ err, approvalId, grantId: grant.grantId }, 'grant line not posted');
      }
      await ledger.settle(approvalId, kind, outcome);
    } catch (err) {
      logger.warn({ err, approvalId, grantId: grant.grantId }, 'grant line bookkeeping failed');
    }
  }
}

export function grantRef(grant: Grant): GrantRef {
  return {
    grantId: grant.grantId,
    grantedBy: grant.grantedBy,
    ...(grant.expiresAt ? { expiresAt: grant.expiresAt } : {}),
    ...(grant.usesLeft === undefined ? {} : { usesLeft: grant.usesLeft }),
  };
}
