// What a session's re-read (approval/listPending, reported as sessionReconciled) closes among the
// approvals the current host process asked. It is the only make-up for an approval/resolved that
// was lost (dropped from a full HeldEvents buffer while Redis was away), so an approval asked
// before the listing was requested and not listed in it is closed. One asked after the request
// went out may be missing from that listing for no other reason, and stays open. The handler is
// real; the keeper and store keep records in a Map.

import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { ApprovalRecord } from '../../../../src/domain/record.js';
import { isTerminal } from '../../../../src/domain/record.js';
import type { HostEvent } from '../../../../src/msp/events.js';
import { ApprovalRequestParams, ApprovalResolvedParams } from '../../../../src/msp/protocol.js';
import type { Decider } from '../../../../src/relay/deciding/decider.js';
import { AskedApprovals } from '../../../../src/relay/hostEvents/askedApprovals.js';
import { HostEventHandler } from '../../../../src/relay/hostEvents/hostEventHandler.js';
import type { RecordKeeper } from '../../../../src/relay/records/recordKeeper.js';
import type { ApprovalStore, Mutation } from '../../../../src/store/approvalStore.js';
import { shellApproval } from '../../../support/fakeHost.js';

const HOST = 'h1';
const INCARNATION = 'inc-1';
const SESSION = 's-1';

/** A handler over records kept in a Map, with Redis that can be taken away and brought back. */
function harness(options: { maxBufferedEvents?: number } = {}) {
  const records = new Map<string, ApprovalRecord>();
  const queues = new Map<string, Promise<unknown>>();
  const work: Promise<unknown>[] = [];
  const run = <T>(approvalId: string, task: () => Promise<T>): Promise<T> => {
    const next = (queues.get(approvalId) ?? Promise.resolve()).then(task);
    queues.set(
      approvalId,
      next.catch(() => undefined),
    );
    work.push(next);
    return next;
  };
  const keeper = {
    run,
    enqueue: (approvalId: string, task: () => Promise<unknown>) => void run(approvalId, task),
    track: (task: Promise<unknown>) => void work.push(task),
    store: async (record: ApprovalRecord) => {
      if (records.has(record.approvalId)) return false;
      records.set(record.approvalId, record);
      return { posted: Promise.resolve() };
    },
    mutate: async (approvalId: string, mutation: Mutation) => {
      const record = records.get(approvalId);
      const next = record && mutation(record);
      if (record && next) records.set(approvalId, { ...next, version: record.version + 1 });
      return records.get(approvalId);
    },
    idle: async () => {
      while (work.length > 0) await Promise.all(work.splice(0));
    },
  } as unknown as RecordKeeper;
  const openApprovalIds = async (hostId: string, sessionId?: string) =>
    [...records.values()]
      .filter((r) => !isTerminal(r) && r.hostId === hostId && (!sessionId || r.sessionId === sessionId))
      .map((r) => r.approvalId);
  const store = {
    knows: (approvalId: string) => records.has(approvalId),
    saveFullText: async () => {},
    openApprovalIds,
    get: async (approvalId: string) => records.get(approvalId),
    forgetOpen: async () => {},
    forgetOpenId: async () => {},
  } as unknown as ApprovalStore;
  const redis = { up: true, back: () => {} };
  /** Listings the host gives when its sessions are read again (refreshAll). */
  const rereads: Array<() => void> = [];
  const handler = new HostEventHandler({
    keeper,
    store,
    decider: {} as Decider,
    host: () => ({ refreshAll: () => rereads.shift()?.() }) as never,
    logger: pino({ level: 'silent' }),
    routeFor: () => ({ name: 'default', channel: 'C1' }),
    sandboxModeOf: () => 'default',
    redis: { available: () => redis.up, onAvailable: (listener) => (redis.back = listener) },
    ...(options.maxBufferedEvents === undefined ? {} : { maxBufferedEvents: options.maxBufferedEvents }),
  });
  const settle = () => keeper.idle();
  return { handler, records, redis, rereads, openApprovalIds, settle };
}

function asked(approvalId: string, sessionId = SESSION): HostEvent {
  return {
    type: 'approvalOpened',
    hostId: HOST,
    incarnation: INCARNATION,
    via: 'requested',
    params: ApprovalRequestParams.parse(shellApproval({ approvalId, sessionId, stages: [['npm', 'test']] })),
  };
}

function resolvedByPolicy(record: ApprovalRecord): HostEvent {
  return {
    type: 'approvalResolved',
    hostId: HOST,
    incarnation: INCARNATION,
    params: ApprovalResolvedParams.parse({
      sessionId: record.sessionId,
      approvalId: record.approvalId,
      decision: 'denied',
      policyResult: 'deny',
      resolvedBy: 'policy',
      viewCursor: 'v:s-1:50',
    }),
  };
}

/** What the SessionFollower reports of a listing whose request went out at `listRequestedAt`. */
function listed(pendingApprovalIds: string[], listRequestedAt: number): HostEvent {
  return {
    type: 'sessionReconciled',
    hostId: HOST,
    incarnation: INCARNATION,
    sessionId: SESSION,
    pendingApprovalIds,
    listRequestedAt,
  };
}

describe('HostEventHandler: a session read again by the current host process', () => {
  it('closes an approval whose approval/resolved was dropped while Redis was away', async () => {
    const { handler, records, redis, rereads, openApprovalIds, settle } = harness({ maxBufferedEvents: 1 });
    handler.handleHostEvent(asked('ap-1'));
    await settle();
    const asked1 = records.get('ap-1')!;
    expect(asked1.phase).toBe('pending');

    // Redis goes away: another approval fills the one-event buffer, and ap-1's resolve is dropped.
    redis.up = false;
    handler.handleHostEvent(asked('ap-other', 's-2'));
    handler.handleHostEvent(resolvedByPolicy(asked1));
    // Once Redis is back, the host's sessions are read again: the listing is requested then, and
    // s-1 has nothing pending any more.
    rereads.push(() => handler.handleHostEvent(listed([], performance.now())));
    redis.up = true;
    redis.back();
    await settle();

    const record = records.get('ap-1')!;
    expect(record.phase).toBe('superseded');
    expect(await openApprovalIds(HOST, SESSION)).toEqual([]);
    expect(records.get('ap-other')!.phase).toBe('pending');
  });

  it('closes only what was asked before the listing was requested', async () => {
    const { handler, records, settle } = harness();
    handler.handleHostEvent(asked('ap-before'));
    await settle();
    const requestedAt = performance.now();
    // Asked while the listing was on its way: the host may have listed before asking it.
    handler.handleHostEvent(asked('ap-after'));
    await settle();

    handler.handleHostEvent(listed([], requestedAt));
    await settle();

    expect(records.get('ap-before')!.phase).toBe('superseded');
    expect(records.get('ap-after')!.phase).toBe('pending');
  });

  it('goes by when an approval was last asked: one asked again after the request stays open', async () => {
    const { handler, records, settle } = harness();
    handler.handleHostEvent(asked('ap-1'));
    await settle();
    const requestedAt = performance.now();
    handler.handleHostEvent({ ...asked('ap-1'), via: 'request' } as HostEvent);
    await settle();

    handler.handleHostEvent(listed([], requestedAt));
    await settle();

    expect(records.get('ap-1')!.phase).toBe('pending');
  });

  it('keeps open what the listing names, and what this process never saw asked', async () => {
    const { handler, records, settle } = harness();
    handler.handleHostEvent(asked('ap-listed'));
    await settle();
    // A record of the current host process this process did not see asked (its memory of when
    // approvals were asked is bounded): when it was asked is unknown, so the listing may predate it.
    const unseen = { ...records.get('ap-listed')!, approvalId: 'ap-unseen' };
    records.set('ap-unseen', unseen);

    handler.handleHostEvent(listed(['ap-listed'], performance.now()));
    await settle();

    expect(records.get('ap-listed')!.phase).toBe('pending');
    expect(records.get('ap-unseen')!.phase).toBe('pending');
  });
});

describe('AskedApprovals', () => {
  const record = (approvalId: string) => ({ hostId: HOST, approvalId, incarnation: INCARNATION });

  it('forgets the approvals asked longest ago first, and then no listing closes them', () => {
    let now = 0;
    const asked = new AskedApprovals(2, () => now++);
    asked.noteAsked(HOST, INCARNATION, 'ap-1');
    asked.noteAsked(HOST, INCARNATION, 'ap-2');
    asked.noteAsked(HOST, INCARNATION, 'ap-1');
    asked.noteAsked(HOST, INCARNATION, 'ap-3');
    expect(asked.askedBefore(record('ap-2'), now)).toBe(false);
    expect(asked.askedBefore(record('ap-1'), now)).toBe(true);
    expect(asked.askedBefore(record('ap-3'), now)).toBe(true);
  });

  it('knows an approval only as asked by the host process that asked it', () => {
    const asked = new AskedApprovals(10, () => 1);
    asked.noteAsked(HOST, 'inc-0', 'ap-1');
    expect(asked.askedBefore(record('ap-1'), 2)).toBe(false);
    expect(asked.askedBefore({ ...record('ap-1'), incarnation: 'inc-0' }, 2)).toBe(true);
    expect(asked.askedBefore({ ...record('ap-1'), hostId: 'h2', incarnation: 'inc-0' }, 2)).toBe(false);
  });
});
