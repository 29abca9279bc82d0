import type { RenderedMessage } from '../domain/messages.js';

/**
 * What to send instead when Slack refuses a card as too big or malformed, smallest change first:
 * the card without its buttons, then its fallback text alone. Either way the message that stays
 * in Slack never keeps buttons the bot no longer means: a refused final render would otherwise
 * leave the previous render's live buttons on a resolved card.
 */
export function smallerCards(message: RenderedMessage): RenderedMessage[] {
  if (message.blocks.length === 0) return [];
  const withoutButtons = message.blocks.filter((block) => (block as { type?: unknown }).type !== 'actions');
  const textOnly = { text: message.text, blocks: [] };
  return withoutButtons.length < message.blocks.length && withoutButtons.length > 0
    ? [{ text: message.text, blocks: withoutButtons }, textOnly]
    : [textOnly];
}
