import type { Logger } from 'pino';
import type { HostEvent } from '../msp/events.js';
import type { ApprovalRequestParams } from '../msp/protocol.js';
import type { RouteInput } from '../routing/router.js';
import type { ApprovalStore, ClaimOutcome, Mutation, PostLease } from '../store/approvalStore.js';
import type { ApprovalRecord, Claim } from '../store/record.js';
import { isTerminal } from '../store/record.js';
import { KeyedQueue } from '../util/keyedQueue.js';
import type { CardChannel, RenderedMessage } from './ports.js';
import { claimed, newRecord, orphaned, reopened, resolved, superseded, updated } from './recordMutations.js';

export interface RelayOptions {
  store: ApprovalStore;
  cards: CardChannel;
  render: (record: ApprovalRecord, now: Date) => RenderedMessage;
  logger: Logger;
  /** Which channel an approval's card goes to (see routing/). */
  channelFor: (input: RouteInput) => string;
  sandboxMode: string;
  now?: () => Date;
  /** How long one worker may hold the right to post a card. */
  postLeaseMs?: number;
  /**
   * Called when a record is (re)opened in `deciding` with nobody here sending its decision: a
   * crash or a host restart interrupted it, and it must be replayed with the same commandId.
   */
  onOrphanedDecision?: (record: ApprovalRecord) => void;
}

/**
 * The one place that decides what happens to an approval when the host says something about
 * it. Every change goes through the store's compare-and-set, then the card is re-rendered from
 * the stored record.
 */
export class Relay {
  private readonly queue = new KeyedQueue();
  private readonly now: () => Date;
  private readonly postLeaseMs: number;
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly background = new Set<Promise<void>>();
  /**
   * What cards show and are routed on about each session. Memory is enough: a restarted bot
   * learns it again from session/list before it sees any approval.
   */
  private readonly sessions = new Map<string, { label?: string; workspaceRoot?: string }>();

  constructor(private readonly options: RelayOptions) {
    this.now = options.now ?? (() => new Date());
    this.postLeaseMs = options.postLeaseMs ?? 60_000;
  }

  handleHostEvent(event: HostEvent): void {
    switch (event.type) {
      case 'approvalOpened':
        this.enqueue(event.params.approvalId, () =>
          this.opened(event.params, event.hostId, event.incarnation, 'pending'),
        );
        return;
      case 'approvalReviewing':
        this.enqueue(event.params.approvalId, () =>
          this.opened(event.params, event.hostId, event.incarnation, 'reviewing'),
        );
        return;
      case 'approvalUpdated':
        this.enqueue(event.params.approvalId, () =>
          this.mutate(event.params.approvalId, updated(event.params)),
        );
        return;
      case 'approvalResolved':
        this.enqueue(event.params.approvalId, () =>
          this.mutate(event.params.approvalId, resolved(event.params, event.incarnation, this.now())),
        );
        return;
      case 'sessionReconciled':
        this.track(
          this.reconcileSession(event.hostId, event.sessionId, event.pendingApprovalIds, event.incarnation),
        );
        return;
      case 'hostDown':
        if (!event.durable) this.track(this.orphanAll(event.hostId));
        return;
      case 'sessionSeen':
        this.sessions.set(event.sessionId, { label: event.label, workspaceRoot: event.workspaceRoot });
        return;
      case 'hostUp':
        return;
    }
  }

  /** Applies a mutation in the approval's queue and re-renders its card if anything changed. */
  mutateAndSync(approvalId: string, mutation: Mutation): Promise<ApprovalRecord | undefined> {
    return this.queue.run(approvalId, () => this.mutate(approvalId, mutation));
  }

  /**
   * Claims a stage for a click on the record the click was checked against. Resolves as soon as
   * the claim is stored, so the decision can leave at once; the card shows `deciding` right after,
   * in the approval's queue, so it can never overtake what the host says next.
   */
  claim(checked: ApprovalRecord, claim: Claim): Promise<ClaimOutcome> {
    return new Promise<ClaimOutcome>((resolve, reject) => {
      this.enqueue(checked.approvalId, async () => {
        const next = claimed(claim)(checked);
        let outcome: ClaimOutcome;
        try {
          outcome = next
            ? await this.options.store.claimWith(checked, { ...next, claim })
            : { kind: 'stale' };
        } catch (err) {
          reject(err);
          return;
        }
        resolve(outcome);
        if (outcome.kind !== 'claimed') return;
        // Let the decision be written first: rendering and encoding the card would delay it.
        await new Promise((resume) => setImmediate(resume));
        await this.syncCard(checked.approvalId, outcome.record);
      });
    });
  }

  /** Re-renders a card from its record, in the approval's queue. */
  resync(approvalId: string): Promise<void> {
    return this.queue.run(approvalId, () => this.syncCard(approvalId));
  }

  /** Resolves when all queued and background work has settled. */
  async idle(): Promise<void> {
    while (this.background.size > 0) await Promise.allSettled([...this.background]);
    await this.queue.idle();
  }

  /** Work that spans many approvals; idle() waits for it too. */
  private track(task: Promise<void>): void {
    this.background.add(task);
    void task.finally(() => this.background.delete(task));
  }

  stop(): void {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
  }

  private enqueue(approvalId: string, task: () => Promise<unknown>): void {
    this.queue.run(approvalId, task).catch((err: unknown) => {
      this.options.logger.error({ err, approvalId }, 'approval event handling failed');
    });
  }

  private async mutate(approvalId: string, mutation: Mutation): Promise<ApprovalRecord | undefined> {
    const result = await this.options.store.update(approvalId, mutation);
    if (!result) {
      this.options.logger.warn({ approvalId }, 'event for an approval this bot never saw; skipped');
      return undefined;
    }
    if (result.changed || !result.record.slack.ts) await this.syncCard(approvalId, result.record);
    return result.record;
  }

  private async opened(
    params: ApprovalRequestParams,
    hostId: string,
    incarnation: string,
    phase: 'pending' | 'reviewing',
  ): Promise<void> {
    const { store, logger } = this.options;
    const session = this.sessions.get(params.sessionId);
    const fresh = newRecord(params, {
      hostId,
      incarnation,
      channel: this.options.channelFor({
        hostId,
        tool: params.toolName,
        // A shell subject names its own working directory; the session's is known only once
        // the bot has seen the session listed.
        workspaceRoot: params.subject.workspaceRoot ?? session?.workspaceRoot,
      }),
      sandboxMode: this.options.sandboxMode,
      phase,
      now: this.now(),
      sessionTitle: session?.label,
    });
    const lease = store.newPostLease(this.postLeaseMs);
    if (await store.createIfAbsent(fresh, lease)) {
      // At debug: it sits between the host's frame and the card's post, where every line shows in
      // the latency (README "Performance"); "card posted" says the same at info once it is out.
      logger.debug({ approvalId: params.approvalId, tool: fresh.tool, phase }, 'approval opened');
      await this.postCard(fresh, lease);
      return;
    }
    const record = await this.mutate(params.approvalId, reopened(params, incarnation, phase));
    if (record && isTerminal(record)) await store.forgetOpen(hostId, record.approvalId);
    if (record?.phase === 'deciding' && record.claim) this.options.onOrphanedDecision?.(record);
  }

  /**
   * After a (re)connect the host listed what is still pending in a session. An approval asked by
   * an earlier host process that is no longer pending was closed or replaced by the host.
   */
  private async reconcileSession(
    hostId: string,
    sessionId: string,
    pendingApprovalIds: string[],
    incarnation: string,
  ): Promise<void> {
    const pending = new Set(pendingApprovalIds);
    const { store } = this.options;
    const ids = await store.openApprovalIds(hostId);
    await Promise.all(
      ids.map((approvalId) =>
        this.queue.run(approvalId, async () => {
          const record = await store.get(approvalId);
          if (!record || isTerminal(record)) {
            await store.forgetOpen(hostId, approvalId);
            return;
          }
          if (record.sessionId !== sessionId || pending.has(approvalId) || record.incarnation === incarnation)
            return;
          await this.mutate(approvalId, superseded('The agent host no longer has this request pending.'));
        }),
      ),
    ).catch((err: unknown) => this.options.logger.error({ err, hostId, sessionId }, 'reconcile failed'));
  }

  /** A host that keeps nothing died: its pending approvals died with it. */
  private async orphanAll(hostId: string): Promise<void> {
    const ids = await this.options.store.openApprovalIds(hostId);
    await Promise.all(
      ids.map((approvalId) => this.queue.run(approvalId, () => this.mutate(approvalId, orphaned))),
    ).catch((err: unknown) =>
      this.options.logger.error({ err, hostId }, 'marking orphaned approvals failed'),
    );
  }

  /**
   * Makes the Slack message match the record. The first sync posts the card (under a lease, so
   * two workers never post the same approval twice); every later one updates it in place.
   */
  private async syncCard(approvalId: string, known?: ApprovalRecord): Promise<void> {
    const { store, cards, render, logger } = this.options;
    // Inside the approval's queue the record just written is the latest; read only when called
    // from outside (resync, a retry timer).
    const record = known ?? (await store.get(approvalId));
    if (!record) return;
    if (record.slack.ts) {
      await cards.update(record.slack.channel, record.slack.ts, render(record, this.now()));
      logger.debug(
        { approvalId, ts: record.slack.ts, phase: record.phase, version: record.version },
        'card updated',
      );
      return;
    }
    const lease = await store.acquirePostLease(approvalId, this.postLeaseMs);
    if (!lease) {
      this.retryLater(approvalId);
      return;
    }
    await this.postCard(record, lease);
  }

  /** Posts the card of a record that has none yet; the caller holds the post lease. */
  private async postCard(record: ApprovalRecord, lease: PostLease): Promise<void> {
    const { store, cards, render, logger } = this.options;
    const { approvalId } = record;
    let posted: { ts: string; channel: string };
    try {
      posted = await cards.post(record.slack.channel, () => render(record, this.now()), {
        approvalId,
      });
    } catch (err) {
      // Slack said no (the channel, a scope, an outage): try again later, nothing is lost.
      await store.releasePostLease(approvalId, lease);
      this.retryLater(approvalId);
      throw err;
    }
    const saved = await store.savePost(record, posted, lease);
    logger.info(
      {
        approvalId,
        sessionId: record.sessionId,
        tool: record.tool,
        phase: record.phase,
        channel: posted.channel,
        ts: posted.ts,
      },
      'card posted',
    );
    // Someone changed the record while we were posting: show them the latest.
    if (saved && saved.record.version !== record.version + 1) {
      await cards.update(posted.channel, posted.ts, render(saved.record, this.now()));
    }
  }

  /** Another worker holds the post lease; look again once it must have expired. */
  private retryLater(approvalId: string): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.enqueue(approvalId, () => this.syncCard(approvalId));
    }, this.postLeaseMs + 1_000);
    timer.unref();
    this.timers.add(timer);
  }
}
