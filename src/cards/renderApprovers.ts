import type { KnownBlock } from '@slack/types';
import { context } from './blocks.js';
import type { CardBudget } from './budget.js';
import { truncate } from './escape.js';

/**
 * Who may decide, as names (the caller resolves IDs). Names, never `<@U…>`/`<!subteam^…>`
 * mentions: a card is posted to a whole channel and must not ping the people it lists.
 */
export interface ShownApproverNames {
  /** Undefined: anyone in the channel (but maybe not the requester). Empty: admins only. */
  names?: string[];
  /** The requester, who may not decide their own agent's request on this route. */
  notOwner?: string;
}

/** "Approvers: alice, sre · not the requester (bob)"; nothing without approvers to show. */
export function renderApprovers(approvers: ShownApproverNames | undefined, budget: CardBudget): KnownBlock[] {
  if (!approvers) return [];
  const parts: string[] = [];
  if (approvers.names === undefined) parts.push('Anyone in this channel may decide');
  else if (approvers.names.length > 0) parts.push(`Approvers: ${approvers.names.join(', ')}`);
  else parts.push('Approvers: admins only');
  if (approvers.notOwner !== undefined) parts.push(`not the requester (${approvers.notOwner})`);
  // Names come from Slack profiles, which their owners write: escaped like any other text.
  return [context([truncate(parts.join(' · '), budget.field)])];
}
