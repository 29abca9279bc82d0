// "Approve all once" / "Reject all" one approval at a time, with the click handler and the store
// stood in for: what is skipped before a decision is even tried, and what is counted decided.

import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { batchGroupOf } from '../../../src/domain/batchGroup.js';
import type { ApprovalRecord } from '../../../src/domain/record.js';
import { BatchDecider } from '../../../src/relay/deciding/batchDecider.js';
import { fileRecord } from '../../support/cardFixtures.js';

function decider(records: Map<string, ApprovalRecord | Error>, outcomes: Record<string, unknown> = {}) {
  const decided: string[] = [];
  const clicks = {
    check: async (click: { approvalHint?: string }) => {
      const record = records.get(click.approvalHint!);
      if (record instanceof Error) throw record;
      return { ok: true as const, record: record! } as never;
    },
    decideAsPartOfBatch: async (click: { approvalHint?: string; choiceId: string; feedback?: string }) => {
      decided.push(`${click.approvalHint}:${click.choiceId}${click.feedback ? `:${click.feedback}` : ''}`);
      return (click.approvalHint! in outcomes ? outcomes[click.approvalHint!] : { kind: 'decided' }) as never;
    },
  };
  const store = {
    get: async (id: string) => {
      const record = records.get(id);
      if (record instanceof Error) throw record;
      return record;
    },
  };
  const batch = new BatchDecider({
    store,
    clicks,
    authorizer: { quorum: () => 1 },
    logger: pino({ level: 'silent' }),
  });
  return { batch, decided };
}

describe('BatchDecider', () => {
  it('decides each that still asks what the group asks, and names each it skips and why', async () => {
    const a = fileRecord({ approvalId: 'a', slack: { channel: 'C0APPROVALS', ts: '1.1' } });
    const groupId = batchGroupOf(a, 1)!.groupId;
    const moved = fileRecord({
      approvalId: 'moved',
      slack: { channel: 'C0APPROVALS', ts: '1.2' },
      subject: { kind: 'fileAccess', path: '/etc/other', access: 'write' },
    });
    const unposted = fileRecord({ approvalId: 'unposted', slack: { channel: 'C0APPROVALS' } });
    const records = new Map<string, ApprovalRecord | Error>([
      ['a', a],
      ['moved', moved],
      ['unposted', unposted],
      ['broken', new Error('redis away')],
    ]);
    const { batch, decided } = decider(records);
    const ids = ['a', 'moved', 'unposted', 'gone', 'broken'];
    const outcome = await batch.decide({
      userId: 'U0ALICE',
      groupId,
      action: 'approve',
      members: ids.map((approvalId) => ({ approvalId, sourceIndex: 0 })),
    });
    expect(outcome.decided.map((d) => d.approvalId)).toEqual(['a']);
    expect(Object.fromEntries(outcome.skipped.map((s) => [s.approvalId, s.refusal.code]))).toEqual({
      moved: 'questionChanged',
      unposted: 'unknownCard',
      gone: 'unknownCard',
      broken: 'unknownCard',
    });
    expect(decided).toEqual(['a:allow_once']);
  });

  it('rejects with the one reason, and a decision that did not go out is skipped', async () => {
    const a = fileRecord({ approvalId: 'a', slack: { channel: 'C0APPROVALS', ts: '1.1' } });
    const b = fileRecord({ approvalId: 'b', slack: { channel: 'C0APPROVALS', ts: '1.2' } });
    const records = new Map<string, ApprovalRecord | Error>([
      ['a', a],
      ['b', b],
    ]);
    const { batch, decided } = decider(records, { b: undefined });
    const outcome = await batch.decide({
      userId: 'U0ALICE',
      groupId: batchGroupOf(a, 1)!.groupId,
      action: 'reject',
      reason: 'not now',
      members: [
        { approvalId: 'a', sourceIndex: 0 },
        { approvalId: 'b', sourceIndex: 0 },
      ],
    });
    expect(outcome.action).toBe('reject');
    expect(outcome.decided.map((d) => d.approvalId)).toEqual(['a']);
    expect(decided[0]).toMatch(/^a:[^:]+:not now$/);
  });
});
