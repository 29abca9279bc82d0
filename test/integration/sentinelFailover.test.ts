// A planned Sentinel failover (SENTINEL FAILOVER): the old master stays up, taking writes, until
// Sentinel turns it into a replica some seconds later. The bot's client must follow the switch at
// once: a write acknowledged by the old master in that window is lost, and a replica still
// reading the old master's host leases would run a host another replica took on the new one.
// Real servers: a master, its replica and a sentinel, all of the test's own.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRedisClient, type RedisClient } from '../../src/store/redisConnection.js';
import { freePort } from '../support/bot.js';
import { PrivateRedis } from '../support/privateRedis.js';
import { until } from '../support/until.js';

const NAME = 'countersign-failover';

let dir: string;
let master: PrivateRedis;
let replica: PrivateRedis;
let sentinel: ChildProcess;
let sentinelPort: number;
let sentinelClient: Redis;

async function masterPort(): Promise<number> {
  const [, port] = (await sentinelClient.call('SENTINEL', 'get-master-addr-by-name', NAME)) as string[];
  return Number(port);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'countersign-failover-'));
  master = await PrivateRedis.start();
  replica = await PrivateRedis.start();
  const toReplica = new Redis(replica.port);
  await toReplica.call('REPLICAOF', '127.0.0.1', String(master.port));
  await until(async () => /master_link_status:up/.test(await toReplica.info('replication')), 10_000);
  toReplica.disconnect();
  sentinelPort = await freePort();
  // Sentinel rewrites its configuration file: it must be a file of its own, writable.
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(
    conf,
    [
      `port ${sentinelPort}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor ${NAME} 127.0.0.1 ${master.port} 1`,
      '',
    ].join('\n'),
  );
  sentinel = spawn('redis-server', [conf, '--sentinel'], { stdio: 'ignore' });
  sentinelClient = new Redis(sentinelPort, { lazyConnect: true, retryStrategy: () => 50 });
  sentinelClient.on('error', () => {});
  await until(async () => {
    try {
      const replicas = (await sentinelClient.call('SENTINEL', 'replicas', NAME)) as string[][];
      return replicas.some((fields) => fields.includes(String(replica.port)));
    } catch {
      return false;
    }
  }, 20_000);
}, 40_000);

afterAll(async () => {
  sentinelClient?.disconnect();
  if (sentinel && sentinel.exitCode === null && sentinel.signalCode === null) {
    const exited = new Promise<void>((resolve) => sentinel.once('exit', () => resolve()));
    sentinel.kill('SIGKILL');
    await exited;
  }
  await Promise.all([master?.remove(), replica?.remove()]);
  rmSync(dir, { recursive: true, force: true });
});

describe('a Sentinel failover', () => {
  it('moves writes to the new master at once, not when the old one is demoted', async () => {
    const redis: RedisClient = createRedisClient({
      kind: 'sentinel',
      sentinels: [{ host: '127.0.0.1', port: sentinelPort }],
      name: NAME,
      db: 0,
    });
    redis.on('error', () => {});
    const onNew = new Redis(replica.port);
    try {
      await redis.set('cs:probe:{failover}', 'before');
      // The replica may not yet be a good one to promote (its state not yet reported): asked again.
      await until(async () => {
        try {
          return (await sentinelClient.call('SENTINEL', 'FAILOVER', NAME)) === 'OK';
        } catch {
          return false;
        }
      }, 20_000);
      await until(async () => (await masterPort()) === replica.port, 20_000);
      // The old master is demoted some seconds after the switch; the client must not wait for it.
      // Each write names itself, so only one that reached the new master is found there.
      let n = 0;
      await until(async () => {
        const value = `after-${++n}`;
        await redis.set('cs:probe:{failover}', value);
        return (await onNew.get('cs:probe:{failover}')) === value;
      }, 3_000);
      expect(await onNew.get('cs:probe:{failover}')).toBe(`after-${n}`);
    } finally {
      onNew.disconnect();
      redis.disconnect();
    }
  }, 60_000);
});
