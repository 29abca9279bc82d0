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
 * process share one lookup, so a burst of clicks costs one Web API call. This process also keeps
 * the answer until the Redis copy expires: no replica trusts it longer than the others, and a
 * click on a route with user groups costs no Redis round trip of its own.
 */
export class SlackGroupDirectory implements GroupDirectory {
  private readonly inFlight = new Map<string, Promise<ReadonlySet<string>>>();
  /** usergroupId → its members and when the Redis copy they came from expires (ms since the epoch). */
  private readonly known = new Map<string, { members: ReadonlySet<string>; until: number }>();

  constructor(
    private readonly web: WebClient,
    private readonly redis: RedisClient,
    private readonly options: SlackGroupDirectoryOptions,
  ) {}

  /** Rejects when neither Redis nor Slack can say: the Authorizer then counts the user out. */
  members(usergroupId: string): Promise<ReadonlySet<string>> {
    const known = this.known.get(usergroupId);
    if (known && Date.now() < known.until) return Promise.resolve(known.members);
    const pending = this.inFlight.get(usergroupId);
    if (pending) return pending;
    const lookup = this.lookUp(usergroupId).finally(() => this.inFlight.delete(usergroupId));
    this.inFlight.set(usergroupId, lookup);
    return lookup;
  }

  private async lookUp(usergroupId: string): Promise<ReadonlySet<string>> {
    const key = keys.usergroup(usergroupId);
    const askedAt = Date.now();
    const [cached, ttl] = await Promise.all([this.redis.get(key), this.redis.pttl(key)]);
    if (cached !== null)
      return this.keep(usergroupId, new Set(JSON.parse(cached) as string[]), askedAt + ttl);
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
    return this.keep(usergroupId, new Set(users), askedAt + this.options.ttlMs);
  }

  private keep(usergroupId: string, members: ReadonlySet<string>, until: number): ReadonlySet<string> {
    // A copy without an expiry (PTTL -1, never written so by us) is not kept in memory.
    if (until > Date.now()) this.known.set(usergroupId, { members, until });
    return members;
  }
}
