// A grant's use taken for a decision the host refused, when Redis fails the write that drops the
// decision's claim: the real GrantAnswerer, Decider, RecordKeeper and ApprovalStore, the records
// on a redis-server of the test's own that it stops as the host answers, the grants on the
// test's Redis; the host is a stand-in that refuses, then accepts. The claim left on the record
// is replayed later: the use it took must still be out then, or a grant by uses decides once
// more than it may.

import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { renderCard } from '../../src/cards/renderCard.js';
import type { Grant } from '../../src/domain/grants/grant.js';
import type { ApprovalRecord } from '../../src/domain/record.js';
import { MspError } from '../../src/msp/errors.js';
import { Decider } from '../../src/relay/deciding/decider.js';
import { GrantAnswerer, grantRef } from '../../src/relay/grants/grantAnswerer.js';
import { RecordKeeper } from '../../src/relay/records/recordKeeper.js';
import { ApprovalStore } from '../../src/store/approvalStore.js';
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
import { postingCards } from '../support/postingCards.js';
import { PrivateRedis } from '../support/privateRedis.js';
import { RecordingHost } from '../support/recordingHost.js';
import { sampleRecord } from '../support/sampleRecord.js';
import { testRedisUrl } from '../support/testRedis.js';
import { until } from '../support/until.js';

const logger = pino({ level: 'silent' });

/** What the host says to a decide: an MSP error kind, or nothing (it accepts). */
class RefusingHost extends RecordingHost {
  readonly incarnation = 'inc-1';
  protected override readonly terminal = true;
  /** Runs as a refusal is answered, before the caller hears it. */
  onRefusal: () => Promise<void> = async () => {};
  /** What the refusal says besides its kind. */
  refusalData: Record<string, unknown> = {};
  /** `internal`: the decide fails with an error that is no MSP refusal at all. */
  constructor(public refuseWith: string | undefined) {
    super();
  }
  protected override async beforeAccepting() {
    if (!this.refuseWith) return;
    await this.onRefusal();
    if (this.refuseWith === 'internal') throw new Error('the host process broke');
    throw new MspError({
      code: -32000,
      message: 'refused',
      data: { kind: this.refuseWith, ...this.refusalData },
    });
  }
}

describe('a grant’s use, when the host refuses its decision and Redis fails to drop the claim', () => {
  let server: PrivateRedis;
  let records: RedisClient;
  let grantsRedis: RedisClient;
  let grants: RedisGrantStore;
  let store: ApprovalStore;
  let keeper: RecordKeeper;
  let posted: string[];

  beforeEach(async () => {
    // Persistent: the claim the host refused outlives the server's stop, as a blip leaves it.
    server = await PrivateRedis.start({ persist: true });
    records = createRedisClient(
      { kind: 'single', url: server.url },
      { maxRetriesPerRequest: 1, retryStrategy: () => 50 },
    );
    records.on('error', () => {});
    grantsRedis = createRedisClient({ kind: 'single', url: testRedisUrl(await freshRedisDb()) });
    await grantsRedis.flushdb();
    grants = new RedisGrantStore(grantsRedis, { logger, auditMaxLen: 1_000 });
    store = new ApprovalStore(records, { resolvedTtlMs: 60_000 });
    posted = [];
    const { cards } = postingCards(posted);
    keeper = new RecordKeeper({ store, cards, render: (r, n) => renderCard(r, { now: n }), logger });
  });
  afterEach(async () => {
    keeper.stop();
    records.disconnect();
    await grantsRedis.quit();
    await server.remove();
  });

  /** `host` undefined: the host is away, and a decision's claim is kept for its return. */
  function relay(host: RefusingHost | undefined) {
    let commands = 0;
    const ledger = new RedisNoticeLedger(records, { ttlMs: 60_000 });
    let answerer: GrantAnswerer | undefined;
    const decider = new Decider({
      keeper,
      store,
      host: () => host,
      logger,
      newCommandId: () => `cmd-${++commands}`,
      replayed: (record, claim) => answerer!.replayed(record, claim),
      replayDropped: (record, claim) => answerer!.replayDropped(record, claim),
    });
    answerer = new GrantAnswerer({
      grants,
      store,
      keeper,
      decider,
      lines: { grantUsed: async () => {} },
      ledger,
      grantsOf: () => ONE_USE_GRANTS,
      logger,
    });
    return { decider, answerer };
  }

  async function grantOfOneUse(): Promise<Grant> {
    return grantOfUses(1);
  }

  async function grantOfUses(maxUses: number): Promise<Grant> {
    return grants.create(sampleBucketGrant(maxUses));
  }

  async function deferredRecord(approvalId: string): Promise<ApprovalRecord> {
    const record = deferredSampleRecord(approvalId);
    expect(await store.createIfAbsent(record)).toBe(true);
    return record;
  }

  it.each(['approvalNotFound', 'sessionInUse'])(
    'stays taken after %s until the kept claim is replayed, which spends it',
    async (refusal) => {
      const grant = await grantOfOneUse();
      await deferredRecord('a-1');
      const host = new RefusingHost(refusal);
      // Redis goes away as the host answers: the record cannot be marked, nor its claim dropped.
      host.onRefusal = () => server.stop();
      const { answerer } = relay(host);

      answerer.consider('a-1');
      await keeper.idle();
      await server.restart();

      // The record still holds the grant's claim, and so the use it took.
      expect(await store.get('a-1')).toMatchObject({ phase: 'deciding', claim: { via: 'grant' } });
      expect((await grants.get(grant.grantId))?.usesLeft).toBe(0);
      expect(await grants.candidates(SAMPLE_BUCKET, new Date())).toEqual([]);
      // Nothing said the grant could not decide: its card waits for the claim's outcome.
      expect(posted).toEqual([]);

      // The next process (this one sent that commandId to this host already) finds the claim and
      // replays it; the host takes it this time, and the use the claim took is spent. The grant of
      // one use decided once, and is spent.
      host.refuseWith = undefined;
      const next = relay(host);
      next.decider.replay((await store.get('a-1'))!);
      await until(() => host.decided.length === 1);
      await next.decider.drain();
      await keeper.idle();
      expect(host.decided.map((d) => d.approvalId)).toEqual(['a-1']);
      expect(await grants.get(grant.grantId)).toMatchObject({ uses: 1, usesLeft: 0 });
      expect(await grants.candidates(SAMPLE_BUCKET, new Date())).toEqual([]);
      const kinds = (await readGrantAudit(grantsRedis)).map((e) => e.kind);
      expect(kinds).toEqual(['created', 'used', 'exhausted']);
    },
  );

  // Each refusal whose claim is simply given back (approvalRequirementStale without a stage to
  // move to; `atStage`: naming the stage the record is at, whose claim is dropped with the move).
  it.each([
    { refusal: 'approvalRequirementStale' },
    { refusal: 'approvalRequirementStale', atStage: true },
    { refusal: 'approvalChoiceInvalid' },
    { refusal: 'approvalReviewerUnavailable' },
    { refusal: 'hostOverloaded' },
    { refusal: 'internal' },
  ])(
    'stays taken after $refusal (at the stage: $atStage) until the kept claim is replayed',
    async ({ refusal, atStage }) => {
      const grant = await grantOfOneUse();
      const record = await deferredRecord('a-4');
      const host = new RefusingHost(refusal);
      if (atStage) host.refusalData = { currentRequirementId: record.currentRequirementId };
      host.onRefusal = () => server.stop();
      relay(host).answerer.consider('a-4');
      await keeper.idle();
      await server.restart();

      expect(await store.get('a-4')).toMatchObject({ phase: 'deciding', claim: { via: 'grant' } });
      expect((await grants.get(grant.grantId))?.usesLeft).toBe(0);
      expect(await grants.candidates(SAMPLE_BUCKET, new Date())).toEqual([]);

      host.refuseWith = undefined;
      const next = relay(host);
      next.decider.replay((await store.get('a-4'))!);
      await until(() => host.decided.length === 1);
      await next.decider.drain();
      await keeper.idle();
      // The grant of one use decided once, and is spent: no second request finds it.
      expect(await grants.get(grant.grantId)).toMatchObject({ uses: 1, usesLeft: 0 });
      expect(await grants.candidates(SAMPLE_BUCKET, new Date())).toEqual([]);
      const kinds = (await readGrantAudit(grantsRedis)).map((e) => e.kind);
      expect(kinds).toEqual(['created', 'used', 'exhausted']);
    },
  );

  it('is given back once when a kept claim’s replay is refused and its drop stored', async () => {
    const grant = await grantOfOneUse();
    await deferredRecord('a-5');
    const host = new RefusingHost('approvalChoiceInvalid');
    host.onRefusal = () => server.stop();
    relay(host).answerer.consider('a-5');
    await keeper.idle();
    await server.restart();

    // Refused again on the next start, Redis up: the claim leaves the record, and its use comes back.
    host.onRefusal = async () => {};
    const next = relay(host);
    next.decider.replay((await store.get('a-5'))!);
    await next.decider.drain();
    await keeper.idle();
    expect((await store.get('a-5'))?.claim).toBeUndefined();
    expect((await grants.get(grant.grantId))?.usesLeft).toBe(1);
  });

  it('is given back once after approvalAlreadyResolved, when the claim leaves the record', async () => {
    const grant = await grantOfUses(2);
    await deferredRecord('a-6');
    const host = new RefusingHost('approvalAlreadyResolved');
    host.refusalData = { resolution: { decision: 'denied', resolvedBy: 'user' } };
    // Resolved by someone else, and Redis goes away before the record says so.
    host.onRefusal = () => server.stop();
    relay(host).answerer.consider('a-6');
    await keeper.idle();
    await server.restart();
    expect(await store.get('a-6')).toMatchObject({ phase: 'deciding', claim: { via: 'grant' } });

    // Another request takes the grant's other use; its host is away, and the use stays out.
    await deferredRecord('a-7');
    relay(undefined).answerer.consider('a-7');
    await keeper.idle();
    expect(await store.get('a-7')).toMatchObject({ phase: 'deciding', claim: { via: 'grant' } });

    // The next start asks how the first claim ended: resolved elsewhere, stored this time, and its
    // use comes back. Then the second is replayed and taken.
    host.onRefusal = async () => {};
    const next = relay(host);
    next.decider.settle((await store.get('a-6'))!);
    await next.decider.drain();
    await keeper.idle();
    expect(await store.get('a-6')).toMatchObject({ phase: 'resolved' });
    host.refuseWith = undefined;
    const last = relay(host);
    last.decider.replay((await store.get('a-7'))!);
    await until(() => host.decided.length === 1);
    await last.decider.drain();
    await keeper.idle();
    // One decision by a grant of two uses: one use left, not two.
    expect(await grants.get(grant.grantId)).toMatchObject({ uses: 1, usesLeft: 1 });
  });

  it('is given back once when a replayed claim no longer fits its stage and its drop is lost', async () => {
    const grant = await grantOfUses(2);
    // A claim by grant, its use taken, on a record whose stage moved on since: never sent, dropped.
    const taken = { ...grant, usesLeft: await grants.reserveUse(grant, new Date()) };
    const now = new Date().toISOString();
    const record = sampleRecord('a-8', {
      route: 'ops',
      phase: 'deciding',
      currentRequirementId: { approvalId: 'a-8', sourceIndex: 1 },
      claim: {
        sourceIndex: 0,
        via: 'grant',
        grant: grantRef(taken),
        choiceId: 'allow_once',
        commandId: 'cmd-moved',
        claimedAt: now,
      },
      slack: { channel: 'C1', deferred: true },
      openedAt: now,
      updatedAt: now,
    });
    expect(await store.createIfAbsent(record)).toBe(true);
    // Another request's use is out on a decision meanwhile.
    expect(await grants.reserveUse(grant, new Date())).toBe(0);
    const host = new RefusingHost(undefined);

    // Replayed while Redis is away: the claim cannot be dropped, and its use stays taken.
    await server.stop();
    const first = relay(host);
    first.decider.replay(record);
    await first.decider.drain();
    await keeper.idle();
    await server.restart();
    expect(await store.get('a-8')).toMatchObject({ phase: 'deciding', claim: { commandId: 'cmd-moved' } });
    expect((await grants.get(grant.grantId))?.usesLeft).toBe(0);

    // The next start drops it, and gives its use back; the other request's use is counted.
    const next = relay(host);
    next.decider.replay((await store.get('a-8'))!);
    await next.decider.drain();
    await keeper.idle();
    expect((await store.get('a-8'))?.claim).toBeUndefined();
    await grants.recordUse(grant, 'a-9', 0, new Date());
    expect(host.decided).toEqual([]);
    expect(await grants.get(grant.grantId)).toMatchObject({ uses: 1, usesLeft: 1 });
  });

  it('stays taken when the kept claim’s replay is refused and Redis fails again', async () => {
    const grant = await grantOfOneUse();
    await deferredRecord('a-3');
    const host = new RefusingHost('approvalNotFound');
    host.onRefusal = () => server.stop();
    relay(host).answerer.consider('a-3');
    await keeper.idle();
    await server.restart();

    const next = relay(host);
    next.decider.replay((await store.get('a-3'))!);
    await next.decider.drain();
    await keeper.idle();
    await server.restart();
    // Still the claim's: neither the first send nor its replay gave the use back.
    expect(await store.get('a-3')).toMatchObject({ phase: 'deciding', claim: { via: 'grant' } });
    expect((await grants.get(grant.grantId))?.usesLeft).toBe(0);
  });

  it('is given back when the claim was dropped as the host refused (Redis up)', async () => {
    const grant = await grantOfOneUse();
    await deferredRecord('a-2');
    const { answerer } = relay(new RefusingHost('approvalNotFound'));

    answerer.consider('a-2');
    await keeper.idle();

    expect(await store.get('a-2')).toMatchObject({ phase: 'unavailable', unavailable: 'unknownToHost' });
    expect((await store.get('a-2'))?.claim).toBeUndefined();
    expect((await grants.get(grant.grantId))?.usesLeft).toBe(1);
  });
});
