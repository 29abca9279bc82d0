import type { Logger } from 'pino';
import type { RenderedMessage } from '../../domain/messages.js';
import { type Metrics, outcomeOf } from '../../domain/metrics.js';
import { type ApprovalRecord, type CardPlace, type Claim, isTerminal } from '../../domain/record.js';
import {
  type ApprovalStore,
  type ClaimOutcome,
  FencedError,
  type Mutation,
  type PostLease,
  type WriteOptions,
} from '../../store/approvalStore.js';
import type { Activity } from '../../util/activity.js';
import { KeyedQueue } from '../../util/keyedQueue.js';
import { type CardChannel, HostLostError, wasLogged } from '../ports.js';
import { cardRevealed, keepingCurrentVotes } from './cardMutations.js';
import { postUnderLease } from './cardPost.js';
import { claimed, unclaimed } from './decisionMutations.js';
import { SyncMarks } from './syncMarks.js';

export interface RecordKeeperOptions {
  store: ApprovalStore;
  cards: CardChannel;
  render: (record: ApprovalRecord, now: Date) => RenderedMessage;
  logger: Logger;
  now?: () => Date;
  /** How long one worker may hold the right to post a card. */
  postLeaseMs?: number;
  /**
   * The fencing token of the host's lease while this process holds it (as ApprovalStore's): a card
   * post or update that follows a write made under a token is sent only while that token is ours.
   */
  fenceOf?: (hostId: string) => number | undefined;
  /**
   * Told of each record this process stored (created, changed, claimed, its card placed), after
   * the write. Followers (audit notices, App Home) start their own work from here; they must not
   * throw and must not wait.
   */
  onChange?: (record: ApprovalRecord) => void;
  /**
   * Told of each change this process is about to store that may let go of a quorum's votes: one
   * that closes a decision's claim (`before` holds it, `after` holds another or none: sent, given
   * back, or dropped as the request was withdrawn or asked again), and any change to an open
   * record that keeps an earlier stage's votes with its decision (closing it or not). Told before
   * each try of the write, which is sent once what it returns has settled: the votes that no
   * decision entry will name are audited from here (auditVotesLeft), and once the change is
   * stored nothing holds them any more. Must not throw, and what it returns must not reject.
   */
  onVotesLeft?: (before: ApprovalRecord, after: ApprovalRecord) => Promise<unknown> | undefined;
  /**
   * Told of a card just posted (its record as it was, and where the card is), in the synchronous
   * stretch that sends the write saying where (RecordFollower.placing). Must not throw and must
   * not wait.
   */
  onPlacing?: (record: ApprovalRecord, place: CardPlace) => void;
  /** Counts for /metrics (cards posted). */
  activity?: Activity;
  /** Told of each approval resolved here (time to decision). */
  metrics?: Pick<Metrics, 'decided'>;
}

/**
 * The one place where an approval's record changes and its card follows. Work on one approval
 * runs in order in its own queue; every change is a pure mutation applied with compare-and-set,
 * then the card is re-rendered from the stored record. Host events (Relay) and decisions
 * (Decider) both go through here, so neither needs the other to keep a card true.
 */
export class RecordKeeper {
  private readonly queue = new KeyedQueue();
  private readonly now: () => Date;
  private readonly postLeaseMs: number;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly background = new Set<Promise<unknown>>();
  private readonly syncMarks: SyncMarks;
  /** channel → records being created for it whose post is not yet queued. */
  private readonly creatingIn = new Map<string, number>();

  constructor(private readonly options: RecordKeeperOptions) {
    this.now = options.now ?? (() => new Date());
    // Short, and renewed while the post is under way (a post may wait behind a channel's rate
    // limit for long): when the process holding it dies between Slack's post and savePost, the
    // next worker takes over within seconds, instead of leaving the approval without a card.
    this.postLeaseMs = options.postLeaseMs ?? 15_000;
    this.syncMarks = new SyncMarks(
      options.store,
      (task) => this.track(task),
      options.logger,
      (approvalId) => this.cardBehind(approvalId),
    );
  }

  /** Runs `task` in the approval's queue, after everything queued for it before. */
  run<T>(approvalId: string, task: () => Promise<T>): Promise<T> {
    return this.queue.run(approvalId, task);
  }

  /** Whether work for the approval is queued or under way in this process. */
  busy(approvalId: string): boolean {
    return this.queue.busy(approvalId);
  }

  /** Like run(), for work nobody awaits: a failure is logged, never left unhandled. */
  enqueue(approvalId: string, task: () => Promise<unknown>): void {
    this.run(approvalId, task).catch((err: unknown) => {
      // A Slack call the card channel gave up on, or a post it dropped for a lost host, has its
      // one line already; the first is tried again, the second left to the host's new owner.
      if (wasLogged(err)) return;
      if (err instanceof FencedError || err instanceof HostLostError) {
        this.options.logger.warn({ approvalId }, err.message);
        return;
      }
      this.options.logger.error({ err, approvalId }, 'approval work failed');
    });
  }

  /**
   * Applies a mutation in the approval's queue and re-renders its card if anything changed.
   * `options`: FOR_HOST for a change that acts for the host (refused once its lease is gone).
   */
  mutateAndSync(
    approvalId: string,
    mutation: Mutation,
    options?: WriteOptions,
  ): Promise<ApprovalRecord | undefined> {
    return this.run(approvalId, () => this.mutate(approvalId, mutation, undefined, options));
  }

  /**
   * Applies a mutation and syncs the card. Call it from inside the approval's queue (run,
   * enqueue); resolves with the stored record, or undefined when there is none. `known` is the
   * record as the caller just read it, if it did.
   */
  async mutate(
    approvalId: string,
    mutation: Mutation,
    known?: ApprovalRecord,
    options?: WriteOptions,
  ): Promise<ApprovalRecord | undefined> {
    // The write that moves a record from open to resolved is made once, by compare-and-set,
    // whichever replica makes it: the decision is timed there. The mutation's last run is the
    // one stored.
    let resolvesIt = false;
    const watched: Mutation = (record) => {
      const next = mutation(record);
      resolvesIt = next?.phase === 'resolved' && !isTerminal(record);
      return next;
    };
    const result = await this.options.store.update(approvalId, keepingCurrentVotes(watched), known, {
      ...options,
      // Ahead of the write, not after it: a process that died in between would take the votes
      // the write let go of with it (auditVotesLeft).
      beforeWrite: (current, next) =>
        mayLeaveVotes(current, next) ? this.options.onVotesLeft?.(current, next) : undefined,
    });
    if (!result) {
      this.options.logger.warn({ approvalId }, 'event for an approval this bot never saw; skipped');
      return undefined;
    }
    if (result.changed && resolvesIt) this.timeDecision(result.record);
    if (result.changed) this.changed(result.record);
    if (result.changed || !result.record.slack.ts) await this.syncCard(approvalId, result.record);
    return result.record;
  }

  /**
   * Creates the record unless it exists and, if this call created it, posts its card. Call it
   * from inside the approval's queue. Resolves with false when the record already existed.
   * `extra`: fields stored with the record (the full text of a request intake cut).
   *
   * `deferIf`: a question asked in the same round trip as the create (whether a remembered grant
   * answers it). Redis answers in order, so it is settled by the time the record is stored; when
   * it says yes, the card is deferred instead of posted (slack.deferred) and the post lease given
   * back. Nothing else is told of the record before that. Should the process die in between, the
   * record is an ordinary one without its card: the next start posts the card, and people decide.
   */
  async create(
    record: ApprovalRecord,
    extra?: Record<string, string>,
    deferIf?: Promise<boolean>,
  ): Promise<boolean> {
    const stored = await this.store(record, extra, deferIf);
    if (!stored) return false;
    await stored.posted;
    return true;
  }

  /**
   * create(), resolving as soon as the record is stored (false: it already existed); `posted`
   * settles once the card is out (or deferred). The approval's queue must still wait for
   * `posted`: return it from the queued task. A caller that awaits only this lets go of its own
   * state meanwhile; in a burst, the approvals waiting for their channel hold little (see
   * docs/performance.md).
   */
  async store(
    record: ApprovalRecord,
    extra?: Record<string, string>,
    deferIf?: Promise<boolean>,
  ): Promise<false | { posted: Promise<void> }> {
    const { store } = this.options;
    // A deferred card is posted later, if at all (slack.deferred): nobody may hold its lease meanwhile.
    const lease = record.slack.deferred ? undefined : store.newPostLease(this.postLeaseMs);
    const { channel } = record.slack;
    const creating = store.createIfAbsent(record, lease, extra);
    // Rendered while Redis stores the record, so the card is ready to go when the record is: after
    // a microtask, once the write has left (commands issued together go out then, see
    // coalescedWrites.ts). Only when nothing is ahead of it in its channel (no post waiting, no
    // other card being created): in a burst a card rendered early would sit in the queue, and what
    // lives that long is what the garbage collector copies. A render that throws is made again at
    // the post, where its error is handled.
    const card =
      lease && !this.options.cards.busy?.(channel) && !this.creatingIn.has(channel)
        ? Promise.resolve()
            .then(() => this.options.render(record, this.now()))
            .catch(() => undefined)
        : undefined;
    this.creatingIn.set(channel, (this.creatingIn.get(channel) ?? 0) + 1);
    let created: boolean;
    try {
      created = await creating;
    } finally {
      const left = this.creatingIn.get(channel)! - 1;
      if (left === 0) this.creatingIn.delete(channel);
      else this.creatingIn.set(channel, left);
    }
    if (!created) return false;
    if (!lease) {
      this.changed(record);
      return { posted: Promise.resolve() };
    }
    if (await deferIf) {
      const deferred = await store.deferPost(record, lease);
      if (deferred?.changed) this.changed(deferred.record);
      return { posted: Promise.resolve() };
    }
    this.changed(record);
    return { posted: this.postCard(record, lease, undefined, await card) };
  }

  /**
   * Claims a stage on the record a decision was checked against. Resolves as soon as the claim
   * is stored, so the decision can leave at once; the card shows `deciding` right after, in the
   * approval's queue, so it can never overtake what the host says next. `abandoned` says the
   * caller stopped waiting and told the person nothing was recorded: a claim Redis stores after
   * that is released at once, before anything else of the approval's runs or its card shows it;
   * one whose answer was lost (it may have been stored) is released from what Redis holds.
   */
  claim(checked: ApprovalRecord, claim: Claim, abandoned?: () => boolean): Promise<ClaimOutcome> {
    return new Promise<ClaimOutcome>((resolve, reject) => {
      this.enqueue(checked.approvalId, async () => {
        const next = claimed(claim)(checked);
        let outcome: ClaimOutcome;
        try {
          // As claimed() stored it: with what was pressed, on what question.
          outcome = next ? await this.options.store.claimWith(checked, next) : { kind: 'stale' };
        } catch (err) {
          reject(err);
          if (abandoned?.()) await this.mutate(checked.approvalId, unclaimed(claim.commandId));
          return;
        }
        resolve(outcome);
        if (outcome.kind !== 'claimed') return;
        if (abandoned?.()) {
          // Written from the claimed record, without a read first: a click that comes in now
          // reads Redis after this write has left, and finds the stage free.
          await this.mutate(checked.approvalId, unclaimed(claim.commandId), outcome.record);
          return;
        }
        this.changed(outcome.record);
        // Let the decision be written first: rendering and encoding the card would delay it.
        await new Promise((resume) => setImmediate(resume));
        await this.syncCard(checked.approvalId, outcome.record);
      });
    });
  }

  /**
   * Posts a deferred card (slack.deferred) now: no remembered grant answers its approval. Nothing
   * posted it before, so it is posted without first looking for an earlier post; should this post
   * be lost, the retry looks.
   */
  reveal(approvalId: string): Promise<void> {
    return this.run(approvalId, async () => {
      const result = await this.options.store.update(approvalId, cardRevealed);
      if (!result) return;
      const { record } = result;
      if (!result.changed) {
        if (!record.slack.ts) await this.syncCard(approvalId, record);
        return;
      }
      this.changed(record);
      const lease = await this.options.store.acquirePostLease(record, this.postLeaseMs);
      if (lease) await this.postCard(record, lease);
      else this.retryLater(approvalId);
    });
  }

  /** Re-renders a card from its stored record, in the approval's queue. */
  resync(approvalId: string): Promise<void> {
    return this.run(approvalId, () => this.syncCard(approvalId));
  }

  /** Work that spans many approvals; idle() waits for it too. */
  track(task: Promise<unknown>): void {
    this.background.add(task);
    void task.finally(() => this.background.delete(task));
  }

  /** Resolves when all queued and background work has settled. */
  async idle(): Promise<void> {
    while (this.background.size > 0) await Promise.allSettled([...this.background]);
    await this.queue.idle();
  }

  stop(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.syncMarks.flush();
  }

  /**
   * Brings up to date the cards an earlier process may have left behind their records (it died
   * with an update in flight). Call at start-up and on taking a host over; each card is brought up
   * to date by one replica. Resolves with how many were looked at.
   */
  recoverCards(startedAt: Date = this.now()): Promise<number> {
    return this.syncMarks.recover(startedAt, this.postLeaseMs, {
      enqueue: (approvalId, task) => this.enqueue(approvalId, task),
      update: (record, ts) => this.update(record.slack.channel, ts, record),
    });
  }

  /**
   * Makes the Slack message match the record. The first sync posts the card (under a lease, so
   * two workers never post the same approval twice); every later one updates it in place.
   */
  private async syncCard(approvalId: string, known?: ApprovalRecord): Promise<void> {
    const { store } = this.options;
    // Inside the approval's queue the record just written is the latest; read only when called
    // from outside (resync, a retry timer).
    const record = known ?? (await store.get(approvalId));
    if (!record) return;
    if (record.slack.ts) {
      this.update(record.slack.channel, record.slack.ts, record);
      return;
    }
    if (record.slack.deferred) return;
    const lease = await store.acquirePostLease(record, this.postLeaseMs);
    if (!lease) {
      this.retryLater(approvalId);
      return;
    }
    // A record without its card's place: an earlier post (perhaps by a process that died) may
    // have reached Slack all the same, so the card channel looks for it before posting.
    await this.postCard(record, lease, new Date(record.openedAt));
  }

  /**
   * Hands the card channel the newest render and does not wait for it to land: the channel
   * retries until it does, newest render first, and the approval's queue must not stall behind
   * a Slack outage (a click's claim waits in it).
   */
  private update(channel: string, ts: string, record: ApprovalRecord): void {
    const { cards, render, logger } = this.options;
    const { approvalId, phase, version } = record;
    const seq = this.syncMarks.handOut(approvalId);
    // After the write this render shows: a later write marks the card again, and keeps its mark.
    const handedAt = this.options.store.syncStamp();
    this.track(
      cards.update(channel, ts, render(record, this.now()), this.actingFor(record.hostId)).then(
        () => {
          logger.debug({ approvalId, ts, phase, version }, 'card updated');
          this.syncMarks.landed(approvalId, seq, handedAt, version);
        },
        (err: unknown) => {
          this.syncMarks.givenUp(approvalId, seq, version);
          logger.warn({ err, approvalId, ts, version }, 'card update given up');
        },
      ),
    );
  }

  /**
   * A card landed an older render than its record holds: another replica's update landed before
   * ours, and ours covered it. Rendered again from the stored record, unless an update of this
   * process is on its way (it is checked in turn when it lands).
   */
  private cardBehind(approvalId: string): void {
    this.enqueue(approvalId, async () => {
      if (this.syncMarks.updating(approvalId)) return;
      this.options.logger.info(
        { approvalId },
        'card shows an older version than its record; updating it again',
      );
      await this.syncCard(approvalId);
    });
  }

  /**
   * Posts the card of a record that has none yet; the caller holds the post lease. `postedSince`
   * says an earlier attempt may have posted it already; `rendered`, the record's card if the
   * caller has it already.
   */
  private async postCard(
    record: ApprovalRecord,
    lease: PostLease,
    postedSince?: Date,
    rendered?: RenderedMessage,
  ): Promise<void> {
    const { store, cards, render, logger } = this.options;
    const mayAct = this.actingFor(record.hostId);
    let landed: Awaited<ReturnType<typeof postUnderLease>>;
    try {
      landed = await postUnderLease(record, lease, {
        store,
        cards,
        render: () => rendered ?? render(record, this.now()),
        logger,
        postLeaseMs: this.postLeaseMs,
        placing: (placed, place) => this.placing(placed, place),
        ...(postedSince ? { postedSince } : {}),
        ...(mayAct ? { mayAct } : {}),
      });
    } catch (err) {
      this.retryLater(record.approvalId);
      throw err;
    }
    const { posted, saved } = landed;
    if (saved) this.changed(saved.record);
    this.options.activity?.count('cardsPosted');
    // Someone changed the record while we were posting: show them the latest.
    if (saved && saved.record.version !== record.version + 1)
      this.update(posted.channel, posted.ts, saved.record);
  }

  /**
   * While this process holds the host's lease, a card call acts for the host: it is made only as
   * long as the same lease is held. Otherwise (a standby's own note on a card) it is not checked.
   */
  private actingFor(hostId: string): (() => boolean) | undefined {
    const token = this.options.fenceOf?.(hostId);
    if (token === undefined) return undefined;
    return () => this.options.fenceOf?.(hostId) === token;
  }

  private timeDecision(record: ApprovalRecord): void {
    if (!this.options.metrics || !record.resolution) return;
    const seconds = (this.now().getTime() - Date.parse(record.openedAt)) / 1000;
    if (Number.isFinite(seconds)) {
      this.options.metrics.decided(record.route, outcomeOf(record.resolution), seconds);
    }
  }

  private placing(record: ApprovalRecord, place: CardPlace): void {
    try {
      this.options.onPlacing?.(record, place);
    } catch (err) {
      this.options.logger.error({ err, approvalId: record.approvalId }, 'record follower failed');
    }
  }

  private changed(record: ApprovalRecord): void {
    try {
      this.options.onChange?.(record);
    } catch (err) {
      this.options.logger.error({ err, approvalId: record.approvalId }, 'record follower failed');
    }
  }

  /** Another worker holds the post lease, or Slack refused: look again once it must be over. */
  private retryLater(approvalId: string): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.enqueue(approvalId, () => this.syncCard(approvalId));
    }, this.postLeaseMs + 1_000);
    timer.unref();
    this.timers.add(timer);
  }
}

/** Whether a change may let go of a quorum's votes (RecordKeeperOptions.onVotesLeft). */
function mayLeaveVotes(before: ApprovalRecord, after: ApprovalRecord): boolean {
  const closed = before.claim;
  if (closed && after.claim?.commandId !== closed.commandId) return true;
  return !isTerminal(before) && (before.stageDecisions?.some((d) => d.votes) ?? false);
}
