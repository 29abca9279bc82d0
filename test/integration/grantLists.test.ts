// Which grants a person is shown: GrantLists on the real grant store, on the test's Redis. Who
// decides on which route is the test's own authorizer; the listing is what is under test.

import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { GRANT_LIST_LIMIT } from '../../src/domain/grants/listing.js';
import { GrantLists } from '../../src/relay/grants/grantLists.js';
import { RedisGrantStore } from '../../src/store/grantStore.js';
import { createRedisClient, type RedisClient } from '../../src/store/redisConnection.js';
import { freshRedisDb } from '../support/bot.js';
import { botGrantInput } from '../support/grantInput.js';
import { testRedisUrl } from '../support/testRedis.js';

const logger = pino({ level: 'silent' });
const SHARED = 'C0SHARED';

describe('the grants a person is shown', () => {
  let redis: RedisClient;
  let grants: RedisGrantStore;

  beforeEach(async () => {
    redis = createRedisClient({ kind: 'single', url: testRedisUrl(await freshRedisDb()) });
    await redis.flushdb();
    grants = new RedisGrantStore(redis, { logger, auditMaxLen: 10_000 });
  });
  afterEach(async () => {
    await redis.quit();
  });

  /** `U0OPS` decides on `ops` only; nobody is an admin. Both routes post to SHARED. */
  function lists() {
    return new GrantLists({
      grants,
      authorizer: {
        actsAsAdmin: async () => false,
        decidesOn: async (userId, route) => userId === 'U0OPS' && route === 'ops',
        mayRevoke: async (userId, grant) =>
          userId === 'U0OPS' && grant.route === 'ops'
            ? { allowed: true, because: 'user' }
            : {
                allowed: false,
                grantedBy: grant.grantedBy,
                route: { allowed: false, why: 'routeGone', route: grant.route },
              },
      },
      routes: () => [
        { name: 'ops', channel: SHARED },
        { name: 'dev', channel: SHARED },
      ],
      channelId: async (channel) => channel,
    });
  }

  async function grantOn(route: string, n: number) {
    return grants.create(
      botGrantInput({
        route,
        channel: SHARED,
        capabilities: [`exec:${route}-${n}`],
        approvalId: `a-${route}-${n}`,
      }),
    );
  }

  it('finds a grant of their route behind a full page of newer grants of another route', async () => {
    const ops = await grantOn('ops', 0);
    for (let n = 0; n < GRANT_LIST_LIMIT + 5; n++) await grantOn('dev', n);

    const inChannel = await lists().inChannel('U0OPS', SHARED);
    expect(inChannel.grants.map((g) => g.grantId)).toEqual([ops.grantId]);
    expect((await lists().forHome('U0OPS')).map((g) => g.grantId)).toEqual([ops.grantId]);
  });

  it('still shows at most the newest hundred of those they may see', async () => {
    const mine = [];
    for (let n = 0; n < GRANT_LIST_LIMIT + 3; n++) {
      mine.push(await grantOn('ops', n));
      await grantOn('dev', n);
    }
    const shown = (await lists().inChannel('U0OPS', SHARED)).grants;
    expect(shown).toHaveLength(GRANT_LIST_LIMIT);
    expect(shown.every((g) => g.route === 'ops')).toBe(true);
    expect(new Set(shown.map((g) => g.grantId))).toEqual(
      new Set(mine.slice(-GRANT_LIST_LIMIT).map((g) => g.grantId)),
    );
  });
});
