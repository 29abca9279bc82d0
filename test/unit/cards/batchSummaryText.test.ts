// What a batch summary says beyond its members (docs/slack.md#batch-triage): closed, more waiting,
// the last batch decision with what it skipped, what its presser reads, and its metadata.

import { describe, expect, it } from 'vitest';
import { checkMessageLimits, checkViewLimits } from '../../../src/cards/limits.js';
import {
  BATCH_GROUP_ID_TOO_LONG_TEXT,
  BATCH_TOO_MANY_MEMBERS_TEXT,
  batchAnswerText,
  decodeBatchValue,
  readBatchValue,
  renderBatchRejectModal,
  renderBatchSummary,
} from '../../../src/cards/renderBatchSummary.js';
import {
  BATCH_GROUP_ID_MAX_CHARS,
  BATCH_MAX_MEMBERS,
  type BatchOutcome,
  type SummaryView,
} from '../../../src/domain/batchGroup.js';
import { batchMetadata } from '../../../src/slack/cardMetadata.js';

const shared = { route: 'builds', tool: 'shell', capabilities: ['exec:npm test'], sandboxMode: 'default' };
const members = [
  { approvalId: 'appr-00000001', sourceIndex: 0, ts: '1.1', session: 'Release' },
  { approvalId: 'appr-00000002', sourceIndex: 0, ts: '1.2', session: 'Release' },
  { approvalId: 'appr-00000003', sourceIndex: 1, ts: '1.3', session: 'Docs' },
];
const view = (over: Partial<SummaryView> = {}): SummaryView => ({
  groupId: 'C0A:abc',
  channel: 'C0A',
  shared,
  members,
  total: 3,
  ...over,
});
const textOf = (blocks: unknown) => JSON.stringify(blocks);
const buttonValues = (blocks: unknown[]) =>
  (blocks as Array<{ type: string; elements?: Array<{ value?: string }> }>)
    .filter((b) => b.type === 'actions')
    .flatMap((b) => (b.elements ?? []).map((e) => e.value ?? ''));

function outcome(over: Partial<BatchOutcome> = {}): BatchOutcome {
  return {
    userId: 'U0ALICE',
    action: 'approve',
    at: '2026-12-04T00:00:00Z',
    decided: [],
    skipped: [],
    ...over,
  };
}

describe('the batch summary card', () => {
  it('counts sessions, leaves unlinked a card with no link, and says how many more wait', () => {
    const { blocks } = renderBatchSummary(view({ total: 5 }), new Map());
    const json = textOf(blocks);
    expect(json).toContain('Release ×2, Docs');
    expect(json).toContain('1. Release');
    expect(json).not.toContain('<https');
    expect(json).toContain('2 more wait beyond these');
    expect(json).toContain('Approve all 3 once');
    expect(json).toContain('*Route:* builds');
  });

  it('names no route when the group has none, and says nothing of more when all are listed', () => {
    const json = textOf(renderBatchSummary(view({ shared: { ...shared, route: '' } }), new Map()).blocks);
    expect(json).not.toContain('*Route:*');
    expect(json).not.toContain('more wait');
  });

  it('closed: no buttons, and the last batch decision with each skip that changed and why; never whom its presser could not decide for', () => {
    const last = outcome({
      decided: [{ approvalId: 'appr-00000001', session: 'Release' }],
      skipped: [
        {
          approvalId: 'appr-00000002',
          session: 'Release',
          refusal: { code: 'alreadyResolved', decision: 'approved', resolvedBy: 'user' },
        },
        {
          approvalId: 'appr-00000003',
          session: '',
          refusal: {
            code: 'notAuthorized',
            refused: { allowed: false, why: 'selfApproval', route: 'builds' },
          },
        },
        { approvalId: 'appr-00000004', session: 'Docs', refusal: { code: 'superseded' } },
      ],
    });
    const { text, blocks } = renderBatchSummary(view({ closed: true, last }), new Map());
    const json = textOf(blocks);
    expect(text).toMatch(/^Batch closed/);
    expect(json).not.toContain('"actions"');
    expect(json).toContain('<@U0ALICE> approved once 1 together. Skipped 2:');
    expect(json).toContain('Release · 00000002 (already decided)');
    expect(json).toContain('Docs · 00000004 (changed)');
    // A refusal is the presser's alone to read (a note kept before it was left out of notes too).
    expect(json).not.toContain('not theirs');
    expect(json).not.toContain('00000003');
  });

  it('20 members with long approval ids: the buttons carry, and the card lists, those that fit in Slack’s limits', () => {
    const long = Array.from({ length: 20 }, (_, i) => ({
      approvalId: `${String(i).padStart(2, '0')}${'x'.repeat(98)}`,
      sourceIndex: i % 3,
      ts: `1.${i}`,
      session: `Session ${i}`,
    }));
    const links = new Map(long.map((m) => [m.approvalId, `https://test.slack.com/archives/C0A/p1${m.ts}`]));
    const summary = renderBatchSummary(view({ members: long, total: 25 }), links);
    expect(checkMessageLimits(summary)).toEqual([]);
    const values = buttonValues(summary.blocks);
    expect(values).toHaveLength(3);
    const carried = decodeBatchValue(values[0]);
    expect(carried?.g).toBe('C0A:abc');
    const n = carried!.m.length;
    expect(n).toBeGreaterThan(1);
    expect(n).toBeLessThan(20);
    // The oldest, each with the stage drawn, and what is listed is what is carried.
    expect(carried!.m).toEqual(long.slice(0, n).map((m) => [m.approvalId, m.sourceIndex]));
    const json = textOf(summary.blocks);
    expect(json).toContain(`Approve all ${n} once`);
    expect(json).toContain(`${n}. Session ${n - 1}`);
    expect(json).not.toContain(`Session ${n}>`);
    expect(json).toContain(`${25 - n} more wait beyond these`);
    expect(json).toContain(
      `${20 - n} of them are left off only because the buttons cannot carry more long approval ids`,
    );
  });

  it('a member whose id no button can carry is left to its card; the others are still listed', () => {
    const huge = { approvalId: 'h'.repeat(2_000), sourceIndex: 0, ts: '1.0', session: 'Huge' };
    const summary = renderBatchSummary(view({ members: [huge, ...members], total: 4 }), new Map());
    expect(checkMessageLimits(summary)).toEqual([]);
    expect(decodeBatchValue(buttonValues(summary.blocks)[0])?.m).toEqual(
      members.map((m) => [m.approvalId, m.sourceIndex]),
    );
    expect(textOf(summary.blocks)).not.toContain('Huge');
    const none = renderBatchSummary(view({ members: [huge, { ...huge, ts: '1.1' }], total: 2 }), new Map());
    expect(checkMessageLimits(none)).toEqual([]);
    expect(buttonValues(none.blocks)).toEqual([]);
    expect(textOf(none.blocks)).toContain('decide each on its own card');
  });

  it('more members than a summary lists: the buttons carry the first BATCH_MAX_MEMBERS, and the rest are said to wait', () => {
    const many = Array.from({ length: BATCH_MAX_MEMBERS + 5 }, (_, i) => ({
      approvalId: `a-${i}`,
      sourceIndex: 0,
      ts: `1.${i}`,
      session: 'Release',
    }));
    const summary = renderBatchSummary(view({ members: many, total: many.length }), new Map());
    expect(checkMessageLimits(summary)).toEqual([]);
    const value = buttonValues(summary.blocks)[0];
    // What the renderer carries, the parser takes: they share the cap.
    expect(decodeBatchValue(value)?.m).toEqual(
      many.slice(0, BATCH_MAX_MEMBERS).map((m) => [m.approvalId, m.sourceIndex]),
    );
    const json = textOf(summary.blocks);
    expect(json).toContain(`Approve all ${BATCH_MAX_MEMBERS} once`);
    expect(json).toContain('5 more wait beyond these');
    expect(json).not.toContain('left off only because');
  });

  it('a rejection is said as one', () => {
    const json = textOf(renderBatchSummary(view({ last: outcome({ action: 'reject' }) }), new Map()).blocks);
    expect(json).toContain('rejected 0 together.');
  });
});

describe('what the presser reads', () => {
  it('all decided, one or several', () => {
    expect(batchAnswerText(outcome({ decided: [{ approvalId: 'a', session: 's' }] }))).toBe(
      'You approved once 1 request, each as if pressed on its own card.',
    );
    expect(
      batchAnswerText(
        outcome({
          action: 'reject',
          decided: [
            { approvalId: 'a', session: 's' },
            { approvalId: 'b', session: 's' },
          ],
        }),
      ),
    ).toBe('You rejected 2 requests, each as if pressed on its own card.');
  });

  it('nothing theirs to decide says so first; nothing left to decide says nothing was', () => {
    const refused = batchAnswerText(
      outcome({
        skipped: [
          {
            approvalId: 'a',
            session: 's',
            refusal: {
              code: 'notAuthorized',
              refused: { allowed: false, why: 'selfApproval', route: 'builds' },
            },
          },
        ],
      }),
    );
    expect(refused).toMatch(/^Nothing was decided: you may not decide these requests\./);
    const gone = batchAnswerText(
      outcome({ skipped: [{ approvalId: 'appr-9', session: '', refusal: { code: 'superseded' } }] }),
    );
    expect(gone).toMatch(
      /^Nothing was decided\. Skipped 1, which changed since the summary was drawn:\n• appr-9 \(appr-9\): /,
    );
    expect(batchAnswerText(outcome())).toMatch(/^Nothing was decided: you may not decide/);
  });

  it("a batch refused whole says why it is no summary's, not that the presser may decide none", () => {
    for (const action of ['approve', 'reject'] as const) {
      expect(batchAnswerText(outcome({ action, refused: 'tooManyMembers' }))).toBe(
        BATCH_TOO_MANY_MEMBERS_TEXT,
      );
      expect(batchAnswerText(outcome({ action, refused: 'groupIdTooLong' }))).toBe(
        BATCH_GROUP_ID_TOO_LONG_TEXT,
      );
    }
  });

  it('some decided, some not theirs: told apart from what changed, to the presser alone', () => {
    const answer = batchAnswerText(
      outcome({
        decided: [{ approvalId: 'a', session: 's' }],
        skipped: [
          { approvalId: 'appr-9', session: 'Docs', refusal: { code: 'superseded' } },
          {
            approvalId: 'appr-own',
            session: 'Mine',
            refusal: {
              code: 'notAuthorized',
              refused: { allowed: false, why: 'selfApproval', route: 'builds' },
            },
          },
        ],
      }),
    );
    expect(answer).toMatch(
      /^You approved once 1 request, each as if pressed on its own card\. Skipped 1, which changed since the summary was drawn:\n• Docs \(appr-9\): /,
    );
    expect(answer).toContain(
      "\nLeft for someone else, 1 you may not decide:\n• Mine (appr-own): You cannot approve your own agent's request on builds",
    );
  });
});

describe('the "Reject all" form', () => {
  const value = { g: 'C0A:abc', m: members.map((m): [string, number] => [m.approvalId, m.sourceIndex]) };
  const form = { decidable: 3, takesReason: 3, reasonRequired: false, quickReasons: [] as string[] };
  const modal = (over: Partial<typeof form> = {}) => {
    const view = renderBatchRejectModal(value, 'C0A', { ...form, ...over });
    expect(checkViewLimits(view)).toEqual([]);
    return { view, json: JSON.stringify(view.blocks) };
  };

  it('says the reason reaches each only when each takes one', () => {
    expect(modal().json).toContain(
      'Each of the 3 requests is rejected as if pressed on its own card. The agent sees the reason you give, on each.',
    );
    const some = modal({ takesReason: 2 }).json;
    expect(some).not.toContain('on each');
    expect(some).toContain(
      'The agent sees the reason you give on 2 of them; the other 1 takes no reason and is rejected without it.',
    );
    const none = modal({ takesReason: 0 });
    expect(none.json).toContain(
      'None of them takes a reason: each agent is told only that its request was rejected.',
    );
    // Nothing to type that would go nowhere.
    expect(none.view.blocks.map((b) => b.type)).toEqual(['context']);
    expect(modal({ decidable: 1, takesReason: 0 }).json).toContain(
      '1 of the 3 requests is yours to reject now, each as if pressed on its own card; the others are left as they are. It takes no reason',
    );
  });

  it('asks as the route asks: its quick reasons, and a reason said to be required', () => {
    const { view, json } = modal({ reasonRequired: true, quickReasons: ['Flaky suite', 'Not now'] });
    expect(json).toContain('Reason (required)');
    const quick = view.blocks.find((b) => b.block_id === 'cs_quick_reason_block') as {
      element: { type: string; options: Array<{ value: string }> };
    };
    expect(quick.element.type).toBe('radio_buttons');
    expect(quick.element.options.map((o) => o.value)).toEqual(['Flaky suite', 'Not now']);
    expect(modal().json).toContain('Reason (optional)');
    expect(modal().json).not.toContain('cs_quick_reason_block');
  });
});

describe('a pressed summary button value', () => {
  const entries = (n: number): Array<[string, number]> => Array.from({ length: n }, (_, i) => [`a-${i}`, 0]);
  const raw = (m: unknown) => JSON.stringify({ g: 'C0A:abc', m });

  it('takes as many members as a summary carries', () => {
    expect(readBatchValue(raw(entries(BATCH_MAX_MEMBERS)))).toEqual({
      value: { g: 'C0A:abc', m: entries(BATCH_MAX_MEMBERS) },
    });
  });

  it('refuses one listing more, which no summary drew: nothing of it is read', () => {
    expect(readBatchValue(raw(entries(BATCH_MAX_MEMBERS + 1)))).toEqual({ refused: 'tooManyMembers' });
    expect(readBatchValue(raw(entries(5_000)))).toEqual({ refused: 'tooManyMembers' });
    // Counted as sent: the same id over and over is no card of ours either.
    expect(readBatchValue(raw(Array.from({ length: 5_000 }, () => ['a-0', 0])))).toEqual({
      refused: 'tooManyMembers',
    });
    expect(decodeBatchValue(raw(entries(BATCH_MAX_MEMBERS + 1)))).toBeUndefined();
    expect(BATCH_TOO_MANY_MEMBERS_TEXT).toContain(`${BATCH_MAX_MEMBERS}`);
  });

  it('refuses a group id longer than any Countersign makes: no summary drew it', () => {
    const g = (n: number) => `C0A:${'a'.repeat(n - 4)}`;
    const value = (groupId: string) => JSON.stringify({ g: groupId, m: entries(1) });
    expect(readBatchValue(value(g(BATCH_GROUP_ID_MAX_CHARS)))).toEqual({
      value: { g: g(BATCH_GROUP_ID_MAX_CHARS), m: entries(1) },
    });
    expect(readBatchValue(value(g(BATCH_GROUP_ID_MAX_CHARS + 1)))).toEqual({ refused: 'groupIdTooLong' });
    expect(readBatchValue(value(g(1_900)))).toEqual({ refused: 'groupIdTooLong' });
    expect(BATCH_GROUP_ID_TOO_LONG_TEXT).toContain(`${BATCH_GROUP_ID_MAX_CHARS}`);
  });

  it('drops a member listed again, keeping the first (each is checked and decided once)', () => {
    const m = [
      ['a-1', 0],
      ['a-2', 1],
      ['a-1', 0],
      ['a-1', 1],
    ];
    expect(decodeBatchValue(raw(m))).toEqual({
      g: 'C0A:abc',
      m: [
        ['a-1', 0],
        ['a-2', 1],
      ],
    });
  });

  it('refuses what is not a summary value at all', () => {
    expect(readBatchValue(undefined)).toEqual({ refused: 'unusable' });
    expect(readBatchValue('{')).toEqual({ refused: 'unusable' });
    expect(readBatchValue(raw([['a-1', 'x']]))).toEqual({ refused: 'unusable' });
  });
});

describe('the summary metadata', () => {
  it('is no approval card’s: its own type, open or closed, with the group and its size', () => {
    expect(batchMetadata(view())).toEqual({
      event_type: 'countersign_batch',
      event_payload: { group_id: 'C0A:abc', v: 1, route: 'builds', state: 'open', members: 3 },
    });
    expect(batchMetadata(view({ closed: true, total: 0 })).event_payload).toMatchObject({
      state: 'closed',
      members: 0,
    });
  });
});
