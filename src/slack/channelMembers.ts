import type { WebClient } from '@slack/web-api';
import type { ChannelDirectory } from '../relay/deciding/authorizer.js';
import type { LookupCache } from '../store/lookupCache.js';
import { SharedLookups } from './sharedLookups.js';
import { RETRY_POLICIES, retrySlackCall } from './slackRetry.js';

/** Slack's page size for conversations.members (its maximum), and how many pages are read. */
const PAGE = 1_000;
const MAX_PAGES = 100;

/** A channel's ID, from the `#name` a route may give (channelIds.ts); an ID as it is. */
export interface ChannelIdOf {
  id(channel: string): Promise<string>;
}

/**
 * Members of Slack channels, from `conversations.members`, shared by replicas and kept for at
 * most five minutes (SharedLookups): on a route without approvers, they are who may decide.
 * conversations.members takes only IDs (a `#name` is channel_not_found): a name is asked by its ID.
 */
export class SlackChannelMembers implements ChannelDirectory {
  private readonly lookups: SharedLookups<ReadonlySet<string>>;

  constructor(
    web: WebClient,
    cache: LookupCache,
    private readonly ids: ChannelIdOf,
    options: { ttlMs: number },
  ) {
    this.lookups = new SharedLookups<ReadonlySet<string>>({
      cache,
      ttlMs: options.ttlMs,
      ask: async (channel) => {
        const members = new Set<string>();
        let cursor: string | undefined;
        for (let page = 0; page < MAX_PAGES; page++) {
          const answer = await retrySlackCall(
            () => web.conversations.members({ channel, limit: PAGE, ...(cursor ? { cursor } : {}) }),
            RETRY_POLICIES.interactive,
          );
          for (const member of answer.members ?? []) members.add(member);
          cursor = answer.response_metadata?.next_cursor || undefined;
          if (!cursor) return members;
        }
        // Past a hundred thousand members, what was read is not the whole channel: refuse all.
        throw new Error(`channel ${channel} has more than ${PAGE * MAX_PAGES} members`);
      },
      encode: (members) => [...members],
      decode: (json) => new Set(json as string[]),
    });
  }

  /**
   * Rejects when neither Redis nor Slack can say, or a name's ID is not known: the Authorizer
   * then refuses the user.
   */
  async members(channel: string): Promise<ReadonlySet<string>> {
    return this.lookups.get(await this.ids.id(channel));
  }
}
