// The escalation schedule on real Redis: two store instances (two processes) racing for the same
// due steps claim each exactly once; a request's steps fire once across the approvals that carry
// it; scheduling twice adds nothing; cancelling takes the rest out.

import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type DueStep, EscalationStore, pagedService } from '../../src/store/escalationStore.js';
import { keys } from '../../src/store/keys.js';
import type { RedisClient } from '../../src/store/redisConnection.js';
import { holdingRedis } from '../support/holdingRedis.js';
import { PrivateRedis } from '../support/privateRedis.js';
import { resendingRedis } from '../support/resendingRedis.js';
import { BACKENDS, openBackend, type StoreBackend } from '../support/storeBackends.js';

/** A service paged: its routing key's tag is all the store keeps of it. */
const RKEY = pagedService('RKEY');
const RKEY2 = pagedService('RKEY2');
const RKEY3 = pagedService('RKEY3');

/** Who ended a request, where a test only needs it ended. */
const ENDED = { approvalId: 'ended-by', dedupKey: 'ended-by' };

describe.each(BACKENDS)('EscalationStore on %s Redis', (kind) => {
  let backend: StoreBackend;
  let a: RedisClient;
  let b: RedisClient;
  let storeA: EscalationStore;
  let storeB: EscalationStore;

  beforeAll(async () => {
    // One Redis: a redis-server of its own, as a bot of another test polling the same schedule
    // would take steps.
    backend = await openBackend(kind, async () => {
      const server = await PrivateRedis.start();
      return { url: server.url, stop: () => server.stop() };
    });
    a = backend.connect();
    b = backend.connect();
    storeA = new EscalationStore(a, { lineageTtlMs: 60_000 });
    storeB = new EscalationStore(b, { lineageTtlMs: 60_000 });
  });

  afterAll(async () => {
    await backend.close();
  });

  /** What a claim says is about to fire. */
  const firing = (due: DueStep) => ({
    step: due.step,
    action: 'remind' as const,
    afterMs: 1_000,
    at: new Date(0).toISOString(),
  });

  /** Polls until nothing is due, claiming what it sees; resolves with what it won. */
  async function drain(store: EscalationStore, nowMs: number): Promise<string[]> {
    const won: string[] = [];
    for (;;) {
      const due = await store.due(nowMs, 7);
      if (due.length === 0) return won;
      for (const step of due)
        if (await store.claim(step, firing(step))) won.push(`${step.approvalId}#${step.step}`);
    }
  }

  describe('the schedule', () => {
    it('two processes polling the same schedule claim every due step exactly once', async () => {
      const now = 1_000_000;
      const ids = Array.from({ length: 60 }, (_, i) => `race-${i}`);
      await Promise.all(ids.map((id) => storeA.schedule(id, `line-${id}`, now, [0, 10, 20])));
      const [wonA, wonB] = await Promise.all([drain(storeA, now + 20), drain(storeB, now + 20)]);
      const all = [...wonA, ...wonB];
      expect(all).toHaveLength(ids.length * 3);
      expect(new Set(all).size).toBe(all.length);
      expect(await a.zcard(keys.escalationDue())).toBe(0);
    });

    it('both processes claiming the very same due steps at once: one wins each', async () => {
      const now = 1_500_000;
      const ids = Array.from({ length: 40 }, (_, i) => `same-${i}`);
      await Promise.all(ids.map((id) => storeA.schedule(id, `line-${id}`, now, [0, 5])));
      const due = await storeA.due(now + 5, 1_000);
      expect(due).toHaveLength(ids.length * 2);
      const [byA, byB] = await Promise.all([
        Promise.all(due.map((d) => storeA.claim(d, firing(d)))),
        Promise.all(due.map((d) => storeB.claim(d, firing(d)))),
      ]);
      due.forEach((_, i) => {
        expect(Number(byA[i]) + Number(byB[i])).toBe(1);
      });
    });

    it('a step is due only at its time, counted from the clock start', async () => {
      const now = 2_000_000;
      await storeA.schedule('timed-1', 'line-timed-1', now, [1_000, 5_000]);
      expect((await storeA.due(now + 999)).filter((d) => d.approvalId === 'timed-1')).toHaveLength(0);
      expect(
        (await storeA.due(now + 1_000)).filter((d) => d.approvalId === 'timed-1').map((d) => d.step),
      ).toEqual([0]);
      expect(
        (await storeA.due(now + 5_000)).filter((d) => d.approvalId === 'timed-1').map((d) => d.step),
      ).toEqual([0, 1]);
      await storeA.cancel('timed-1', 'line-timed-1', 2);
    });

    it('a look says when the next step falls due, and to look again at once when more are due than it took', async () => {
      await a.del(keys.escalationDue());
      expect(await storeA.look(0)).toEqual({ due: [] });
      const now = 2_500_000;
      await storeA.schedule('look-1', 'line-look-1', now, [0, 10, 400]);
      await storeA.schedule('look-2', 'line-look-2', now, [5]);
      const early = await storeA.look(now + 7);
      expect(early.due.map((d) => `${d.approvalId}#${d.step}`)).toEqual(['look-1#0', 'look-2#0']);
      expect(early.nextMs).toBe(now + 10);
      const capped = await storeA.look(now + 10, 2);
      expect(capped.due).toHaveLength(2);
      expect(capped.nextMs).toBe(now + 10);
      expect(await storeA.look(now + 10, 3)).toMatchObject({ nextMs: now + 400 });
      const all = await storeA.look(now + 400, 4);
      expect(all.due).toHaveLength(4);
      expect(all.nextMs).toBeUndefined();
      await storeA.cancel('look-1', 'line-look-1', 3);
      await storeA.cancel('look-2', 'line-look-2', 1);
    });

    it('scheduling the same approval again adds nothing, even after a step fired', async () => {
      const now = 3_000_000;
      const first = await storeA.schedule('again-1', 'line-again', now, [0, 100]);
      expect(first).toMatchObject({ startMs: now, origin: 'again-1', scheduled: true, fired: [] });
      const [step0] = await storeA.due(now);
      expect(await storeA.claim(step0!, firing(step0!))).toBe(true);
      const second = await storeB.schedule('again-1', 'line-again', now + 50, [0, 100]);
      expect(second.scheduled).toBe(false);
      expect(second.startMs).toBe(now);
      expect(
        (await storeA.due(now + 100)).filter((d) => d.approvalId === 'again-1').map((d) => d.step),
      ).toEqual([1]);
      await storeA.cancel('again-1', 'line-again', 2);
    });

    it('a step claimed by a process that died before saying how it went still shows on a successor', async () => {
      const now = 5_000_000;
      await storeA.schedule('dead-1', 'line-dead', now, [0, 1_000]);
      const [step0] = (await storeA.due(now)).filter((d) => d.approvalId === 'dead-1');
      expect(await storeA.claim(step0!, firing(step0!))).toBe(true);
      // No fired() call: the process died right after acting.
      const successor = await storeB.schedule('dead-2', 'line-dead', now + 500, [0, 1_000]);
      expect(successor.fired).toEqual([firing(step0!)]);
      await storeA.cancel('dead-1', 'line-dead', 2);
      await storeB.cancel('dead-2', 'line-dead', 2);
    });

    it('a successor keeps the clock and fires only what its predecessor did not', async () => {
      const now = 4_000_000;
      await storeA.schedule('pred-1', 'line-shared', now, [0, 1_000, 2_000]);
      const [step0] = (await storeA.due(now)).filter((d) => d.approvalId === 'pred-1');
      expect(await storeA.claim(step0!, firing(step0!))).toBe(true);
      await storeA.fired('line-shared', {
        step: 0,
        action: 'remind',
        afterMs: 0,
        at: new Date(now).toISOString(),
      });
      // The host asks the same tool call again under a new id, later.
      const successor = await storeB.schedule('succ-1', 'line-shared', now + 500, [0, 1_000, 2_000]);
      expect(successor).toMatchObject({ startMs: now, origin: 'pred-1', scheduled: true });
      expect(successor.fired.map((f) => f.step)).toEqual([0]);
      // Both carry steps 1 and 2 while the predecessor is not yet cancelled: each fires once in all.
      const due = await storeA.due(now + 2_000);
      expect(due.filter((d) => d.approvalId === 'succ-1').map((d) => d.step)).toEqual([1, 2]);
      const results = await Promise.all(
        due.map((d) => (d.approvalId === 'pred-1' ? storeA : storeB).claim(d, firing(d))),
      );
      const won = due.filter((_, i) => results[i]).map((d) => d.step);
      expect(won.sort()).toEqual([1, 2]);
    });

    it('cancelling takes an approval’s remaining steps out', async () => {
      const now = 5_000_000;
      await storeA.schedule('cancel-1', 'line-cancel', now, [0, 10, 20]);
      expect(await storeB.cancel('cancel-1', 'line-cancel', 3)).toBe(3);
      expect((await storeA.due(now + 20)).filter((d) => d.approvalId === 'cancel-1')).toHaveLength(0);
    });

    it('an ended request starts afresh: a later approval of the same tool call has its own clock', async () => {
      const now = 6_000_000;
      await storeA.schedule('end-1', 'line-end', now, [0]);
      const [step] = (await storeA.due(now)).filter((d) => d.approvalId === 'end-1');
      expect(await storeA.claim(step!, firing(step!))).toBe(true);
      await storeA.paged('line-end', RKEY);
      expect((await storeB.endPaged('line-end', ENDED, 0))?.services).toEqual([{ tag: RKEY.tag }]);
      expect(await storeA.endPaged('line-end', ENDED, 0)).toBeUndefined();
      // A step in flight as the request ended does not bring its lineage back, nor may it page.
      await storeA.fired('line-end', { step: 0, action: 'remind', afterMs: 0, at: '' });
      expect(await storeA.paged('line-end', RKEY)).toBe(false);
      expect(await a.exists(keys.escalationLineage('line-end'))).toBe(0);
      const later = await storeA.schedule('end-2', 'line-end', now + 10_000, [0]);
      expect(later).toMatchObject({ startMs: now + 10_000, origin: 'end-2', fired: [], scheduled: true });
      expect((await storeA.due(now + 10_000)).filter((d) => d.approvalId === 'end-2')).toHaveLength(1);
    });

    it('keeps every service a request paged by its tag, and those earlier releases kept by their key', async () => {
      await storeA.schedule('two-1', 'line-two', 7_000_000, [0]);
      expect(await storeA.paged('line-two', RKEY)).toBe(true);
      expect(await storeB.paged('line-two', RKEY2)).toBe(true);
      expect(await storeA.paged('line-two', RKEY)).toBe(true);
      // Routing keys are secrets: the lineage names each service by its tag alone.
      const lineage = await a.hgetall(keys.escalationLineage('line-two'));
      expect(Object.values(lineage).filter((v) => v.startsWith('RKEY'))).toEqual([]);
      // An earlier release kept the key itself, under its tag, and before that under `paged` alone.
      const RKEY4 = pagedService('RKEY4');
      await a.hset(keys.escalationLineage('line-two'), 'paged', 'RKEY3', `paged:${RKEY4.tag}`, 'RKEY4');
      const { services } = (await storeA.endPaged('line-two', ENDED, 0))!;
      expect(services.sort((x, y) => x.tag.localeCompare(y.tag))).toEqual(
        [{ tag: RKEY.tag }, { tag: RKEY2.tag }, { ...RKEY3, namedAlone: true }, RKEY4].sort((x, y) =>
          x.tag.localeCompare(y.tag),
        ),
      );
      // The tag names a service without its key: short, and different for each.
      expect(new Set(services.map((s) => s.tag)).size).toBe(4);
      for (const { tag } of services) expect(tag).toMatch(/^[0-9a-f]{12}$/);
      // Settled pages leave the unresolved hash, the one named alone `paged` too; the rest stay.
      await storeA.resolvedPages(
        'line-two',
        services.filter((s) => s.tag !== RKEY2.tag),
      );
      const left = await a.hgetall(keys.escalationUnresolved('line-two'));
      expect(Object.keys(left).filter((field) => field.startsWith('paged'))).toEqual([`paged:${RKEY2.tag}`]);
      expect(Object.values(left).filter((v) => v.startsWith('RKEY'))).toEqual([]);
    });

    it('ending a request hands its pages to one caller, leased in the schedule until resolved', async () => {
      const now = 7_500_000;
      await storeA.schedule('endp-1', 'line-endp', now, [60_000]);
      await storeA.paged('line-endp', RKEY);
      await storeA.paged('line-endp', RKEY2);
      const by = { approvalId: 'endp-1', dedupKey: 'endp-0' };
      const [first, second] = await Promise.all([
        storeA.endPaged('line-endp', by, now + 1_000),
        storeB.endPaged('line-endp', by, now + 1_000),
      ]);
      const taken = first ?? second;
      expect(first === undefined || second === undefined).toBe(true);
      expect(taken?.services.map((s) => s.tag).sort()).toEqual([RKEY.tag, RKEY2.tag].sort());
      expect(await storeA.paged('line-endp', RKEY3)).toBe(false);
      // The lease falls due when it runs out; whoever claims it gets what is left to resolve.
      await storeA.resolvedPages(
        'line-endp',
        taken!.services.filter((s) => s.tag === RKEY.tag),
      );
      expect((await storeA.due(now + 999)).filter((d) => d.lineage === 'line-endp')).toEqual([]);
      const [lease] = (await storeA.due(now + 1_000)).filter((d) => d.lineage === 'line-endp');
      const [left, lost] = await Promise.all([
        storeA.takeResolve(lease!, now + 1_000, now + 2_000),
        storeB.takeResolve(lease!, now + 1_000, now + 2_000),
      ]);
      expect(left === undefined || lost === undefined).toBe(true);
      expect(left ?? lost).toMatchObject({ approvalId: 'endp-1', dedupKey: 'endp-0' });
      expect((left ?? lost)?.services).toEqual([{ tag: RKEY2.tag }]);
      await storeB.resolved(left ?? lost!);
      expect((await storeA.due(now + 10_000)).filter((d) => d.lineage === 'line-endp')).toEqual([]);
      expect(await a.exists(keys.escalationUnresolved('line-endp'))).toBe(0);
    });

    it("a resolve's lease stays in the schedule while it is taken: a taker dying leaves it due later", async () => {
      const by = { approvalId: 'die-1', dedupKey: 'die-0' };
      await storeA.handOnResolve('line-die', by, RKEY, 0);
      const [lease] = (await storeA.due(1)).filter((d) => d.lineage === 'line-die');
      // The taker dies once the lease is taken, before it has read the pages.
      const dying = new Proxy(a, {
        get(target, prop, receiver) {
          if (prop === 'hgetall') return async () => Promise.reject(new Error('process died'));
          const value = Reflect.get(target, prop, receiver);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      await expect(
        new EscalationStore(dying, { lineageTtlMs: 60_000 }).takeResolve(lease!, 1_000, 60_000),
      ).rejects.toThrow(/process died/);
      expect((await storeB.due(59_999)).filter((d) => d.lineage === 'line-die')).toEqual([]);
      const [again] = (await storeB.due(60_000)).filter((d) => d.lineage === 'line-die');
      expect((await storeB.takeResolve(again!, 60_000, 120_000))?.services).toEqual([{ tag: RKEY.tag }]);
    });

    it('a late resolve handed on is taken by the next caller, due at once', async () => {
      const by = { approvalId: 'hand-1', dedupKey: 'hand-0' };
      await storeA.handOnResolve('line-hand', by, RKEY, 0);
      expect(Object.values(await a.hgetall(keys.escalationUnresolved('line-hand')))).not.toContain('RKEY');
      const [lease] = (await storeB.due(1)).filter((d) => d.lineage === 'line-hand');
      const taken = await storeB.takeResolve(lease!, 1, 60_000);
      expect(taken).toMatchObject(by);
      expect(taken?.services).toEqual([{ tag: RKEY.tag }]);
      await storeB.resolved(taken!);
      expect(await a.exists(keys.escalationUnresolved('line-hand'))).toBe(0);
    });

    it('a due resolve whose take was sent again (its reply lost) is still taken by its caller', async () => {
      const now = 7_800_000;
      await storeA.schedule('endr-1', 'line-endr', now, [60_000]);
      await storeA.paged('line-endr', RKEY);
      await storeA.endPaged('line-endr', { approvalId: 'endr-1', dedupKey: 'endr-0' }, now + 1_000);
      const [lease] = (await storeA.due(now + 1_000)).filter((d) => d.lineage === 'line-endr');
      // Every script and ZREM runs twice, answered by its second run: as ioredis resends a
      // command whose reply a dropped connection lost.
      const resent = resendingRedis(a, ['eval', 'zrem']);
      const taken = await new EscalationStore(resent, { lineageTtlMs: 60_000 }).takeResolve(
        lease!,
        now + 1_000,
        now + 2_000,
      );
      expect(taken?.services).toEqual([{ tag: RKEY.tag }]);
    });

    it('a late claim of a step already taken, after its request ended, loses and brings no lineage back', async () => {
      const now = 8_000_000;
      await storeA.schedule('late-1', 'line-late', now, [0]);
      const [step] = (await storeA.due(now)).filter((d) => d.approvalId === 'late-1');
      // Process B saw the same step due, but is slow to claim it.
      expect(await storeA.claim(step!, firing(step!))).toBe(true);
      await storeA.endPaged('line-late', ENDED, 0);
      expect(await storeB.claim(step!, firing(step!))).toBe(false);
      expect(await b.exists(keys.escalationLineage('line-late'))).toBe(0);
      // The next approval of the same tool call is a new request: its first step fires.
      const later = await storeB.schedule('late-2', 'line-late', now + 10_000, [0]);
      expect(later).toMatchObject({ startMs: now + 10_000, origin: 'late-2', fired: [], scheduled: true });
      const [next] = (await storeB.due(now + 10_000)).filter((d) => d.approvalId === 'late-2');
      expect(next).toBeDefined();
      expect(await storeB.claim(next!, firing(next!))).toBe(true);
    });

    it('a mark landing after its request ended loses the claim: the request stays ended, and nothing pages', async () => {
      const now = 8_500_000;
      await storeA.schedule('mid-1', 'line-mid', now, [0, 0]);
      const due = (await storeA.due(now)).filter((d) => d.approvalId === 'mid-1');
      const step0 = due.find((d) => d.step === 0)!;
      const step1 = due.find((d) => d.step === 1)!;
      // A claims the page (step 0); B takes step 1 out of the schedule, its mark still on its way.
      expect(await storeA.claim(step0, firing(step0))).toBe(true);
      const held = holdingRedis(b, 'eval', 2);
      const claiming = new EscalationStore(held.client, { lineageTtlMs: 60_000 }).claim(step1, firing(step1));
      await held.holding;
      // The approval is decided: its steps go and its request ends, nothing paged yet.
      await storeA.cancel('mid-1', 'line-mid', 2);
      expect(await storeA.endPaged('line-mid', ENDED, 0)).toBeUndefined();
      held.release();
      expect(await claiming).toBe(false);
      // A's page is marked only on a live request, and the request reads as ended after its trigger.
      expect(await storeA.paged('line-mid', RKEY)).toBe(false);
      expect(await storeA.ended('line-mid')).toBe(true);
      expect(await storeB.release(step1, 0)).toBe(0);
      expect(await a.exists(keys.escalationLineage('line-mid'))).toBe(0);
    });

    it('a step put back by the process that claimed it is due again later, claimed once more, and shows as not fired meanwhile', async () => {
      const now = 9_000_000;
      const lineage = keys.escalationLineage('line-retry');
      await storeA.schedule('retry-1', 'line-retry', now, [0]);
      const [step] = (await storeA.due(now)).filter((d) => d.approvalId === 'retry-1');
      expect(await storeA.claim(step!, firing(step!))).toBe(true);
      expect(await a.hexists(lineage, 'f0')).toBe(1);
      // A timeout that could not decide: put back at a time that grows with each try.
      expect(await storeA.retry(step!, (times) => now + 1_000 * times)).toBe(1);
      expect(await a.hexists(lineage, 'f0')).toBe(0);
      expect((await storeB.due(now + 999)).filter((d) => d.approvalId === 'retry-1')).toHaveLength(0);
      const [again] = (await storeB.due(now + 1_000)).filter((d) => d.approvalId === 'retry-1');
      expect(again).toEqual(step);
      const [byA, byB] = await Promise.all([
        storeA.claim(again!, firing(again!)),
        storeB.claim(again!, firing(again!)),
      ]);
      expect(Number(byA) + Number(byB)).toBe(1);
      expect(await a.hexists(lineage, 'f0')).toBe(1);
      expect(await storeB.retry(step!, (times) => now + 1_000 * times)).toBe(2);
      expect((await storeA.due(now + 2_000)).filter((d) => d.approvalId === 'retry-1')).toHaveLength(1);
      await storeA.claim(step!, firing(step!));
      // The request ended meanwhile: nothing is put back, and its lineage stays gone.
      await storeA.endPaged('line-retry', ENDED, 0);
      expect(await storeA.retry(step!, (times) => now + 1_000 * times)).toBe(0);
      expect((await storeA.due(now + 60_000)).filter((d) => d.approvalId === 'retry-1')).toHaveLength(0);
      expect(await a.exists(lineage)).toBe(0);
    });

    it('a step released by its claimer goes back for the successors scheduled meanwhile, and comes off the lineage', async () => {
      const now = 9_500_000;
      const lineage = keys.escalationLineage('line-release');
      await storeA.schedule('rel-1', 'line-release', now, [0, 1_000]);
      const [step] = (await storeA.due(now)).filter((d) => d.approvalId === 'rel-1');
      expect(await storeA.claim(step!, firing(step!))).toBe(true);
      // The successor starts its clock while the claim stands: it leaves the step out.
      const successor = await storeB.schedule('rel-2', 'line-release', now + 500, [0, 1_000]);
      expect(successor.fired.map((f) => f.step)).toEqual([0]);
      expect((await storeA.due(now + 500)).filter((d) => d.approvalId === 'rel-2')).toHaveLength(0);
      // The first approval ended as it was claimed: the step goes to the successor, due when it was.
      expect(await storeA.release(step!, 0)).toBe(1);
      expect(await a.hexists(lineage, 'f0')).toBe(0);
      const [again] = (await storeB.due(now)).filter((d) => d.approvalId === 'rel-2');
      expect(again).toMatchObject({ approvalId: 'rel-2', step: 0, lineage: 'line-release' });
      expect(await storeB.claim(again!, firing(again!))).toBe(true);
      // A successor scheduled after the release fires it as any step not fired.
      expect((await storeA.schedule('rel-3', 'line-release', now + 600, [0, 1_000])).fired).toHaveLength(1);
      await storeA.cancel('rel-1', 'line-release', 2);
      await storeB.cancel('rel-2', 'line-release', 2);
      await storeB.cancel('rel-3', 'line-release', 2);

      // A claim whose mark lands after its request ended loses, and brings no lineage back.
      const ended = keys.escalationLineage('line-release-end');
      await storeA.schedule('rel-4', 'line-release-end', now, [0]);
      const [late] = (await storeA.due(now)).filter((d) => d.approvalId === 'rel-4');
      await storeA.endPaged('line-release-end', ENDED, 0);
      expect(await storeA.claim(late!, firing(late!))).toBe(false);
      expect(await a.exists(ended)).toBe(0);
      // One an earlier release's mark brought back (no `start`) is ended, and goes on release.
      await a.hset(ended, 'f0', JSON.stringify(firing(late!)), 'c0', 'token', 'paged:tag', 'RKEY');
      expect(await storeA.ended('line-release-end')).toBe(true);
      expect(await storeA.paged('line-release-end', RKEY2)).toBe(false);
      expect(await storeA.release(late!, 0)).toBe(0);
      expect(await a.exists(ended)).toBe(0);
    });

    it('a lineage an earlier release brought back after its request ended is no part of the next request', async () => {
      const now = 9_700_000;
      const lineage = keys.escalationLineage('line-leftover');
      await a.hset(
        lineage,
        'f0',
        JSON.stringify({ step: 0, action: 'remind', afterMs: 0, at: '' }),
        'c0',
        't',
      );
      const next = await storeA.schedule('left-1', 'line-leftover', now, [0]);
      expect(next).toMatchObject({ startMs: now, origin: 'left-1', fired: [], scheduled: true });
      const [step] = (await storeA.due(now)).filter((d) => d.approvalId === 'left-1');
      expect(await storeA.claim(step!, firing(step!))).toBe(true);
      await storeA.cancel('left-1', 'line-leftover', 1);
    });

    it('a step due after the lineage TTL still fires: the lineage outlives the ladder it schedules', async () => {
      const short = new EscalationStore(a, { lineageTtlMs: 100 });
      const now = 9_800_000;
      // The ladder's last step 2 s on: far past the TTL, and past what a loaded machine takes
      // between the schedule and the check below (300 ms was not, under CI's load).
      await short.schedule('long-1', 'line-long', now, [0, 2_000]);
      const [step0] = (await short.due(now)).filter((d) => d.approvalId === 'long-1');
      expect(await short.claim(step0!, firing(step0!))).toBe(true);
      // Longer than the TTL after the claim, before the ladder's last step.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await short.ended('line-long')).toBe(false);
      const [step1] = (await short.due(now + 2_000)).filter((d) => d.approvalId === 'long-1');
      expect(await short.claim(step1!, firing(step1!))).toBe(true);
      await short.cancel('long-1', 'line-long', 2);
    });

    it('scheduling again puts back the steps a process that died half-way never added, not those fired', async () => {
      const now = 7_000_000;
      await storeA.schedule('heal-1', 'line-heal', now, [0, 10]);
      const [step0] = (await storeA.due(now)).filter((d) => d.approvalId === 'heal-1');
      expect(await storeA.claim(step0!, firing(step0!))).toBe(true);
      // As if the process had died after writing the lineage, before adding the steps.
      const left = (await storeA.due(now + 10)).filter((d) => d.approvalId === 'heal-1');
      await a.zrem(keys.escalationDue(), ...left.map((d) => d.member));
      const again = await storeB.schedule('heal-1', 'line-heal', now + 5, [0, 10]);
      expect(again).toMatchObject({ startMs: now, scheduled: false });
      const due = (await storeA.due(now + 10)).filter((d) => d.approvalId === 'heal-1');
      expect(due.map((d) => d.step)).toEqual([1]);
      expect(await storeB.claim(due[0]!, firing(due[0]!))).toBe(true);
    });
  });
});
