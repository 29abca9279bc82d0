// The host-held grant GrantMaker lists for a rule a person's choice left at the host, on the real
// grant store: never for a rule the host said it could not save (policyPersistence failed), and
// taken off the listings, audited, when the host says so after it was listed. GrantMaker follows
// what each replica stores, so the resolution and the failure may reach it in either order, on
// two replicas, or only the final record.

import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { GrantStore } from '../../src/domain/grants/grant.js';
import type { ApprovalRecord } from '../../src/domain/record.js';
import { GrantMaker } from '../../src/relay/grants/grantMaker.js';
import type { RecordKeeper } from '../../src/relay/records/recordKeeper.js';
import { readGrantAudit } from '../../src/store/grantAudit.js';
import { RedisGrantStore } from '../../src/store/grantStore.js';
import { createRedisClient, type RedisClient } from '../../src/store/redisConnection.js';
import { freshRedisDb } from '../support/bot.js';
import { sampleRecord } from '../support/sampleRecord.js';
import { testRedisUrl } from '../support/testRedis.js';

const logger = pino({ level: 'silent' });
const RULE = 'Always allow writes to /srv/app.ts in this workspace';

/** Alice's "Always allow" (localPersistent), resolved with the host's amendment. */
function resolvedWith(persistence?: { status: string; reason?: string }): ApprovalRecord {
  return sampleRecord('a-rule', {
    route: 'ops',
    availableChoices: [
      { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
      {
        choiceId: 'allow_always',
        label: 'Always allow',
        decision: 'approvedPolicyAmendment',
        scope: 'localPersistent',
        rulePreview: RULE,
      },
    ],
    phase: 'resolved',
    resolution: {
      decision: 'approvedPolicyAmendment',
      resolvedBy: 'user',
      decidedAt: '2026-11-30T10:01:00.000Z',
      slackUserId: 'U0ALICE',
      choiceId: 'allow_always',
      amendment: {
        durability: 'localPersistent',
        rulePreview: RULE,
        ...(persistence ? { persistence: persistence.status, persistenceReason: persistence.reason } : {}),
      },
    },
  });
}

const saved = resolvedWith();
const notSaved = resolvedWith({ status: 'failed', reason: 'disk full' });

describe('host-held grants of rules the host did not save', () => {
  let redis: RedisClient;
  let grants: RedisGrantStore;
  /** The record as Redis holds it now, whichever replica wrote it. */
  let stored: ApprovalRecord | undefined;

  beforeEach(async () => {
    redis = createRedisClient({ kind: 'single', url: testRedisUrl(await freshRedisDb()) });
    await redis.flushdb();
    grants = new RedisGrantStore(redis, { logger, auditMaxLen: 10_000 });
    stored = undefined;
  });
  afterEach(async () => {
    await redis.quit();
  });

  /** One replica's GrantMaker; `idle` waits for what its follow started. */
  function replica(store: GrantStore = grants) {
    const work: Promise<unknown>[] = [];
    const keeper = { track: (task: Promise<unknown>) => void work.push(task) } as unknown as RecordKeeper;
    const maker = new GrantMaker({
      grants: store,
      keeper,
      record: async () => stored,
      grantsOf: () => undefined,
      logger,
    });
    const follow = async (record: ApprovalRecord) => {
      stored = record;
      maker.follow(record);
      while (work.length > 0) await Promise.all(work.splice(0));
    };
    return { maker, work, follow };
  }

  const listed = () => grants.list({}, new Date());
  const events = () => readGrantAudit(redis);

  it('lists a rule the host saved, and keeps it listed when the host says it saved it', async () => {
    const { follow } = replica();
    await follow(saved);
    await follow(resolvedWith({ status: 'succeeded' }));
    expect(await listed()).toMatchObject([
      { holder: 'host', approvalId: 'a-rule', grantedBy: 'U0ALICE', rulePreview: RULE },
    ]);
    expect((await events()).map((e) => e.kind)).toEqual(['created']);
  });

  it('lists nothing for a rule the host said, before the resolution, it could not save', async () => {
    const { follow } = replica();
    // The failure reported first is carried into the resolution's amendment (recordMutations).
    await follow(notSaved);
    expect(await listed()).toEqual([]);
    expect(await events()).toEqual([]);
  });

  it('takes the listing away, audited once, when the host says after it could not save the rule', async () => {
    const { follow } = replica();
    await follow(saved);
    const [grant] = await listed();
    expect(grant).toMatchObject({ holder: 'host', approvalId: 'a-rule' });
    await follow(notSaved);
    expect(await listed()).toEqual([]);
    expect(await grants.get(grant!.grantId)).toMatchObject({ revokedBy: 'host:default' });
    // Heard again (the record stored again, a stale copy of the resolution): nothing more.
    await follow(notSaved);
    await follow(saved);
    expect(await listed()).toEqual([]);
    const audit = await events();
    expect(audit.map((e) => e.kind)).toEqual(['created', 'revoked']);
    expect(audit[1]).toMatchObject({
      grantId: grant!.grantId,
      by: 'host:default',
      reason: expect.stringContaining('did not save the rule'),
    });
  });

  it('is taken away by another replica that only sees the final record', async () => {
    await replica().follow(saved);
    expect(await listed()).toHaveLength(1);
    // The host moved to another replica, which hears the failure: it never saw the resolution.
    await replica().follow(notSaved);
    expect(await listed()).toEqual([]);
    expect((await events()).map((e) => e.kind)).toEqual(['created', 'revoked']);
  });

  it('is taken away when its listing lands after another replica heard the failure', async () => {
    // The first replica's create is held on its way to Redis (a slow write, a partition).
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slow = Object.create(grants) as GrantStore;
    slow.create = async (input) => {
      await held;
      return grants.create(input);
    };
    const first = replica(slow);
    stored = saved;
    first.maker.follow(saved);
    // Meanwhile the failure is stored and heard elsewhere: there is nothing to take away yet.
    await replica().follow(notSaved);
    expect(await listed()).toEqual([]);
    release();
    while (first.work.length > 0) await Promise.all(first.work.splice(0));
    expect(await listed()).toEqual([]);
    expect((await events()).map((e) => e.kind)).toEqual(['created', 'revoked']);
  });
});
