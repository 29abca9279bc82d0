import type { CardFacts } from '../domain/messages.js';

/**
 * Message metadata every card carries, on its post and on every update (docs/slack.md, "Card
 * metadata"). It names the card's approval, so that a card whose post answer was lost is
 * recognised in the channel's history and never posted twice; and it says where the approval
 * stands, so that Workflow Builder and other apps can follow approvals without reading the text.
 */
export const CARD_EVENT_TYPE = 'countersign_card';

/** The payload's schema version: bumped only when a field changes meaning or goes away. */
export const CARD_METADATA_VERSION = 1;

// A type, not an interface: Slack's MessageMetadata wants an index signature.
export type CardPayload = {
  approval_id: string;
  v?: number;
  route?: string;
  state?: string;
  decision?: string;
  decided_via?: string;
  changed_at?: string;
};

export interface CardMetadata {
  event_type: typeof CARD_EVENT_TYPE;
  event_payload: CardPayload;
}

/** `facts` left out: the approval id alone (what finding a lost post needs). */
export function cardMetadata(approvalId: string, facts?: CardFacts): CardMetadata {
  if (!facts) return { event_type: CARD_EVENT_TYPE, event_payload: { approval_id: approvalId } };
  return {
    event_type: CARD_EVENT_TYPE,
    event_payload: {
      approval_id: approvalId,
      v: CARD_METADATA_VERSION,
      ...(facts.route !== undefined ? { route: facts.route } : {}),
      state: facts.state,
      ...(facts.decision !== undefined ? { decision: facts.decision } : {}),
      ...(facts.decidedVia !== undefined ? { decided_via: facts.decidedVia } : {}),
      changed_at: facts.changedAt,
    },
  };
}

/** The metadata of a batch summary card (docs/slack.md, "Batch triage"): not an approval's card. */
export const BATCH_EVENT_TYPE = 'countersign_batch';

export type BatchPayload = {
  group_id: string;
  v: number;
  route: string;
  state: 'open' | 'closed';
  /** How many approvals the group holds. */
  members: number;
};

export function batchMetadata(view: {
  groupId: string;
  shared: { route: string };
  total: number;
  closed?: boolean;
}): { event_type: typeof BATCH_EVENT_TYPE; event_payload: BatchPayload } {
  return {
    event_type: BATCH_EVENT_TYPE,
    event_payload: {
      group_id: view.groupId,
      v: CARD_METADATA_VERSION,
      route: view.shared.route,
      state: view.closed ? 'closed' : 'open',
      members: view.total,
    },
  };
}

/** Whether a message from conversations.history is the card of `approvalId`. */
export function isCardOf(message: { metadata?: unknown }, approvalId: string): boolean {
  const metadata = message.metadata as
    | { event_type?: unknown; event_payload?: { approval_id?: unknown } }
    | undefined;
  return metadata?.event_type === CARD_EVENT_TYPE && metadata.event_payload?.approval_id === approvalId;
}
