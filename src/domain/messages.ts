import { decisionVia } from './audit.js';
import type { ApprovalRecord } from './record.js';

/**
 * What other apps may read of a card (Slack message metadata, slack/cardMetadata.ts): the
 * approval, its route, where it stands and when that last changed. Never the agent's text, the
 * arguments, or who the approvers are.
 */
export interface CardFacts {
  approvalId: string;
  /** The route's name as the config file gives it; absent on records placed before routes. */
  route?: string;
  /** The record's phase: reviewing, pending, deciding, unavailable, resolved, superseded, orphaned. */
  state: string;
  /** The host's decision once resolved (approved, denied, abort, timedOut, …). */
  decision?: string;
  /** How it was decided once resolved: click, grant, timeout, policy, reviewer, otherClient, host. */
  decidedVia?: string;
  /** When the record last changed (ISO 8601). */
  changedAt: string;
}

/** A rendered Slack message: the fallback text plus Block Kit blocks. */
export interface RenderedMessage {
  text: string;
  blocks: unknown[];
  /** For an approval's card: what its message metadata says, on the post and on every update. */
  facts?: CardFacts;
}

export function cardFacts(
  record: Pick<ApprovalRecord, 'approvalId' | 'route' | 'phase' | 'resolution' | 'updatedAt'>,
): CardFacts {
  const { resolution } = record;
  return {
    approvalId: record.approvalId,
    ...(record.route !== undefined ? { route: record.route } : {}),
    state: record.phase,
    ...(resolution && record.phase === 'resolved'
      ? { decision: resolution.decision, decidedVia: decisionVia(resolution) }
      : {}),
    changedAt: record.updatedAt,
  };
}
