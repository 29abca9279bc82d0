import type { WebClient } from '@slack/web-api';
import { isCardOf } from './cardMetadata.js';

/** Slack's clock and ours differ a little: the search starts this long before the first attempt. */
const CLOCK_MARGIN_MS = 60_000;
const PAGE_SIZE = 100;
/** A lookup reads at most this many pages; a card further back than that is not searched for. */
const MAX_PAGES = 10;

export interface FindCardQuery {
  /** The channel's ID: conversations.history does not take a #name. */
  channel: string;
  approvalId: string;
  /** When the first attempt to post the card was made. */
  since: Date;
  /** The bot's own bot id (auth.test): any app in the channel can post the same metadata. */
  botId: string;
}

/** A Slack ts (seconds, six decimals) for a time in milliseconds. */
function slackTs(ms: number): string {
  return (ms / 1000).toFixed(6);
}

/**
 * Looks through the channel's history since a little before `since` for the card of
 * `approvalId` (by its message metadata, on a message the bot posted itself) and resolves with
 * its ts, or undefined. Any failed
 * page throws, for the caller to classify: not knowing is not the same as not found.
 */
export async function findPostedCard(client: WebClient, query: FindCardQuery): Promise<string | undefined> {
  const oldest = slackTs(query.since.getTime() - CLOCK_MARGIN_MS);
  let cursor: string | undefined;
  for (let page = 0; page < MAX_PAGES; page++) {
    const result = await client.conversations.history({
      channel: query.channel,
      oldest,
      limit: PAGE_SIZE,
      include_all_metadata: true,
      ...(cursor ? { cursor } : {}),
    });
    const card = result.messages?.find(
      (message) => message.bot_id === query.botId && isCardOf(message, query.approvalId),
    );
    if (card?.ts) return card.ts;
    cursor = result.response_metadata?.next_cursor || undefined;
    if (!result.has_more || !cursor) return undefined;
  }
  return undefined;
}
