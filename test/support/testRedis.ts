// Where the tests' Redis is. TEST_REDIS_URL lets two checkouts run their suites at once, each
// against a Redis of its own (the suites flush their databases).

export const TEST_REDIS_URL = (process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379').replace(/\/+$/, '');

/** The URL of one logical database of the tests' Redis. */
export function testRedisUrl(db: number): string {
  return `${TEST_REDIS_URL}/${db}`;
}

/**
 * What lets a bot, or loadConfig, take a Redis without a password (src/config/redisPassword.ts):
 * the tests' Redis has none, nor has the default REDIS_URL, and only the tests reach them.
 */
export const NO_REDIS_PASSWORD = { REDIS_ALLOW_NO_PASSWORD: 'true' } as const;
