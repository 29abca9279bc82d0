// One grant decision finished by two replicas: the host's new owner replays the claim and counts
// the use, and the old owner's own count, held back by a partition, lands after. The real
// GrantAnswerer, grant store and notice ledger of each replica, on two connections to the test's
// Redis; the Decider, the keeper and the Slack line are stand-ins, since what is asserted is what
// Redis keeps: one use, one `used` entry, one line, and no `exhausted` while a use is left.

import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Grant } from '../../src/domain/grants/grant.js';
import type { ApprovalRecord, Claim } from '../../src/domain/record.js';
import { GrantAnswerer, grantRef } from '../../src/relay/grants/grantAnswerer.js';
import { readGrantAudit } from '../../src/store/grantAudit.js';
import { RedisGrantStore } from '../../src/store/grantStore.js';
import { RedisNoticeLedger } from '../../src/store/noticeLedger.js';
import { createRedisClient, type RedisClient } from '../../src/store/redisConnection.js';
import { freshRedisDb } from '../support/bot.js';
import {
  deferredSampleRecord,
  ONE_USE_GRANTS,
  SAMPLE_BUCKET,
  sampleBucketGrant,
} from '../support/grantInput.js';
import { testRedisUrl } from '../support/testRedis.js';

const logger = pino({ level: 'silent' });

describe('a grant’s use finished by the old owner and the new one', () => {
  let clients: RedisClient[];
  let lines: string[];
  let tracked: Promise<unknown>[];

  beforeEach(async () => {
    const url = testRedisUrl(await freshRedisDb());
    clients = [createRedisClient({ kind: 'single', url }), createRedisClient({ kind: 'single', url })];
    await clients[0]!.flushdb();
    lines = [];
    tracked = [];
  });
  afterEach(async () => {
    await Promise.all(clients.map((c) => c.quit()));
  });

  /** One replica on its own connection: the host acknowledges every decision it sends. */
  function replica(name: string, redis: RedisClient, record: ApprovalRecord) {
    const grants = new RedisGrantStore(redis, { logger, auditMaxLen: 1_000 });
    const answerer = new GrantAnswerer({
      grants,
      store: { get: async () => record },
      keeper: {
        reveal: async () => {},
        track: (task) => {
          tracked.push(task);
        },
      },
      decider: {
        claimFor: () => undefined,
        decide: async () => ({ kind: 'decided', terminal: true }),
        grantStillAnswers: async () => true,
      },
      lines: {
        grantUsed: async (r) => {
          lines.push(`${name} ${r.approvalId}`);
        },
      },
      ledger: new RedisNoticeLedger(redis, { ttlMs: 60_000 }),
      grantsOf: () => ONE_USE_GRANTS,
      logger,
    });
    return { grants, answerer };
  }

  it('counts it once, writes one `used`, and leaves the grant its other use', async () => {
    const record = deferredSampleRecord('a-1');
    const a = replica('A', clients[0]!, record);
    const b = replica('B', clients[1]!, record);
    const grant: Grant = await a.grants.create(sampleBucketGrant(2));
    // B took the host over and replayed A's claim, which the host had taken already: B counts.
    const claim: Claim = {
      sourceIndex: 0,
      choiceId: 'allow_once',
      commandId: 'A-cmd-1',
      via: 'grant',
      grant: grantRef({ ...grant, usesLeft: 1 }),
      claimedAt: new Date().toISOString(),
    };
    await b.answerer.replayed(record, claim);
    // A's first send finishes once its partition heals: it took a use, and counts it.
    a.answerer.follow(record);
    for (let seen = 0; seen < tracked.length; seen = tracked.length) await Promise.all(tracked);

    const events = await readGrantAudit(clients[0]!);
    expect(events.filter((e) => e.kind === 'used')).toEqual([
      expect.objectContaining({ grantId: grant.grantId, approvalId: 'a-1', sourceIndex: 0 }),
    ]);
    expect(events.map((e) => e.kind)).not.toContain('exhausted');
    expect(await a.grants.get(grant.grantId)).toMatchObject({ uses: 1, usesLeft: 1 });
    expect(lines).toEqual(['B a-1']);
    // One use is left, and answers the next request.
    const [left] = await b.grants.candidates(SAMPLE_BUCKET, new Date());
    expect(left).toMatchObject({ grantId: grant.grantId, usesLeft: 1 });
  });
});
