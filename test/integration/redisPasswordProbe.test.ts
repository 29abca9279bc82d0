// Whether Redis lets a client that gives no password do the bot's work (answersWithoutPassword),
// on real servers: one Redis and a Cluster, each with and without requirepass.

import { afterEach, describe, expect, it } from 'vitest';
import { answersWithoutPassword } from '../../src/store/redisAccess.js';
import { PrivateRedis } from '../support/privateRedis.js';
import { RedisCluster } from '../support/redisCluster.js';

const PASSWORD = 'the-probe-password';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

describe('answersWithoutPassword', () => {
  it('one Redis: open without requirepass, closed with it', async () => {
    const open = await PrivateRedis.start();
    cleanups.push(() => open.stop());
    const closed = await PrivateRedis.start({ password: PASSWORD });
    cleanups.push(() => closed.stop());
    expect(
      await answersWithoutPassword(
        { kind: 'single', url: `redis://:${PASSWORD}@127.0.0.1:${open.port}` },
        3_000,
      ),
    ).toBe('open');
    expect(
      await answersWithoutPassword(
        { kind: 'single', url: `redis://:${PASSWORD}@127.0.0.1:${closed.port}` },
        3_000,
      ),
    ).toBe('closed');
  });

  // A Cluster's client says "None of startup nodes is available" for the command; the NOAUTH
  // that explains it comes on its error event.
  it('a Cluster: closed with requirepass on its nodes, open without', async () => {
    const cluster = await RedisCluster.start();
    cleanups.push(() => cluster.stop());
    const target = { kind: 'cluster' as const, nodes: cluster.nodes, password: PASSWORD };
    expect(await answersWithoutPassword(target, 3_000)).toBe('open');
    await cluster.requirePassword(PASSWORD);
    expect(await answersWithoutPassword(target, 3_000)).toBe('closed');
  }, 30_000);
});
