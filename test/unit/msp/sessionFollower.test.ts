import pino, { type Logger } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MspError } from '../../../src/msp/errors.js';
import type { HostEvent } from '../../../src/msp/events.js';
import { MAX_VIEW_CURSOR_CHARS } from '../../../src/msp/protocol.js';
import { MAX_FOLLOWED_SESSIONS, SessionFollower } from '../../../src/msp/sessionFollower.js';
import { captureLogger } from '../../support/logCapture.js';
import { transcriptLines } from '../../support/transcripts.js';

type Json = Record<string, unknown>;

const REQUESTED = transcriptLines('approval-round-trip')
  .filter((line) => line.dir === 'server')
  .map((line) => JSON.parse(line.raw) as Json)
  .find((frame) => frame.method === 'approval/requested');
if (REQUESTED === undefined) throw new Error('approval-round-trip has no approval/requested');
const APPROVAL = REQUESTED.params as Json;
const SESSION = APPROVAL.sessionId as string;
const APPROVAL_ID = APPROVAL.approvalId as string;

/** A follower of host-a's process inc-1 on `request`, silent; `extra` sets or overrides options. */
function followerOn(
  request: ConstructorParameters<typeof SessionFollower>[0]['request'],
  extra: Partial<ConstructorParameters<typeof SessionFollower>[0]> = {},
): SessionFollower {
  return new SessionFollower({
    request,
    origin: { hostId: 'host-a', incarnation: 'inc-1' },
    durable: true,
    logger: pino({ level: 'silent' }),
    emit: () => undefined,
    tracked: new Map(),
    ...extra,
  });
}

const IN_USE = () =>
  new MspError({ code: -32021, message: 'in use', data: { kind: 'sessionInUse', sessionId: SESSION } });

/**
 * A host with one session, loaded by another host (a user's TUI) and parked on an approval:
 * session/resume answers sessionInUse while `held` is true. Nothing it does sends a frame.
 */
function heldSessionHost() {
  const host = { held: true, pending: true, calls: [] as Array<{ method: string; params: Json }> };
  const request = async (method: string, params: unknown): Promise<unknown> => {
    host.calls.push({ method, params: params as Json });
    switch (method) {
      case 'session/list':
        return { sessions: [{ sessionId: SESSION, status: 'notLoaded' }], nextCursor: null };
      case 'approval/listPending':
        return { approvals: host.pending ? [APPROVAL] : [], userInputs: [] };
      case 'session/resume':
        if (host.held) throw IN_USE();
        return { session: { sessionId: SESSION, status: 'idle' }, viewCursor: 'v:1', pendingRequests: [] };
      default:
        throw MspError.methodNotFound(method);
    }
  };
  const events: HostEvent[] = [];
  const follower = followerOn(request, { emit: (event) => events.push(event) });
  const resumes = () => host.calls.filter((call) => call.method === 'session/resume').length;
  const opened = () =>
    events.flatMap((event) =>
      event.type === 'approvalOpened' && event.params.approvalId === APPROVAL_ID
        ? [{ heldElsewhere: event.heldElsewhere === true }]
        : [],
    );
  return { host, follower, events, resumes, opened };
}

async function until(condition: () => boolean, timeoutMs = 1500): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

afterEach(() => {
  vi.useRealTimers();
});

describe('SessionFollower: a session another host holds', () => {
  it('is followed again when a session/listChanged row shows it, and its approval gets buttons', async () => {
    const { host, follower, events, resumes, opened } = heldSessionHost();
    await follower.syncAll();
    expect(resumes()).toBe(1);
    expect(opened()).toEqual([{ heldElsewhere: true }]);
    expect(events.some((event) => event.type === 'sessionHeldElsewhere')).toBe(true);

    // The TUI lets go. Our host says so only with a list row (the session is not loaded on it,
    // so it sends neither session/statusChanged nor session/closed).
    host.held = false;
    follower.handleNotification('session/listChanged', {
      session: { sessionId: SESSION, status: 'notLoaded' },
    });
    await until(() => follower.isResumed(SESSION) && opened().length > 1);
    expect(resumes()).toBe(2);
    expect(opened().at(-1)).toEqual({ heldElsewhere: false });
    follower.dispose();
  });

  it('is tried again on a timer when no frame at all says it was let go, backing off while held', async () => {
    vi.useFakeTimers();
    const { host, follower, resumes, opened } = heldSessionHost();
    await follower.syncAll();
    expect(resumes()).toBe(1);

    // Still held at the first retry: it stays without buttons, and the next retry waits longer.
    await vi.advanceTimersByTimeAsync(5_000);
    expect(resumes()).toBe(2);
    expect(opened().every((entry) => entry.heldElsewhere)).toBe(true);
    await vi.advanceTimersByTimeAsync(9_000);
    expect(resumes()).toBe(2);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(resumes()).toBe(3);

    // Let go without a frame: the next retry takes it, and then the retries stop.
    host.held = false;
    await vi.advanceTimersByTimeAsync(20_000);
    expect(resumes()).toBe(4);
    expect(follower.isResumed(SESSION)).toBe(true);
    expect(opened().at(-1)).toEqual({ heldElsewhere: false });
    expect(vi.getTimerCount()).toBe(0);
    follower.dispose();
  });

  it('stops retrying once nothing in it waits for a decision', async () => {
    vi.useFakeTimers();
    const { host, follower, events, resumes } = heldSessionHost();
    await follower.syncAll();
    // Decided in the TUI: the session is still held, but no card waits for its buttons.
    host.pending = false;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(resumes()).toBe(1);
    expect(events.at(-1)).toMatchObject({ type: 'sessionReconciled', pendingApprovalIds: [] });
    expect(vi.getTimerCount()).toBe(0);
    follower.dispose();
  });

  it('is not listed again for each row that shows it, once let go of with nothing to decide', async () => {
    vi.useFakeTimers();
    const { host, follower } = heldSessionHost();
    const listings = () => host.calls.filter((call) => call.method === 'approval/listPending').length;
    await follower.syncAll();
    host.pending = false;
    await vi.advanceTimersByTimeAsync(5_000);
    expect(listings()).toBe(2);
    // No longer tried on the timer, but still listed in this host process: a row is no news.
    follower.handleNotification('session/listChanged', {
      session: { sessionId: SESSION, status: 'notLoaded' },
    });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(listings()).toBe(2);
    follower.dispose();
  });

  it('stops retrying once the host is gone', async () => {
    vi.useFakeTimers();
    const { follower, resumes } = heldSessionHost();
    await follower.syncAll();
    follower.dispose();
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(600_000);
    expect(resumes()).toBe(1);
  });
});

/**
 * A host that announces whatever sessions it is told to, has nothing pending in them, and
 * answers session/resume with `cursor`; the follower remembers what it follows in `stored`.
 */
function announcingHost(cursor: () => string | undefined = () => 'v:1', listed: string[] = []) {
  const calls: Array<{ method: string; params: Json }> = [];
  const request = async (method: string, params: unknown): Promise<unknown> => {
    calls.push({ method, params: params as Json });
    switch (method) {
      case 'session/list':
        return { sessions: listed.map((sessionId) => ({ sessionId, status: 'idle' })), nextCursor: null };
      case 'approval/listPending':
        return { approvals: [], userInputs: [] };
      case 'session/resume': {
        const viewCursor = cursor();
        return { pendingRequests: [], ...(viewCursor === undefined ? {} : { viewCursor }) };
      }
      default:
        throw MspError.methodNotFound(method);
    }
  };
  const stored = new Map<string, { viewCursor?: string }>();
  const memory = {
    recall: async () => [...stored].map(([sessionId, kept]) => ({ sessionId, ...kept })),
    remember: async (_hostId: string, session: { sessionId: string; viewCursor?: string }) => {
      stored.set(session.sessionId, session.viewCursor ? { viewCursor: session.viewCursor } : {});
    },
    forget: async (_hostId: string, sessionId: string) => {
      stored.delete(sessionId);
    },
  };
  const tracked = new Map<string, { viewCursor?: string }>();
  const follower = followerOn(request, { tracked, memory });
  const count = (method: string) => calls.filter((call) => call.method === method).length;
  return { calls, count, stored, tracked, follower };
}

describe('SessionFollower: what a host can make it keep', () => {
  const started = (sessionId: string) => ({ session: { sessionId, status: 'idle' } });

  it('skips session frames whose id is longer than any id a host sends', async () => {
    const { calls, stored, tracked, follower } = announcingHost();
    const long = 's'.repeat(300);
    expect(follower.handleNotification('session/started', started(long))).toBe(true);
    follower.handleNotification('session/listChanged', started(long));
    follower.handleNotification('session/statusChanged', { sessionId: long, attention: ['approvalPending'] });
    follower.handleNotification('session/closed', { sessionId: long });
    follower.handleNotification('view/gap', { sessionId: long });
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(calls).toEqual([]);
    expect(tracked.size).toBe(0);
    expect(stored.size).toBe(0);
    follower.dispose();
  });

  it("logs a closed session's reason masked and cut, as it logs a frame", () => {
    const { logger, lines } = captureLogger('debug');
    const follower = followerOn(async () => ({}), { logger });
    const reason = `evicted: vault login password=hunter2-very-secret ${'x'.repeat(5_000)}`;
    follower.handleNotification('session/closed', { sessionId: 's-1', reason });
    const closed = lines.find((line) => line.msg === 'session closed');
    expect(closed?.sessionId).toBe('s-1');
    const logged = String(closed?.reason);
    expect(logged).toMatch(/^evicted: vault login password=/);
    expect(logged).not.toContain('hunter2');
    expect(logged.length).toBeLessThan(400);
    follower.dispose();
  });

  it('keeps at most MAX_FOLLOWED_SESSIONS followed sessions per host, forgetting the oldest', async () => {
    const { count, stored, tracked, follower } = announcingHost();
    const total = MAX_FOLLOWED_SESSIONS + 50;
    for (let i = 0; i < total; i++) follower.handleNotification('session/started', started(`s-${i}`));
    await until(() => count('session/resume') === total, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(tracked.size).toBe(MAX_FOLLOWED_SESSIONS);
    expect(stored.size).toBe(MAX_FOLLOWED_SESSIONS);
    expect(tracked.has('s-0')).toBe(false);
    expect(stored.has('s-0')).toBe(false);
    expect(tracked.has(`s-${total - 1}`)).toBe(true);
    follower.dispose();
  });

  it('does not keep a view cursor longer than MAX_VIEW_CURSOR_CHARS, and resumes afresh next time', async () => {
    const { calls, stored, tracked, follower } = announcingHost(() => 'c'.repeat(2 * MAX_VIEW_CURSOR_CHARS));
    follower.handleNotification('session/started', started('s-1'));
    await until(() => follower.isResumed('s-1'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(tracked.get('s-1')).toEqual({});
    expect(stored.get('s-1')).toEqual({});
    await follower.resume('s-1');
    const resumes = calls.filter((call) => call.method === 'session/resume');
    expect(resumes.at(-1)?.params).not.toHaveProperty('cursor');
    follower.dispose();
  });

  it('recalls no more than it would keep: long ids are forgotten, long cursors not used', async () => {
    const longId = 's'.repeat(300);
    const { calls, stored, tracked, follower } = announcingHost(
      () => 'v:2',
      [longId, 's-long-cursor', 's-ok'],
    );
    stored.set(longId, {});
    stored.set('s-long-cursor', { viewCursor: 'c'.repeat(2 * MAX_VIEW_CURSOR_CHARS) });
    stored.set('s-ok', { viewCursor: 'v:1' });
    await follower.syncAll();
    const resumedWith = new Map(
      calls
        .filter((call) => call.method === 'session/resume')
        .map((call) => [call.params.sessionId, call.params.cursor]),
    );
    expect(resumedWith).toEqual(
      new Map([
        ['s-long-cursor', undefined],
        ['s-ok', 'v:1'],
      ]),
    );
    expect([...tracked.keys()].sort()).toEqual(['s-long-cursor', 's-ok']);
    expect(stored.has(longId)).toBe(false);
    follower.dispose();
  });
});

/** A host whose approval/listPending answers only when the test says, one call at a time. */
function slowListingHost(logger?: Logger) {
  const answers: Array<() => void> = [];
  let listings = 0;
  const request = (method: string): Promise<unknown> => {
    if (method !== 'approval/listPending') return Promise.reject(MspError.methodNotFound(method));
    listings += 1;
    return new Promise((resolve) => answers.push(() => resolve({ approvals: [], userInputs: [] })));
  };
  const follower = followerOn(request, { durable: false, ...(logger ? { logger } : {}) });
  /** Answers every listing asked so far, and lets what follows them run. */
  const answerAll = async () => {
    while (answers.length > 0) answers.shift()?.();
    await new Promise((resolve) => setTimeout(resolve, 5));
  };
  return { follower, listings: () => listings, waiting: () => answers.length, answerAll };
}

describe('SessionFollower: floods of frames that ask to read a session again', () => {
  const flood = (follower: SessionFollower, method: string, params: unknown, times: number) => {
    for (let i = 0; i < times; i++) follower.handleNotification(method, params);
  };

  it('reads a session once for a thousand view/gap frames', async () => {
    const { follower, listings, answerAll } = slowListingHost();
    flood(follower, 'view/gap', { sessionId: 's-1' }, 1_000);
    for (let round = 0; round < 5; round++) await answerAll();
    expect(listings()).toBeGreaterThanOrEqual(1);
    expect(listings()).toBeLessThanOrEqual(2);
    follower.dispose();
  });

  it('reads it once more for gaps that arrive while a listing is running', async () => {
    const { follower, listings, waiting, answerAll } = slowListingHost();
    follower.handleNotification('view/gap', { sessionId: 's-1' });
    await until(() => waiting() === 1);
    // Events may have been lost after the running listing's snapshot: one more read covers them all.
    flood(follower, 'view/gap', { sessionId: 's-1' }, 1_000);
    await answerAll();
    expect(listings()).toBe(2);
    for (let round = 0; round < 5; round++) await answerAll();
    expect(listings()).toBe(2);
    follower.dispose();
  });

  it('logs view/gap frames at info once per reading, with how many gaps it answers', async () => {
    const { logger, lines } = captureLogger('debug');
    const { follower, listings, waiting, answerAll } = slowListingHost(logger);
    follower.handleNotification('view/gap', { sessionId: 's-1' });
    await until(() => waiting() === 1);
    flood(follower, 'view/gap', { sessionId: 's-1' }, 1_000);
    for (let round = 0; round < 5; round++) await answerAll();
    expect(listings()).toBe(2);
    const INFO = 30;
    expect(lines.filter((line) => (line.level as number) >= INFO)).toMatchObject([
      { msg: 'view gap; reading the session again', sessionId: 's-1', gaps: 1 },
      { msg: 'view gap; reading the session again', sessionId: 's-1', gaps: 1_000 },
    ]);
    // Each frame is still there for whoever traces the wire.
    expect(lines.filter((line) => line.msg === 'view gap')).toHaveLength(1_001);
    follower.dispose();
  });

  it('reads an unfollowed session once for a thousand statusChanged frames saying approvalPending', async () => {
    const { follower, listings, waiting, answerAll } = slowListingHost();
    const params = { sessionId: 's-1', status: 'running', attention: ['approvalPending'] };
    flood(follower, 'session/statusChanged', params, 1_000);
    await until(() => waiting() === 1);
    flood(follower, 'session/statusChanged', params, 1_000);
    for (let round = 0; round < 5; round++) await answerAll();
    expect(listings()).toBe(2);
    follower.dispose();
  });
});

describe('SessionFollower: when a listing was asked for', () => {
  /** A host whose listPending answers `answer()` a little after it was sent, noting when it was sent. */
  function listingHost(answer: () => unknown) {
    const sent: number[] = [];
    const events: HostEvent[] = [];
    const request = async (method: string): Promise<unknown> => {
      switch (method) {
        case 'session/list':
          return { sessions: [{ sessionId: 's-1', status: 'notLoaded' }], nextCursor: null };
        case 'approval/listPending':
          sent.push(performance.now());
          await new Promise((resolve) => setTimeout(resolve, 5));
          return answer();
        default:
          throw MspError.methodNotFound(method);
      }
    };
    const follower = followerOn(request, { durable: false, emit: (event) => events.push(event) });
    const reconciled = () => events.filter((event) => event.type === 'sessionReconciled');
    return { follower, sent, reconciled };
  }

  // The relay closes what the current host process asked before that time and the listing leaves
  // out; what it asked after may be missing only because the listing predates it.
  it('dates the listing by when its request went out, not by when the answer came', async () => {
    const { follower, sent, reconciled } = listingHost(() => ({ approvals: [], userInputs: [] }));
    const before = performance.now();
    await follower.syncAll();
    expect(sent).toHaveLength(1);
    const [event] = reconciled();
    expect(event).toMatchObject({ sessionId: 's-1', pendingApprovalIds: [] });
    expect(event?.type === 'sessionReconciled' && event.listRequestedAt).toBeGreaterThanOrEqual(before);
    expect(event?.type === 'sessionReconciled' && event.listRequestedAt).toBeLessThanOrEqual(sent[0]!);
    follower.dispose();
  });

  it('dates a session the host no longer has the same way, so that its cards are closed', async () => {
    const { follower, sent, reconciled } = listingHost(() => {
      throw new MspError({ code: -32020, message: 'no such session', data: { kind: 'sessionNotFound' } });
    });
    const before = performance.now();
    await follower.syncAll();
    const [event] = reconciled();
    expect(event).toMatchObject({ sessionId: 's-1', pendingApprovalIds: [] });
    expect(event?.type === 'sessionReconciled' && event.listRequestedAt).toBeGreaterThanOrEqual(before);
    expect(event?.type === 'sessionReconciled' && event.listRequestedAt).toBeLessThanOrEqual(sent[0]!);
    follower.dispose();
  });
});

describe('SessionFollower: a session read again that the host could not list', () => {
  const OVERLOADED = () => new MspError({ code: -32010, message: 'busy', data: { kind: 'overloaded' } });

  it('is read again later, backing off, until a listing answers', async () => {
    vi.useFakeTimers();
    let failures = 2;
    let listings = 0;
    const request = async (method: string): Promise<unknown> => {
      if (method !== 'approval/listPending') throw MspError.methodNotFound(method);
      listings += 1;
      if (failures-- > 0) throw OVERLOADED();
      return { approvals: [], userInputs: [] };
    };
    const follower = followerOn(request);
    // A card the host said moved on waits for this reading to show its buttons again.
    await follower.refresh('s-1');
    expect(listings).toBe(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(listings).toBe(2);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(listings).toBe(2);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(listings).toBe(3);
    // Answered: no more retries.
    await vi.advanceTimersByTimeAsync(60_000);
    expect(listings).toBe(3);
    expect(vi.getTimerCount()).toBe(0);
    follower.dispose();
  });

  it('keeps what the late reading found: a statusChanged without the flag then reads nothing', async () => {
    vi.useFakeTimers();
    let failures = 1;
    let listings = 0;
    const follower = followerOn(async (method: string) => {
      if (method !== 'approval/listPending') throw MspError.methodNotFound(method);
      listings += 1;
      if (failures-- > 0) throw OVERLOADED();
      return { approvals: [], userInputs: [] };
    });
    await follower.refresh('s-1');
    await vi.advanceTimersByTimeAsync(1_000);
    expect(listings).toBe(2);
    // Nothing was pending when it answered, and the host says nothing is.
    follower.handleNotification('session/statusChanged', { sessionId: 's-1', status: 'running' });
    await vi.advanceTimersByTimeAsync(1_000);
    expect(listings).toBe(2);
    follower.dispose();
  });

  it('stops retrying once disposed', async () => {
    vi.useFakeTimers();
    let listings = 0;
    const follower = followerOn(async () => {
      listings += 1;
      throw OVERLOADED();
    });
    await follower.refresh('s-1');
    follower.dispose();
    await vi.advanceTimersByTimeAsync(120_000);
    expect(listings).toBe(1);
    expect(vi.getTimerCount()).toBe(0);
  });
});

describe('SessionFollower: a session a decide resumed', () => {
  // The host recovers a session as it loads it: it closes what was pending and asks it again
  // under new ids, before the subscription starts, so the closing frames never reach us.
  function recoveringHost() {
    const calls: string[] = [];
    const request = async (method: string): Promise<unknown> => {
      calls.push(method);
      switch (method) {
        case 'session/resume':
          return {
            session: { sessionId: SESSION, status: 'running' },
            viewCursor: 'v:2',
            pendingRequests: [],
          };
        case 'session/list':
          return { sessions: [{ sessionId: SESSION, status: 'notLoaded' }], nextCursor: null };
        case 'approval/listPending':
          return { approvals: [], userInputs: [] };
        default:
          throw MspError.methodNotFound(method);
      }
    };
    const events: HostEvent[] = [];
    const follower = followerOn(request, { emit: (event) => events.push(event) });
    const reconciled = () =>
      events.filter((event) => event.type === 'sessionReconciled' && event.sessionId === SESSION);
    return { calls, follower, reconciled };
  }

  it('is read again, as a resume of its own is: the ids the recovery closed lose their cards', async () => {
    const { follower, reconciled } = recoveringHost();
    // sessionNotLoaded on a decide sent before the start-up sync reached the session.
    await follower.resume(SESSION);
    await follower.syncAll();
    expect(follower.isResumed(SESSION)).toBe(true);
    expect(reconciled()).toEqual([expect.objectContaining({ pendingApprovalIds: [] })]);
    follower.dispose();
  });
});

describe('SessionFollower: a followed session no longer flagged approvalPending', () => {
  const status = (attention?: string[]) => ({
    sessionId: 's-1',
    status: 'running',
    viewCursor: 'v:9',
    ...(attention ? { attention } : {}),
  });

  it('is read again once when the flag goes: nothing is pending there any more', async () => {
    const { count, follower } = announcingHost();
    follower.handleNotification('session/started', { session: { sessionId: 's-1', status: 'idle' } });
    await until(() => follower.isResumed('s-1'));
    await new Promise((resolve) => setTimeout(resolve, 20));
    const before = count('approval/listPending');

    // Subscribed: what is asked is pushed, so the flag alone asks for no read.
    follower.handleNotification('session/statusChanged', status(['approvalPending']));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(count('approval/listPending')).toBe(before);

    // `attention` is present only when a flag is set: its absence says nothing is pending, and
    // a close we did not hear of (dropped, or before our subscription) leaves a card to close.
    follower.handleNotification('session/statusChanged', status());
    await until(() => count('approval/listPending') === before + 1);
    // Already read: frames that keep saying so, or say other flags, ask for nothing more.
    follower.handleNotification('session/statusChanged', status());
    follower.handleNotification('session/statusChanged', status(['inputPending']));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(count('approval/listPending')).toBe(before + 1);
    follower.dispose();
  });
});

/**
 * A host that names whatever sessions it is told to. By id prefix: `f-` sessions have one
 * approval pending (the same approvalId in each); `g-` sessions cannot be listed (overloaded);
 * `h-` sessions have one pending too, but another client holds them while `host.inUse`;
 * everything else has nothing pending and resumes.
 */
function namingHost(maxSessions: number) {
  const host = { inUse: true };
  const calls: Array<{ method: string; sessionId: unknown }> = [];
  const request = async (method: string, params: unknown): Promise<unknown> => {
    const sessionId = (params as Json | undefined)?.sessionId;
    calls.push({ method, sessionId });
    const id = String(sessionId);
    switch (method) {
      case 'session/list':
        return { sessions: [], nextCursor: null };
      case 'approval/listPending':
        if (id.startsWith('g-'))
          throw new MspError({ code: -32010, message: 'busy', data: { kind: 'overloaded' } });
        return {
          approvals: /^[fh]-/.test(id) ? [{ ...APPROVAL, sessionId: id }] : [],
          userInputs: [],
        };
      case 'session/resume':
        if (id.startsWith('h-') && host.inUse)
          throw new MspError({
            code: -32021,
            message: 'in use',
            data: { kind: 'sessionInUse', sessionId: id },
          });
        return { pendingRequests: [], viewCursor: `v:${id}` };
      default:
        throw MspError.methodNotFound(method);
    }
  };
  const events: HostEvent[] = [];
  const follower = followerOn(request, { maxSessions, emit: (event) => events.push(event) });
  const count = (method: string, sessionId?: string) =>
    calls.filter(
      (call) => call.method === method && (sessionId === undefined || call.sessionId === sessionId),
    ).length;
  return { host, calls, count, events, follower };
}

describe('SessionFollower: memories a host fills with session ids', () => {
  const started = (sessionId: string) => ({ session: { sessionId, status: 'idle' } });
  const status = (sessionId: string, attention?: string[]) => ({
    sessionId,
    status: 'running',
    ...(attention ? { attention } : {}),
  });
  const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

  it('keeps every memory of sessions within the bound, however many sessions the host names', async () => {
    const { count, follower } = namingHost(5);
    const total = 200;
    for (let i = 0; i < total; i++) {
      follower.handleNotification('session/started', started(`s-${i}`));
      follower.handleNotification('session/statusChanged', status(`f-${i}`, ['approvalPending']));
      follower.handleNotification('session/statusChanged', status(`h-${i}`, ['approvalPending']));
      follower.handleNotification('view/gap', { sessionId: `g-${i}` });
    }
    await until(
      () => count('approval/listPending') >= 4 * total && count('session/resume') >= 3 * total,
      10_000,
    );
    await settle();
    for (const [memory, size] of Object.entries(follower.sessionCounts())) {
      expect(size, memory).toBeLessThanOrEqual(5);
    }
    follower.dispose();
  });

  it('reads again a session it forgot was flagged approvalPending, once the flag goes', async () => {
    const { count, follower } = namingHost(3);
    follower.handleNotification('session/started', started('s-0'));
    await until(() => follower.isResumed('s-0'));
    follower.handleNotification('session/statusChanged', status('s-0', ['approvalPending']));
    for (let i = 1; i <= 5; i++) follower.handleNotification('session/started', started(`s-${i}`));
    await until(() => count('session/resume') === 6);
    await settle();
    const before = count('approval/listPending', 's-0');

    // Forgotten, it may still have had an approval pending: nothing pending now, so a card may
    // be left to close. Read, as a session the bot remembered flagged would be.
    follower.handleNotification('session/statusChanged', status('s-0'));
    await until(() => count('approval/listPending', 's-0') === before + 1);
    // Read once: now it is known not to be flagged.
    follower.handleNotification('session/statusChanged', status('s-0'));
    await settle();
    expect(count('approval/listPending', 's-0')).toBe(before + 1);
    follower.dispose();
  });

  it('follows again a session it forgot it had resumed, once the host says it needs a decision', async () => {
    const { events, follower } = namingHost(3);
    follower.handleNotification('session/started', started('f-0'));
    await until(() => follower.isResumed('f-0'));
    for (let i = 1; i <= 5; i++) follower.handleNotification('session/started', started(`s-${i}`));
    await until(() => follower.isResumed('s-5'));
    await settle();

    // Forgotten, it is not known to be subscribed: what it waits on is read and it is resumed.
    const opened = () =>
      events.filter((event) => event.type === 'approvalOpened' && event.params.sessionId === 'f-0').length;
    const before = opened();
    follower.handleNotification('session/statusChanged', status('f-0', ['approvalPending']));
    await until(() => opened() === before + 1);
    expect(follower.isResumed('f-0')).toBe(true);
    expect(follower.sessionCounts().resumed).toBeLessThanOrEqual(3);
    follower.dispose();
  });

  it('tries again a held session it forgot, once a list row shows it', async () => {
    const { host, count, follower } = namingHost(3);
    for (let i = 0; i <= 5; i++) {
      follower.handleNotification('session/statusChanged', status(`h-${i}`, ['approvalPending']));
    }
    await until(() => count('session/resume') === 6);
    await settle();
    expect(follower.sessionCounts().heldElsewhere).toBeLessThanOrEqual(3);

    // The other client let go of the one held longest ago; a list row is all our host says.
    host.inUse = false;
    follower.handleNotification('session/listChanged', {
      session: { sessionId: 'h-0', status: 'notLoaded' },
    });
    await until(() => follower.isResumed('h-0'));
    expect(count('session/resume', 'h-0')).toBe(2);
    follower.dispose();
  });

  it('follows again a session it forgot it listed, once a list row shows it', async () => {
    const { count, follower } = namingHost(3);
    for (let i = 0; i <= 3; i++) {
      follower.handleNotification('session/started', started(`s-${i}`));
      await until(() => follower.isResumed(`s-${i}`));
    }
    await settle();
    const before = [count('approval/listPending', 's-0'), count('approval/listPending', 's-3')];
    const row = (sessionId: string) => ({ session: { sessionId, status: 'notLoaded' } });
    // Still known: a row is no news. Forgotten: read, as a session never seen.
    follower.handleNotification('session/listChanged', row('s-3'));
    follower.handleNotification('session/listChanged', row('s-0'));
    await until(() => count('approval/listPending', 's-0') === before[0]! + 1);
    await settle();
    expect(count('approval/listPending', 's-3')).toBe(before[1]);
    follower.dispose();
  });

  it('forgets first the session the host spoke of longest ago, not the one it heard of first', async () => {
    const { count, follower } = namingHost(3);
    for (let i = 0; i <= 2; i++) {
      follower.handleNotification('session/started', started(`s-${i}`));
      await until(() => follower.isResumed(`s-${i}`));
      await settle();
    }
    // Known not to be flagged, so not read; and now the session whose flag was set last.
    follower.handleNotification('session/statusChanged', status('s-0'));
    follower.handleNotification('session/started', started('s-3'));
    await until(() => follower.isResumed('s-3'));
    await settle();
    const before = [count('approval/listPending', 's-0'), count('approval/listPending', 's-1')];

    // s-1's flag was forgotten, not s-0's: only s-1 is read when the host says neither is flagged.
    follower.handleNotification('session/statusChanged', status('s-0'));
    follower.handleNotification('session/statusChanged', status('s-1'));
    await until(() => count('approval/listPending', 's-1') === before[1]! + 1);
    await settle();
    expect(count('approval/listPending', 's-0')).toBe(before[0]);
    follower.dispose();
  });

  it('stops the retry of a failed reading it forgot, and forgets whether that session was flagged', async () => {
    vi.useFakeTimers();
    const { count, follower } = namingHost(3);
    // The host says g-0's flag went: the reading fails and waits to be tried again; so do g-1..g-3's.
    follower.handleNotification('session/statusChanged', status('g-0'));
    for (let i = 1; i <= 3; i++) follower.handleNotification('view/gap', { sessionId: `g-${i}` });
    await vi.advanceTimersByTimeAsync(10);
    expect(follower.sessionCounts().refreshRetries).toBe(3);
    expect(vi.getTimerCount()).toBe(3);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(count('approval/listPending', 'g-0')).toBe(1);
    expect(count('approval/listPending', 'g-3')).toBe(2);

    // It may still have had an approval pending: the host's next word that the flag is gone reads it.
    follower.handleNotification('session/statusChanged', status('g-0'));
    await vi.advanceTimersByTimeAsync(10);
    expect(count('approval/listPending', 'g-0')).toBe(2);
    follower.dispose();
  });
});
