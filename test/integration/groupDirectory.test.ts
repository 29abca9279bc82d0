// User group members: read from Slack once, kept in Redis for every replica, and in this process
// no longer than the Redis copy lives.

import type { WebClient } from '@slack/web-api';
import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { SlackGroupDirectory } from '../../src/slack/groupDirectory.js';
import { keys } from '../../src/store/keys.js';
import { RedisLookupCache } from '../../src/store/lookupCache.js';
import { testRedisUrl } from '../support/testRedis.js';

const redis = new Redis(testRedisUrl(11));
afterAll(() => redis.quit());
beforeEach(() => redis.flushdb());

function slackWith(members: Record<string, string[]>) {
  const list = vi.fn(async ({ usergroup }: { usergroup: string }) => ({
    ok: true,
    users: members[usergroup],
  }));
  return { web: { usergroups: { users: { list } } } as unknown as WebClient, list };
}

describe('SlackGroupDirectory', () => {
  it('asks Slack once, then answers from memory without Redis until the Redis copy expires', async () => {
    const { web, list } = slackWith({ S0SRE: ['U0ALICE'] });
    const directory = new SlackGroupDirectory(web, new RedisLookupCache(redis, 'usergroup'), {
      ttlMs: 400,
      logger: pino({ level: 'silent' }),
    });
    expect([...(await directory.members('S0SRE'))]).toEqual(['U0ALICE']);
    const reads = vi.spyOn(redis, 'get');
    expect([...(await directory.members('S0SRE'))]).toEqual(['U0ALICE']);
    expect(reads).not.toHaveBeenCalled();
    expect(list).toHaveBeenCalledTimes(1);
    // Once the shared copy is gone, so is this process's: Slack is asked again.
    await new Promise((r) => setTimeout(r, 450));
    await directory.members('S0SRE');
    expect(list).toHaveBeenCalledTimes(2);
    reads.mockRestore();
  });

  it('another replica’s copy in Redis is trusted here for as long as it lives there, no longer', async () => {
    await redis.set(keys.usergroup('S0SRE'), JSON.stringify(['U0BOB']), 'PX', 300);
    const { web, list } = slackWith({ S0SRE: ['U0CAROL'] });
    const directory = new SlackGroupDirectory(web, new RedisLookupCache(redis, 'usergroup'), {
      ttlMs: 60_000,
      logger: pino({ level: 'silent' }),
    });
    expect([...(await directory.members('S0SRE'))]).toEqual(['U0BOB']);
    expect(list).not.toHaveBeenCalled();
    await new Promise((r) => setTimeout(r, 350));
    expect([...(await directory.members('S0SRE'))]).toEqual(['U0CAROL']);
    expect(list).toHaveBeenCalledTimes(1);
  });
});
