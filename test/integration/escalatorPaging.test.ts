// The Escalator's PagerDuty pages on a real schedule (the tests' Redis): every
// incident a request opened is resolved when it ends, whichever service it went to, however late
// a trigger lands, and even when the process resolving it stops meanwhile. The records live in a
// map the store and the keeper share; the keeper tells the escalator of each write, as
// RecordKeeper's followers are told.

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { ApprovalRecord } from '../../src/domain/record.js';
import type { EscalationStep } from '../../src/domain/route.js';
import type { TriggerEvent } from '../../src/pagerduty/pagerDuty.js';
import type { Pager } from '../../src/relay/escalation/escalationSteps.js';
import { Escalator } from '../../src/relay/escalation/escalator.js';
import { lineageOf } from '../../src/relay/escalation/lineage.js';
import { superseded } from '../../src/relay/records/recordMutations.js';
import type { ApprovalStore } from '../../src/store/approvalStore.js';
import { EscalationStore, pagedService } from '../../src/store/escalationStore.js';
import { keys } from '../../src/store/keys.js';
import { followedRecords, quietEscalatorParts } from '../support/escalatorParts.js';
import { useFreshRedis } from '../support/freshRedis.js';
import { captureLogger } from '../support/logCapture.js';
import { keysHolding } from '../support/redisHolding.js';
import { sampleRecord } from '../support/sampleRecord.js';
import { probeUntil } from '../support/until.js';

const redis = useFreshRedis();
const silent = pino({ level: 'silent' });
const T0 = Date.parse('2026-11-30T10:00:00.000Z');
const TEAM_KEY = 'a'.repeat(32);
const MANAGERS_KEY = 'b'.repeat(32);
const DEFAULT_KEY = 'd'.repeat(32);
const DUE = keys.escalationDue();

const call = { toolCallId: 'call_1' };
const approval = (approvalId: string, ts: string) =>
  sampleRecord(approvalId, { ...call, slack: { channel: 'C1', ts } });

const decided = (record: ApprovalRecord): ApprovalRecord => ({
  ...record,
  phase: 'resolved',
  resolution: { decision: 'approved', resolvedBy: 'user', decidedAt: new Date(T0).toISOString() },
});

/** Resolves once `probe` holds (the escalator's work runs on its own). */
async function until(probe: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !probe(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(probe()).toBe(true);
}

/** A promise and the function that settles it: a gate a test opens when it chooses. */
function gate() {
  let open!: () => void;
  const shut = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { shut, open };
}

/** What PagerDuty was sent, as `action service dedup_key` (the service: its key's first letter). */
type Sent = string[];

/**
 * One process: an escalator on the shared records and schedule, paging through `pager`, its
 * config's routing keys the ladder's and DEFAULT_KEY (PAGERDUTY_ROUTING_KEY).
 */
function replica(
  records: Map<string, ApprovalRecord>,
  ladder: EscalationStep[],
  pager: Pager,
  clock: { nowMs: number },
  logger = silent,
) {
  const { keeper, write } = followedRecords(records, () => escalator);
  const escalator: Escalator = new Escalator({
    schedule: new EscalationStore(redis(), { lineageTtlMs: 600_000 }),
    store: { get: async (approvalId: string) => records.get(approvalId) } as unknown as ApprovalStore,
    keeper,
    slack: {
      threadReply: async () => undefined,
      directMessage: async () => ({ channel: 'D1', ts: '1' }),
      permalink: async () => undefined,
      nameOf: async () => undefined,
    },
    pager,
    defaultRoutingKey: DEFAULT_KEY,
    routingKeys: ladder.flatMap((step) => step.routingKey ?? []),
    ladderOf: () => ladder,
    ...quietEscalatorParts(),
    logger,
    now: () => new Date(clock.nowMs),
  });
  return { escalator, write };
}

/** A PagerDuty that answers at once and notes what it was sent. */
function recordingPager(sent: Sent): Pager {
  return {
    trigger: async (event: TriggerEvent) => {
      sent.push(`trigger ${event.routingKey[0]} ${event.dedupKey}`);
    },
    resolve: async (routingKey: string, dedupKey: string) => {
      sent.push(`resolve ${routingKey[0]} ${dedupKey}`);
    },
  };
}

/** A PagerDuty answering nothing: a resolve ends only when its signal aborts, if it has one. */
function hangingPager(sent: Sent, calls: string[]): Pager {
  return {
    trigger: recordingPager(sent).trigger,
    resolve: (routingKey: string, dedupKey: string, signal?: AbortSignal) => {
      calls.push(`resolve ${routingKey[0]} ${dedupKey}`);
      return new Promise<void>((_resolve, reject) => {
        signal?.addEventListener('abort', () => reject(signal.reason));
      });
    },
  };
}

/** A PagerDuty that answers at once and notes each resolve as `routing key dedup_key`, the whole key. */
function keyedPager(resolves: string[]): Pager {
  return {
    trigger: async () => undefined,
    resolve: async (routingKey: string, dedupKey: string) => {
      resolves.push(`${routingKey} ${dedupKey}`);
    },
  };
}

/** A new pending approval `approvalId`, in `records` and followed by `p` until it has a ladder. */
async function followed(
  p: ReturnType<typeof replica>,
  records: Map<string, ApprovalRecord>,
  approvalId: string,
): Promise<ApprovalRecord> {
  const first = approval(approvalId, '1.1');
  records.set(approvalId, first);
  p.escalator.follow(first);
  await until(() => records.get(approvalId)?.escalation !== undefined);
  return first;
}

/**
 * `b` sends nothing while the lease another process took lasts, then the resolve once the lease
 * has run out, and nothing more at its next look; `b` is stopped after.
 */
async function takesOverOnceTheLeaseRunsOut(
  b: ReturnType<typeof replica>,
  bSent: Sent,
  clock: { nowMs: number },
): Promise<void> {
  await b.escalator.poll();
  await b.escalator.settled();
  expect(bSent).toEqual([]);
  clock.nowMs += 10 * 60_000;
  await b.escalator.poll();
  await until(() => bSent.length === 1);
  await b.escalator.poll();
  await b.escalator.settled();
  await b.escalator.stop();
}

describe('a request paged on two PagerDuty services', () => {
  it('resolves the incident of each when the approval is decided', async () => {
    const sent: Sent = [];
    const records = new Map<string, ApprovalRecord>();
    const clock = { nowMs: T0 };
    const ladder: EscalationStep[] = [
      { afterMs: 0, action: 'page', routingKey: TEAM_KEY },
      { afterMs: 1_000, action: 'page', routingKey: MANAGERS_KEY },
    ];
    const logs = captureLogger();
    const p = replica(records, ladder, recordingPager(sent), clock, logs.logger);
    const first = await followed(p, records, 'pd-1');
    await p.escalator.poll();
    await p.escalator.settled();
    clock.nowMs += 1_000;
    await p.escalator.poll();
    await p.escalator.settled();
    expect(sent).toEqual(['trigger a pd-1', 'trigger b pd-1']);

    p.write(first.approvalId, decided);
    await until(() => sent.length === 4);
    await p.escalator.stop();
    expect(sent.slice(2).sort()).toEqual(['resolve a pd-1', 'resolve b pd-1']);
    // Routing keys are secrets: no log line carries one.
    expect(JSON.stringify(logs.lines)).not.toContain(TEAM_KEY);
    expect(JSON.stringify(logs.lines)).not.toContain(MANAGERS_KEY);
  });
});

describe('a trigger that lands after the request was resolved', () => {
  it('is resolved again, though the approval that sent it was superseded meanwhile', async () => {
    const sent: Sent = [];
    const records = new Map<string, ApprovalRecord>();
    const clock = { nowMs: T0 };
    // PagerDuty answers the first trigger late (it waits out a Retry-After), the rest at once.
    const retryLands = gate();
    const pager = recordingPager(sent);
    let triggers = 0;
    const p = replica(
      records,
      [{ afterMs: 0, action: 'page' }],
      {
        ...pager,
        trigger: async (event, signal) => {
          if (++triggers === 1) await retryLands.shut;
          await pager.trigger(event, signal);
        },
      },
      clock,
    );
    const first = await followed(p, records, 'pd-late-1');
    const firing = p.escalator.poll();
    await until(() => triggers === 1);

    // The host restarts: the same call is asked again on a new card, which is decided at once.
    p.write(first.approvalId, superseded('restarted'));
    const successor = approval('pd-late-2', '2.2');
    records.set(successor.approvalId, successor);
    p.escalator.follow(successor);
    await until(() => records.get(successor.approvalId)?.escalation !== undefined);
    p.write(successor.approvalId, decided);
    await until(() => sent.length === 1);
    expect(sent).toEqual(['resolve d pd-late-1']);

    // The trigger's retry lands after the resolve: PagerDuty opens a new incident, to be resolved.
    retryLands.open();
    await firing;
    await p.escalator.stop();
    expect(sent).toEqual(['resolve d pd-late-1', 'trigger d pd-late-1', 'resolve d pd-late-1']);
  });
});

describe('a resolve under way as its process stops or dies', () => {
  /** A request paged by `a`, then decided there: `a` is resolving it as the test goes on. */
  async function pagedThenDecided(approvalId: string) {
    const sent: Sent = [];
    const calls: string[] = [];
    const records = new Map<string, ApprovalRecord>();
    const clock = { nowMs: T0 };
    const ladder: EscalationStep[] = [{ afterMs: 0, action: 'page' }];
    const a = replica(records, ladder, hangingPager(sent, calls), clock);
    const bSent: Sent = [];
    const b = replica(records, ladder, recordingPager(bSent), clock);
    await followed(a, records, approvalId);
    await a.escalator.poll();
    await a.escalator.settled();
    expect(sent).toEqual([`trigger d ${approvalId}`]);
    a.write(approvalId, decided);
    await until(() => calls.length === 1);
    return { a, b, bSent, clock };
  }

  it('stopped, it hands the resolve on: another process sends it', async () => {
    const { a, b, bSent } = await pagedThenDecided('pd-stop-1');
    await a.escalator.stop();
    await b.escalator.poll();
    await until(() => bSent.length === 1);
    await b.escalator.stop();
    expect(bSent).toEqual(['resolve d pd-stop-1']);
  });

  it('dead, its resolve is sent by another process once the lease runs out, and once', async () => {
    const { b, bSent, clock } = await pagedThenDecided('pd-dead-1');
    // `a` never answers again. Until its lease runs out, the resolve is still its own.
    await takesOverOnceTheLeaseRunsOut(b, bSent, clock);
    expect(bSent).toEqual(['resolve d pd-dead-1']);
  });

  it('dead as it resolves a trigger that landed late, its resolve is sent by another once the lease runs out', async () => {
    const sent: Sent = [];
    const records = new Map<string, ApprovalRecord>();
    const clock = { nowMs: T0 };
    const ladder: EscalationStep[] = [{ afterMs: 0, action: 'page' }];
    // PagerDuty answers the trigger late (it waits out a Retry-After); the request's resolve goes
    // at once, and `a` dies as it sends the late trigger's resolve.
    const retryLands = gate();
    const pager = recordingPager(sent);
    let resolves = 0;
    const a = replica(
      records,
      ladder,
      {
        trigger: async (event, signal) => {
          await retryLands.shut;
          await pager.trigger(event, signal);
        },
        resolve: async (routingKey, dedupKey, signal) => {
          if (++resolves === 2) return new Promise<void>(() => {});
          await pager.resolve(routingKey, dedupKey, signal);
        },
      },
      clock,
    );
    const bSent: Sent = [];
    const b = replica(records, ladder, recordingPager(bSent), clock);
    const first = await followed(a, records, 'pd-dead-late');
    void a.escalator.poll();
    const lineage = keys.escalationLineage(lineageOf(first));
    await probeUntil('the page is marked, its trigger on its way', async () =>
      (await redis().hkeys(lineage)).some((field) => field.startsWith('paged:')),
    );
    a.write(first.approvalId, decided);
    await until(() => sent.length === 1);
    // The request's resolve settled, its lease gone: only then does the trigger land.
    await probeUntil('the resolve settled', async () => (await redis().zcard(DUE)) === 0);
    retryLands.open();
    await until(() => resolves === 2);
    expect(sent).toEqual(['resolve d pd-dead-late', 'trigger d pd-dead-late']);
    // The late resolve is handed on by the key's tag: Redis holds no routing key.
    expect(await redis().exists(keys.escalationUnresolved(lineageOf(first)))).toBe(1);
    expect(await keysHolding(redis(), DEFAULT_KEY)).toEqual([]);
    await takesOverOnceTheLeaseRunsOut(b, bSent, clock);
    expect(bSent).toEqual(['resolve d pd-dead-late']);
  });
});

describe('routing keys, which Redis never holds', () => {
  it('a page is kept by its tag: handed on by a stop, another process resolves it with the key of its own config', async () => {
    const sent: Sent = [];
    const calls: string[] = [];
    const records = new Map<string, ApprovalRecord>();
    const clock = { nowMs: T0 };
    const ladder: EscalationStep[] = [
      { afterMs: 0, action: 'page', routingKey: TEAM_KEY },
      { afterMs: 1_000, action: 'page' },
    ];
    const a = replica(records, ladder, hangingPager(sent, calls), clock);
    const first = await followed(a, records, 'pd-key-1');
    await a.escalator.poll();
    await a.escalator.settled();
    clock.nowMs += 1_000;
    await a.escalator.poll();
    await a.escalator.settled();
    expect(sent).toEqual(['trigger a pd-key-1', 'trigger d pd-key-1']);
    const lineage = keys.escalationLineage(lineageOf(first));
    expect(Object.keys(await redis().hgetall(lineage)).filter((f) => f.startsWith('paged:'))).toHaveLength(2);
    expect(await keysHolding(redis(), TEAM_KEY)).toEqual([]);
    expect(await keysHolding(redis(), DEFAULT_KEY)).toEqual([]);

    // Decided, then stopped as its resolves hang: they are handed on.
    a.write(first.approvalId, decided);
    await until(() => calls.length === 2);
    await a.escalator.stop();
    const unresolved = keys.escalationUnresolved(lineageOf(first));
    expect(Object.keys(await redis().hgetall(unresolved)).filter((f) => f.startsWith('paged:'))).toHaveLength(
      2,
    );
    expect(await keysHolding(redis(), TEAM_KEY)).toEqual([]);
    expect(await keysHolding(redis(), DEFAULT_KEY)).toEqual([]);

    // Another replica, with the same config, resolves both with their keys.
    const resolves: string[] = [];
    const b = replica(records, ladder, keyedPager(resolves), clock);
    await b.escalator.poll();
    await until(() => resolves.length === 2);
    await b.escalator.stop();
    expect(resolves.sort()).toEqual([`${TEAM_KEY} pd-key-1`, `${DEFAULT_KEY} pd-key-1`]);
    expect(await redis().exists(unresolved)).toBe(0);
    expect(await redis().zcard(DUE)).toBe(0);
  });

  it('a page an earlier release kept by its key is resolved with that key, though the config no longer has it', async () => {
    const OLD_KEY = 'e'.repeat(32);
    const OLDER_KEY = 'f'.repeat(32);
    const resolves: string[] = [];
    const records = new Map<string, ApprovalRecord>();
    const clock = { nowMs: T0 };
    const p = replica(records, [{ afterMs: 60_000, action: 'page' }], keyedPager(resolves), clock);
    const first = await followed(p, records, 'pd-legacy-1');
    // What earlier releases' paged() wrote: the key itself under its tag, and before that under `paged`.
    await redis().hset(
      keys.escalationLineage(lineageOf(first)),
      `paged:${pagedService(OLD_KEY).tag}`,
      OLD_KEY,
      'paged',
      OLDER_KEY,
    );
    p.write(first.approvalId, decided);
    await until(() => resolves.length === 2);
    await p.escalator.stop();
    expect(resolves.sort()).toEqual([`${OLD_KEY} pd-legacy-1`, `${OLDER_KEY} pd-legacy-1`]);
    expect(p.escalator.failures).toEqual({});
    expect(await redis().exists(keys.escalationUnresolved(lineageOf(first)))).toBe(0);
    expect(await redis().zcard(DUE)).toBe(0);
  });

  it('a resolve an earlier release handed on with its key is sent by the next process to take it', async () => {
    const OLD_KEY = 'e'.repeat(32);
    const resolves: string[] = [];
    const records = new Map<string, ApprovalRecord>();
    const clock = { nowMs: T0 };
    const p = replica(records, [{ afterMs: 0, action: 'page' }], keyedPager(resolves), clock);
    const lineage = 'main:sess:call_legacy';
    await redis().hset(
      keys.escalationUnresolved(lineage),
      'approvalId',
      'pd-legacy-2',
      'dedupKey',
      'pd-legacy-0',
      `paged:${pagedService(OLD_KEY).tag}`,
      OLD_KEY,
    );
    await new EscalationStore(redis(), { lineageTtlMs: 600_000 }).leaseResolve(lineage, 'pd-legacy-2', 0);
    await p.escalator.poll();
    await until(() => resolves.length === 1);
    await p.escalator.stop();
    expect(resolves).toEqual([`${OLD_KEY} pd-legacy-0`]);
    expect(await redis().exists(keys.escalationUnresolved(lineage))).toBe(0);
    expect(await redis().zcard(DUE)).toBe(0);
  });

  it("a page whose key another replica's config has is left for it: that one resolves it, once", async () => {
    const sent: Sent = [];
    const records = new Map<string, ApprovalRecord>();
    const clock = { nowMs: T0 };
    const teamLadder: EscalationStep[] = [{ afterMs: 0, action: 'page', routingKey: TEAM_KEY }];
    const a = replica(records, teamLadder, recordingPager(sent), clock);
    const first = await followed(a, records, 'pd-rollout-1');
    await a.escalator.poll();
    await a.escalator.settled();
    await a.escalator.stop();
    expect(sent).toEqual(['trigger a pd-rollout-1']);

    // A config change rolls out: `b` has no team key yet, and it ends the request.
    const bSent: Sent = [];
    const b = replica(
      records,
      [{ afterMs: 0, action: 'page', routingKey: MANAGERS_KEY }],
      recordingPager(bSent),
      clock,
    );
    b.write(first.approvalId, decided);
    await b.escalator.settled();
    expect(bSent).toEqual([]);
    expect(b.escalator.failures).toEqual({});
    const unresolved = keys.escalationUnresolved(lineageOf(first));
    expect(await redis().hget(unresolved, `paged:${pagedService(TEAM_KEY).tag}`)).toBe('tag');
    // Left due later, not at once: `b` does not take it straight back.
    const [, dueAt] = await redis().zrange(DUE, 0, -1, 'WITHSCORES');
    expect(Number(dueAt)).toBeGreaterThan(clock.nowMs);
    await b.escalator.poll();
    await b.escalator.settled();
    expect(bSent).toEqual([]);

    // A replica with the team's key takes it once the lease runs out, and resolves it once.
    const resolverSent: Sent = [];
    const resolver = replica(records, teamLadder, recordingPager(resolverSent), clock);
    await takesOverOnceTheLeaseRunsOut(resolver, resolverSent, clock);
    await b.escalator.poll();
    await b.escalator.settled();
    await b.escalator.stop();
    expect(resolverSent).toEqual(['resolve a pd-rollout-1']);
    expect(bSent).toEqual([]);
    expect(b.escalator.failures).toEqual({});
    expect(await redis().exists(unresolved)).toBe(0);
    expect(await redis().zcard(DUE)).toBe(0);
  });

  it('a page whose key left every config before its resolve is dropped once its hash runs out, logged and counted, not thrown', async () => {
    const sent: Sent = [];
    const records = new Map<string, ApprovalRecord>();
    const clock = { nowMs: T0 };
    const a = replica(
      records,
      [{ afterMs: 0, action: 'page', routingKey: TEAM_KEY }],
      recordingPager(sent),
      clock,
    );
    const first = await followed(a, records, 'pd-gone-1');
    await a.escalator.poll();
    await a.escalator.settled();
    await a.escalator.stop();
    expect(sent).toEqual(['trigger a pd-gone-1']);

    // Restarted with the team's key taken out of the file, the request is decided.
    const logs = captureLogger();
    const bSent: Sent = [];
    const b = replica(
      records,
      [{ afterMs: 0, action: 'page', routingKey: MANAGERS_KEY }],
      recordingPager(bSent),
      clock,
      logs.logger,
    );
    b.write(first.approvalId, decided);
    await b.escalator.settled();
    // Left for a replica that may have the key, while the request's unresolved hash outlives a lease.
    expect(b.escalator.failures).toEqual({});
    const unresolved = keys.escalationUnresolved(lineageOf(first));
    expect(await redis().exists(unresolved)).toBe(1);
    // Nobody took it; its hash runs out before another lease would.
    await redis().pexpire(unresolved, 60_000);
    clock.nowMs += 10 * 60_000;
    await b.escalator.poll();
    await until(() => b.escalator.failures.resolve === 1);
    await b.escalator.stop();
    expect(bSent).toEqual([]);
    expect(b.escalator.failures).toEqual({ resolve: 1 });
    const warned = logs.lines.filter((line) => line.level === 40);
    expect(warned).toEqual([
      expect.objectContaining({
        approvalId: 'pd-gone-1',
        service: pagedService(TEAM_KEY).tag,
        msg: expect.stringMatching(/no longer in the config/),
      }),
    ]);
    expect(logs.lines.filter((line) => Number(line.level) >= 50)).toEqual([]);
    expect(JSON.stringify(logs.lines)).not.toContain(TEAM_KEY);
    // Nothing can resolve it: it is not kept, nor leased for another process to try.
    expect(await redis().exists(keys.escalationUnresolved(lineageOf(first)))).toBe(0);
    expect(await redis().zcard(DUE)).toBe(0);
  });
});
