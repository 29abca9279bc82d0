// Redis refusing the bot, on a redis-server of the test's own that asks for a password
// (requirepass) or an ACL user: a wrong or missing password, a user without the permissions the
// bot needs, a database the server does not have. At start-up each is a mistake only the
// operator can fix: one line, exit 1, nothing started. A password rotated under a running bot is
// said in one line (again a minute later), not once per retry, and /readyz says it meanwhile.

import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { type BotLogLine, freePort, freshRedisDb, type RunningBot, startBot } from '../support/bot.js';
import { FakeHost } from '../support/fakeHost.js';
import { FakeSlack } from '../support/fakeSlack.js';
import { PrivateRedis } from '../support/privateRedis.js';
import { RedisCluster } from '../support/redisCluster.js';
import { TEST_REDIS_URL } from '../support/testRedis.js';

const PASSWORD = 'the-right-redis-password';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

async function privateRedis(): Promise<PrivateRedis> {
  const redis = await PrivateRedis.start({ password: PASSWORD });
  cleanups.push(() => redis.stop());
  return redis;
}

/** The bot against `redisUrl` (a base without database: startBot adds it). */
async function bot(
  redisUrl: string,
  redisDb = 0,
  env: Record<string, string> = {},
): Promise<RunningBot & { host: FakeHost }> {
  const slack = await FakeSlack.start();
  const host = await FakeHost.start();
  cleanups.push(
    () => slack.close(),
    () => host.close(),
  );
  const running = await startBot({ host, slack, redisDb, redisUrl, env });
  cleanups.push(() => running.kill());
  return Object.assign(running, { host });
}

/** A stack trace in a line an operator reads at the default level (info): the tests log at debug. */
const withStack = (l: BotLogLine) =>
  (l.json === null || (l.level ?? 0) >= 30) && /"stack"| {4}at /.test(l.raw);
const atLeastWarn = (l: BotLogLine) => (l.level ?? 0) >= 40;
const atLeastError = (l: BotLogLine) => (l.level ?? 0) >= 50;

/** The bot's output when it stopped at start-up: exactly `line` on stderr, exit 1, no host. */
async function stoppedWith(running: RunningBot & { host: FakeHost }, line: string): Promise<void> {
  expect(await running.exited).toEqual({ code: 1, signal: null });
  expect(running.logs.filter((l) => l.stream === 'stderr').map((l) => l.raw)).toEqual([
    `countersign: ${line}`,
  ]);
  expect(running.logs.filter(atLeastError)).toEqual([]);
  expect(running.logs.filter(withStack)).toEqual([]);
  expect(running.host.incarnations).toHaveLength(0);
}

describe('Redis refusing the bot at start-up stops it with one line', () => {
  it('a wrong password (WRONGPASS)', async () => {
    const redis = await privateRedis();
    const running = await bot(`redis://:not-the-password@127.0.0.1:${redis.port}`);
    await stoppedWith(
      running,
      'Redis refused the user or password in REDIS_URL (WRONGPASS invalid username-password pair or user is disabled.): fix the password there, or the Redis user it names',
    );
  });

  it('no password where Redis asks for one (NOAUTH)', async () => {
    const redis = await privateRedis();
    const running = await bot(`redis://127.0.0.1:${redis.port}`);
    await stoppedWith(
      running,
      'Redis asks for a password and REDIS_URL gives none (NOAUTH Authentication required.): add it, as redis://:password@host:6379 in REDIS_URL or in REDIS_PASSWORD',
    );
  });

  it.each([
    [
      'the keys cs:*',
      ['~other:*', '+@all'],
      'NOPERM this user has no permissions to access one of the keys used as arguments',
    ],
    ['scripts', ['~*', '+@all', '-eval'], "NOPERM this user has no permissions to run the 'eval' command"],
  ])('a user without %s (NOPERM)', async (_what, rules, said) => {
    const redis = await privateRedis();
    const admin = new Redis(redis.url);
    cleanups.push(async () => admin.disconnect());
    await admin.call('ACL', 'SETUSER', 'countersign', 'on', '>user-password', ...rules);
    const running = await bot(`redis://countersign:user-password@127.0.0.1:${redis.port}`);
    await stoppedWith(
      running,
      `the Redis user in REDIS_URL lacks a permission Countersign needs (${said}): allow it every command on the keys cs:* (ACL SETUSER <user> ~cs:* +@all), or use another user`,
    );
  });

  // A password given to a Redis that asks for none is accepted (ioredis only warns): the Redis is
  // as open to the agent as without one.
  it('a Redis that asks for no password, though REDIS_URL gives one', async () => {
    const open = await PrivateRedis.start();
    cleanups.push(() => open.stop());
    const running = await bot(`redis://:a-password-nobody-asks-for@127.0.0.1:${open.port}`, 0, {
      REDIS_ALLOW_NO_PASSWORD: '',
    });
    await stoppedWith(
      running,
      'Redis lets a client that gives no password do what the bot does, though REDIS_URL gives one: an agent that can reach it could write itself a grant; make it ask for the password (requirepass, or an ACL for the default user) or set REDIS_ALLOW_NO_PASSWORD=true where nothing else can reach Redis',
    );
  });

  it('a database the server does not have (DB index is out of range), not db 0 instead', async () => {
    const running = await bot(TEST_REDIS_URL, 99);
    await stoppedWith(
      running,
      'REDIS_URL names a database this Redis does not have (ERR DB index is out of range; it has 16, 0 to 15, unless its databases setting says more): pick one it has',
    );
  });
});

describe('a Redis Cluster refusing the bot at start-up stops it with one line', () => {
  it('a wrong REDIS_PASSWORD (WRONGPASS, which ioredis wraps as "Failed to refresh slots cache.")', async () => {
    const cluster = await RedisCluster.start();
    cleanups.push(() => cluster.stop());
    await cluster.requirePassword(PASSWORD);
    const running = await bot(TEST_REDIS_URL, 0, {
      REDIS_URL: '',
      REDIS_CLUSTER_NODES: cluster.nodesVar,
      REDIS_PASSWORD: 'not-the-password',
    });
    await stoppedWith(
      running,
      'Redis refused the user or password in REDIS_PASSWORD (WRONGPASS invalid username-password pair or user is disabled.): fix the password there, or the Redis user it names',
    );
  });
});

describe('a password rotated under a running bot', () => {
  it('one error line, not one per retry; no stack traces; /readyz says why', async () => {
    const redis = await privateRedis();
    // METRICS_PORT: where /readyz says why (PORT's says ready or not alone).
    const running = await bot(redis.url, await freshRedisDb(redis.url), {
      METRICS_PORT: String(await freePort()),
    });
    await running.waitReady();
    const before = running.logs.length;

    // The password changes; connections already open keep theirs until they are cut.
    const admin = new Redis(redis.url);
    cleanups.push(async () => admin.disconnect());
    await admin.config('SET', 'requirepass', 'a-new-password');
    await admin.client('KILL', 'TYPE', 'normal', 'SKIPME', 'yes');

    const refusal =
      'Redis refused the user or password in REDIS_URL (WRONGPASS invalid username-password pair or user is disabled.): fix the password there, or the Redis user it names';
    // The client retries every few seconds at most: 8 s see several retries.
    await new Promise((resolve) => setTimeout(resolve, 8_000));
    const after = running.logs.slice(before);
    expect(after.filter(atLeastError).map((l) => l.msg)).toEqual([`${refusal}; retrying`]);
    expect(after.filter(withStack)).toEqual([]);
    expect(after.filter(atLeastWarn).length).toBeLessThanOrEqual(2);
    expect(running.proc.exitCode).toBeNull();

    const res = await fetch(`${running.metricsUrl}/readyz`);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ ready: false, redis: false, reasons: { redis: refusal } });
    expect((await fetch(`${running.url}/readyz`)).status).toBe(503);
  });
});
