/**
 * Message metadata every card is posted with, naming its approval. When a post's answer is lost,
 * this is how the card is recognised in the channel's history, so it is never posted twice.
 */
export const CARD_EVENT_TYPE = 'countersign_card';

export interface CardMetadata {
  event_type: typeof CARD_EVENT_TYPE;
  event_payload: { approval_id: string };
}

export function cardMetadata(approvalId: string): CardMetadata {
  return { event_type: CARD_EVENT_TYPE, event_payload: { approval_id: approvalId } };
}

/** Whether a message from conversations.history is the card of `approvalId`. */
export function isCardOf(message: { metadata?: unknown }, approvalId: string): boolean {
  const metadata = message.metadata as
    | { event_type?: unknown; event_payload?: { approval_id?: unknown } }
    | undefined;
  return metadata?.event_type === CARD_EVENT_TYPE && metadata.event_payload?.approval_id === approvalId;
}
