import type { CardChannel } from '../../src/relay/ports.js';

/**
 * A card channel that posts every card at once, in `posted` (their channels, in order), and
 * updates nothing: for tests of what decides, not of what Slack shows.
 */
export function postingCards(posted: string[] = []): { cards: CardChannel; posted: string[] } {
  const cards: CardChannel = {
    post: async (channel) => {
      posted.push(channel);
      return { ts: `1.00000${posted.length}`, channel };
    },
    update: async () => {},
  };
  return { cards, posted };
}
