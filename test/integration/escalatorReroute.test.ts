// An approval asked again on another route (recordMutations.rerouted) can no longer be decided
// from its card, for good: its escalation ends there, on a real schedule (the tests' Redis). No
// DM, page or timeout follows, and a page sent before the re-ask is resolved. The records live in
// a map the store and the keeper share; the keeper tells the escalator of each write, as
// RecordKeeper's followers are told.

import { describe, expect, it } from 'vitest';
import type { ApprovalRecord } from '../../src/domain/record.js';
import type { EscalationStep } from '../../src/domain/route.js';
import type { Decider } from '../../src/relay/deciding/decider.js';
import { Escalator } from '../../src/relay/escalation/escalator.js';
import { rerouted } from '../../src/relay/records/recordMutations.js';
import type { ApprovalStore } from '../../src/store/approvalStore.js';
import { EscalationStore } from '../../src/store/escalationStore.js';
import { keys } from '../../src/store/keys.js';
import { followedRecords, quietEscalatorParts } from '../support/escalatorParts.js';
import { useFreshRedis } from '../support/freshRedis.js';
import { captureLogger } from '../support/logCapture.js';
import { sampleRecord } from '../support/sampleRecord.js';

const redis = useFreshRedis();
const T0 = Date.parse('2026-11-30T10:00:00.000Z');
const PAGER_KEY = 'd'.repeat(32);
const MINUTE = 60_000;

/** Resolves once `probe` holds (the escalator's work runs on its own). */
async function until(probe: () => boolean): Promise<void> {
  for (let i = 0; i < 400 && !probe(); i++) await new Promise((r) => setTimeout(r, 5));
  expect(probe()).toBe(true);
}

/**
 * One process escalating approval `x1` (route `dev`, its card posted) along `ladder`: U0ANA may
 * decide it, so a DM goes to them; what Slack, PagerDuty and the Decider were asked is noted.
 */
function escalating(ladder: EscalationStep[]) {
  const records = new Map<string, ApprovalRecord>();
  const clock = { nowMs: T0 };
  const dms: string[] = [];
  const pages: string[] = [];
  const decides: string[] = [];
  const { logger, lines } = captureLogger('info');
  const { keeper, write } = followedRecords(records, () => escalator);
  const escalator: Escalator = new Escalator({
    ...quietEscalatorParts(),
    schedule: new EscalationStore(redis(), { lineageTtlMs: 60 * MINUTE }),
    store: {
      get: async (approvalId: string) => records.get(approvalId),
      mapMessage: async () => undefined,
    } as unknown as ApprovalStore,
    keeper,
    slack: {
      threadReply: async () => undefined,
      directMessage: async (userId: string) => {
        dms.push(userId);
        return { channel: 'D1', ts: '1' };
      },
      permalink: async () => undefined,
      nameOf: async () => undefined,
    },
    pager: {
      trigger: async (event) => {
        pages.push(`trigger ${event.dedupKey}`);
      },
      resolve: async (_routingKey, dedupKey) => {
        pages.push(`resolve ${dedupKey}`);
      },
    },
    decider: {
      decide: async ({ record }: { record: ApprovalRecord }) => {
        decides.push(record.approvalId);
        return { kind: 'refused', errorKind: 'internal' };
      },
    } as unknown as Decider,
    mayDecide: async () => ({ allowed: true, because: 'user' }),
    defaultRoutingKey: PAGER_KEY,
    ladderOf: () => ladder,
    logger,
    now: () => new Date(clock.nowMs),
  });
  /** Looks at the schedule every 30 s of the clock for `ms`, each look's steps done. */
  const advance = async (ms: number) => {
    for (const end = clock.nowMs + ms; clock.nowMs < end; ) {
      clock.nowMs += 30_000;
      await escalator.poll();
      await escalator.settled();
    }
  };
  /** The approval's card is posted: its clock starts. */
  const posted = async () => {
    const x = sampleRecord('x1', {
      toolCallId: 'call_1',
      route: 'dev',
      slack: { channel: 'C0DEV', ts: '1.1' },
      availableChoices: [
        { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
        { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once', acceptsFeedback: true },
      ],
    });
    records.set(x.approvalId, x);
    escalator.follow(x);
    await until(() => records.get(x.approvalId)?.escalation !== undefined);
  };
  /** The host asks x1 again as a production command. */
  const reasked = async () => {
    write('x1', rerouted({ change: 'route', from: 'dev', to: 'prod' }));
    expect(records.get('x1')).toMatchObject({ phase: 'unavailable', unavailable: 'routeChanged' });
    await escalator.settled();
  };
  const timeoutLines = () => lines.filter((l) => String(l.msg).startsWith('escalation timeout'));
  return { escalator, records, dms, pages, decides, lines, timeoutLines, advance, posted, reasked };
}

describe('an approval asked again on another route', () => {
  it('is escalated no further: no DM, no page, and its timeout is not tried again and again', async () => {
    const e = escalating([
      { afterMs: MINUTE, action: 'dm', target: 'U0ANA' },
      { afterMs: 2 * MINUTE, action: 'page' },
      { afterMs: 3 * MINUTE, action: 'timeout' },
    ]);
    await e.posted();
    await e.reasked();
    await e.advance(10 * MINUTE);
    await e.escalator.stop();
    expect(e.dms).toEqual([]);
    expect(e.pages).toEqual([]);
    expect(e.decides).toEqual([]);
    expect(e.timeoutLines()).toEqual([]);
    expect(e.lines.filter((l) => l.msg === 'escalation step could not reach anyone')).toEqual([]);
    // Nothing of it is left in the schedule to be looked at again.
    expect(await redis().zcard(keys.escalationDue())).toBe(0);
  });

  it('resolves a page sent before it was asked again: nobody it woke can act on the card', async () => {
    const e = escalating([
      { afterMs: MINUTE, action: 'page' },
      { afterMs: 5 * MINUTE, action: 'dm', target: 'U0ANA' },
    ]);
    await e.posted();
    await e.advance(MINUTE);
    expect(e.pages).toEqual(['trigger x1']);
    await e.reasked();
    await until(() => e.pages.length === 2);
    await e.advance(10 * MINUTE);
    await e.escalator.stop();
    expect(e.pages).toEqual(['trigger x1', 'resolve x1']);
    expect(e.dms).toEqual([]);
  });

  it('still escalates one another client holds for now: that passes', async () => {
    const e = escalating([{ afterMs: MINUTE, action: 'dm', target: 'U0ANA' }]);
    await e.posted();
    const held = (record: ApprovalRecord): ApprovalRecord => ({
      ...record,
      phase: 'unavailable',
      unavailable: 'heldElsewhere',
    });
    await e.escalator.settled();
    e.records.set('x1', held(e.records.get('x1')!));
    e.escalator.follow(e.records.get('x1')!);
    await e.advance(2 * MINUTE);
    await e.escalator.stop();
    expect(e.dms).toEqual(['U0ANA']);
  });
});
