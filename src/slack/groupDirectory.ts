import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { GroupDirectory } from '../relay/authorizer.js';
import { keys } from '../store/keys.js';
import type { RedisClient } from '../store/redisConnection.js';
import { RETRY_POLICIES, retrySlackCall } from './slackRetry.js';

export interface SlackGroupDirectoryOptions {
  /** How long members read from Slack are trusted (COUNTERSIGN_USERGROUP_CACHE_TTL). */
  ttlMs: number;
  logger: Logger;
}

/**
 * Members of Slack user groups, from `usergroups.users.list`. The answer is kept in Redis for a
 * short while, so every replica decides on the same membership, and reads of one group in this
 * process share one lookup, so a burst of clicks costs one Web API call.
 */
export class SlackGroupDirectory implements GroupDirectory {
  private readonly inFlight = new Map<string, Promise<ReadonlySet<string>>>();

  constructor(
    private readonly web: WebClient,
    private readonly redis: RedisClient,
    private readonly options: SlackGroupDirectoryOptions,
  ) {}

  /** Rejects when neither Redis nor Slack can say: the Authorizer then counts the user out. */
  members(usergroupId: string): Promise<ReadonlySet<string>> {
    const pending = this.inFlight.get(usergroupId);
    if (pending) return pending;
    const lookup = this.lookUp(usergroupId).finally(() => this.inFlight.delete(usergroupId));
    this.inFlight.set(usergroupId, lookup);
    return lookup;
  }

  private async lookUp(usergroupId: string): Promise<ReadonlySet<string>> {
    const key = keys.usergroup(usergroupId);
    const cached = await this.redis.get(key);
    if (cached !== null) return new Set(JSON.parse(cached) as string[]);
    // A person waits on the click behind this: a few quick tries, as for a modal.
    const answer = await retrySlackCall(
      () => this.web.usergroups.users.list({ usergroup: usergroupId }),
      RETRY_POLICIES.interactive,
    );
    const users = answer.users ?? [];
    await this.redis.set(key, JSON.stringify(users), 'PX', this.options.ttlMs);
    this.options.logger.debug(
      { usergroup: usergroupId, members: users.length },
      'user group read from Slack',
    );
    return new Set(users);
  }
}
