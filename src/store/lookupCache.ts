import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

/**
 * What Slack (or PagerDuty) answered about one id, kept in Redis for a short while so that every
 * replica decides on the same answer and asks once: user groups, people, channel members, who is
 * on call. Each kind has keys of its own (keys.ts).
 */
export type LookupKind = 'usergroup' | 'person' | 'channelMembers' | 'oncallPagerDuty';

const KEY_OF: Record<LookupKind, (id: string) => string> = {
  usergroup: keys.usergroup,
  person: keys.person,
  channelMembers: keys.channelMembers,
  oncallPagerDuty: keys.oncallPagerDuty,
};

/** A cache of answers by id, as JSON, each kept for the time it is written with. */
export interface LookupCache {
  /** The answer kept for `id`, if any. */
  read(id: string): Promise<{ value: unknown } | undefined>;
  /**
   * The answer kept for `id` and how long it has left in ms (-1: no expiry), read in one round
   * trip, if any.
   */
  readWithTtl(id: string): Promise<{ value: unknown; ttlMs: number } | undefined>;
  /** Keeps `value` (JSON can hold it) for `ttlMs`. */
  write(id: string, value: unknown, ttlMs: number): Promise<void>;
}

/** One kind of lookup kept in Redis: GET (with PTTL when asked) to read, SET … PX to write. */
export class RedisLookupCache implements LookupCache {
  private readonly keyOf: (id: string) => string;

  constructor(
    private readonly redis: RedisClient,
    kind: LookupKind,
  ) {
    this.keyOf = KEY_OF[kind];
  }

  async read(id: string): Promise<{ value: unknown } | undefined> {
    const cached = await this.redis.get(this.keyOf(id));
    return cached === null ? undefined : { value: JSON.parse(cached) };
  }

  async readWithTtl(id: string): Promise<{ value: unknown; ttlMs: number } | undefined> {
    const key = this.keyOf(id);
    const [cached, ttl] = await Promise.all([this.redis.get(key), this.redis.pttl(key)]);
    return cached === null ? undefined : { value: JSON.parse(cached), ttlMs: ttl };
  }

  async write(id: string, value: unknown, ttlMs: number): Promise<void> {
    await this.redis.set(this.keyOf(id), JSON.stringify(value), 'PX', ttlMs);
  }
}
