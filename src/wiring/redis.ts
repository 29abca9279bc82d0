import type { Logger } from 'pino';
import { ConfigError } from '../config/common.js';
import type { Config } from '../config/config.js';
import { renameLegacyKeys } from '../store/legacyKeys.js';
import { answersWithoutPassword, checkRedisAccess } from '../store/redisAccess.js';
import { createRedisClient } from '../store/redisConnection.js';
import { RedisHealth } from '../store/redisHealth.js';
import { describeRedisRefusal, redisRefusal, refusalSetting } from '../store/redisRefusals.js';

/** A refusal met after start-up (a password rotated under a running bot) is said this often. */
export const REFUSAL_LOG_EVERY_MS = 60_000;

/** The one Redis connection, its health, and why it is down when it is. */
export function wireRedis(config: Config, logger: Logger, shownUrl: string) {
  // Commands wait while Redis is away instead of failing (createRedisClient's defaults): an
  // approval event held in memory for a while is better than one dropped. /readyz says Redis is
  // down meanwhile.
  const redis = createRedisClient(config.redis);
  // Allowed by REDIS_ALLOW_NO_PASSWORD, and said at every start: it is safe only while nothing
  // but the bot can reach Redis, which the bot cannot check.
  if (config.redisUnauthenticated) {
    logger.warn(
      { redis: shownUrl },
      'Redis has no password (REDIS_ALLOW_NO_PASSWORD=true): anything that can reach it, an agent included, could write itself a grant',
    );
  }
  const setting = refusalSetting(config.redis);
  let redisErrorLogged = false;
  let redisError: string | undefined;
  /** Whether redisError is Redis refusing the bot (a sentence of its own), not a network error. */
  let refusedNow = false;
  // Until Redis has once accepted who we are and what we do (checkRedisAccess), a refusal is a
  // mistake in the settings: start-up stops on it. After that it is a password rotated under a
  // running bot: said once a minute while the client retries, and /readyz says it all along.
  let accessChecked = false;
  let refuse: (err: ConfigError) => void = () => {};
  const refused = new Promise<never>((_resolve, reject) => {
    refuse = reject;
  });
  let refusalLoggedAt = Number.NEGATIVE_INFINITY;
  redis.on('error', (err) => {
    const refusal = describeRedisRefusal(err, setting);
    if (refusal !== undefined) {
      // A refused AUTH is followed by NOAUTH for the commands sent behind it: the password
      // given is the news, not a missing one.
      if (redisRefusal(err) === 'NOAUTH' && refusedNow && redisError?.includes('WRONGPASS')) return;
      redisError = refusal;
      refusedNow = true;
      if (!accessChecked) {
        refuse(new ConfigError(setting, refusal));
      } else if (Date.now() - refusalLoggedAt >= REFUSAL_LOG_EVERY_MS) {
        refusalLoggedAt = Date.now();
        logger.error({ err: err.message }, `${refusal}; retrying`);
      }
      redisErrorLogged = true;
      return;
    }
    if (!redisErrorLogged) logger.error({ err: err.message }, 'redis unreachable; retrying');
    redisErrorLogged = true;
    redisError = err.message;
    refusedNow = false;
  });
  redis.on('ready', () => {
    if (redisErrorLogged) logger.info('redis reachable again');
    redisErrorLogged = false;
    redisError = undefined;
    refusedNow = false;
    refusalLoggedAt = Number.NEGATIVE_INFINITY;
  });
  // Asked at each connection until it passes once: a connection lost mid-check proves nothing.
  const checked = new Promise<void>((resolve) => {
    const check = () => {
      if (accessChecked) return;
      checkRedisAccess(redis).then(
        () => {
          accessChecked = true;
          redis.off('ready', check);
          resolve();
        },
        (err: unknown) => {
          const refusal = describeRedisRefusal(err, setting);
          if (refusal !== undefined) refuse(new ConfigError(setting, refusal));
        },
      );
    };
    redis.on('ready', check);
  });
  // Resolves once Redis has accepted the bot and, unless REDIS_ALLOW_NO_PASSWORD=true, has shown
  // it asks for the password given; rejects with a ConfigError when it refused the bot, or asks
  // for no password.
  const access = Promise.race([checked.then(() => asksForPassword(config, setting, logger)), refused]);
  // start() waits on it for a few seconds only; a refusal after that still has a listener.
  access.catch(() => {});
  // Keys of an earlier release under their names without a hash tag (one Redis only: a cluster
  // never held them), moved before the work that reads them starts (see start() in assemble.ts).
  const legacyKeysMoved =
    config.redis.kind === 'cluster'
      ? Promise.resolve()
      : renameLegacyKeys(redis, logger).then(
          () => undefined,
          (err: unknown) => {
            // A refusal stops start-up with a line of its own (access, above).
            if (redisRefusal(err) === undefined) logger.warn({ err }, 'could not move the old keys');
          },
        );
  const redisHealth = new RedisHealth(redis, { logger });
  return {
    redis,
    redisHealth,
    legacyKeysMoved,
    access,
    up: () => redis.status === 'ready' && redisHealth.available() && !refusedNow,
    whyDown: () => {
      if (redisError !== undefined) {
        return refusedNow ? redisError : `cannot reach Redis at ${shownUrl}: ${redisError}`;
      }
      if (redis.status === 'ready') return `Redis at ${shownUrl} does not answer PING in time`;
      return `Redis connection is ${redis.status}`;
    },
  };
}

/** How long start-up waits for the probe without a password before it goes on untold. */
const PASSWORD_PROBE_MS = 3_000;

/**
 * A password given to a Redis that asks for none is accepted (ioredis only warns), and leaves that
 * Redis as open to the agent as no password would: a ConfigError then, unless
 * REDIS_ALLOW_NO_PASSWORD=true. A probe that cannot tell (Redis away or slow) is logged and
 * start-up goes on: the bot has just been let in with its password.
 */
async function asksForPassword(config: Config, setting: string, logger: Logger): Promise<void> {
  if (config.redisAllowNoPassword) return;
  const seen = await answersWithoutPassword(config.redis, PASSWORD_PROBE_MS);
  if (seen === 'open') {
    throw new ConfigError(
      setting,
      `Redis lets a client that gives no password do what the bot does, though ${setting} gives one: an agent that can reach it could write itself a grant; make it ask for the password (requirepass, or an ACL for the default user) or set REDIS_ALLOW_NO_PASSWORD=true where nothing else can reach Redis`,
    );
  }
  if (seen === undefined) logger.warn('could not check that Redis asks for a password; going on');
}
