import type { WaitingApproval } from '../cards/renderWaiting.js';
import type { Authorizer } from '../relay/deciding/authorizer.js';
import type { ApprovalStore } from '../store/approvalStore.js';
import { readOpenRecords } from '../store/openRecords.js';
import type { RedisClient } from '../store/redisConnection.js';
import type { Permalinks } from './permalinks.js';

export interface WaitingApprovalsOptions {
  redis: RedisClient;
  store: ApprovalStore;
  /** Every configured host: a user's approvals may come from any of them. */
  hostIds: readonly string[];
  authorizer: Authorizer;
  permalinks: Permalinks;
}

/**
 * The pending approvals a user may decide, across hosts and channels, oldest first, with a link
 * to each card: what /countersign pending and App Home list. Each record is checked against the
 * rules of the route stored on it, as a click on its card would be; admins see every one.
 */
export class WaitingApprovals {
  constructor(private readonly options: WaitingApprovalsOptions) {}

  /** `linked`: how many of the oldest get a permalink (the rest are not shown). */
  async for(userId: string, linked: number): Promise<WaitingApproval[]> {
    const { redis, store, hostIds, authorizer, permalinks } = this.options;
    const pending = (await readOpenRecords(redis, store, hostIds)).filter((r) => r.phase === 'pending');
    const admin = await authorizer.actsAsAdmin(userId);
    const checks = await Promise.all(
      pending.map(async (record) => admin || (await authorizer.check(userId, record)).allowed),
    );
    const mine = pending
      .filter((_, i) => checks[i])
      .sort((a, b) => a.openedAt.localeCompare(b.openedAt) || a.approvalId.localeCompare(b.approvalId));
    return Promise.all(
      mine.map(async (record, i) => {
        const ts = record.slack.ts;
        const permalink = ts && i < linked ? await permalinks.of(record.slack.channel, ts) : undefined;
        return permalink ? { record, permalink } : { record };
      }),
    );
  }
}
