import pino from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { renderCard } from '../../src/cards/renderCard.js';
import type { RenderedMessage } from '../../src/domain/messages.js';
import { ApprovalRequestParams } from '../../src/msp/protocol.js';
import type { CardChannel } from '../../src/relay/ports.js';
import { RecordKeeper } from '../../src/relay/records/recordKeeper.js';
import { newRecord } from '../../src/relay/records/recordMutations.js';
import { ApprovalStore } from '../../src/store/approvalStore.js';
import { approvalFromTranscript } from '../support/fakeHost.js';
import { BACKENDS, openBackend, type StoreBackend } from '../support/storeBackends.js';
import { testRedisUrl } from '../support/testRedis.js';
import { until } from '../support/until.js';

// RecordKeeper on real Redis with a recording card channel: what it asks of Slack, and when.

const logger = pino({ level: 'silent' });

class Cards implements CardChannel {
  posts: Array<{ channel: string; approvalId: string; postedSince?: Date }> = [];
  updates: Array<{ ts: string; message: RenderedMessage }> = [];
  /** While set, updates wait for it: Slack is slow or away. */
  stall: Promise<void> | undefined;
  async post(
    channel: string,
    render: () => RenderedMessage,
    opts: { approvalId: string; postedSince?: Date },
  ) {
    render();
    this.posts.push({ channel, ...opts });
    return { ts: `1700000000.${String(this.posts.length).padStart(6, '0')}`, channel };
  }
  async update(_channel: string, ts: string, message: RenderedMessage) {
    await this.stall;
    this.updates.push({ ts, message });
  }
}

/** One Slack message updated by several replicas: it shows whichever update landed last. */
class OneMessage {
  shown: RenderedMessage | undefined;
  replica() {
    const message = this;
    return new (class extends Cards {
      landed = 0;
      override async update(channel: string, ts: string, rendered: RenderedMessage) {
        await super.update(channel, ts, rendered);
        message.shown = rendered;
        this.landed += 1;
      }
    })();
  }
  text(): string {
    return JSON.stringify(this.shown?.blocks ?? []);
  }
}

const params = ApprovalRequestParams.parse(
  approvalFromTranscript('approval-round-trip', { approvalId: 'k-1' }),
);
const record = () =>
  newRecord(params, {
    hostId: 'default',
    incarnation: 'inc-1',
    channel: 'C1',
    route: 'test',
    sandboxMode: 'default',
    caller: `session:${params.sessionId}`,
    phase: 'pending',
    now: new Date('2026-11-30T12:00:00Z'),
  });

describe.each(BACKENDS)('on %s Redis', (kind) => {
  let backend: StoreBackend;
  let store: ApprovalStore;
  let cards: Cards;
  let keeper: RecordKeeper;
  beforeAll(async () => {
    backend = await openBackend(kind, async () => ({ url: testRedisUrl(12) }));
    store = new ApprovalStore(backend.connect(), { resolvedTtlMs: 60_000 });
  });
  beforeEach(async () => {
    await backend.flush();
    cards = new Cards();
    keeper = new RecordKeeper({
      store,
      cards,
      render: (r, now) => renderCard(r, { now }),
      logger,
      postLeaseMs: 1_000,
    });
  });
  afterAll(async () => {
    await backend.close();
  });

  describe('RecordKeeper: cards left behind their records', () => {
    it('a card update in flight when the process died is made by the next start; a landed one is struck off', async () => {
      await keeper.run('k-1', () => keeper.create(record()));
      // Slack never answers this process's update: it dies with the update in flight.
      cards.stall = new Promise(() => undefined);
      await keeper.mutateAndSync('k-1', (r) => ({ ...r, reason: 'changed before the crash' }));
      keeper.stop();
      expect(await store.unsyncedCards(new Date())).toEqual(['k-1']);

      const nextCards = new Cards();
      const next = new RecordKeeper({
        store,
        cards: nextCards,
        render: (r, now) => renderCard(r, { now }),
        logger,
      });
      // Two replicas start together: each looks at the card, one brings it up to date.
      const otherCards = new Cards();
      const other = new RecordKeeper({
        store,
        cards: otherCards,
        render: (r, now) => renderCard(r, { now }),
        logger,
      });
      expect(await Promise.all([next.recoverCards(new Date()), other.recoverCards(new Date())])).toEqual([
        1, 1,
      ]);
      await Promise.all([next.idle(), other.idle()]);
      const updates = [...nextCards.updates, ...otherCards.updates];
      expect(updates).toHaveLength(1);
      expect(JSON.stringify(updates[0]!.message.blocks)).toContain('changed before the crash');
      next.stop();
      other.stop();
      await Promise.all([next.idle(), other.idle()]);
      expect(await store.unsyncedCards(new Date())).toEqual([]);
      // Nothing left to recover: a later start re-renders nothing.
      expect(await next.recoverCards(new Date())).toBe(0);
    });

    it("an update that lands just before a later write does not take that write's mark off", async () => {
      await keeper.run('k-1', () => keeper.create(record()));
      // This update lands: the card is up to date, to be struck off with the next batch.
      await keeper.mutateAndSync('k-1', (r) => ({ ...r, reason: 'landed' }));
      await keeper.idle();
      // Before the batch goes out, a later write whose update never lands (the process dies).
      cards.stall = new Promise(() => undefined);
      await keeper.mutateAndSync('k-1', (r) => ({ ...r, reason: 'in flight at the crash' }));
      // stop() sends the batch; the read below follows it on the same connection. Read up to a
      // second ahead: a mark's stamp may run a fraction of a millisecond ahead of the clock
      // (syncStamp stays strictly increasing within one millisecond).
      keeper.stop();
      expect(await store.unsyncedCards(new Date(Date.now() + 1_000))).toEqual(['k-1']);
      expect(cards.updates.map((u) => JSON.stringify(u.message.blocks).includes('landed'))).toEqual([true]);
    });
  });

  describe('RecordKeeper: replicas updating one card', () => {
    it("a replica's slow update that lands after a newer one is followed by the record's latest render", async () => {
      const slack = new OneMessage();
      const replica = (cardsOfReplica: CardChannel) =>
        new RecordKeeper({
          store: new ApprovalStore(backend.connect(), { resolvedTtlMs: 60_000 }),
          cards: cardsOfReplica,
          render: (r, now) => renderCard(r, { now }),
          logger,
        });
      const ownerCards = slack.replica();
      const standbyCards = slack.replica();
      const owner = replica(ownerCards);
      const standby = replica(standbyCards);
      try {
        await owner.run('k-1', () => owner.create(record()));
        // A vote at the standby: its card update is held up (Slack is slow, or answered 5xx and
        // is retried), and lands only after the owner's.
        let release: () => void = () => undefined;
        standbyCards.stall = new Promise((resolve) => {
          release = resolve;
        });
        await standby.mutateAndSync('k-1', (r) => ({ ...r, reason: 'one vote of two' }));
        // The second vote reaches the owner, which writes the newer record; its update lands first.
        await owner.mutateAndSync('k-1', (r) => ({ ...r, reason: 'decided by the owner' }));
        await owner.idle();
        expect(slack.text()).toContain('decided by the owner');
        release();
        await until(() => standbyCards.landed > 0);
        // The standby's older render is on the card now; what follows it must be the newest.
        await until(() => slack.text().includes('decided by the owner'), 2_000).catch(() => undefined);
        expect(slack.text()).toContain('decided by the owner');
        expect(slack.text()).not.toContain('one vote of two');
      } finally {
        owner.stop();
        standby.stop();
        await Promise.all([owner.idle(), standby.idle()]);
      }
    });
  });

  describe('RecordKeeper', () => {
    it('renews its post lease while a post waits, so a second worker never posts the card too', async () => {
      let release: () => void = () => undefined;
      const slowCards = new Cards();
      const post = slowCards.post.bind(slowCards);
      // Slack holds the first post for three lease lengths (a channel's rate limit, say).
      slowCards.post = async (...args) => {
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        return post(...args);
      };
      const first = new RecordKeeper({
        store,
        cards: slowCards,
        render: (r, now) => renderCard(r, { now }),
        logger,
        postLeaseMs: 300,
      });
      const creating = first.run('k-1', () => first.create(record()));
      await new Promise((resolve) => setTimeout(resolve, 900));
      // Another replica finds a record without its card's place and tries to post it.
      const second = new RecordKeeper({
        store,
        cards,
        render: (r, now) => renderCard(r, { now }),
        logger,
        postLeaseMs: 300,
      });
      await second.resync('k-1');
      expect(cards.posts).toEqual([]);
      release();
      await creating;
      second.stop();
      expect(slowCards.posts).toHaveLength(1);
      expect((await store.get('k-1'))?.slack.ts).toBeDefined();
    });

    it('the creator posts with no look-back; a later post of a card-less record looks for an earlier one', async () => {
      expect(await keeper.run('k-1', () => keeper.create(record()))).toBe(true);
      expect(cards.posts).toEqual([{ channel: 'C1', approvalId: 'k-1' }]);

      // A process died between Slack taking its post and Redis storing where: the record has no
      // card's place, and whoever posts next must look for that card first.
      await backend.flush();
      await store.createIfAbsent(record());
      await keeper.resync('k-1');
      expect(cards.posts[1]).toEqual({
        channel: 'C1',
        approvalId: 'k-1',
        postedSince: new Date('2026-11-30T12:00:00Z'),
      });
    });

    it('a card update that Slack holds up does not hold up the approval: its next change is stored at once', async () => {
      await keeper.run('k-1', () => keeper.create(record()));
      let unstall: () => void = () => undefined;
      cards.stall = new Promise((resolve) => {
        unstall = resolve;
      });
      await keeper.mutateAndSync('k-1', (r) => ({ ...r, reason: 'first' }));
      const second = await keeper.mutateAndSync('k-1', (r) => ({ ...r, reason: 'second' }));
      expect(second?.reason).toBe('second');
      expect(cards.updates).toHaveLength(0);
      unstall();
      await keeper.idle();
      expect(cards.updates.map((u) => JSON.stringify(u.message.blocks).includes('second'))).toEqual([
        false,
        true,
      ]);
    });

    it('a grant that answers (asked with the create) defers the card: no post, and the lease is free to reveal it', async () => {
      const seen: Array<{ deferred?: boolean; version: number }> = [];
      const answered = new RecordKeeper({
        store,
        cards,
        render: (r, now) => renderCard(r, { now }),
        logger,
        postLeaseMs: 60_000,
        onChange: (r) => seen.push({ deferred: r.slack.deferred, version: r.version }),
      });
      expect(
        await answered.run('k-1', () => answered.create(record(), undefined, Promise.resolve(true))),
      ).toBe(true);
      expect(cards.posts).toEqual([]);
      expect((await store.get('k-1'))?.slack.deferred).toBe(true);
      // Followers are told of the deferred record only, never of one whose card seemed on its way.
      expect(seen).toEqual([{ deferred: true, version: 2 }]);
      // The lease went back with the change: showing the card after all does not wait it out.
      await answered.reveal('k-1');
      expect(cards.posts).toEqual([{ channel: 'C1', approvalId: 'k-1' }]);

      await backend.flush();
      expect(await keeper.run('k-1', () => keeper.create(record(), undefined, Promise.resolve(false)))).toBe(
        true,
      );
      expect(cards.posts).toHaveLength(2);
      expect((await store.get('k-1'))?.slack.deferred).toBeUndefined();
    });

    it('renders the card while the record is stored, unless its channel is busy; a render that throws is made again at the post', async () => {
      let renders = 0;
      // How many renders were made before each post was handed to the channel.
      const before: number[] = [];
      const post = cards.post.bind(cards);
      cards.post = async (...args) => {
        before.push(renders);
        return post(...args);
      };
      const flaky = (busy: boolean) =>
        new RecordKeeper({
          store,
          cards: Object.assign(cards, { busy: () => busy }),
          render: (r, now) => {
            renders += 1;
            if (renders === 1 && !busy) throw new Error('first render fails');
            return renderCard(r, { now });
          },
          logger,
        });
      const early = flaky(false);
      expect(await early.run('k-1', () => early.create(record()))).toBe(true);
      // The early render threw; the post rendered again and went out.
      expect(renders).toBe(2);
      expect(cards.posts).toHaveLength(1);

      await backend.flush();
      renders = 0;
      const waiting = flaky(true);
      expect(await waiting.run('k-1', () => waiting.create(record()))).toBe(true);
      // A busy channel: rendered once, when the post's turn came.
      expect(renders).toBe(1);
      expect(cards.posts).toHaveLength(2);
      expect(before).toEqual([1, 0]);
    });

    it('in a burst, only the first card of a channel is rendered while its record is stored', async () => {
      const rendered: string[] = [];
      const posted: Array<{ approvalId: string; renderedBefore: string[] }> = [];
      const post = cards.post.bind(cards);
      cards.post = async (channel, render, opts) => {
        posted.push({ approvalId: opts.approvalId, renderedBefore: [...rendered] });
        return post(channel, render, opts);
      };
      const burst = new RecordKeeper({
        store,
        cards: Object.assign(cards, { busy: () => false }),
        render: (r, now) => {
          rendered.push(r.approvalId);
          return renderCard(r, { now });
        },
        logger,
      });
      const ids = ['k-1', 'k-2', 'k-3'];
      await Promise.all(ids.map((id) => burst.run(id, () => burst.create({ ...record(), approvalId: id }))));
      expect(cards.posts.map((p) => p.approvalId).sort()).toEqual(ids);
      // Each card rendered once: one while its record was stored, the others at their posts, not
      // while they waited for it.
      expect([...rendered].sort()).toEqual(ids);
      expect(posted.filter((p) => p.renderedBefore.includes(p.approvalId))).toHaveLength(1);
      expect(posted[0]?.renderedBefore).toHaveLength(1);
    });

    it("store() resolves once the record is stored; the approval's queue still waits for the card", async () => {
      let unblock!: () => void;
      const blocked = new Promise<void>((resolve) => {
        unblock = resolve;
      });
      const post = cards.post.bind(cards);
      cards.post = async (...args) => {
        await blocked;
        return post(...args);
      };
      const order: string[] = [];
      let storedWhilePosting = false;
      const opened = keeper.run('k-1', async () => {
        const stored = await keeper.store(record());
        storedWhilePosting = stored !== false && cards.posts.length === 0;
        order.push('stored');
        if (stored) return stored.posted;
      });
      const next = keeper.run('k-1', async () => {
        order.push(`next, ${cards.posts.length} posted`);
      });
      await until(() => storedWhilePosting);
      expect((await store.get('k-1'))?.slack.ts).toBeUndefined();
      expect(order).toEqual(['stored']);
      unblock();
      await Promise.all([opened, next]);
      expect(order).toEqual(['stored', 'next, 1 posted']);
      expect((await store.get('k-1'))?.slack.ts).toBe('1700000000.000001');
      // An existing record: nothing stored, nothing to wait for.
      expect(await keeper.run('k-1', () => keeper.store(record()))).toBe(false);
    });
  });
});
