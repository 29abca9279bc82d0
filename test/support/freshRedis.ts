import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import { freshRedisDb } from './bot.js';
import { testRedisUrl } from './testRedis.js';

/**
 * A connection to a database of the tests' Redis that no other test file uses, emptied before
 * each test and closed after the file: what an integration test of a store needs. Call it at the
 * top of the file; the getter answers once the file's tests run.
 */
export function useFreshRedis(): () => Redis {
  let redis: Redis | undefined;
  beforeAll(async () => {
    redis = new Redis(testRedisUrl(await freshRedisDb()));
  });
  beforeEach(async () => {
    await redis!.flushdb();
  });
  afterAll(async () => {
    await redis?.quit();
  });
  return () => redis!;
}
