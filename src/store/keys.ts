// Every Redis key the bot uses comes from here. Keys of one approval share the hash tag
// `{approvalId}` so a Lua script may touch them together on Redis Cluster.

const PREFIX = 'cs';

export const keys = {
  /** Hash: `v` = version, `d` = record JSON. */
  approval: (approvalId: string) => `${PREFIX}:approval:{${approvalId}}`,
  /** Who is deciding one stage (requirement sourceIndex) of an approval, with its commandId. */
  claim: (approvalId: string, sourceIndex: number) => `${PREFIX}:claim:{${approvalId}}:${sourceIndex}`,
  /** Held while one worker posts the card, so a card is never posted twice. */
  postLease: (approvalId: string) => `${PREFIX}:post:{${approvalId}}`,
  /** Slack message (channel, ts) → approvalId. */
  message: (channel: string, ts: string) => `${PREFIX}:msg:{${channel}:${ts}}`,
  /** Set of approvalIds not yet final, per host: what a reconcile has to look at. */
  openApprovals: (hostId: string) => `${PREFIX}:open:{${hostId}}`,
} as const;
