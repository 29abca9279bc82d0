import type { ApprovalRecord, Resolution } from './record.js';

/** A resolved record: the notices are about its resolution. */
export type ResolvedRecord = ApprovalRecord & { resolution: Resolution };

export interface NoticeNames {
  /** A Slack user's name, so that a notice names the decider without pinging them. */
  nameOf?: (userId: string) => string | undefined;
}
