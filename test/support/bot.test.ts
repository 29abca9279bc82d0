// Self-test of startBot/freshRedisDb using a stub entry script instead of the real bot.

import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { afterEach, expect, test } from 'vitest';
import { freePort, freshRedisDb, type RunningBot, startBot } from './bot.js';
import { FakeHost } from './fakeHost.js';
import { FAKE_SLACK_APP_TOKEN, FAKE_SLACK_BOT_TOKEN } from './fakeSecrets.js';
import { FakeSlack } from './fakeSlack.js';
import { testRedisUrl } from './testRedis.js';

let bot: RunningBot | undefined;
let host: FakeHost | undefined;
let slack: FakeSlack | undefined;

afterEach(async () => {
  await bot?.kill();
  await host?.close();
  await slack?.close();
  bot = host = slack = undefined;
});

test('freePort hands out ports no outgoing connection takes, never the same one twice', async () => {
  // A port found free and bound a moment later was once taken meanwhile (the bot then refused to
  // start): the kernel's ephemeral range is where listen(0) picks and where every outgoing
  // connection takes its local port.
  const [ephemeralLow] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/);
  const ports = await Promise.all(Array.from({ length: 50 }, () => freePort()));
  expect(new Set(ports).size).toBe(ports.length);
  for (const port of ports) {
    expect(port).toBeGreaterThanOrEqual(1024);
    expect(port).toBeLessThan(Number(ephemeralLow));
  }
});

test('freshRedisDb picks a per-worker db and empties it', async () => {
  const db = await freshRedisDb();
  expect(db).toBeGreaterThanOrEqual(1);
  expect(db).toBeLessThanOrEqual(15);
  const redis = new Redis(testRedisUrl(db));
  await redis.set('leftover', '1');
  redis.disconnect();
  expect(await freshRedisDb()).toBe(db);
  const check = new Redis(testRedisUrl(db));
  expect(await check.dbsize()).toBe(0);
  check.disconnect();
});

test('startBot wires env, logs, readiness and the fake host; stop() sends SIGTERM', async () => {
  process.env.SLACK_APP_TOKEN = FAKE_SLACK_APP_TOKEN;
  try {
    host = await FakeHost.start();
    slack = await FakeSlack.start();
    bot = await startBot({
      host,
      slack,
      redisDb: 7,
      env: { EXTRA: 'yes' },
      entry: 'test/support/stub-bot.mjs',
    });
  } finally {
    delete process.env.SLACK_APP_TOKEN;
  }
  await bot.waitReady(5000);
  // /metrics, which waitReady read, is on a METRICS_PORT of its own: PORT never serves it.
  expect(bot.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
  expect(bot.metricsUrl).not.toBe(bot.url);
  const listening = await bot.waitForLog((l) => l.msg === 'listening');
  expect(listening.json?.env).toEqual({
    token: FAKE_SLACK_BOT_TOKEN,
    appToken: null,
    apiUrl: slack.apiUrl,
    redis: testRedisUrl(7),
    channel: 'C0APPROVALS',
    level: 'debug',
    extra: 'yes',
  });
  await bot.waitForLog((l) => l.stream === 'stderr' && l.raw === 'plain stderr line');
  await host.waitForIncarnation(1);
  await host.waitForMethod('initialized');
  await host.startSession({ sessionId: 's1' });
  await bot.waitForLog((l) => l.msg === 'host frame' && l.json?.method === 'session/started');
  await expect(bot.waitForLog((l) => l.msg === 'never', 100)).rejects.toThrow(/no matching log line/);

  const exit = await bot.stop();
  expect(exit).toEqual({ code: 0, signal: null });
  expect(bot.logs.some((l) => l.msg === 'stopping')).toBe(true);
});
