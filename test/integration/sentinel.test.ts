// Redis Sentinel for real: a private redis-server (with a password) and a sentinel (with one of its
// own) monitoring it, and the client createRedisClient builds from REDIS_SENTINELS with
// REDIS_SENTINEL_NAME, or from a redis+sentinel:// REDIS_URL, reading and writing through it.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redisTargetOf } from '../../src/config/config.js';
import { keys } from '../../src/store/keys.js';
import { RecentDecisions } from '../../src/store/recentDecisions.js';
import { createRedisClient, type RedisClient } from '../../src/store/redisConnection.js';
import { freePort } from '../support/bot.js';

const MASTER_PASSWORD = 'master-pw';
const SENTINEL_PASSWORD = 'sentinel-pw';
const NAME = 'countersign-test';

let dir: string;
const procs: ChildProcess[] = [];
let masterPort: number;
let sentinelPort: number;

function start(args: string[]): ChildProcess {
  const proc = spawn('redis-server', args, { stdio: 'ignore' });
  procs.push(proc);
  return proc;
}

/** Waits until `probe` answers on a fresh connection with these options. */
async function untilAnswers(
  options: { port: number; password: string },
  probe: (r: Redis) => Promise<unknown>,
) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const redis = new Redis({ host: '127.0.0.1', ...options, lazyConnect: true, retryStrategy: () => null });
    redis.on('error', () => {});
    try {
      await redis.connect();
      if (await probe(redis)) return;
    } catch (err) {
      if (Date.now() > deadline) throw err;
    } finally {
      redis.disconnect();
    }
    if (Date.now() > deadline) throw new Error(`port ${options.port}: no answer within 10 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'countersign-sentinel-'));
  masterPort = await freePort();
  sentinelPort = await freePort();
  start([
    ...['--port', String(masterPort), '--bind', '127.0.0.1', '--requirepass', MASTER_PASSWORD],
    ...['--save', '', '--appendonly', 'no', '--dir', dir],
  ]);
  await untilAnswers({ port: masterPort, password: MASTER_PASSWORD }, (r) => r.ping());
  // Sentinel rewrites its configuration file: it must be a file of its own, writable.
  const conf = join(dir, 'sentinel.conf');
  writeFileSync(
    conf,
    [
      `port ${sentinelPort}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `requirepass ${SENTINEL_PASSWORD}`,
      `sentinel monitor ${NAME} 127.0.0.1 ${masterPort} 1`,
      `sentinel auth-pass ${NAME} ${MASTER_PASSWORD}`,
      '',
    ].join('\n'),
  );
  start([conf, '--sentinel']);
  await untilAnswers({ port: sentinelPort, password: SENTINEL_PASSWORD }, async (r) =>
    r.call('SENTINEL', 'get-master-addr-by-name', NAME),
  );
});

afterAll(async () => {
  await Promise.all(
    procs.map(async (proc) => {
      if (proc.exitCode !== null || proc.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
      proc.kill('SIGKILL');
      await exited;
    }),
  );
  rmSync(dir, { recursive: true, force: true });
});

/** The master itself, in database `db`: what the client through Sentinel wrote must be there. */
async function onMaster<T>(db: number, use: (redis: Redis) => Promise<T>): Promise<T> {
  const redis = new Redis({ port: masterPort, host: '127.0.0.1', password: MASTER_PASSWORD, db });
  try {
    return await use(redis);
  } finally {
    redis.disconnect();
  }
}

async function through(env: NodeJS.ProcessEnv, use: (redis: RedisClient) => Promise<void>): Promise<void> {
  const { target } = redisTargetOf(env);
  expect(target.kind).toBe('sentinel');
  const redis = createRedisClient(target, { maxRetriesPerRequest: 1 });
  try {
    await use(redis);
  } finally {
    await redis.quit();
  }
}

describe('Redis Sentinel', () => {
  it('REDIS_SENTINELS with REDIS_SENTINEL_NAME and both passwords: writes and reads the master', async () => {
    await onMaster(0, (r) => r.flushdb());
    const env = {
      REDIS_SENTINELS: `127.0.0.1:${sentinelPort}`,
      REDIS_SENTINEL_NAME: NAME,
      REDIS_PASSWORD: MASTER_PASSWORD,
      REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD,
    };
    await through(env, async (redis) => {
      const recent = new RecentDecisions(redis, 60_000);
      const entry = {
        approvalId: 'a-1',
        tool: 'shell',
        decision: 'approved',
        decidedAt: 'now',
        channel: 'C1',
      };
      expect(await recent.add('U1', entry)).toBe(true);
      expect(await recent.add('U1', entry)).toBe(false);
      expect(await recent.list('U1')).toEqual([entry]);
    });
    expect(await onMaster(0, (r) => r.llen(keys.recentDecisions('U1')))).toBe(1);
  });

  it('a redis+sentinel:// REDIS_URL, with the master’s password and a database', async () => {
    await onMaster(3, (r) => r.flushdb());
    const env = {
      REDIS_URL: `redis+sentinel://:${MASTER_PASSWORD}@127.0.0.1:${sentinelPort}/${NAME}?db=3`,
      REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD,
    };
    await through(env, async (redis) => {
      await redis.set('cs:probe:{sentinel}', 'through sentinel');
      expect(await redis.get('cs:probe:{sentinel}')).toBe('through sentinel');
    });
    expect(await onMaster(3, (r) => r.get('cs:probe:{sentinel}'))).toBe('through sentinel');
    expect(await onMaster(0, (r) => r.exists('cs:probe:{sentinel}'))).toBe(0);
  });

  it('a wrong sentinel password is refused: the client does use it', async () => {
    const { target } = redisTargetOf({
      REDIS_SENTINELS: `127.0.0.1:${sentinelPort}`,
      REDIS_SENTINEL_NAME: NAME,
      REDIS_PASSWORD: MASTER_PASSWORD,
      REDIS_SENTINEL_PASSWORD: 'not-the-password',
    });
    const redis = createRedisClient(target, { lazyConnect: true, retryStrategy: () => null });
    redis.on('error', () => {});
    await expect(redis.connect()).rejects.toThrow();
    redis.disconnect();
  });
});
