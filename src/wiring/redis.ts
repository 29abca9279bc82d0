import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { renameLegacyKeys } from '../store/legacyKeys.js';
import { createRedisClient } from '../store/redisConnection.js';
import { RedisHealth } from '../store/redisHealth.js';

/** The one Redis connection, its health, and why it is down when it is. */
export function wireRedis(config: Config, logger: Logger, shownUrl: string) {
  // Commands wait while Redis is away instead of failing (createRedisClient's defaults): an
  // approval event held in memory for a while is better than one dropped. /readyz says Redis is
  // down meanwhile.
  const redis = createRedisClient(config.redis);
  let redisErrorLogged = false;
  let redisError: string | undefined;
  redis.on('error', (err) => {
    if (!redisErrorLogged) logger.error({ err: err.message }, 'redis unreachable; retrying');
    redisErrorLogged = true;
    redisError = err.message;
  });
  redis.on('ready', () => {
    if (redisErrorLogged) logger.info('redis reachable again');
    redisErrorLogged = false;
    redisError = undefined;
  });
  // Keys of an earlier release under their names without a hash tag (one Redis only: a cluster
  // never held them), moved before the work that reads them starts (see start() in assemble.ts).
  const legacyKeysMoved =
    config.redis.kind === 'cluster'
      ? Promise.resolve()
      : renameLegacyKeys(redis, logger).then(
          () => undefined,
          (err: unknown) => logger.warn({ err }, 'could not move the old keys'),
        );
  const redisHealth = new RedisHealth(redis, { logger });
  return {
    redis,
    redisHealth,
    legacyKeysMoved,
    up: () => redis.status === 'ready' && redisHealth.available(),
    whyDown: () => {
      if (redisError !== undefined) return `cannot reach Redis at ${shownUrl}: ${redisError}`;
      if (redis.status === 'ready') return `Redis at ${shownUrl} does not answer PING in time`;
      return `Redis connection is ${redis.status}`;
    },
  };
}
