// HeldEvents keeps host events in memory while Redis is away. Frames may be 10 MiB each, so the
// buffer is bounded in bytes as well as in events: past either, events are dropped and their
// host's sessions read again once Redis is back.

import { describe, expect, it } from 'vitest';
import type { HostEvent } from '../../../../src/msp/events.js';
import { ApprovalRequestParams } from '../../../../src/msp/protocol.js';
import { HeldEvents } from '../../../../src/relay/hostEvents/heldEvents.js';
import { shellApproval } from '../../../support/fakeHost.js';
import { captureLogger } from '../../../support/logCapture.js';

const MiB = 1024 * 1024;

/** Redis that the test takes away and brings back. */
function switchableRedis() {
  let up = false;
  const listeners: (() => void)[] = [];
  return {
    available: () => up,
    onAvailable: (listener: () => void) => void listeners.push(listener),
    back: () => {
      up = true;
      for (const listener of listeners) listener();
    },
  };
}

function harness(options: { max?: number; maxBytes?: number } = {}) {
  const redis = switchableRedis();
  const { logger, lines } = captureLogger('info');
  const dispatched: HostEvent[] = [];
  const rereads: string[] = [];
  const held = new HeldEvents({
    redis,
    logger,
    max: options.max ?? 10_000,
    ...(options.maxBytes === undefined ? {} : { maxBytes: options.maxBytes }),
    dispatch: (event) => dispatched.push(event),
    reread: (hostId) => rereads.push(hostId),
  });
  const fullWarnings = () => lines.filter((l) => String(l.msg).includes('event buffer is full'));
  return { held, redis, dispatched, rereads, fullWarnings };
}

/** An approval/requested of `hostId` whose command is `commandChars` characters long. */
function bigApproval(hostId: string, approvalId: string, commandChars: number): HostEvent {
  const params = ApprovalRequestParams.parse(
    shellApproval({ approvalId, sessionId: `s-${approvalId}`, stages: [['echo', 'x']] }),
  );
  params.subject = { ...params.subject, command: 'x'.repeat(commandChars) };
  return { type: 'approvalOpened', hostId, incarnation: 'inc-1', via: 'requested', params };
}

describe('HeldEvents', () => {
  it('holds events of any size under the byte budget and replays them in order', () => {
    const { held, redis, dispatched, rereads, fullWarnings } = harness();
    const events = [bigApproval('h1', 'ap-1', 9 * MiB), bigApproval('h1', 'ap-2', 10)];
    for (const event of events) held.hold(event);
    expect(held.mustWait()).toBe(true);
    redis.back();
    expect(dispatched).toEqual(events);
    expect(rereads).toEqual([]);
    expect(fullWarnings()).toHaveLength(0);
    expect(held.heldBytes).toBe(0);
  });

  it('past its byte budget drops events as past its count, and re-reads their host once Redis is back', () => {
    const maxBytes = 64 * MiB;
    const { held, redis, dispatched, rereads, fullWarnings } = harness({ maxBytes });
    // A host sends frames of 9 million characters while Redis is away: far fewer than the count
    // cap, but 20 of them would hold 180 MB or more.
    for (let i = 0; i < 20; i++) {
      held.hold(bigApproval('noisy', `big-${i}`, 9_000_000));
      expect(held.heldBytes).toBeLessThanOrEqual(maxBytes);
    }
    // Another host's small event still fits, and is held.
    const quiet = bigApproval('quiet', 'small-1', 10);
    held.hold(quiet);
    // The noisy host's later events are dropped too, small as they are: none of its events is
    // handled after one of its earlier ones was lost; the re-read stands for all of them.
    held.hold(bigApproval('noisy', 'small-2', 10));

    expect(held.heldBytes).toBeGreaterThan(maxBytes / 4);
    expect(fullWarnings()).toHaveLength(1);
    expect(fullWarnings()[0]).toMatchObject({ hostId: 'noisy' });

    redis.back();
    const ids = dispatched.map((e) => (e.type === 'approvalOpened' ? e.params.approvalId : e.type));
    expect(ids.length).toBeLessThan(20);
    expect(ids).toContain('small-1');
    expect(ids).not.toContain('small-2');
    expect(ids.filter((id) => id.startsWith('big-'))).toEqual(
      Array.from({ length: ids.length - 1 }, (_, i) => `big-${i}`),
    );
    expect(rereads).toEqual(['noisy']);
    expect(held.heldBytes).toBe(0);
  });

  it('counts what an event carries in fields it does not read, as a frame may', () => {
    const maxBytes = 16 * MiB;
    const { held, redis, dispatched, rereads } = harness({ maxBytes });
    for (let i = 0; i < 10; i++) {
      const event = bigApproval('h1', `pad-${i}`, 10);
      // Parsed leniently (z.looseObject), a frame keeps fields the bot has no use for.
      Object.assign(event.type === 'approvalOpened' ? event.params : {}, {
        padding: Array.from({ length: 1000 }, () => 'y'.repeat(4096)),
      });
      held.hold(event);
      expect(held.heldBytes).toBeLessThanOrEqual(maxBytes);
    }
    redis.back();
    expect(dispatched.length).toBeLessThan(10);
    expect(rereads).toEqual(['h1']);
  });

  it('past its count drops events and re-reads their host, as before', () => {
    const { held, redis, dispatched, rereads, fullWarnings } = harness({ max: 2 });
    for (let i = 0; i < 4; i++) held.hold(bigApproval('h1', `ap-${i}`, 10));
    expect(fullWarnings()).toHaveLength(1);
    redis.back();
    expect(dispatched).toHaveLength(2);
    expect(rereads).toEqual(['h1']);
  });
});
