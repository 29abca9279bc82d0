// A grant revoked while a decision it made has not reached the host: the real GrantAnswerer,
// Decider (with its DecisionWarrant), RecordKeeper, ApprovalStore and grant store on the test's
// Redis; the host is a stand-in that leaves decides unanswered while it stays up. A revocation
// Bob was told of must stop every decide sent after it: the question goes back to people.

import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { renderCard } from '../../src/cards/renderCard.js';
import type { Grant } from '../../src/domain/grants/grant.js';
import type { ApprovalRecord } from '../../src/domain/record.js';
import { RequestTimeoutError } from '../../src/msp/errors.js';
import type { DecideParams } from '../../src/msp/protocol.js';
import { Decider } from '../../src/relay/deciding/decider.js';
import { DecisionWarrant } from '../../src/relay/deciding/decisionWarrant.js';
import { GrantAnswerer, grantRef } from '../../src/relay/grants/grantAnswerer.js';
import { RecordKeeper } from '../../src/relay/records/recordKeeper.js';
import { ApprovalStore } from '../../src/store/approvalStore.js';
import { RedisGrantStore } from '../../src/store/grantStore.js';
import { RedisNoticeLedger } from '../../src/store/noticeLedger.js';
import { createRedisClient, type RedisClient } from '../../src/store/redisConnection.js';
import { freshRedisDb } from '../support/bot.js';
import { deferredSampleRecord, ONE_USE_GRANTS, sampleBucketGrant } from '../support/grantInput.js';
import { postingCards } from '../support/postingCards.js';
import { RecordingHost } from '../support/recordingHost.js';
import { testRedisUrl } from '../support/testRedis.js';
import { until } from '../support/until.js';

const logger = pino({ level: 'silent' });

/** Up, and leaves every decide unanswered (as a request timeout) until `answering`. */
class SilentHost extends RecordingHost {
  readonly incarnation = 'inc-1';
  protected override readonly terminal = true;
  asked: DecideParams[] = [];
  answering = false;
  protected override async beforeAccepting(params: DecideParams) {
    this.asked.push(params);
    if (!this.answering) throw new RequestTimeoutError('approval/decide', 10);
  }
}

describe('a decision by grant whose grant is revoked before the host takes it', () => {
  let redis: RedisClient;
  let grants: RedisGrantStore;
  let store: ApprovalStore;
  let keeper: RecordKeeper;
  let posted: string[];
  let deciders: Decider[];

  beforeEach(async () => {
    redis = createRedisClient({ kind: 'single', url: testRedisUrl(await freshRedisDb()) });
    await redis.flushdb();
    grants = new RedisGrantStore(redis, { logger, auditMaxLen: 1_000 });
    store = new ApprovalStore(redis, { resolvedTtlMs: 60_000 });
    posted = [];
    deciders = [];
    const { cards } = postingCards(posted);
    keeper = new RecordKeeper({ store, cards, render: (r, n) => renderCard(r, { now: n }), logger });
  });
  afterEach(async () => {
    for (const decider of deciders) await decider.drain();
    await keeper.idle();
    keeper.stop();
    await redis.quit();
  });

  /** `grantStore`: what the answerer looks grants up in (the real store unless a test wraps it). */
  function relay(host: SilentHost, grantStore: RedisGrantStore = grants) {
    let commands = 0;
    let answerer: GrantAnswerer | undefined;
    const decider = new Decider({
      keeper,
      store,
      host: () => host,
      logger,
      newCommandId: () => `cmd-${++commands}`,
      // Long enough that a revocation made right after an ask lands before the next one.
      unansweredBackoff: { initialMs: 200, maxMs: 200 },
      warrant: new DecisionWarrant({
        authorizer: {
          // The grants' granter (sampleBucketGrant) may decide; nobody else does here.
          check: async (userId) =>
            userId === 'U0ALICE'
              ? { allowed: true, because: 'user' }
              : ({ allowed: false, reason: 'notApprover' } as never),
          quorum: () => 1,
          ownerOf: () => undefined,
          authority: () => ({ route: '(none)', rules: undefined, protectedWrite: false }),
        },
        grants,
        grantsOf: () => ONE_USE_GRANTS,
        ladderOf: () => [],
      }),
      replayed: (record, claim) => answerer!.replayed(record, claim),
      replayDropped: (record, claim) => answerer!.replayDropped(record, claim),
    });
    deciders.push(decider);
    answerer = new GrantAnswerer({
      grants: grantStore,
      store,
      keeper,
      decider,
      lines: { grantUsed: async () => {} },
      ledger: new RedisNoticeLedger(redis, { ttlMs: 60_000 }),
      grantsOf: () => ONE_USE_GRANTS,
      logger,
    });
    return { decider, answerer };
  }

  async function deferredRecord(approvalId: string): Promise<ApprovalRecord> {
    const record = deferredSampleRecord(approvalId);
    expect(await store.createIfAbsent(record)).toBe(true);
    return record;
  }

  async function grantOfUses(maxUses: number): Promise<Grant> {
    return grants.create(sampleBucketGrant(maxUses));
  }

  async function timeBoundGrant(): Promise<Grant> {
    const { maxUses: _uses, ...input } = sampleBucketGrant(1);
    return grants.create(input);
  }

  it('asks the silent host no more once the grant is revoked, and shows the card', async () => {
    const grant = await timeBoundGrant();
    await deferredRecord('a-1');
    const host = new SilentHost();
    relay(host).answerer.consider('a-1');
    await until(() => host.asked.length >= 2, 5_000);

    expect(await grants.revoke(grant.grantId, 'U0BOB', new Date())).toBe(true);
    // Bob was told "revoked" while the Decider waited to ask again: it asks no more, though the
    // host would answer from now on.
    const askedAtRevoke = host.asked.length;
    host.answering = true;
    await until(async () => (await store.get('a-1'))?.claim === undefined, 5_000);
    await keeper.idle();

    expect(host.decided).toEqual([]);
    expect(host.asked.length).toBe(askedAtRevoke);
    expect(await store.get('a-1')).toMatchObject({ phase: 'pending' });
    // The card is back with its buttons: people decide.
    expect(posted).toEqual(['C1']);
  });

  it('gives a grant by uses its use back when its revocation stops the re-asks', async () => {
    const grant = await grantOfUses(2);
    await deferredRecord('a-2');
    const host = new SilentHost();
    relay(host).answerer.consider('a-2');
    await until(() => host.asked.length >= 2, 5_000);
    expect((await grants.get(grant.grantId))?.usesLeft).toBe(1);

    expect(await grants.revoke(grant.grantId, 'U0BOB', new Date())).toBe(true);
    host.answering = true;
    await until(async () => (await store.get('a-2'))?.claim === undefined, 5_000);
    await keeper.idle();

    expect(host.decided).toEqual([]);
    expect(posted).toEqual(['C1']);
    // Given back to a revoked grant, which stays revoked: nothing was counted for it.
    expect(await grants.get(grant.grantId)).toMatchObject({ uses: 0, usesLeft: 2 });
  });

  it('sends nothing when the grant is revoked between its lookup and its claim', async () => {
    const grant = await timeBoundGrant();
    await deferredRecord('a-3');
    const host = new SilentHost();
    host.answering = true;
    // Bob's revocation completes right after the lookup read the grant live.
    const revokedAfterLookup = Object.create(grants) as RedisGrantStore;
    revokedAfterLookup.candidates = async (bucket, now) => {
      const found = await grants.candidates(bucket, now);
      await grants.revoke(grant.grantId, 'U0BOB', new Date());
      return found;
    };
    relay(host, revokedAfterLookup).answerer.consider('a-3');
    await until(() => posted.length > 0, 5_000);
    await keeper.idle();

    expect(host.asked).toEqual([]);
    expect(await store.get('a-3')).toMatchObject({ phase: 'pending' });
    expect((await store.get('a-3'))?.claim).toBeUndefined();
  });

  it('does not carry out a claim it finds made by a grant revoked since (a forwarded decision)', async () => {
    const grant = await timeBoundGrant();
    const record = await deferredRecord('a-4');
    const host = new SilentHost();
    host.answering = true;
    const { decider } = relay(host);
    // The host's old owner claimed the stage by the grant, and handed the decision here.
    const by = { via: 'grant' as const, grant: grantRef(grant) };
    const claim = decider.claimFor(record, { sourceIndex: 0, choiceId: 'allow_once', by }, 'old-owner-cmd')!;
    expect((await keeper.claim(record, claim)).kind).toBe('claimed');
    await grants.revoke(grant.grantId, 'U0BOB', new Date());

    const outcome = await decider.decide({
      record: (await store.get('a-4'))!,
      sourceIndex: 0,
      choiceId: 'allow_once',
      by,
      commandId: 'old-owner-cmd',
    });

    expect(outcome).toMatchObject({ kind: 'unwarranted', via: 'grant' });
    expect(host.asked).toEqual([]);
    expect((await store.get('a-4'))?.claim).toBeUndefined();
  });
});
