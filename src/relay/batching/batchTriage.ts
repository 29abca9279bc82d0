import type { Logger } from 'pino';
import {
  BATCH_MAX_MEMBERS,
  type BatchMember,
  type BatchOutcome,
  type BatchShared,
  batchGroupOf,
  batchMemberOf,
  type SummaryView,
} from '../../domain/batchGroup.js';
import type { ApprovalRecord } from '../../domain/record.js';
import type { BatchGroups } from '../../store/batchGroups.js';
import { KeyedQueue } from '../../util/keyedQueue.js';
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
}

/** How often a summary is drawn again when the group changed while it was being drawn. */
const MAX_REDRAWS = 4;

/**
 * Keeps each channel's groups of alike pending approvals (domain/batchGroup.ts) in Redis, and one
 * summary card per group of two or more: posted by whichever replica saw the second member join
 * (an atomic claim), redrawn as members join and leave, closed once the group is empty.
 */
export class BatchTriage implements RecordFollower {
  /** Keeps one approval's joins and leaves in the order its changes were stored. */
  private readonly perApproval = new KeyedQueue();

  constructor(private readonly options: BatchTriageOptions) {}

  follow(record: ApprovalRecord): void {
    void this.perApproval
      .run(record.approvalId, () => this.place(record))
      .catch((err: unknown) => {
        this.options.logger.warn({ err, approvalId: record.approvalId }, 'could not update a batch summary');
      });
  }

  /** Resolves once every change already followed has been placed (tests, shutdown). */
  idle(): Promise<void> {
    return this.perApproval.idle();
  }

  /** Keeps what a batch decision did on its summary, and redraws it. */
  async noted(groupId: string, outcome: BatchOutcome): Promise<void> {
    await this.options.groups.note(groupId, JSON.stringify(outcome));
    await this.redraw(groupId);
  }

  private async place(record: ApprovalRecord): Promise<void> {
    const { groups } = this.options;
    const group = batchGroupOf(record, this.options.quorum(record));
    const current = await groups.groupOf(record.approvalId);
    if (current && current !== group?.groupId) await this.leave(current, record.approvalId);
    if (!group) return;
    const joined = await groups.join(group.groupId, batchMemberOf(record), group.shared);
    if (joined === 'post') await this.post(group.groupId, group.channel);
    else if (joined === 'refresh') await this.redraw(group.groupId);
  }

  private async leave(groupId: string, approvalId: string): Promise<void> {
    const left = await this.options.groups.leave(groupId, approvalId);
    if (left !== 'none') await this.redraw(groupId);
  }

  /** This replica won the claim: post the summary, then catch up with what changed meanwhile. */
  private async post(groupId: string, channel: string): Promise<void> {
    const state = await this.options.groups.read(groupId);
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
      const state = await this.options.groups.read(groupId);
      if (state.state === 'posting' || !state.ts || !state.shared) return;
      if (state.rev === shown) return;
      await this.options.board.update(channel, state.ts, viewOf(groupId, channel, state.shared, state));
      shown = state.rev;
    }
  }
}

function viewOf(
  groupId: string,
  channel: string,
  shared: BatchShared,
  state: { members: BatchMember[]; note?: string; state?: string },
): SummaryView {
  return {
    ...(state.state === 'closed' ? { closed: true } : {}),
    groupId,
    channel,
    shared,
    members: state.members.slice(0, BATCH_MAX_MEMBERS),
    total: state.members.length,
    ...(state.note ? { last: JSON.parse(state.note) as BatchOutcome } : {}),
  };
}

/** A group id is `<channel>:<digest>` (domain/batchGroup.ts). */
export function channelOf(groupId: string): string {
  return groupId.slice(0, groupId.lastIndexOf(':'));
}
