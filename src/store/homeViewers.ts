import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

/**
 * Slack users who opened the app's Home recently: their Home is worth publishing again when
 * approvals change. One sorted set scored by when each user stops counting, so that every
 * replica sees the same viewers and one read lists them all.
 */
export class HomeViewers {
  constructor(
    private readonly redis: RedisClient,
    private readonly forMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async opened(userId: string): Promise<void> {
    const now = this.now();
    await this.redis
      .multi()
      .zadd(keys.homeViewers(), now + this.forMs, userId)
      .zremrangebyscore(keys.homeViewers(), '-inf', now)
      .pexpire(keys.homeViewers(), this.forMs)
      .exec();
  }

  /** The user's Home no longer follows approvals (it shows a stranger only why they have no access). */
  async left(userId: string): Promise<void> {
    await this.redis.zrem(keys.homeViewers(), userId);
  }

  async current(): Promise<string[]> {
    return this.redis.zrangebyscore(keys.homeViewers(), this.now(), '+inf');
  }
}
