// Commands issued together leave in one socket write (src/store/coalescedWrites.ts), read from
// Redis's own counter of reads, on a redis-server of the test's own so nothing else is counted.

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient, type RedisClient } from '../../src/store/redisConnection.js';
import { PrivateRedis } from '../support/privateRedis.js';

let server: PrivateRedis;
let probe: Redis;
let client: RedisClient;

beforeAll(async () => {
  server = await PrivateRedis.start();
  probe = new Redis(server.url);
  client = createRedisClient({ kind: 'single', url: server.url }, { maxRetriesPerRequest: 1 });
  await client.ping();
});

afterAll(async () => {
  client.disconnect();
  probe.disconnect();
  await server.stop();
});

/** Reads Redis made from every client, the probe's own INFO included. */
async function reads(): Promise<number> {
  const stats = await probe.info('stats');
  return Number(/total_reads_processed:(\d+)/.exec(stats)?.[1]);
}

describe('commands issued in one turn', () => {
  it('reach Redis in one read, in the order they were issued', async () => {
    const before = await reads();
    const replies = await Promise.all([
      client.rpush('order', 'a'),
      client.rpush('order', 'b'),
      client.lrange('order', 0, -1),
      client.del('order'),
    ]);
    const after = await reads();
    expect(replies).toEqual([1, 2, ['a', 'b'], 1]);
    // One read for the four commands, one for the probe's INFO after them.
    expect(after - before).toBe(2);
  });

  it('a command awaited on its own leaves at once, in a write of its own', async () => {
    const before = await reads();
    for (let i = 0; i < 5; i++) expect(await client.incr('turns')).toBe(i + 1);
    expect(await reads()).toBe(before + 5 + 1);
  });
});
