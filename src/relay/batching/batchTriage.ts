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
import type { BatchGroups, GroupState } from '../../store/batchGroups.js';
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

  constructor(private readonly options: BatchTriageOptions) {
    this.redraws = new TrailingThrottle(
      (groupId) =>
        this.redraw(groupId).catch((err: unknown) => {
          this.options.logger.warn({ err, groupId }, 'could not redraw a batch summary');
        }),
      options.redraw ?? { settleMs: 150, intervalMs: 1_000 },
    );
  }

  follow(record: ApprovalRecord): void {
    void this.perApproval
      .run(record.approvalId, () => this.place(record))
      .catch((err: unknown) => {
        this.hint.delete(record.approvalId);
        this.options.logger.warn({ err, approvalId: record.approvalId }, 'could not update a batch group');
      });
  }

  /** Keeps what a batch decision did on its summary, and redraws it. */
  async noted(groupId: string, outcome: BatchOutcome): Promise<void> {
    await this.options.groups.note(groupId, JSON.stringify(outcome));
    this.redraws.request(groupId, true);
  }

  stop(): void {
    this.redraws.stop();
  }

  private async place(record: ApprovalRecord): Promise<void> {
    const { groups } = this.options;
    const { approvalId } = record;
    const group = batchGroupOf(record, this.options.quorum(record));
    const current = await this.currentGroup(record);
    if (group && current === group.groupId) return;
    if (current) {
      const left = await groups.leave(current, approvalId);
      this.remember(approvalId, null);
      if (left !== 'none') this.redraws.request(current);
    }
    if (!group) {
      this.remember(approvalId, null);
      return;
    }
    const joined = await groups.join(group.groupId, batchMemberOf(record), group.shared);
    this.remember(approvalId, group.groupId);
    if (joined === 'post') await this.post(group.groupId, group.channel);
    else if (joined === 'refresh') this.redraws.request(group.groupId);
  }

  /** The group the approval is in: from the hint, else from Redis (a card not yet posted is in none). */
  private async currentGroup(record: ApprovalRecord): Promise<string | null> {
    const hinted = this.hint.get(record.approvalId);
    if (hinted !== undefined) return hinted;
    if (!record.slack.ts) return null;
    return (await this.options.groups.groupOf(record.approvalId)) ?? null;
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
    const channel = channelOf(groupId);
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

/** A group id is `<channel>:<digest>` (domain/batchGroup.ts). */
export function channelOf(groupId: string): string {
  return groupId.slice(0, groupId.lastIndexOf(':'));
}
