// What Slack and PagerDuty answered, kept in Redis under each kind's keys for every replica: read
// with the time it has left, written with the time it is trusted.

import type { Redis } from 'ioredis';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import { keys } from '../../src/store/keys.js';
import { RedisLookupCache } from '../../src/store/lookupCache.js';
import { useFreshRedis } from '../support/freshRedis.js';

const fresh = useFreshRedis();
/** The file's own database, emptied before each test. */
let redis: Redis;
beforeEach(() => {
  redis = fresh();
});

describe('RedisLookupCache', () => {
  it('keeps an answer as JSON under its kind’s key, for the time it is written with', async () => {
    const cache = new RedisLookupCache(redis, 'usergroup');
    await cache.write('S0SRE', ['U0ALICE'], 5_000);
    expect(await redis.get(keys.usergroup('S0SRE'))).toBe('["U0ALICE"]');
    const ttl = await redis.pttl(keys.usergroup('S0SRE'));
    expect(ttl).toBeGreaterThan(4_000);
    expect(ttl).toBeLessThanOrEqual(5_000);
    expect(await cache.read('S0SRE')).toEqual({ value: ['U0ALICE'] });
    const read = await cache.readWithTtl('S0SRE');
    expect(read?.value).toEqual(['U0ALICE']);
    expect(read?.ttlMs).toBeGreaterThan(4_000);
  });

  it('says nothing is kept when nothing is, and keeps each kind apart', async () => {
    const people = new RedisLookupCache(redis, 'person');
    await people.write('U0ALICE', { teamId: 'T1', guest: false }, 5_000);
    expect(await redis.exists(keys.person('U0ALICE'))).toBe(1);
    expect(await new RedisLookupCache(redis, 'channelMembers').read('U0ALICE')).toBeUndefined();
    expect(await new RedisLookupCache(redis, 'oncallPagerDuty').readWithTtl('U0ALICE')).toBeUndefined();
    await new RedisLookupCache(redis, 'oncallPagerDuty').write('schedule:P1', ['U0BOB'], 5_000);
    expect(await redis.get(keys.oncallPagerDuty('schedule:P1'))).toBe('["U0BOB"]');
  });

  it('reads an answer and its time left with one GET and one PTTL, sent together', async () => {
    const cache = new RedisLookupCache(redis, 'channelMembers');
    await cache.write('C1', ['U0ALICE'], 5_000);
    const gets = vi.spyOn(redis, 'get');
    const pttls = vi.spyOn(redis, 'pttl');
    await cache.readWithTtl('C1');
    expect(gets).toHaveBeenCalledTimes(1);
    expect(pttls).toHaveBeenCalledTimes(1);
    gets.mockRestore();
    pttls.mockRestore();
  });
});
