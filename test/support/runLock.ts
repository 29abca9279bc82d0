import { hostname } from 'node:os';
import { Redis } from 'ioredis';

// One test run per Redis. Two runs on one server hand out the same databases (freshRedisDb picks
// them by worker id) and flush what the other is using: both then fail in ways that look like the
// bot's. A run holds a key of database 0, which no test uses, for as long as it runs.

export const RUN_LOCK_KEY = 'countersign:tests:running';

export interface RunLockOptions {
  key?: string;
  /** How long the key outlives a run that stopped renewing it (killed). */
  ttlMs?: number;
}

export interface RunLock {
  release(): Promise<void>;
}

/** Renews the key only while this run holds it. KEYS: the key. ARGV: holder, ttl. */
const RENEW = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;
const RELEASE = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

/**
 * Takes the run lock of the Redis at `baseUrl` (its database 0), or throws naming the run that
 * holds it. Renewed every third of its TTL until released.
 */
export async function holdRunLock(baseUrl: string, options: RunLockOptions = {}): Promise<RunLock> {
  const key = options.key ?? RUN_LOCK_KEY;
  const ttlMs = options.ttlMs ?? 30_000;
  const redis = new Redis(`${baseUrl}/0`, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect().catch((err: unknown) => {
    redis.disconnect();
    throw new Error(
      `the tests need a Redis at ${baseUrl}: ${err instanceof Error ? err.message : String(err)}`,
    );
  });
  const me = `${hostname()} pid ${process.pid}, since ${new Date().toISOString()}`;
  const taken = await redis.set(key, me, 'PX', ttlMs, 'NX');
  if (taken !== 'OK') {
    const holder = await redis.get(key);
    redis.disconnect();
    throw new Error(
      `another test run (${holder ?? 'just ended'}) is using the Redis at ${baseUrl}: wait for it to end, ` +
        'or point TEST_REDIS_URL at another server',
    );
  }
  const renewing = setInterval(() => {
    redis.eval(RENEW, 1, key, me, ttlMs).catch(() => {});
  }, ttlMs / 3);
  renewing.unref();
  return {
    async release() {
      clearInterval(renewing);
      await redis.eval(RELEASE, 1, key, me).catch(() => {});
      redis.disconnect();
    },
  };
}
