// A grant's decision handed to the host's new owner during a takeover, which the owner carries
// out after its asker stopped waiting: the real GrantAnswerer, Decider, RecordKeeper,
// ApprovalStore, grant store and DecisionForwarding of two replicas on the test's Redis; the
// host is a stand-in that answers the owner's decide after the asker's wait. The asker kept the
// use it took and showed the card, so only the owner can count that use.

import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { renderCard } from '../../src/cards/renderCard.js';
import type { Grant } from '../../src/domain/grants/grant.js';
import type { ApprovalRecord } from '../../src/domain/record.js';
import { MspError } from '../../src/msp/errors.js';
import { Decider } from '../../src/relay/deciding/decider.js';
import { GrantAnswerer } from '../../src/relay/grants/grantAnswerer.js';
import { RecordKeeper } from '../../src/relay/records/recordKeeper.js';
import { DecisionForwarding } from '../../src/replicas/decisionForwarding.js';
import { ReplicaSeal } from '../../src/replicas/replicaSeal.js';
import { ApprovalStore } from '../../src/store/approvalStore.js';
import { DecisionStream } from '../../src/store/decisionStream.js';
import { readGrantAudit } from '../../src/store/grantAudit.js';
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
const SECRET = 'the replicas share this secret, 32+ characters';
/** How long the asker waits for the owner's outcome. */
const ASKER_WAIT_MS = 300;

/** Accepts every decide, after `delayMs`. */
class SlowHost extends RecordingHost {
  readonly incarnation = 'inc-1';
  protected override readonly terminal = true;
  constructor(public delayMs: number) {
    super();
  }
  protected override async beforeAccepting() {
    await new Promise((r) => setTimeout(r, this.delayMs));
  }
}

/** Refuses every decide, after `delayMs`: the choice is no longer offered (outcome `stale`). */
class SlowRefusingHost extends SlowHost {
  protected override async beforeAccepting() {
    await super.beforeAccepting();
    throw new MspError({
      code: -32000,
      message: 'choice no longer offered',
      data: { kind: 'approvalChoiceInvalid' },
    });
  }
}

describe('a grant’s decision forwarded to the host’s new owner', () => {
  let redis: RedisClient;
  let grants: RedisGrantStore;
  let store: ApprovalStore;
  let stops: Array<() => Promise<void> | void>;
  let lines: string[];

  beforeEach(async () => {
    redis = createRedisClient({ kind: 'single', url: testRedisUrl(await freshRedisDb()) });
    await redis.flushdb();
    grants = new RedisGrantStore(redis, { logger, auditMaxLen: 1_000 });
    store = new ApprovalStore(redis, { resolvedTtlMs: 60_000 });
    stops = [];
    lines = [];
  });
  afterEach(async () => {
    for (const stop of stops.splice(0).reverse()) await stop();
    await redis.quit();
  });

  /**
   * One replica: it runs the host (`host`) or another replica does (undefined), and hands its
   * decisions there through the stream.
   */
  function replica(name: string, host: SlowHost | undefined) {
    let commands = 0;
    const { cards, posted } = postingCards();
    const keeper = new RecordKeeper({ store, cards, render: (r, n) => renderCard(r, { now: n }), logger });
    let answerer: GrantAnswerer | undefined;
    const forwarding = new DecisionForwarding({
      stream: new DecisionStream(redis),
      seal: new ReplicaSeal(SECRET),
      store,
      decide: (request) => decider.decide(request),
      readerConnection: () => redis.duplicate(),
      replicaId: `${name}#1`,
      newCommandId: () => `${name}-fw-${++commands}`,
      mayAct: () => host !== undefined,
      logger,
      waitMs: ASKER_WAIT_MS,
      onUnheard: (request, outcome) => answerer!.decidedUnheard(request, outcome),
    });
    const decider: Decider = new Decider({
      keeper,
      store,
      host: () => host,
      logger,
      newCommandId: () => `${name}-cmd-${++commands}`,
      mayAct: () => host !== undefined,
      forward: (request) => forwarding.forward(request),
      replayed: (record, claim) => answerer!.replayed(record, claim),
      replayDropped: (record, claim) => answerer!.replayDropped(record, claim),
    });
    answerer = new GrantAnswerer({
      grants,
      store,
      keeper,
      decider,
      lines: {
        grantUsed: async (record) => {
          lines.push(`${name} ${record.approvalId}`);
        },
      },
      ledger: new RedisNoticeLedger(redis, { ttlMs: 60_000 }),
      grantsOf: () => ONE_USE_GRANTS,
      logger,
    });
    stops.push(async () => {
      await forwarding.stop();
      await decider.drain();
      await keeper.idle();
      keeper.stop();
    });
    return { keeper, forwarding, decider, answerer, posted };
  }

  async function grantOfOneUse(): Promise<Grant> {
    return grants.create(sampleBucketGrant(1));
  }

  async function deferredRecord(approvalId: string): Promise<ApprovalRecord> {
    const record = deferredSampleRecord(approvalId);
    expect(await store.createIfAbsent(record)).toBe(true);
    return record;
  }

  /** Asks at `asker`, and waits until the owner carried the decision out and did what follows. */
  async function decideBy(
    asker: ReturnType<typeof replica>,
    owner: ReturnType<typeof replica>,
    host: SlowHost,
  ) {
    await owner.forwarding.serve('default');
    await deferredRecord('a-1');
    asker.answerer.consider('a-1');
    await asker.keeper.idle();
    await until(() => host.decided.length > 0, 5_000);
    // Its carrying out, and what follows it, are done once the owner's forwarding has stopped.
    await owner.forwarding.stop();
    await owner.decider.drain();
  }

  it('counts the use at the owner, once, when the asker stopped waiting: the grant of one use is exhausted', async () => {
    const grant = await grantOfOneUse();
    const host = new SlowHost(ASKER_WAIT_MS * 4);
    const asker = replica('asker', undefined);
    const owner = replica('owner', host);
    await decideBy(asker, owner, host);

    // The asker heard nothing in time: it showed the card, keeping the use it took.
    expect(asker.posted).toEqual(['C1']);
    expect(host.decided.map((d) => d.approvalId)).toEqual(['a-1']);
    expect(await grants.get(grant.grantId)).toMatchObject({ uses: 1, usesLeft: 0 });
    const events = (await readGrantAudit(redis)).map((e) => [e.kind, 'approvalId' in e ? e.approvalId : '']);
    expect(events).toEqual([
      ['created', ''],
      ['used', 'a-1'],
      ['exhausted', ''],
    ]);
    expect(lines).toEqual(['owner a-1']);
  });

  it('counts the use at the asker only, when it heard the outcome in time', async () => {
    const grant = await grantOfOneUse();
    const host = new SlowHost(0);
    const asker = replica('asker', undefined);
    const owner = replica('owner', host);
    await decideBy(asker, owner, host);

    expect(asker.posted).toEqual([]);
    expect(await grants.get(grant.grantId)).toMatchObject({ uses: 1, usesLeft: 0 });
    const kinds = (await readGrantAudit(redis)).map((e) => e.kind);
    expect(kinds).toEqual(['created', 'used', 'exhausted']);
    expect(lines).toEqual(['asker a-1']);
  });

  it('gives the use back when the asker stopped waiting and the owner could not decide', async () => {
    const grant = await grantOfOneUse();
    const host = new SlowRefusingHost(ASKER_WAIT_MS * 4);
    const asker = replica('asker', undefined);
    const owner = replica('owner', host);
    await owner.forwarding.serve('default');
    await deferredRecord('a-1');
    asker.answerer.consider('a-1');
    await asker.keeper.idle();
    // The asker heard nothing in time and showed the card, keeping the use it took.
    expect(asker.posted).toEqual(['C1']);
    await until(async () => (await grants.get(grant.grantId))?.usesLeft === 1, 5_000);
    await owner.forwarding.stop();
    await owner.decider.drain();

    expect(host.decided).toEqual([]);
    expect(await grants.get(grant.grantId)).toMatchObject({ uses: 0, usesLeft: 1 });
    expect((await readGrantAudit(redis)).map((e) => e.kind)).toEqual(['created']);
    expect(lines).toEqual([]);
  });
});
