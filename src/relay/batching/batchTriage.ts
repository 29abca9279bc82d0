import type { Logger } from 'pino';
import {
  BATCH_MAX_MEMBERS,
  type BatchOutcome,
  type BatchShared,
  batchGroupOf,
  batchMemberOf,
  type SummaryView,
} from '../../domain/batchGroup.js';
import type { ApprovalRecord } from '../../domain/record.js';
import { type BatchGroups, channelOfGroup, type GroupState } from '../../store/batchGroups.js';
import { KeyedQueue } from '../../util/keyedQueue.js';
import { TrailingThrottle } from '../../util/trailingThrottle.js';
import type { RecordFollower } from '../records/recordFollowers.js';

/** Where summary cards live. slack/ implements it. */
export interface SummaryBoard {
  post(channel: string, view: SummaryView): Promise<string>;
  update(channel: string, ts: string, view: SummaryView): Promise<void>;
}

export interface BatchTriageOptions {
  groups: BatchGroups;
  board: SummaryBoard;
  /** The quorum a record needs now (Authorizer.quorum): above 1, it is decided on its own card. */
  quorum: (record: ApprovalRecord) => number;
  logger: Logger;
  /** How long joins and leaves are gathered before they go to Redis together (default 50 ms). */
  gatherMs?: number;
  /** A burst of joins becomes one redraw after this long; redraws of one summary this far apart. */
  redraw?: { settleMs: number; intervalMs: number };
}

/** How often a summary is drawn again when the group changed while it was being drawn. */
const MAX_REDRAWS = 4;

/** Approvals whose membership this process remembers (see `hint`). */
const MAX_HINTS = 10_000;

/**
 * Keeps each channel's groups of alike pending approvals (domain/batchGroup.ts) in Redis, and one
 * summary card per group of two or more: posted by whichever replica saw the second member join
 * (an atomic claim), redrawn as members join and leave, closed once the group is empty.
 */
export class BatchTriage implements RecordFollower {
  /** Keeps one approval's joins and leaves in the order its changes were stored. */
  private readonly perApproval = new KeyedQueue();
  /**
   * What this process last did with an approval: the group it joined, or null (in none). Only
   * spares Redis a round trip on each of the approval's many changes; Redis stays the truth, and
   * an approval this process knows nothing of is looked up there.
   */
  private readonly hint = new Map<string, string | null>();
  private readonly redraws: TrailingThrottle;
  /** Changes followed since the last flush, oldest first. */
  private readonly gathered: ApprovalRecord[] = [];
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(private readonly options: BatchTriageOptions) {
    this.redraws = new TrailingThrottle(
      (groupId) =>
        this.redraw(groupId).catch((err: unknown) => {
          this.options.logger.warn({ err, groupId }, 'could not redraw a batch summary');
        }),
      options.redraw ?? { settleMs: 150, intervalMs: 1_000 },
    );
  }

  /**
   * Changes are gathered for a moment and placed together: when this process knows an
   * approval's group (or that a card not posted yet is in none), its join or leave is issued in
   * that one synchronous stretch, so a burst's joins share one write to Redis; commands reach
   * Redis in the order issued, so an approval's joins and leaves stay in order. Otherwise its
   * group is looked up first, in order.
   */
  follow(record: ApprovalRecord): void {
    if (!record.slack.ts) {
      // A card not posted yet is in no group: its first change with a card joins without asking.
      if (!this.hint.has(record.approvalId)) this.remember(record.approvalId, null);
      return;
    }
    // Gathered for a moment, then sent together: a burst's joins share one write to Redis.
    this.gathered.push(record);
    if (!this.flushTimer) {
      this.flushTimer = setTimeout(() => this.flush(), this.options.gatherMs ?? 50);
      this.flushTimer.unref();
    }
  }

  /** Places every record gathered, in the order their changes were stored, in one stretch. */
  private flush(): void {
    this.flushTimer = undefined;
    const records = this.gathered.splice(0);
    for (const record of records) this.placeNow(record);
  }

  private placeNow(record: ApprovalRecord): void {
    const known = this.hint.get(record.approvalId);
    if (known === undefined || this.perApproval.busy(record.approvalId)) {
      void this.perApproval
        .run(record.approvalId, async () => {
          const current = await this.options.groups.groupOf(record.slack.channel, record.approvalId);
          await this.place(record, current ?? null);
        })
        .catch((err: unknown) => this.failed(record.approvalId, err));
      return;
    }
    this.place(record, known).catch((err: unknown) => this.failed(record.approvalId, err));
  }

  /** Keeps what a batch decision did on its summary, and redraws it. */
  async noted(groupId: string, outcome: BatchOutcome): Promise<void> {
    await this.options.groups.note(groupId, JSON.stringify(outcome));
    this.redraws.request(groupId, true);
  }

  stop(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    this.gathered.length = 0;
    this.redraws.stop();
  }

  /** Issues the leave and the join at once (no await before them), then acts on their answers. */
  private async place(record: ApprovalRecord, current: string | null): Promise<void> {
    const { groups } = this.options;
    const { approvalId } = record;
    const group = batchGroupOf(record, this.options.quorum(record));
    if (group && current === group.groupId) return;
    // Being decided: it leaves once it is decided (its claim may yet be released), and a click
    // costs nothing more here. The summary's buttons check each approval anyway.
    if (record.phase === 'deciding' && current) return;
    const leaving = current ? groups.leave(current, approvalId) : undefined;
    const joining = group ? groups.join(group.groupId, batchMemberOf(record), group.shared) : undefined;
    // Both are watched from now on: a failure of one must not go unhandled while awaiting the other.
    void leaving?.catch(() => undefined);
    void joining?.catch(() => undefined);
    this.remember(approvalId, group?.groupId ?? null);
    if (current && (await leaving) !== 'none') this.redraws.request(current);
    if (!group) return;
    const joined = await joining;
    if (joined === 'post') await this.post(group.groupId, group.channel);
    else if (joined === 'refresh') this.redraws.request(group.groupId);
  }

  private failed(approvalId: string, err: unknown): void {
    // Redis is asked again next time rather than trusted from here.
    this.hint.delete(approvalId);
    this.options.logger.warn({ err, approvalId }, 'could not update a batch group');
  }

  private remember(approvalId: string, groupId: string | null): void {
    this.hint.delete(approvalId);
    // Oldest out first: a Map iterates in insertion order.
    if (this.hint.size >= MAX_HINTS) this.hint.delete(this.hint.keys().next().value!);
    this.hint.set(approvalId, groupId);
  }

  /** This replica won the claim: post the summary, then catch up with what changed meanwhile. */
  private async post(groupId: string, channel: string): Promise<void> {
    const state = await this.options.groups.read(groupId, BATCH_MAX_MEMBERS);
    if (!state.shared) return;
    const ts = await this.options.board.post(channel, viewOf(groupId, channel, state.shared, state));
    if (await this.options.groups.posted(groupId, ts)) await this.redraw(groupId, state.rev);
  }

  /**
   * Draws the summary from Redis; when a join or leave came in meanwhile (rev moved), draws it
   * again, so that whichever replica draws last draws what Redis holds last.
   */
  private async redraw(groupId: string, drawnRev?: number): Promise<void> {
    const channel = channelOfGroup(groupId);
    let shown = drawnRev;
    for (let i = 0; i < MAX_REDRAWS; i++) {
      const state = await this.options.groups.read(groupId, BATCH_MAX_MEMBERS);
      if (state.state === 'posting' || !state.ts || !state.shared) return;
      if (state.rev === shown) return;
      await this.options.board.update(channel, state.ts, viewOf(groupId, channel, state.shared, state));
      shown = state.rev;
    }
  }
}

function viewOf(groupId: string, channel: string, shared: BatchShared, state: GroupState): SummaryView {
  return {
    ...(state.state === 'closed' ? { closed: true } : {}),
    groupId,
    channel,
    shared,
    members: state.members,
    total: state.total,
    ...(state.note ? { last: JSON.parse(state.note) as BatchOutcome } : {}),
  };
}
