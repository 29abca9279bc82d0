// The demo's Redis: the configured one when it answers (never wiping data the demo did not
// write), else a private redis-server that stops with the demo.

import { spawnSync } from 'node:child_process';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, test } from 'vitest';
import {
  DEMO_DB,
  type DemoRedis,
  DemoRedisError,
  demoRedis,
  INSTALL_HINT,
  withDemoDb,
} from '../../demo/redis.js';
import { freePort, freshRedisDb } from '../support/bot.js';
import { testRedisUrl } from '../support/testRedis.js';

const hasRedisServer = spawnSync('redis-server', ['--version']).status === 0;
const started: DemoRedis[] = [];

afterEach(async () => {
  for (const r of started.splice(0)) await r.stop();
});

async function withRedis<T>(url: string, run: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    return await run(redis);
  } finally {
    redis.disconnect();
  }
}

const pings = (url: string) => withRedis(url, (r) => r.ping()).catch(() => 'no answer');

describe('demoRedis', () => {
  test('uses an empty database at REDIS_URL, and empties it again on the next run', async () => {
    const url = testRedisUrl(await freshRedisDb());
    const first = await demoRedis({ url });
    expect(first).toMatchObject({ url, privateServer: null });
    await withRedis(url, (r) => r.set('cs:approval:left-over', 'x'));

    await demoRedis({ url });
    expect(await withRedis(url, (r) => r.exists('cs:approval:left-over'))).toBe(0);
  });

  test('refuses a database holding data the demo did not write, and leaves it alone', async () => {
    const url = testRedisUrl(await freshRedisDb());
    await withRedis(url, (r) => r.set('someone-else', 'precious'));
    await expect(demoRedis({ url })).rejects.toThrow(/holds 1 key the demo did not write/);
    expect(await withRedis(url, (r) => r.get('someone-else'))).toBe('precious');
  });

  test('a REDIS_URL without a database gets the demo database', () => {
    expect(withDemoDb('redis://127.0.0.1:6379')).toBe(`redis://127.0.0.1:6379/${DEMO_DB}`);
    expect(withDemoDb('redis://127.0.0.1:6379/4')).toBe('redis://127.0.0.1:6379/4');
  });

  test.skipIf(!hasRedisServer)(
    'when nothing answers, starts a private redis-server and stops it again',
    async () => {
      const nothing = `redis://127.0.0.1:${await freePort()}`;
      const redis = await demoRedis({ url: nothing });
      started.push(redis);
      expect(redis.privateServer).not.toBeNull();
      expect(redis.url).not.toBe(nothing);
      expect(await pings(redis.url)).toBe('PONG');
      await redis.stop();
      expect(await pings(redis.url)).toBe('no answer');
    },
  );

  test('when nothing answers and redis-server is missing, says how to install Redis', async () => {
    const nothing = `redis://127.0.0.1:${await freePort()}`;
    const attempt = demoRedis({ url: nothing, redisServer: 'no-such-redis-server-here' });
    await expect(attempt).rejects.toBeInstanceOf(DemoRedisError);
    await expect(attempt).rejects.toThrow(INSTALL_HINT);
  });
});
