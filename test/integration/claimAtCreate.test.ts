// The relay's side of a request created already claimed by a grant (GrantAnswerer.claimAtCreate):
// the real HostEventHandler, RecordKeeper, Decider and ApprovalStore on real Redis, with the
// answerer, Slack and the host replaced by recorders. What is asserted is what the relay does with
// the claimed record it is handed: create it and have it decided, or give its use back.

import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { renderCard } from '../../src/cards/renderCard.js';
import type { Grant } from '../../src/domain/grants/grant.js';
import { grantQuestion } from '../../src/domain/grants/match.js';
import type { ApprovalRecord } from '../../src/domain/record.js';
import type { HostEvent } from '../../src/msp/events.js';
import { ApprovalRequestParams } from '../../src/msp/protocol.js';
import { Decider } from '../../src/relay/deciding/decider.js';
import { type ClaimedAtCreate, grantRef } from '../../src/relay/grants/grantAnswerer.js';
import { type GrantAnswering, HostEventHandler } from '../../src/relay/hostEvents/hostEventHandler.js';
import type { CardChannel } from '../../src/relay/ports.js';
import { claimed } from '../../src/relay/records/decisionMutations.js';
import { RecordKeeper } from '../../src/relay/records/recordKeeper.js';
import { ApprovalStore } from '../../src/store/approvalStore.js';
import { keys } from '../../src/store/keys.js';
import { freshRedisDb } from '../support/bot.js';
import { shellApproval } from '../support/fakeHost.js';
import { sampleGrant } from '../support/grantInput.js';
import { RecordingHost } from '../support/recordingHost.js';
import { openBackend, type StoreBackend } from '../support/storeBackends.js';
import { testRedisUrl } from '../support/testRedis.js';

const logger = pino({ level: 'silent' });

/** No card is ever posted for a request a grant answers. */
const cards: CardChannel = {
  post: async () => {
    throw new Error('no card was expected');
  },
  update: async () => {},
};

/** A grant by uses of shellApproval()'s `npm test` in session s1 on the route `test`. */
const GRANT: Grant = sampleGrant({
  caller: 'session:s1',
  tool: 'shell',
  capabilities: ['exec:npm test'],
  route: 'test',
  usesLeft: 2,
  maxUses: 3,
});

/** An answerer that always has a grant at hand, and records what the relay asks of it. */
class Answering implements GrantAnswering {
  readonly decidedClaims: ClaimedAtCreate[] = [];
  /** The grant reads each decidedClaims entry was handed, in order. */
  readonly grantReads: Array<Promise<boolean> | undefined> = [];
  /** Grant reads and creates, in the order they were issued. */
  readonly issued: string[] = [];
  /** What a grant read says: whether the grant still answers. */
  stillAnswers = true;
  readonly dropped: ClaimedAtCreate[] = [];
  /** Claims made per approval: each gets a commandId of its own, as the Decider mints one per claim. */
  private readonly made = new Map<string, number>();
  find = async () => undefined;
  expect() {}
  consider() {}
  expectsGrant() {
    return true;
  }
  async readGrant(answer: ClaimedAtCreate) {
    this.issued.push(`read ${answer.record.approvalId}`);
    return this.stillAnswers;
  }
  async claimAtCreate(fresh: ApprovalRecord): Promise<ClaimedAtCreate> {
    const question = grantQuestion(fresh)!;
    const made = (this.made.get(fresh.approvalId) ?? 0) + 1;
    this.made.set(fresh.approvalId, made);
    const claim = {
      sourceIndex: question.sourceIndex,
      grant: grantRef(GRANT),
      via: 'grant' as const,
      choiceId: question.once.choiceId,
      commandId: made === 1 ? `cmd-${fresh.approvalId}` : `cmd-${fresh.approvalId}-${made}`,
      claimedAt: fresh.openedAt,
    };
    const deferred = { ...fresh, slack: { ...fresh.slack, deferred: true } };
    return { record: { ...claimed(claim)(deferred)!, claim }, grant: GRANT, question };
  }
  decideClaimed(answer: ClaimedAtCreate, grantRead?: Promise<boolean>) {
    this.decidedClaims.push(answer);
    this.grantReads.push(grantRead);
  }
  async dropClaimed(answer: ClaimedAtCreate) {
    this.dropped.push(answer);
  }
}

function opened(approvalId: string): HostEvent {
  const params = ApprovalRequestParams.parse(
    shellApproval({ approvalId, sessionId: 's1', stages: [['npm', 'test']] }),
  );
  return { type: 'approvalOpened', hostId: 'default', incarnation: 'inc-1', via: 'request', params };
}

describe('a request created already claimed, at the relay', () => {
  let backend: StoreBackend;
  let store: ApprovalStore;
  let answering: Answering;
  /** createIfAbsent fails while true, as when Redis refuses the write. */
  let failCreate: boolean;
  let relay: HostEventHandler;
  let keeper: RecordKeeper;

  beforeAll(async () => {
    const db = await freshRedisDb();
    backend = await openBackend('single', async () => ({ url: testRedisUrl(db) }));
    store = new ApprovalStore(backend.connect(), { resolvedTtlMs: 60_000 });
  });
  /** A relay over `on`, its createIfAbsent failing while failCreate is set. */
  function relayOn(on: ApprovalStore): { relay: HostEventHandler; keeper: RecordKeeper } {
    const failing = new Proxy(on, {
      get(target, name, receiver) {
        if (name === 'createIfAbsent' && failCreate) return async () => Promise.reject(new Error('OOM'));
        if (name === 'createIfAbsent') {
          return (record: ApprovalRecord, ...rest: unknown[]) => {
            answering.issued.push(`create ${record.approvalId}`);
            return (target.createIfAbsent as (...args: unknown[]) => Promise<boolean>)(record, ...rest);
          };
        }
        const value = Reflect.get(target, name, receiver);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    const keeper = new RecordKeeper({
      store: failing,
      cards,
      render: (r, n) => renderCard(r, { now: n }),
      logger,
    });
    const host = new RecordingHost();
    const decider = new Decider({
      keeper,
      store: failing,
      host: () => host,
      logger,
      newCommandId: () => 'cmd',
    });
    const relay = new HostEventHandler({
      keeper,
      store: failing,
      decider,
      host: () => host,
      logger,
      routeFor: () => ({ name: 'test', channel: 'C1' }),
      sandboxModeOf: () => 'default',
      grants: answering,
    });
    return { relay, keeper };
  }

  beforeEach(async () => {
    await backend.flush();
    failCreate = false;
    answering = new Answering();
    ({ relay, keeper } = relayOn(store));
  });
  afterAll(async () => {
    await relay.idle();
    keeper.stop();
    await backend.close();
  });

  it('is created holding its claim and handed on to be decided; nothing is given back', async () => {
    relay.handleHostEvent(opened('a-1'));
    await relay.idle();
    expect(answering.decidedClaims.map((a) => a.record.approvalId)).toEqual(['a-1']);
    expect(answering.dropped).toEqual([]);
    const stored = await store.get('a-1');
    expect(stored).toMatchObject({ phase: 'deciding', claim: { commandId: 'cmd-a-1', via: 'grant' } });
    expect(stored?.slack.deferred).toBe(true);
  });

  it('reads the grant again with the create, and hands that read on with the claim to decide', async () => {
    answering.stillAnswers = false;
    relay.handleHostEvent(opened('a-4'));
    await relay.idle();
    // Issued before the create, in the same synchronous stretch: it leaves in the create's write.
    expect(answering.issued).toEqual(['read a-4', 'create a-4']);
    expect(answering.decidedClaims.map((a) => a.record.approvalId)).toEqual(['a-4']);
    // A grant revoked since its lookup: the decision goes on this read, which says so.
    expect(await answering.grantReads[0]).toBe(false);
  });

  it('gives the use back when the record exists already (the request described again)', async () => {
    relay.handleHostEvent(opened('a-2'));
    await relay.idle();
    // Another process's first sight of it: the record exists, that process does not know it.
    const other = relayOn(new ApprovalStore(backend.connect(), { resolvedTtlMs: 60_000 }));
    other.relay.handleHostEvent(opened('a-2'));
    await other.relay.idle();
    other.keeper.stop();
    expect(answering.decidedClaims.map((a) => a.record.approvalId)).toEqual(['a-2']);
    expect(answering.dropped.map((a) => a.record.approvalId)).toEqual(['a-2']);
  });

  it('gives the use back when storing the record fails', async () => {
    failCreate = true;
    relay.handleHostEvent(opened('a-3'));
    await relay.idle();
    expect(answering.decidedClaims).toEqual([]);
    expect(answering.dropped.map((a) => a.record.approvalId)).toEqual(['a-3']);
    expect(await backend.connect().exists(keys.approval('a-3'))).toBe(0);
  });
});
