import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { GroupDirectory } from '../relay/deciding/authorizer.js';
import type { LookupCache } from '../store/lookupCache.js';
import { SharedLookups } from './sharedLookups.js';
import { RETRY_POLICIES, retrySlackCall } from './slackRetry.js';

export interface SlackGroupDirectoryOptions {
  /** How long members read from Slack are trusted (COUNTERSIGN_USERGROUP_CACHE_TTL). */
  ttlMs: number;
  logger: Logger;
}

/** Members of Slack user groups, from `usergroups.users.list`, shared by replicas (SharedLookups). */
export class SlackGroupDirectory implements GroupDirectory {
  private readonly lookups: SharedLookups<ReadonlySet<string>>;

  constructor(web: WebClient, cache: LookupCache, options: SlackGroupDirectoryOptions) {
    this.lookups = new SharedLookups<ReadonlySet<string>>({
      cache,
      ttlMs: options.ttlMs,
      ask: async (usergroupId) => {
        // A person waits on the click behind this: a few quick tries, as for a modal.
        const answer = await retrySlackCall(
          () => web.usergroups.users.list({ usergroup: usergroupId }),
          RETRY_POLICIES.interactive,
        );
        const users = answer.users ?? [];
        options.logger.debug({ usergroup: usergroupId, members: users.length }, 'user group read from Slack');
        return new Set(users);
      },
      encode: (members) => [...members],
      decode: (json) => new Set(json as string[]),
    });
  }

  /** Rejects when neither Redis nor Slack can say: the Authorizer then counts the user out. */
  members(usergroupId: string): Promise<ReadonlySet<string>> {
    return this.lookups.get(usergroupId);
  }
}
