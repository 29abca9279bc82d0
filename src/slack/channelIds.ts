import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { RETRY_POLICIES, retrySlackCall } from './slackRetry.js';

/** Slack's advised page size for users.conversations, and how many pages are read. */
const PAGE = 200;
const MAX_PAGES = 50;
/** A name the last listing did not have is not listed for again before this: a typo costs little. */
const RELIST_AFTER_MS = 30_000;

export interface ChannelIdsOptions {
  /** How long a name's ID is trusted to be a channel the bot is in: as long as who is in it. */
  ttlMs: number;
  now?: () => number;
  /** Told, once per name and channel, when a name is found to belong to another channel now. */
  logger?: Logger;
}

/**
 * The channel IDs of the `#name`s routes and SLACK_CHANNEL may give. conversations.members and
 * the grants (kept under the card's channel, an ID) take only IDs, and cards are posted by ID
 * too: a name is looked up among the channels the bot is a member of (users.conversations, with
 * the channels:read and groups:read the manifest has for conversations.members), or told by a
 * post's answer. The bot posts only where it was invited, so a channel it is not in has no cards
 * to decide on, and its name rejects: who may decide there is not known.
 *
 * The first ID a name is found as is kept for the life of the process. A channel renamed keeps
 * its ID, so nothing changes for it; but a name is no proof of which channel is meant: once the
 * channel is renamed, another (a public one, another team's the bot was invited to) may take the
 * name, and following it would move the route's cards, the agents' commands on them and who may
 * decide there to that channel's members. A later listing or post answer that gives the name to
 * another ID is therefore not followed, only logged; and when the bot is no longer in the
 * channel of the kept ID (archived, the bot removed), the name rejects rather than fall to the
 * channel that has it now.
 */
export class SlackChannelIds {
  /** `#name` → the ID it was first found as, and until when the bot is trusted to be in it (ms since the epoch). */
  private readonly pinned = new Map<string, { id: string; until: number }>();
  /** `#name` and the other ID it was seen naming, once said: one warning each, not one per listing. */
  private readonly warned = new Set<string>();
  private listing: Promise<void> | undefined;
  private lastListing:
    | { at: number; names: ReadonlyMap<string, string>; ids: ReadonlySet<string> }
    | undefined;
  private readonly now: () => number;

  constructor(
    private readonly web: Pick<WebClient, 'users'>,
    private readonly options: ChannelIdsOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /** The channel a post for `name` landed in. A name already kept as another ID stays so (logged). */
  learn(name: string, id: string): void {
    if (name.startsWith('#')) this.pin(name.toLowerCase(), id, this.now() + this.options.ttlMs);
  }

  /**
   * The ID of `channel` (an ID as it is): the one its name was first found as. Rejects when Slack
   * cannot say, has no such channel for the bot, or the bot is no longer in the channel of that ID.
   */
  async id(channel: string): Promise<string> {
    if (!channel.startsWith('#')) return channel;
    // Slack's channel names are lower case; a name in the config may not be.
    const name = channel.toLowerCase();
    const fresh = this.fresh(name) ?? this.listed(name);
    if (fresh) return fresh;
    const last = this.lastListing;
    const kept = this.pinned.get(name);
    const lastHadIt = kept ? last?.ids.has(kept.id) : last?.names.has(name);
    const listedLately = last && this.now() - last.at < RELIST_AFTER_MS && !lastHadIt;
    if (!listedLately) await this.list();
    const found = this.fresh(name) ?? this.listed(name);
    if (found) return found;
    if (kept) {
      throw new Error(
        `channel ${channel} (${kept.id}) is no longer among the channels the bot is a member of (archived, or the bot removed); its name is not followed to another channel: invite the bot back, or name the route's channel by its ID`,
      );
    }
    throw new Error(
      `channel ${channel} is not among the channels the bot is a member of: invite the bot there (/invite @countersign), or name the channel by its ID`,
    );
  }

  /**
   * The ID `channel` was first found as, without asking Slack (an ID as it is); undefined until
   * it is found. Posts go there even when the bot's membership is not fresh: Slack refuses a post
   * to a channel the bot is no longer in, and the name's new channel never gets it.
   */
  idNow(channel: string): string | undefined {
    return channel.startsWith('#') ? this.pinned.get(channel.toLowerCase())?.id : channel;
  }

  private fresh(name: string): string | undefined {
    const entry = this.pinned.get(name);
    return entry && this.now() < entry.until ? entry.id : undefined;
  }

  /**
   * The ID of a name not found yet, as the last listing gave it while it is fresh, kept from now
   * on. Only names asked for are kept: another channel renamed is none of the bot's business.
   */
  private listed(name: string): string | undefined {
    const last = this.lastListing;
    const id = last?.names.get(name);
    if (!last || id === undefined || this.pinned.has(name)) return undefined;
    const until = last.at + this.options.ttlMs;
    if (this.now() >= until) return undefined;
    this.pinned.set(name, { id, until });
    return id;
  }

  /** `name` is `id` until `until`, unless it was found as another ID first: that one is kept. */
  private pin(name: string, id: string, until: number): void {
    const kept = this.pinned.get(name);
    if (!kept) {
      this.pinned.set(name, { id, until });
    } else if (kept.id === id) {
      kept.until = Math.max(kept.until, until);
    } else {
      this.taken(name, kept.id, id);
    }
  }

  private taken(name: string, id: string, other: string): void {
    const key = `${name}\u0000${other}`;
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.options.logger?.warn(
      { channel: name, id, nowNames: other },
      `channel ${name} now names another channel (${other}) than the one it was found as (${id}): cards, grants and who may decide stay with ${id}, until restarted; name the channel by its ID in the config`,
    );
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
    const names = new Map<string, string>();
    const ids = new Set<string>();
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
        names.set(`#${name.toLowerCase()}`, id);
        ids.add(id);
      }
      cursor = answer.response_metadata?.next_cursor || undefined;
      if (!cursor) break;
    }
    const until = at + this.options.ttlMs;
    // A name kept is fresh while the bot is in its channel, under whatever name it has now.
    for (const [name, kept] of this.pinned) {
      if (ids.has(kept.id)) kept.until = Math.max(kept.until, until);
      const named = names.get(name);
      if (named !== undefined && named !== kept.id) this.taken(name, kept.id, named);
    }
    this.lastListing = { at, names, ids };
  }
}
