// "Approve all once" / "Reject all" one approval at a time, with the click handler and the store
// stood in for: what is skipped before a decision is even tried, and what is counted decided.

import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { BATCH_GROUP_ID_MAX_CHARS, BATCH_MAX_MEMBERS, batchGroupOf } from '../../../src/domain/batchGroup.js';
import { questionDigest } from '../../../src/domain/questionDigest.js';
import type { ApprovalRecord } from '../../../src/domain/record.js';
import { OPEN_RULES, type RouteRules } from '../../../src/domain/route.js';
import { BatchDecider } from '../../../src/relay/deciding/batchDecider.js';
import { fileRecord } from '../../support/cardFixtures.js';

/**
 * `checked`: the record the click check reads, where it differs from the store's (a write between
 * the two reads). The check finds the choice pressed among that record's choices, as it does.
 */
function decider(
  records: Map<string, ApprovalRecord | Error>,
  outcomes: Record<string, unknown> = {},
  checked: Map<string, ApprovalRecord> = new Map(),
  rules: Map<string, RouteRules> = new Map(),
) {
  const decided: string[] = [];
  const askedAs = new Map<string, string | undefined>();
  const checkedClicks: Array<{ approvalHint?: string; from?: string }> = [];
  const clicks = {
    check: async (click: { approvalHint?: string; choiceId: string; from?: string }) => {
      checkedClicks.push(click);
      const stored = records.get(click.approvalHint!);
      if (stored instanceof Error) throw stored;
      const record = checked.get(click.approvalHint!) ?? stored!;
      // As the real check says of a decided card: how, and by whom.
      if (record.resolution) {
        const { decision, resolvedBy, slackUserId } = record.resolution;
        const refusal = { code: 'alreadyResolved', decision, resolvedBy, slackUserId };
        return { ok: false as const, refusal } as never;
      }
      const choice = record.availableChoices.find((c) => c.choiceId === click.choiceId);
      if (!choice) return { ok: false as const, refusal: { code: 'choiceNotOffered' } } as never;
      return {
        ok: true as const,
        record,
        choice,
        rules: rules.get(click.approvalHint!) ?? OPEN_RULES,
      } as never;
    },
    decideAsPartOfBatch: async (click: {
      approvalHint?: string;
      choiceId: string;
      feedback?: string;
      askedAs?: string;
    }) => {
      askedAs.set(click.approvalHint!, click.askedAs);
      decided.push(`${click.approvalHint}:${click.choiceId}${click.feedback ? `:${click.feedback}` : ''}`);
      return (click.approvalHint! in outcomes ? outcomes[click.approvalHint!] : { kind: 'decided' }) as never;
    },
  };
  const read: string[] = [];
  const store = {
    get: async (id: string) => {
      read.push(id);
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
  return { batch, decided, askedAs, checkedClicks, read };
}

/** A file approval whose card is posted in the approvals channel at `ts`. */
const posted = (approvalId: string, ts: string, overrides: Partial<ApprovalRecord> = {}) =>
  fileRecord({ approvalId, slack: { channel: 'C0APPROVALS', ts }, ...overrides });
const OTHER_PATH = { kind: 'fileAccess', path: '/etc/other', access: 'write' } as ApprovalRecord['subject'];

describe('BatchDecider', () => {
  it('decides each that still asks what the group asks, and names each it skips and why', async () => {
    const a = posted('a', '1.1');
    const groupId = batchGroupOf(a, 1)!.groupId;
    const moved = posted('moved', '1.2', { subject: OTHER_PATH });
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
      channel: 'C0APPROVALS',
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
    const a = posted('a', '1.1');
    const b = posted('b', '1.2');
    const records = new Map<string, ApprovalRecord | Error>([
      ['a', a],
      ['b', b],
    ]);
    const { batch, decided } = decider(records, { b: undefined });
    const outcome = await batch.decide({
      userId: 'U0ALICE',
      channel: 'C0APPROVALS',
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

  it('"Reject all" skips a member that became a question decided one by one', async () => {
    const a = posted('a', '1.1');
    const groupId = batchGroupOf(a, 1)!.groupId;
    const risky = posted('risky', '1.2', { risks: [{ name: 'secrets', warning: 'Writes a secret' }] });
    const guarded = posted('guarded', '1.3', { protectedWrite: true });
    const moved = posted('moved', '1.4', { subject: OTHER_PATH });
    const records = new Map<string, ApprovalRecord | Error>(
      [a, risky, guarded, moved].map((r) => [r.approvalId, r]),
    );
    const { batch, decided } = decider(records);
    const outcome = await batch.decide({
      userId: 'U0ALICE',
      channel: 'C0APPROVALS',
      groupId,
      action: 'reject',
      reason: 'not now',
      members: ['a', 'risky', 'guarded', 'moved'].map((approvalId) => ({ approvalId, sourceIndex: 0 })),
    });
    expect(decided).toEqual(['a:abort:not now']);
    expect(Object.fromEntries(outcome.skipped.map((s) => [s.approvalId, s.refusal.code]))).toEqual({
      risky: 'questionChanged',
      guarded: 'questionChanged',
      moved: 'questionChanged',
    });
  });

  it('sends the once-choice of the record the decision is made from, or nothing', async () => {
    const a = posted('a', '1.1');
    // Between the two reads the host re-asked: "allow_once" now approves the whole session, and
    // once is another choice. The batch must not send a session-wide approval.
    const reasked = posted('a', '1.1', {
      availableChoices: [
        { choiceId: 'allow_once', label: 'Allow once', decision: 'approvedForSession', scope: 'session' },
        { choiceId: 'once2', label: 'Allow once', decision: 'approved', scope: 'once' },
        { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once', acceptsFeedback: true },
      ],
    });
    const { batch, decided } = decider(new Map([['a', a]]), {}, new Map([['a', reasked]]));
    const outcome = await batch.decide({
      userId: 'U0ALICE',
      channel: 'C0APPROVALS',
      groupId: batchGroupOf(a, 1)!.groupId,
      action: 'approve',
      members: [{ approvalId: 'a', sourceIndex: 0 }],
    });
    expect(decided).toEqual([]);
    expect(outcome.skipped.map((s) => [s.approvalId, s.refusal.code])).toEqual([['a', 'questionChanged']]);
  });

  it('"Reject all" checks who may decide before its form opens, as a card\'s Reject does, and decides nothing', async () => {
    const a = posted('a', '1.1');
    const { batch, decided, checkedClicks } = decider(new Map<string, ApprovalRecord | Error>([['a', a]]));
    const request = {
      userId: 'U0ALICE',
      channel: 'C0APPROVALS',
      groupId: batchGroupOf(a, 1)!.groupId,
      action: 'reject' as const,
      members: [
        { approvalId: 'a', sourceIndex: 0 },
        { approvalId: 'gone', sourceIndex: 0 },
      ],
    };
    const checks = await batch.check(request, { opening: true });
    expect(checks.ready.map((r) => r.approvalId)).toEqual(['a']);
    expect(checks.skipped.map((s) => [s.approvalId, s.refusal.code])).toEqual([['gone', 'unknownCard']]);
    // Opening is the press of a card's Reject (a refusal audited as such), not the form's submit.
    expect(checkedClicks.map((c) => c.from)).toEqual([undefined]);
    expect(decided).toEqual([]);
    await batch.decide({ ...request, reason: 'not now' });
    expect(checkedClicks.map((c) => c.from)).toEqual([undefined, 'modal']);
    expect(decided).toEqual(['a:abort:not now']);
  });

  it("reads the reason rules of the members that take a reason, as their cards' reject modals would", async () => {
    const a = posted('a', '1.1', { route: 'builds' });
    const b = posted('b', '1.2', { route: 'builds' });
    // Its Reject takes no reason: its route's rules ask nothing of the form.
    const plain = posted('plain', '1.3', {
      route: 'builds',
      availableChoices: a.availableChoices.map((c) =>
        c.acceptsFeedback ? { ...c, acceptsFeedback: false } : c,
      ),
    });
    const records = new Map<string, ApprovalRecord | Error>([a, b, plain].map((r) => [r.approvalId, r]));
    const required: RouteRules = { ...OPEN_RULES, rejectReason: 'required', quickReasons: ['Not now'] };
    const { batch } = decider(
      records,
      {},
      new Map(),
      new Map([
        ['a', { ...OPEN_RULES, quickReasons: ['Flaky', 'Not now'] }],
        ['plain', required],
      ]),
    );
    const request = {
      userId: 'U0ALICE',
      channel: 'C0APPROVALS',
      groupId: batchGroupOf(a, 1)!.groupId,
      action: 'reject' as const,
      members: ['a', 'b', 'plain'].map((approvalId) => ({ approvalId, sourceIndex: 0 })),
    };
    const open = await batch.check(request, { opening: true });
    expect(open).toMatchObject({ takesReason: 2, reasonRequired: false, quickReasons: ['Flaky', 'Not now'] });
    expect(open.ready).toHaveLength(3);
    const { batch: strict } = decider(records, {}, new Map(), new Map([['b', required]]));
    expect(await strict.check(request, { opening: true })).toMatchObject({
      takesReason: 2,
      reasonRequired: true,
      requiredOn: 'builds',
      quickReasons: ['Not now'],
    });
  });

  it('a member whose card is in another channel than the press is an unknown card, nothing of it said', async () => {
    const a = posted('a', '1.1');
    // Decided, in a channel the presser may not see: its id is all a crafted button holds.
    const elsewhere = fileRecord({
      approvalId: 'elsewhere',
      sessionTitle: 'Secret merger prep',
      slack: { channel: 'C0PRIVATE', ts: '9.9' },
      phase: 'resolved',
      resolution: {
        decision: 'approved',
        resolvedBy: 'user',
        slackUserId: 'U0ALICE',
        decidedAt: new Date().toISOString(),
      },
    } as Partial<ApprovalRecord>);
    const pending = fileRecord({
      approvalId: 'pendingElsewhere',
      sessionTitle: 'Payroll run',
      slack: { channel: 'C0PRIVATE', ts: '9.8' },
    });
    const records = new Map<string, ApprovalRecord | Error>(
      [a, elsewhere, pending].map((r) => [r.approvalId, r]),
    );
    const { batch, decided, checkedClicks } = decider(records);
    const outcome = await batch.decide({
      userId: 'U0EVE',
      channel: 'C0APPROVALS',
      groupId: batchGroupOf(a, 1)!.groupId,
      action: 'approve',
      members: ['a', 'elsewhere', 'pendingElsewhere', 'x'].map((approvalId) => ({
        approvalId,
        sourceIndex: 0,
      })),
    });
    expect(decided).toEqual(['a:allow_once']);
    // Told exactly what an id that does not exist tells: no session, no state, no decider.
    expect(outcome.skipped).toEqual(
      ['elsewhere', 'pendingElsewhere', 'x'].map((approvalId) => ({
        approvalId,
        session: '',
        refusal: { code: 'unknownCard' },
      })),
    );
    // Never even checked as a click: no refusal of it could be audited or told.
    expect(checkedClicks.map((c) => c.approvalHint)).toEqual(['a']);
  });

  it('refuses whole a batch listing more members than a summary carries: none read, checked or decided', async () => {
    // Every one a member of the group: only their number says no summary drew them.
    const all = Array.from({ length: BATCH_MAX_MEMBERS + 1 }, (_, i) => posted(`a-${i}`, `1.${i + 1}`));
    const { batch, decided, checkedClicks, read } = decider(new Map(all.map((r) => [r.approvalId, r])));
    const request = {
      userId: 'U0ALICE',
      channel: 'C0APPROVALS',
      groupId: batchGroupOf(all[0]!, 1)!.groupId,
      action: 'approve' as const,
      members: all.map((r) => ({ approvalId: r.approvalId, sourceIndex: 0 })),
    };
    const outcome = await batch.decide(request);
    expect(outcome).toMatchObject({ refused: 'tooManyMembers', decided: [], skipped: [] });
    expect(await batch.check({ ...request, action: 'reject' }, { opening: true })).toMatchObject({
      refused: 'tooManyMembers',
      ready: [],
      skipped: [],
    });
    // Nothing read, so nothing checked as a click: no refusal audited, no decision made.
    expect(read).toEqual([]);
    expect(checkedClicks).toEqual([]);
    expect(decided).toEqual([]);
  });

  it('refuses whole a batch naming a group id longer than any Countersign makes: none read or checked', async () => {
    const a = posted('a', '1.1');
    const { batch, decided, checkedClicks, read } = decider(new Map([['a', a]]));
    const groupId = batchGroupOf(a, 1)!.groupId;
    const outcome = await batch.decide({
      userId: 'U0ALICE',
      channel: 'C0APPROVALS',
      groupId: groupId.padEnd(BATCH_GROUP_ID_MAX_CHARS + 1, 'f'),
      action: 'approve',
      members: [{ approvalId: 'a', sourceIndex: 0 }],
    });
    expect(outcome).toMatchObject({ refused: 'groupIdTooLong', decided: [], skipped: [] });
    expect(read).toEqual([]);
    expect(checkedClicks).toEqual([]);
    expect(decided).toEqual([]);
  });

  it('a member listed twice is read, checked and decided once, the first kept', async () => {
    const a = posted('a', '1.1');
    const b = posted('b', '1.2');
    const { batch, decided, checkedClicks, read } = decider(new Map([a, b].map((r) => [r.approvalId, r])));
    const outcome = await batch.decide({
      userId: 'U0ALICE',
      channel: 'C0APPROVALS',
      groupId: batchGroupOf(a, 1)!.groupId,
      action: 'approve',
      members: [
        { approvalId: 'a', sourceIndex: 0 },
        { approvalId: 'b', sourceIndex: 0 },
        { approvalId: 'a', sourceIndex: 1 },
        { approvalId: 'a', sourceIndex: 0 },
      ],
    });
    expect(outcome.decided.map((d) => d.approvalId)).toEqual(['a', 'b']);
    expect(read).toEqual(['a', 'b']);
    expect(checkedClicks.map((c) => c.approvalHint)).toEqual(['a', 'b']);
    expect(decided).toEqual(['a:allow_once', 'b:allow_once']);
  });

  it('holds each decision to the question it checked, wherever it is claimed', async () => {
    const a = posted('a', '1.1');
    // Re-read between the summary and the check: the decision names the question checked, which
    // the replica that claims it (maybe another) compares with the one it holds.
    const checkedRecord = posted('a', '1.1', { reason: 'asked again' });
    const { batch, askedAs } = decider(new Map([['a', a]]), {}, new Map([['a', checkedRecord]]));
    await batch.decide({
      userId: 'U0ALICE',
      channel: 'C0APPROVALS',
      groupId: batchGroupOf(a, 1)!.groupId,
      action: 'reject',
      members: [{ approvalId: 'a', sourceIndex: 0 }],
    });
    expect(askedAs.get('a')).toBe(questionDigest(checkedRecord));
  });
});
