// The Escalator's poll loop on a real schedule (EscalationStore on the tests' Redis): steps this
// process cannot act on must not hold up the ones behind them, nor make it look again and again.
// The records live in a map the store and the keeper share.

import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ApprovalRecord } from '../../src/domain/record.js';
import type { EscalationStep } from '../../src/domain/route.js';
import { PagerDuty } from '../../src/pagerduty/pagerDuty.js';
import { Escalator, type EscalatorOptions } from '../../src/relay/escalation/escalator.js';
import { lineageOf } from '../../src/relay/escalation/lineage.js';
import type { RecordKeeper } from '../../src/relay/records/recordKeeper.js';
import type { ApprovalStore, Mutation } from '../../src/store/approvalStore.js';
import { EscalationStore } from '../../src/store/escalationStore.js';
import { keys } from '../../src/store/keys.js';
import { quietEscalatorParts } from '../support/escalatorParts.js';
import { useFreshRedis } from '../support/freshRedis.js';
import { resendingRedis } from '../support/resendingRedis.js';
import { sampleRecord } from '../support/sampleRecord.js';

const redis = useFreshRedis();
const silent = pino({ level: 'silent' });

/**
 * One escalator on the real schedule, with the routes' ladders as this process's file has them.
 * Another replica's `records` make the two share their approvals.
 */
function world(
  ladders: Record<string, EscalationStep[]>,
  extra: Partial<EscalatorOptions> = {},
  client: Redis = redis(),
  records = new Map<string, ApprovalRecord>(),
) {
  const sent: string[] = [];
  const schedule = new EscalationStore(client, { lineageTtlMs: 600_000 });
  let looks = 0;
  const look = schedule.look.bind(schedule);
  schedule.look = async (nowMs: number, limit?: number) => {
    looks += 1;
    return look(nowMs, limit);
  };
  const escalator = new Escalator({
    schedule,
    store: { get: async (approvalId: string) => records.get(approvalId) } as unknown as ApprovalStore,
    keeper: {
      mutateAndSync: async (approvalId: string, mutation: Mutation) => {
        const current = records.get(approvalId);
        const next = current && mutation(current);
        if (next) records.set(approvalId, next);
        return next ?? current;
      },
    } as unknown as RecordKeeper,
    slack: {
      threadReply: async (card) => {
        sent.push(card.ts);
      },
      directMessage: async () => ({ channel: 'D1', ts: '1' }),
      permalink: async () => undefined,
      nameOf: async () => undefined,
    },
    ladderOf: (route) => ladders[route ?? ''] ?? [],
    ...quietEscalatorParts(),
    ...extra,
  });
  /** Resolves once `probe` holds, or fails after `ms`. */
  const until = async (probe: () => boolean, ms = 3_000) => {
    for (const end = Date.now() + ms; !probe() && Date.now() < end; )
      await new Promise((r) => setTimeout(r, 5));
    expect(probe()).toBe(true);
  };
  return { escalator, schedule, records, sent, looks: () => looks, until };
}

describe('steps no ladder of this process has', () => {
  it('more of them due than a look takes: the steps behind still fire, and the loop does not spin', async () => {
    // The file now: route "deploys" lost its third step in a restart.
    const w = world({
      deploys: [
        { afterMs: 0, action: 'remind' },
        { afterMs: 0, action: 'remind' },
      ],
      ops: [{ afterMs: 0, action: 'remind' }],
    });
    const longAgo = Date.now() - 3_600_000;
    // 51 approvals still open on "deploys", scheduled by the previous process with three steps:
    // the first two fired, the third waits at the head of the schedule.
    for (let i = 0; i < 51; i++) {
      const old = sampleRecord(`old-${i}`, {
        route: 'deploys',
        toolCallId: `c${i}`,
        slack: { channel: 'C1', ts: `1.${i}` },
      });
      w.records.set(old.approvalId, old);
      await w.schedule.schedule(old.approvalId, lineageOf(old), longAgo, [0, 0, 60_000]);
      await redis().zrem(
        keys.escalationDue(),
        JSON.stringify([old.approvalId, 0, lineageOf(old)]),
        JSON.stringify([old.approvalId, 1, lineageOf(old)]),
      );
    }
    w.escalator.start();
    const fresh = sampleRecord('new-1', {
      route: 'ops',
      toolCallId: 'n1',
      slack: { channel: 'C2', ts: '9.9' },
    });
    w.records.set(fresh.approvalId, fresh);
    w.escalator.follow(fresh);
    await w.until(() => w.sent.length === 1);
    expect(w.sent).toEqual(['9.9']);
    // A second of idling: an idle look a second, not a look after every pass.
    await new Promise((r) => setTimeout(r, 1_000));
    await w.escalator.stop();
    expect(w.looks()).toBeLessThan(10);
    // The steps are kept for a process whose file has them, but no longer due now.
    const left = await redis().zrangebyscore(keys.escalationDue(), '-inf', '+inf', 'WITHSCORES');
    expect(left.length / 2).toBe(51);
    for (let i = 1; i < left.length; i += 2) expect(Number(left[i])).toBeGreaterThan(Date.now());
  });
});

describe('a claim whose reply was lost, sent again', () => {
  it('is still ours: the step fires, once', async () => {
    const w = world({ r: [{ afterMs: 0, action: 'remind' }] }, {}, resendingRedis(redis(), ['eval', 'zrem']));
    const claims: boolean[] = [];
    const claim = w.schedule.claim.bind(w.schedule);
    w.schedule.claim = async (...args) => {
      const won = await claim(...args);
      claims.push(won);
      return won;
    };
    const rec = sampleRecord('lost-1', { route: 'r', toolCallId: 'l1', slack: { channel: 'C1', ts: '1.1' } });
    w.records.set(rec.approvalId, rec);
    await w.schedule.schedule(rec.approvalId, lineageOf(rec), Date.now() - 1_000, [0]);
    await w.escalator.poll();
    await w.escalator.poll();
    await w.escalator.stop();
    expect(claims).toEqual([true]);
    expect(w.sent).toEqual(['1.1']);
    expect(w.records.get(rec.approvalId)?.escalation?.fired).toMatchObject([{ step: 0, action: 'remind' }]);
    expect(await redis().zcard(keys.escalationDue())).toBe(0);
  });
});

describe('a claim on its way as a replica stops', () => {
  it('is waited for and given back: another replica fires the step, once', async () => {
    const ladders: Record<string, EscalationStep[]> = { r: [{ afterMs: 0, action: 'remind' }] };
    const leaving = world(ladders);
    const staying = world(ladders, {}, redis(), leaving.records);
    /** What the leaving replica did with the step, and whether its stop() had resolved by then. */
    const done: string[] = [];
    let stopped = false;
    // Its claim waits, as on a slow Redis, until its stop has begun.
    let claiming!: () => void;
    const claimSent = new Promise<void>((resolve) => {
      claiming = resolve;
    });
    let answer!: () => void;
    const answered = new Promise<void>((resolve) => {
      answer = resolve;
    });
    const claim = leaving.schedule.claim.bind(leaving.schedule);
    leaving.schedule.claim = async (...args) => {
      claiming();
      await answered;
      const won = await claim(...args);
      done.push(`${won ? 'claimed' : 'lost'}${stopped ? ' after the stop' : ''}`);
      return won;
    };
    const retry = leaving.schedule.retry.bind(leaving.schedule);
    leaving.schedule.retry = async (...args) => {
      const times = await retry(...args);
      done.push(`given back${stopped ? ' after the stop' : ''}`);
      return times;
    };
    const rec = sampleRecord('stop-1', { route: 'r', toolCallId: 's1', slack: { channel: 'C1', ts: '1.1' } });
    leaving.records.set(rec.approvalId, rec);
    await leaving.schedule.schedule(rec.approvalId, lineageOf(rec), Date.now() - 1_000, [0]);
    const polled = leaving.escalator.poll();
    await claimSent;
    const stopping = leaving.escalator.stop().then(() => {
      stopped = true;
    });
    answer();
    await stopping;
    await polled;
    expect(done).toEqual(['claimed', 'given back']);
    // The replica that stays finds it due at its next look, and fires it.
    await staying.escalator.poll();
    await staying.escalator.stop();
    expect(leaving.sent).toEqual([]);
    expect(staying.sent).toEqual(['1.1']);
    expect(leaving.records.get(rec.approvalId)?.escalation?.fired).toMatchObject([
      { step: 0, action: 'remind' },
    ]);
    expect(await redis().zcard(keys.escalationDue())).toBe(0);
  });
});

describe('a slow step', () => {
  it('holds up no other: a reminder due while a page is being retried is sent meanwhile', async () => {
    /** Each of PagerDuty's attempts, with how many reminders were sent by then. */
    const attempts: string[] = [];
    // PagerDuty busy twice (503, Retry-After: 1 s), then taking the event.
    const pager = new PagerDuty({
      eventsUrl: 'http://pd.invalid/v2/enqueue',
      apiUrl: 'http://pd.invalid/',
      logger: silent,
      fetch: (async () => {
        attempts.push(`attempt ${attempts.length + 1}, reminders sent: ${w.sent.length}`);
        if (attempts.length < 3)
          return new Response('busy', { status: 503, headers: { 'retry-after': '1' } });
        return new Response('{}', { status: 202 });
      }) as typeof fetch,
    });
    const w = world(
      { pd: [{ afterMs: 0, action: 'page' }], rm: [{ afterMs: 200, action: 'remind' }] },
      {
        pager,
        defaultRoutingKey: 'R'.repeat(32),
      },
    );
    const paged = sampleRecord('page-1', {
      route: 'pd',
      toolCallId: 'p1',
      slack: { channel: 'C1', ts: '1.1' },
    });
    const reminded = sampleRecord('remind-1', {
      route: 'rm',
      toolCallId: 'r1',
      slack: { channel: 'C1', ts: '2.2' },
    });
    w.records.set(paged.approvalId, paged);
    w.records.set(reminded.approvalId, reminded);
    w.escalator.start();
    w.escalator.follow(paged);
    w.escalator.follow(reminded);
    await w.until(() => w.records.get(paged.approvalId)?.escalation?.fired.length === 1, 6_000);
    await w.until(() => w.sent.length === 1);
    await w.escalator.stop();
    expect(w.sent).toEqual(['2.2']);
    // The reminder went out while the page waited for PagerDuty, before its last attempt.
    expect(attempts).toEqual([
      'attempt 1, reminders sent: 0',
      'attempt 2, reminders sent: 1',
      'attempt 3, reminders sent: 1',
    ]);
  });
});
