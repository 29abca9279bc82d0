// The Redis connection's own line for a refusal met after start-up (a password rotated under a
// running bot): once a minute while it lasts, not once per retry, on a real Redis that has
// accepted the bot first.

import { afterEach, expect, it, vi } from 'vitest';
import type { Config } from '../../src/config/config.js';
import { REFUSAL_LOG_EVERY_MS, wireRedis } from '../../src/wiring/redis.js';
import { freshRedisDb } from '../support/bot.js';
import { captureLogger } from '../support/logCapture.js';
import { testRedisUrl } from '../support/testRedis.js';

const cleanups: Array<() => unknown> = [];
afterEach(() => {
  vi.restoreAllMocks();
  while (cleanups.length) cleanups.pop()!();
});

const refused = (message: string) => Object.assign(new Error(message), { name: 'ReplyError' });

it('says a refusal after start-up once a minute, and /readyz its sentence meanwhile', async () => {
  const url = testRedisUrl(await freshRedisDb());
  // The tests' Redis asks for no password: allowed, as the loader would allow it.
  const config = {
    redis: { kind: 'single', url },
    redisUnauthenticated: true,
    redisAllowNoPassword: true,
  } as Config;
  const { logger, lines } = captureLogger('info');
  const redis = wireRedis(config, logger, url);
  cleanups.push(() => redis.redis.disconnect());
  await redis.access;
  expect(redis.up()).toBe(true);

  const now = vi.spyOn(Date, 'now');
  const start = 1_000_000;
  now.mockReturnValue(start);
  const wrongPass = refused('WRONGPASS invalid username-password pair or user is disabled.');
  // Each reconnect is refused: AUTH fails, then the commands behind it meet NOAUTH.
  for (let i = 0; i < 5; i++) {
    redis.redis.emit('error', wrongPass);
    redis.redis.emit('error', refused('NOAUTH Authentication required.'));
  }
  now.mockReturnValue(start + REFUSAL_LOG_EVERY_MS - 1);
  redis.redis.emit('error', wrongPass);
  const sentence =
    'Redis refused the user or password in REDIS_URL (WRONGPASS invalid username-password pair or user is disabled.): fix the password there, or the Redis user it names';
  const noPassword =
    'Redis has no password (REDIS_ALLOW_NO_PASSWORD=true): anything that can reach it, an agent included, could write itself a grant';
  expect(lines.map((l) => [l.level, l.msg])).toEqual([
    [40, noPassword],
    [50, `${sentence}; retrying`],
  ]);
  expect(redis.whyDown()).toBe(sentence);
  expect(redis.up()).toBe(false);

  now.mockReturnValue(start + REFUSAL_LOG_EVERY_MS);
  redis.redis.emit('error', wrongPass);
  expect(lines.map((l) => l.msg)).toEqual([noPassword, `${sentence}; retrying`, `${sentence}; retrying`]);
});
