// The run lock (runLock.ts) on the tests' Redis, under keys of its own: this very run holds the
// real one.

import { Redis } from 'ioredis';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { holdRunLock } from './runLock.js';
import { TEST_REDIS_URL } from './testRedis.js';
import { until } from './until.js';

const key = `countersign:tests:self-test:${process.pid}`;

describe('the run lock', () => {
  const redis = new Redis(`${TEST_REDIS_URL}/0`);
  afterEach(async () => {
    await redis.del(key);
  });
  afterAll(async () => {
    await redis.quit();
  });

  it('lets one run in at a time, names the one that holds it, and lets the next in once released', async () => {
    const first = await holdRunLock(TEST_REDIS_URL, { key });
    await expect(holdRunLock(TEST_REDIS_URL, { key })).rejects.toThrow(
      new RegExp(`another test run \\(.*pid ${process.pid}.*\\) is using the Redis at .*TEST_REDIS_URL`),
    );
    await first.release();
    const next = await holdRunLock(TEST_REDIS_URL, { key });
    await next.release();
    expect(await redis.exists(key)).toBe(0);
  });

  it('is kept while its run lives, and lapses once a run that was killed stops renewing it', async () => {
    const held = await holdRunLock(TEST_REDIS_URL, { key, ttlMs: 300 });
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(await redis.exists(key)).toBe(1);
    // As if killed: the key is left to its TTL, and a new run gets in after it.
    const value = await redis.get(key);
    await held.release();
    await redis.set(key, value!, 'PX', 300);
    await until(async () => (await redis.exists(key)) === 0, 2_000);
    const next = await holdRunLock(TEST_REDIS_URL, { key });
    await next.release();
  });

  it('never releases a lock another run has taken since', async () => {
    const held = await holdRunLock(TEST_REDIS_URL, { key });
    await redis.set(key, 'someone else');
    await held.release();
    expect(await redis.get(key)).toBe('someone else');
  });
});
