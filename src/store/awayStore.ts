import type { Away } from '../domain/away.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

/** How many people one delegate can stand in for at once: what a check reads stays bounded. */
export const MAX_STAND_INS = 20;

/**
 * Who is away, in Redis, so that every replica sees a change at once: one key per person that
 * expires when their absence ends (so an expiry needs nobody to act), and per delegate the names
 * of those who chose them. Nothing is kept in memory.
 */
export class AwayStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Sets (or replaces) an absence; resolves with the one it replaced, if any. The previous
   * delegate, if another, no longer stands in.
   */
  async set(away: Away): Promise<Away | undefined> {
    const untilMs = Date.parse(away.until);
    const previous = await this.get(away.userId);
    await this.redis.set(keys.away(away.userId), JSON.stringify(away), 'PXAT', untilMs);
    if (previous?.delegate && previous.delegate !== away.delegate) {
      await this.redis.zrem(keys.standIn(previous.delegate), away.userId);
    }
    if (away.delegate) {
      const key = keys.standIn(away.delegate);
      await this.redis
        .multi()
        .zadd(key, untilMs, away.userId)
        .zremrangebyscore(key, '-inf', this.now())
        .pexpireat(key, Math.max(untilMs, await this.lastEnd(key)))
        .exec();
    }
    return previous;
  }

  /** Ends an absence now; resolves with the one that was set, if any. */
  async clear(userId: string): Promise<Away | undefined> {
    const previous = await this.get(userId);
    await this.redis.del(keys.away(userId));
    if (previous?.delegate) await this.redis.zrem(keys.standIn(previous.delegate), userId);
    return previous;
  }

  /** The user's absence, while it lasts. */
  async get(userId: string): Promise<Away | undefined> {
    const raw = await this.redis.get(keys.away(userId));
    if (!raw) return undefined;
    const away = JSON.parse(raw) as Away;
    return Date.parse(away.until) > this.now() ? away : undefined;
  }

  /** Which of `userIds` are away now, each with their absence. One round trip. */
  async whoIsAway(userIds: readonly string[]): Promise<Map<string, Away>> {
    const found = new Map<string, Away>();
    if (userIds.length === 0) return found;
    const raws = await Promise.all(userIds.map((id) => this.redis.get(keys.away(id))));
    raws.forEach((raw, i) => {
      if (!raw) return;
      const away = JSON.parse(raw) as Away;
      if (Date.parse(away.until) > this.now()) found.set(userIds[i]!, away);
    });
    return found;
  }

  /**
   * Those who are away now and named `delegate` to stand in for them: each checked against their
   * own absence (the index is only a hint), at most MAX_STAND_INS.
   */
  async standingInFor(delegate: string): Promise<Away[]> {
    const names = await this.redis.zrangebyscore(
      keys.standIn(delegate),
      this.now(),
      '+inf',
      'LIMIT',
      0,
      MAX_STAND_INS,
    );
    const aways = await this.whoIsAway(names);
    return names.flatMap((name) => {
      const away = aways.get(name);
      return away?.delegate === delegate ? [away] : [];
    });
  }

  /**
   * How many others than `userId` have `delegate` in their index now: what `away` checks against
   * MAX_STAND_INS before adding one more. The index itself is counted, not the absences it
   * points at, as standingInFor reads no further into it than MAX_STAND_INS names.
   */
  async standInCount(delegate: string, userId: string): Promise<number> {
    const key = keys.standIn(delegate);
    const nowMs = this.now();
    const [count, own] = await Promise.all([
      this.redis.zcount(key, nowMs, '+inf'),
      this.redis.zscore(key, userId),
    ]);
    return own !== null && Number(own) >= nowMs ? count - 1 : count;
  }

  private async lastEnd(key: string): Promise<number> {
    const last = await this.redis.zrange(key, -1, -1, 'WITHSCORES');
    return last[1] ? Number(last[1]) : 0;
  }
}
