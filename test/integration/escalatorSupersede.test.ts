// The Escalator on a real schedule (EscalationStore on the tests' Redis) as its approval is
// superseded: a step claimed just as that happens was done for neither approval, so the successor
// that carries the request on must still fire it, whichever of the two looked at the lineage first.
// The records live in a map the store and the keeper share; the supersede lands between the look
// before the claim and the read after it, which is the race.

import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { renderEscalationReply } from '../../src/cards/renderEscalation.js';
import type { ApprovalRecord } from '../../src/domain/record.js';
import type { EscalationStep } from '../../src/domain/route.js';
import { Escalator } from '../../src/relay/escalation/escalator.js';
import { lineageOf } from '../../src/relay/escalation/lineage.js';
import type { RecordKeeper } from '../../src/relay/records/recordKeeper.js';
import { superseded } from '../../src/relay/records/recordMutations.js';
import type { ApprovalStore, Mutation } from '../../src/store/approvalStore.js';
import { EscalationStore } from '../../src/store/escalationStore.js';
import { quietEscalatorParts } from '../support/escalatorParts.js';
import { useFreshRedis } from '../support/freshRedis.js';
import { sampleRecord } from '../support/sampleRecord.js';

const redis = useFreshRedis();
const _silent = pino({ level: 'silent' });
const LADDER: EscalationStep[] = [{ afterMs: 0, action: 'remind' }];
const T0 = Date.parse('2026-11-30T10:00:00.000Z');

/** The first approval of a request and the one a restarted host asks again, each with its card. */
function request(): { first: ApprovalRecord; successor: ApprovalRecord } {
  const call = { toolCallId: 'call_1', slack: { channel: 'C1' } };
  return {
    first: sampleRecord('sup-1', { ...call, slack: { channel: 'C1', ts: '1.1' } }),
    successor: sampleRecord('sup-2', { ...call, slack: { channel: 'C1', ts: '2.2' } }),
  };
}

/**
 * One escalator on the real schedule. `afterClaim` runs when the step's approval is read again
 * after its claim, before that read answers: the supersede (and what else the test has land then).
 */
function world(afterClaim: (approvalId: string) => Promise<void>) {
  const records = new Map<string, ApprovalRecord>();
  const reads = new Map<string, number>();
  const sent: string[] = [];
  let nowMs = T0;
  const mutate = (approvalId: string, mutation: Mutation) => {
    const current = records.get(approvalId);
    const next = current && mutation(current);
    if (next) records.set(approvalId, next);
    return next ?? current;
  };
  const escalator = new Escalator({
    schedule: new EscalationStore(redis(), { lineageTtlMs: 60_000 }),
    store: {
      get: async (approvalId: string) => {
        const read = (reads.get(approvalId) ?? 0) + 1;
        reads.set(approvalId, read);
        // The first read is the look before the claim; the second, the one after it.
        if (read === 2) await afterClaim(approvalId);
        return records.get(approvalId);
      },
    } as unknown as ApprovalStore,
    keeper: { mutateAndSync: async (id: string, m: Mutation) => mutate(id, m) } as unknown as RecordKeeper,
    slack: {
      threadReply: async (card, reply) => {
        sent.push(`${card.ts}: ${renderEscalationReply(reply)}`);
      },
      directMessage: async () => ({ channel: 'D1', ts: '1' }),
      permalink: async () => undefined,
      nameOf: async () => undefined,
    },
    ladderOf: () => LADDER,
    ...quietEscalatorParts(),
    now: () => new Date(nowMs),
  });
  /** Lets the escalator's own work (begin(), a fired step) settle. */
  const settled = async (probe: () => boolean) => {
    for (let i = 0; i < 200 && !probe(); i++) await new Promise((r) => setTimeout(r, 5));
    expect(probe()).toBe(true);
  };
  const advance = (ms: number) => {
    nowMs += ms;
  };
  return { escalator, records, sent, mutate, settled, advance };
}

describe('a step claimed just as its approval is superseded', () => {
  it('is fired for the successor scheduled after it', async () => {
    const { first, successor } = request();
    const w = world(async (approvalId) => {
      if (approvalId === first.approvalId) w.mutate(approvalId, superseded('restarted'));
    });
    w.records.set(first.approvalId, first);
    w.escalator.follow(first);
    await w.settled(() => w.records.get(first.approvalId)?.escalation !== undefined);
    await w.escalator.poll();
    await w.escalator.settled();
    expect(w.sent).toEqual([]);

    // The restarted host asks the same tool call again.
    w.advance(1_000);
    w.records.set(successor.approvalId, successor);
    w.escalator.follow(successor);
    await w.settled(() => w.records.get(successor.approvalId)?.escalation !== undefined);
    expect(w.records.get(successor.approvalId)?.escalation?.fired).toEqual([]);
    await w.escalator.poll();
    await w.escalator.stop();
    expect(w.sent).toEqual(['2.2: :alarm_clock: This approval has waited 1s for a decision.']);
    expect(w.records.get(successor.approvalId)?.escalation?.fired).toMatchObject([
      { step: 0, action: 'remind', at: new Date(T0 + 1_000).toISOString() },
    ]);
  });

  it('is fired for the successor scheduled while the claim stood, and its card shows it once, as it fired', async () => {
    const { first, successor } = request();
    const w = world(async (approvalId) => {
      if (approvalId !== first.approvalId) return;
      // The successor starts its clock while the first approval's claim marks the step fired.
      w.advance(1_000);
      w.records.set(successor.approvalId, successor);
      w.escalator.follow(successor);
      await w.settled(() => w.records.get(successor.approvalId)?.escalation !== undefined);
      w.mutate(approvalId, superseded('restarted'));
    });
    w.records.set(first.approvalId, first);
    w.escalator.follow(first);
    await w.settled(() => w.records.get(first.approvalId)?.escalation !== undefined);
    await w.escalator.poll();
    // The step the look claimed fires (and is given up) after it: a look waits for claims only.
    await w.escalator.settled();
    w.advance(1_000);
    await w.escalator.poll();
    await w.escalator.stop();
    expect(w.sent).toEqual(['2.2: :alarm_clock: This approval has waited 2s for a decision.']);
    expect(w.records.get(successor.approvalId)?.escalation?.fired).toEqual([
      { step: 0, action: 'remind', afterMs: 0, at: new Date(T0 + 2_000).toISOString() },
    ]);
    expect(lineageOf(successor)).toBe(lineageOf(first));
  });
});
