import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

/**
 * Checks that Redis lets the bot do what its work needs: run a script that writes and deletes a
 * key of its own (the store's updates are scripts on keys `cs:*`). A password that works for a
 * user without those permissions fails here, with NOPERM, before any work starts. Rejects with
 * Redis's error.
 */
export async function checkRedisAccess(redis: RedisClient): Promise<void> {
  await redis.eval(
    "redis.call('SET', KEYS[1], ARGV[1], 'PX', 60000) return redis.call('DEL', KEYS[1])",
    1,
    keys.accessCheck(),
    String(process.pid),
  );
}
