import type { WebClient } from '@slack/web-api';
import { RETRY_POLICIES, retrySlackCall } from './slackRetry.js';

/** Slack's advised page size for users.conversations, and how many pages are read. */
const PAGE = 200;
const MAX_PAGES = 50;
/** A name the last listing did not have is not listed for again before this: a typo costs little. */
const RELIST_AFTER_MS = 30_000;

export interface ChannelIdsOptions {
  /** How long a name's ID read from Slack is trusted: as long as who is in the channel. */
  ttlMs: number;
  now?: () => number;
}

/**
 * The channel IDs of the `#name`s routes and SLACK_CHANNEL may give. chat.postMessage takes a
 * name, but conversations.members and the grants (kept under the card's channel, an ID) do not:
 * a name is looked up among the channels the bot is a member of (users.conversations, with the
 * channels:read and groups:read the manifest has for conversations.members), and a post's answer
 * says it too, freshest. The bot posts only where it was invited, so a channel it is not in has
 * no cards to decide on, and its name rejects: who may decide there is not known.
 */
export class SlackChannelIds {
  /** `#name` → its ID and until when it is trusted (ms since the epoch). */
  private readonly known = new Map<string, { id: string; until: number }>();
  private listing: Promise<void> | undefined;
  private lastListing: { at: number; names: ReadonlySet<string> } | undefined;
  private readonly now: () => number;

  constructor(
    private readonly web: Pick<WebClient, 'users'>,
    private readonly options: ChannelIdsOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /** What a post to `name` answered: Slack resolved the name as it posted. */
  learn(name: string, id: string): void {
    if (name.startsWith('#'))
      this.known.set(name.toLowerCase(), { id, until: this.now() + this.options.ttlMs });
  }

  /** The ID of `channel` (an ID as it is). Rejects when Slack cannot say, or has no such channel for the bot. */
  async id(channel: string): Promise<string> {
    if (!channel.startsWith('#')) return channel;
    // Slack's channel names are lower case; a name in the config may not be.
    const name = channel.toLowerCase();
    const fresh = this.fresh(name);
    if (fresh) return fresh;
    const last = this.lastListing;
    const listedLately = last && this.now() - last.at < RELIST_AFTER_MS && !last.names.has(name);
    if (!listedLately) await this.list();
    const found = this.fresh(name);
    if (found) return found;
    throw new Error(
      `channel ${channel} is not among the channels the bot is a member of: invite the bot there (/invite @countersign), or name the channel by its ID`,
    );
  }

  /** The ID of `channel` if it is known now, without asking Slack (an ID as it is). */
  idNow(channel: string): string | undefined {
    return channel.startsWith('#') ? this.fresh(channel.toLowerCase()) : channel;
  }

  private fresh(name: string): string | undefined {
    const entry = this.known.get(name);
    return entry && this.now() < entry.until ? entry.id : undefined;
  }

  /** One listing at a time, whoever asks meanwhile waits for it. */
  private list(): Promise<void> {
    this.listing ??= this.listNow().finally(() => {
      this.listing = undefined;
    });
    return this.listing;
  }

  private async listNow(): Promise<void> {
    const at = this.now();
    const names = new Set<string>();
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page++) {
      const answer = await retrySlackCall(
        () =>
          this.web.users.conversations({
            types: 'public_channel,private_channel',
            exclude_archived: true,
            limit: PAGE,
            ...(cursor ? { cursor } : {}),
          }),
        RETRY_POLICIES.interactive,
      );
      for (const { id, name } of answer.channels ?? []) {
        if (!id || !name) continue;
        const key = `#${name.toLowerCase()}`;
        names.add(key);
        this.known.set(key, { id, until: at + this.options.ttlMs });
      }
      cursor = answer.response_metadata?.next_cursor || undefined;
      if (!cursor) break;
    }
    this.lastListing = { at, names };
  }
}
