import { describe, expect, it } from 'vitest';
import {
  type AppliedDecide,
  type AuditInput,
  audit,
  type Click,
  type HostApproval,
  type HostOutcome,
  type SentDecide,
} from '../../bench/lib/audit.js';
import type { CardButton, CardView, Headline } from '../../bench/lib/cardView.js';

// The chaos audit on small hand-made states: a clean state counts nothing, and each column counts
// exactly the case it names (and not its look-alikes that are fine).

const PENDING: HostOutcome = { kind: 'pending', sourceIndex: 0 };
const APPROVED: HostOutcome = { kind: 'resolved', decision: 'approved', resolvedBy: 'user' };

function approval(approvalId: string, outcome: HostOutcome, exposureMs = 5_000): HostApproval {
  return { approvalId, outcome, exposureMs };
}

let ts = 0;
function card(
  approvalId: string,
  headline: Headline,
  extra: { buttons?: CardButton[]; decidedBy?: CardView['decidedBy']; heldElsewhere?: boolean } = {},
): CardView {
  ts += 1;
  return {
    channel: 'C0CHAOS',
    ts: `1000.${String(ts).padStart(6, '0')}`,
    approvalId,
    headline,
    buttons: extra.buttons ?? [],
    heldElsewhere: extra.heldElsewhere ?? false,
    ...(extra.decidedBy ? { decidedBy: extra.decidedBy } : {}),
  };
}

const buttons = (sourceIndex = 0): CardButton[] =>
  ['allow_once', 'abort'].map((choiceId, i) => ({
    actionId: `cs_choice_${i}`,
    value: JSON.stringify({ s: sourceIndex, c: choiceId }),
    sourceIndex,
    choiceId,
  }));

const decide = (approvalId: string, commandId: string, sourceIndex = 0, unanswered = false): SentDecide => ({
  approvalId,
  commandId,
  sourceIndex,
  unanswered,
});

const applied = (
  approvalId: string,
  commandId: string,
  choiceId = 'allow_once',
  sourceIndex = 0,
  terminal = true,
): AppliedDecide => ({ approvalId, commandId, choiceId, sourceIndex, terminal });

const click = (approvalId: string, userId: string, choiceId = 'allow_once', sourceIndex = 0): Click => ({
  approvalId,
  userId,
  choiceId,
  sourceIndex,
});

function input(partial: Partial<AuditInput>): AuditInput {
  return { approvals: [], cards: [], decides: [], applied: [], clicks: [], lostGraceMs: 1_000, ...partial };
}

/** A run where everything went right: one approval in each end state, each card true to it. */
function cleanRun(): AuditInput {
  return input({
    approvals: [
      approval('a-open', PENDING),
      approval('a-clicked', APPROVED),
      approval('a-policy', { kind: 'resolved', decision: 'denied', resolvedBy: 'policy' }),
      approval('a-old', { kind: 'closedByRecovery', reaskedAs: 'a-old-r2' }),
      approval('a-old-r2', { kind: 'pending', sourceIndex: 1 }),
      approval('a-rejected', { kind: 'resolved', decision: 'abort', resolvedBy: 'user' }),
    ],
    cards: [
      card('a-open', 'Approval needed', { buttons: buttons() }),
      card('a-clicked', 'Approved', { decidedBy: { userId: 'U0ALICE' } }),
      card('a-policy', 'Rejected', { decidedBy: { words: 'policy' } }),
      card('a-old', 'Superseded'),
      card('a-old-r2', 'Approval needed', { buttons: buttons(1) }),
      card('a-rejected', 'Rejected', { decidedBy: { userId: 'U0BOB' } }),
    ],
    decides: [decide('a-clicked', 'c1'), decide('a-clicked', 'c1'), decide('a-rejected', 'c2')],
    applied: [applied('a-clicked', 'c1'), applied('a-rejected', 'c2', 'abort')],
    clicks: [click('a-clicked', 'U0ALICE'), click('a-rejected', 'U0BOB', 'abort')],
  });
}

describe('chaos audit', () => {
  it('counts approvals and cards, and nothing else, when every card agrees with the host', () => {
    const result = audit(cleanRun());
    expect(result.figures).toEqual({
      approvals: 6,
      cards: 6,
      lost: 0,
      duplicatedCards: 0,
      duplicatedDecisions: 0,
      stuck: 0,
      mislabelled: 0,
    });
    expect(result.details).toEqual([]);
  });

  it('lost: an approval pending long enough, or still pending, that never got a card', () => {
    const result = audit(
      input({
        approvals: [
          approval('seen-closed', APPROVED, 1_000),
          approval('still-pending', PENDING, 0),
          approval('never-seen', APPROVED, 999),
        ],
      }),
    );
    expect(result.figures.lost).toBe(2);
    expect(result.details.map((d) => [d.column, d.approvalId])).toEqual([
      ['lost', 'seen-closed'],
      ['lost', 'still-pending'],
    ]);
    // Closed before a live bot could see it: listed, not counted.
    expect(result.unseen).toEqual([{ approvalId: 'never-seen', exposureMs: 999, outcome: 'resolved' }]);
  });

  it('lost: closed by a restart recovery without a card counts unless its re-ask got a card', () => {
    const result = audit(
      input({
        approvals: [
          approval('reasked', { kind: 'closedByRecovery', reaskedAs: 'reasked-r2' }, 5_000),
          approval('reasked-r2', PENDING, 0),
          approval('vanished', { kind: 'closedByRecovery', reaskedAs: 'vanished-r2' }, 5_000),
          approval('vanished-r2', APPROVED, 5_000),
        ],
        cards: [card('reasked-r2', 'Approval needed', { buttons: buttons() })],
      }),
    );
    expect(result.details.filter((d) => d.column === 'lost').map((d) => d.approvalId)).toEqual([
      'vanished',
      'vanished-r2',
    ]);
    expect(result.unseen).toEqual([
      { approvalId: 'reasked', exposureMs: 5_000, outcome: 'closedByRecovery' },
    ]);
  });

  it('duplicatedCards: an approval with more than one card', () => {
    const run = cleanRun();
    run.cards.push(card('a-clicked', 'Approved', { decidedBy: { userId: 'U0ALICE' } }));
    const result = audit(run);
    expect(result.figures).toMatchObject({ cards: 7, duplicatedCards: 1 });
    expect(result.details).toEqual([
      expect.objectContaining({ column: 'duplicatedCards', approvalId: 'a-clicked' }),
    ]);
  });

  it('duplicatedDecisions: a stage sent with two commandIds, or carried out twice; a replay is not one', () => {
    const sentTwice = cleanRun();
    sentTwice.decides.push(decide('a-clicked', 'c1-other'));
    expect(audit(sentTwice).figures.duplicatedDecisions).toBe(1);

    const appliedTwice = cleanRun();
    appliedTwice.applied.push(applied('a-rejected', 'c3', 'abort'));
    expect(audit(appliedTwice).figures.duplicatedDecisions).toBe(1);

    // Two stages of one shell approval each get their own commandId.
    const stages = cleanRun();
    stages.decides.push(decide('a-open', 's0'), decide('a-open', 's1', 1));
    expect(audit(stages).figures.duplicatedDecisions).toBe(0);
  });

  it('stuck: a pending approval whose card offers no way to decide it, or a closed one whose card still does', () => {
    const cases: Array<[string, HostOutcome, CardView, SentDecide[]]> = [
      ['being decided, nothing in flight', PENDING, card('x', 'Being decided'), []],
      ['final card while the host still asks', PENDING, card('x', 'Approved'), []],
      [
        'buttons of a stage the host has left',
        { kind: 'pending', sourceIndex: 1 },
        card('x', 'Approval needed', { buttons: buttons(0) }),
        [],
      ],
      ['resolved, buttons still there', APPROVED, card('x', 'Approved', { buttons: buttons() }), []],
      ['resolved, card still being decided', APPROVED, card('x', 'Being decided'), []],
      [
        'closed by recovery, card still pending',
        { kind: 'closedByRecovery', reaskedAs: 'x-r2' },
        card('x', 'Approval needed', { buttons: buttons() }),
        [],
      ],
    ];
    for (const [name, outcome, c, decides] of cases) {
      const result = audit(input({ approvals: [approval('x', outcome)], cards: [c], decides }));
      expect(result.figures.stuck, name).toBe(1);
    }
    const fine: Array<[string, HostOutcome, CardView, SentDecide[]]> = [
      [
        'being decided with a decide in flight',
        PENDING,
        card('x', 'Being decided'),
        [decide('x', 'c', 0, true)],
      ],
      [
        'another client holds the session',
        PENDING,
        card('x', 'Cannot be decided from Slack now', { heldElsewhere: true }),
        [],
      ],
    ];
    for (const [name, outcome, c, decides] of fine) {
      expect(
        audit(input({ approvals: [approval('x', outcome)], cards: [c], decides })).figures.stuck,
        name,
      ).toBe(0);
    }
  });

  it('mislabelled: a final card whose decision, kind of ending or credited user contradicts the host', () => {
    const withCard = (outcome: HostOutcome, c: CardView, extra: Partial<AuditInput> = {}) =>
      audit(input({ approvals: [approval('x', outcome)], cards: [c], ...extra })).figures.mislabelled;
    const recovery: HostOutcome = { kind: 'closedByRecovery', reaskedAs: 'x-r2' };
    const policy: HostOutcome = { kind: 'resolved', decision: 'approved', resolvedBy: 'policy' };
    const byAlice = {
      applied: [applied('x', 'c1')],
      clicks: [click('x', 'U0ALICE'), click('x', 'U0BOB', 'abort')],
    };

    expect(withCard(APPROVED, card('x', 'Rejected', { decidedBy: { userId: 'U0ALICE' } }), byAlice)).toBe(1);
    expect(withCard(recovery, card('x', 'Rejected', { decidedBy: { userId: 'U0ALICE' } }))).toBe(1);
    expect(withCard(APPROVED, card('x', 'Superseded'), byAlice)).toBe(1);
    expect(withCard(APPROVED, card('x', 'Orphaned'), byAlice)).toBe(1);
    // Two users pressed at once; Alice's choice is the one the host carried out.
    expect(withCard(APPROVED, card('x', 'Approved', { decidedBy: { userId: 'U0BOB' } }), byAlice)).toBe(1);
    expect(
      withCard(APPROVED, card('x', 'Approved', { decidedBy: { words: 'user (another client)' } }), byAlice),
    ).toBe(1);
    expect(withCard(policy, card('x', 'Approved', { decidedBy: { userId: 'U0ALICE' } }))).toBe(1);

    expect(withCard(APPROVED, card('x', 'Approved', { decidedBy: { userId: 'U0ALICE' } }), byAlice)).toBe(0);
    expect(withCard(recovery, card('x', 'Superseded'))).toBe(0);
    expect(withCard(policy, card('x', 'Approved', { decidedBy: { words: 'policy' } }))).toBe(0);
    // Still open: that is for `stuck` to judge, not a label.
    expect(withCard(APPROVED, card('x', 'Being decided'), byAlice)).toBe(0);
  });
});
