// What the host or agent writes must never become live Slack markup, and no input size may push a
// card over Slack's limits.
import { describe, expect, it } from 'vitest';
import { decodeChoiceValue } from '../../../src/cards/ids.js';
import { checkMessageLimits, MAX_BUTTON_TEXT, MAX_CARD_FALLBACK_TEXT } from '../../../src/cards/limits.js';
import { batchAnswerText, renderBatchSummary } from '../../../src/cards/renderBatchSummary.js';
import { renderCard } from '../../../src/cards/renderCard.js';
import { renderConfirmModal } from '../../../src/cards/renderConfirmModal.js';
import { renderEscalationDm } from '../../../src/cards/renderEscalation.js';
import { renderFeedbackModal } from '../../../src/cards/renderFeedbackModal.js';
import { renderHome } from '../../../src/cards/renderHome.js';
import { refusalText } from '../../../src/cards/renderUserMessages.js';
import { waitingLine } from '../../../src/cards/renderWaiting.js';
import type { SummaryView } from '../../../src/domain/batchGroup.js';
import type { RenderedMessage } from '../../../src/domain/messages.js';
import { questionDigest } from '../../../src/domain/questionDigest.js';
import type { ApprovalRecord, Phase, Resolution } from '../../../src/domain/record.js';
import type { TypedConfirmation } from '../../../src/domain/typedConfirmation.js';
import type { ApprovalChoice, ApprovalStage } from '../../../src/msp/protocol.js';
import {
  allText,
  blocksOfType,
  buttons,
  DECIDED_AT,
  fileRecord,
  inPhase,
  NOW,
  shellRecord,
  texts,
} from '../../support/cardFixtures.js';

const render = (record: ApprovalRecord) => renderCard(record, { now: NOW });

const EVIL =
  '<!channel> <!here> <@U123> <https://evil|docs> @channel @here @everyone &amp; <!subteam^S1> <#C1>';
const ALL_PHASES: Phase[] = ['reviewing', 'pending', 'deciding', 'resolved', 'superseded', 'orphaned'];

/** Tokens the card itself builds; anything else in angle brackets came from outside. */
// Our two date tokens: a time, and an age Slack keeps current ("{ago}"), each with a fallback
// built from a Date (never from host text).
const OUR_DATE_TOKEN =
  /<!date\^\d+\^(?:\{ago\} \()?\{date_short_pretty\} \{time\}\)?\|(?:[\w ]+ ago \(|just now \()?\d{4}-\d\d-\d\d \d\d:\d\d UTC\)?>/g;

function expectInert(card: RenderedMessage, ownMentions: string[] = []): void {
  for (const text of [card.text, ...texts(card)]) {
    let rest = text.replace(OUR_DATE_TOKEN, '');
    for (const mention of ownMentions) rest = rest.replaceAll(mention, '');
    expect(rest).not.toContain('<');
    expect(rest).not.toContain('>');
    expect(rest).not.toMatch(/&(?!amp;|lt;|gt;)/);
    expect(rest).not.toMatch(/@(?:here|channel|everyone)/i);
  }
  const json = JSON.stringify({ text: card.text, texts: texts(card) });
  for (const live of ['<!channel>', '<!here>', '<@U123>', '<https://evil', '<!subteam', '<#C1>']) {
    expect(json).not.toContain(live);
  }
}

function evilChoices(): ApprovalChoice[] {
  return [
    { choiceId: EVIL, label: EVIL, decision: 'approved', scope: 'once', rulePreview: EVIL },
    { choiceId: 'abort', label: EVIL, decision: 'abort', scope: 'once', rulePreview: EVIL },
    { choiceId: 'x', label: EVIL, decision: EVIL, scope: EVIL },
  ];
}

function evilRecord(subject: ApprovalRecord['subject'], rawArgs: string): ApprovalRecord {
  return fileRecord({
    approvalId: EVIL,
    sessionId: EVIL,
    sessionTitle: EVIL,
    tool: EVIL,
    title: EVIL,
    rawArgs,
    subject,
    reason: EVIL,
    reviewerReason: EVIL,
    subagentOrigin: { subagentId: EVIL },
    protectedWrite: true,
    judgeEscalated: true,
    cuaCardFacts: {
      windowTitle: EVIL,
      page: { host: EVIL, hostAscii: `${EVIL}-ascii` },
      steps: [EVIL, { summary: EVIL }, { other: EVIL }],
      data: [{ kind: EVIL, value: EVIL }, EVIL],
    },
    availableChoices: evilChoices(),
    claim: { sourceIndex: 0, userId: EVIL, choiceId: 'abort', commandId: 'c1', claimedAt: NOW.toISOString() },
    resolution: {
      decision: EVIL,
      resolvedBy: EVIL,
      policyResult: EVIL,
      amendment: { durability: EVIL, rulePreview: EVIL },
      decidedAt: EVIL,
      slackUserId: EVIL,
      feedback: EVIL,
    },
    supersededNote: EVIL,
  });
}

function evilStage(index: number, kind: string): ApprovalStage {
  return {
    requirementId: { approvalId: 'a', sourceIndex: index },
    position: index + 1,
    totalStages: 3,
    argv: [EVIL, EVIL],
    argvComplete: false,
    resolution: { kind, diagnostic: EVIL, argvPrefix: [EVIL] },
  };
}

const EVIL_SUBJECTS: Record<string, ApprovalRecord['subject']> = {
  shell: {
    kind: 'shell',
    command: `${EVIL} \`\`\` ${EVIL}`,
    workspaceRoot: EVIL,
    stages: [evilStage(0, 'policyAllow'), evilStage(1, 'policyAmendment'), evilStage(2, EVIL)],
  },
  fileAccess: { kind: 'fileAccess', path: EVIL, access: EVIL, toolName: EVIL },
  network: {
    kind: 'network',
    host: EVIL,
    port: 443,
    protocol: EVIL,
    origin: { kind: EVIL, command: EVIL, url: EVIL },
  },
  process: { kind: 'process', target: EVIL },
  unixSocket: { kind: 'unixSocket', path: EVIL, target: `${EVIL}!` },
  tool: { kind: 'tool', toolName: EVIL },
  computerUseTakeover: { kind: 'computerUseTakeover', holder: { name: EVIL } },
  unknown: { kind: EVIL, toolName: EVIL, extra: EVIL },
};

/**
 * Agent prose written to pass for the card's own lines: a line of its own, bold labels, italics,
 * strikes, an emoji, inline code and a code block. None of it may take effect on the card.
 */
const FAKE =
  'Run tests\n\n:unicorn_face: *Signed off:* by policy _quietly_ ~struck~ `tick`\n> quoted\n```\nnpm test\n```';

function fakeRecord(phase: Phase): ApprovalRecord {
  const stage = (index: number, resolution: ApprovalStage['resolution']): ApprovalStage => ({
    ...evilStage(index, 'unresolved'),
    argv: ['make', 'build'],
    argvComplete: true,
    resolution,
  });
  const fake = evilRecord(
    {
      kind: 'shell',
      command: 'make build && make build',
      stages: [stage(0, { kind: 'policyAllow', diagnostic: FAKE }), stage(1, { kind: 'unresolved' })],
    },
    '{}',
  );
  const choices: ApprovalChoice[] = [
    {
      choiceId: 'rule',
      label: FAKE,
      decision: 'approvedPolicyAmendment',
      scope: 'localPersistent',
      rulePreview: FAKE,
    },
    { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once' },
  ];
  return {
    ...fake,
    approvalId: 'a1',
    sessionId: 's1',
    tool: 'bash',
    phase,
    title: FAKE,
    reason: FAKE,
    reviewerReason: FAKE,
    sessionTitle: FAKE,
    cuaCardFacts: { steps: [FAKE, { summary: FAKE }] },
    availableChoices: choices,
    claim: {
      sourceIndex: 0,
      userId: 'U0APPROVER',
      choiceId: 'rule',
      commandId: 'c1',
      claimedAt: NOW.toISOString(),
    },
    resolution: {
      decision: 'approved',
      resolvedBy: 'user',
      amendment: {
        durability: 'persistent',
        rulePreview: FAKE,
        persistence: 'failed',
        persistenceReason: FAKE,
      },
      decidedAt: NOW.toISOString(),
      feedback: FAKE,
    },
    supersededNote: FAKE,
  };
}

describe("injection: agent prose never passes for the card's own formatting", () => {
  for (const phase of ALL_PHASES) {
    it(phase, () => {
      const card = render(fakeRecord(phase));
      // Where Slack reads formatting: plain_text (the header, buttons) shows every character as is.
      const all = [card.text, ...texts(card, ['mrkdwn'])].join('\u0000');
      // The prose is on the card (cut, perhaps), so the checks below look at something.
      expect(all).toContain('Signed off');
      for (const live of [
        '*Signed off:*',
        ':unicorn_face:',
        '_quietly_',
        '~struck~',
        '`tick`',
        '```\nnpm test',
      ]) {
        expect(all).not.toContain(live);
      }
      // Nor does it start a line of its own (a fake "Decided by" line under the real ones).
      expect(all).not.toMatch(/\n\W{0,3}Signed off/);
      expect(all).not.toMatch(/\n\s*(?:>|&gt;) ?quoted/);
    });
  }

  // The title is the agent's word for a subject of a kind the bot does not read: it need not say
  // what runs, so the notification names the kind instead, never the title.
  it('in the notification text of a subject of a kind the bot does not know: its kind, not its title', () => {
    const card = render({ ...fakeRecord('pending'), subject: { kind: 'somethingNew' } });
    expect(card.text).toContain('a request of kind somethingNew, not a kind this bot knows');
    expect(card.text).not.toContain('Signed off');
  });
});

/**
 * One-line host or agent text written to pass for a line of the card's own: a line break, then a
 * bold label and an emoji the card itself draws when a request is decided.
 */
const FAKE_LINE = 'x\n*Decided by:* :white_check_mark:';
/** How FAKE_LINE may show: inert prose (clipProse), or inline code, where Slack formats nothing. */
const FAKE_LINE_AS_PROSE = 'x ∗Decided by:∗ ∶white_check_mark:';
/** A subject in a list (a command): inert prose too, its line break shown as a marker, as in code. */
const FAKE_LINE_AS_MARKED_PROSE = 'x⟨U+000A⟩∗Decided by:∗ ∶white_check_mark:';
/** In inline code a line break shows as a marker: a space would pass for a word break. */
const FAKE_LINE_AS_CODE = '`x⟨U+000A⟩*Decided by:* :white_check_mark:`';

/** The texts of a message or view that Slack reads as mrkdwn, its notification text among them. */
function mrkdwnTexts(message: { text?: string; blocks: unknown[] }): string[] {
  return [message.text ?? '', ...texts({ text: '', blocks: message.blocks }, ['mrkdwn'])];
}

const resolvedFile = (resolution: Partial<Resolution>) => {
  const record = inPhase(fileRecord(), 'resolved', 'policy');
  return { ...record, resolution: { ...record.resolution!, ...resolution } };
};
const feedbackArgs = {
  metadata: { channel: 'C1', ts: '1.1', sourceIndex: 0, choiceId: 'abort', approvalId: 'a1' },
};
const confirmation = { target: { text: 'prod', source: 'host' }, risks: [] } as unknown as TypedConfirmation;
const batchView = (over: Partial<SummaryView['shared']>, session = 'Release'): SummaryView => ({
  groupId: 'C1:abc',
  channel: 'C1',
  shared: { route: 'builds', tool: 'bash', capabilities: ['exec:npm test'], sandboxMode: 'default', ...over },
  members: [{ approvalId: 'appr-1', sourceIndex: 0, ts: '1.1', session }],
  total: 1,
});

/** Every one-line field the host or agent fills, and the mrkdwn it shows in, given its value. */
const ONE_LINE_FIELDS: Record<string, (value: string) => string[]> = {
  'card: session title': (v) => mrkdwnTexts(render(fileRecord({ sessionTitle: v }))),
  'card: tool': (v) => mrkdwnTexts(render(fileRecord({ tool: v }))),
  'card: file access': (v) =>
    mrkdwnTexts(render(fileRecord({ subject: { kind: 'fileAccess', path: '/srv/a', access: v } }))),
  'card: connection origin kind': (v) =>
    mrkdwnTexts(
      render(
        fileRecord({
          subject: {
            kind: 'network',
            host: 'example.com',
            port: 443,
            protocol: 'https',
            origin: { kind: v },
          },
        }),
      ),
    ),
  'card: how an earlier stage was allowed': (v) => {
    const record = shellRecord(2);
    const subject = record.subject as { kind: 'shell'; command: string; stages: ApprovalStage[] };
    const stages = subject.stages.map((s, i) => (i === 0 ? { ...s, resolution: { kind: v } } : s));
    return mrkdwnTexts(render({ ...record, subject: { ...subject, stages } }));
  },
  'card: rule durability': (v) =>
    mrkdwnTexts(render(resolvedFile({ amendment: { durability: v, rulePreview: 'write /srv/a' } }))),
  'card: policy result': (v) => mrkdwnTexts(render(resolvedFile({ policyResult: v }))),
  'card: decision': (v) => mrkdwnTexts(render(resolvedFile({ decision: v }))),
  'card: decided at': (v) => mrkdwnTexts(render(resolvedFile({ decidedAt: v }))),
  'card: decider the host names': (v) => mrkdwnTexts(render(resolvedFile({ resolvedBy: v }))),
  'card: data row kind': (v) =>
    mrkdwnTexts(render(fileRecord({ cuaCardFacts: { data: [{ kind: v, n: 1 }] } }))),
  'batch summary: session title': (v) => mrkdwnTexts(renderBatchSummary(batchView({}, v), new Map())),
  'batch summary: tool': (v) => mrkdwnTexts(renderBatchSummary(batchView({ tool: v }), new Map())),
  'batch summary: sandbox mode': (v) =>
    mrkdwnTexts(renderBatchSummary(batchView({ sandboxMode: v }), new Map())),
  'batch answer: session title': (v) => [
    batchAnswerText({
      userId: 'U0ALICE',
      action: 'approve',
      at: DECIDED_AT,
      decided: [],
      skipped: [
        {
          approvalId: 'appr-1',
          session: v,
          refusal: { code: 'alreadyResolved', decision: 'approved', resolvedBy: 'user' },
        },
      ],
    }),
  ],
  'reason modal: tool': (v) =>
    mrkdwnTexts(renderFeedbackModal({ ...feedbackArgs, choiceLabel: 'Reject', tool: v })),
  'reason modal: choice label': (v) =>
    mrkdwnTexts(renderFeedbackModal({ ...feedbackArgs, choiceLabel: v, tool: 'bash' })),
  'confirm modal: tool': (v) =>
    mrkdwnTexts(renderConfirmModal({ ...feedbackArgs, confirmation, choiceLabel: 'Allow', tool: v })),
  'confirm modal: choice label': (v) =>
    mrkdwnTexts(renderConfirmModal({ ...feedbackArgs, confirmation, choiceLabel: v, tool: 'bash' })),
  'pending list: tool': (v) => [waitingLine({ record: fileRecord({ tool: v }) }, NOW)],
  'pending list: subject': (v) => [
    waitingLine({ record: fileRecord({ subject: { kind: 'fileAccess', path: '/srv/a', access: v } }) }, NOW),
  ],
  'App Home: recent tool': (v) =>
    mrkdwnTexts(
      renderHome({
        waiting: [],
        recent: [
          {
            decision: {
              approvalId: 'r1',
              tool: v,
              decision: 'approved',
              decidedAt: DECIDED_AT,
              channel: 'C1',
            },
          },
        ],
        channel: 'C1',
        status: { host: true, redis: true },
        now: NOW,
      }),
    ),
  'refusal: the kind the host refused with': (v) => [refusalText({ code: 'decideFailed', kind: v })],
};

describe('injection: one-line host text stays on its line, its formatting inert', () => {
  const count = (all: string[], token: string) => all.join('\u0000').split(token).length - 1;
  for (const [field, show] of Object.entries(ONE_LINE_FIELDS)) {
    it(field, () => {
      const shown = show(FAKE_LINE);
      const all = shown.join('\u0000');
      const forms = [FAKE_LINE_AS_PROSE, FAKE_LINE_AS_MARKED_PROSE, FAKE_LINE_AS_CODE];
      expect(
        forms.some((form) => all.includes(form)),
        all,
      ).toBe(true);
      // Against the same field holding plain text: no line, bold label or emoji more than it has.
      const plain = show('x');
      const rest = shown.map((t) => t.replaceAll(FAKE_LINE_AS_CODE, ''));
      for (const token of ['\n', '*Decided by:*', ':white_check_mark:']) {
        expect(count(rest, token), token).toBe(count(plain, token));
      }
    });
  }
});

describe('injection: host text never becomes live markup', () => {
  for (const [kind, subject] of Object.entries(EVIL_SUBJECTS)) {
    for (const phase of ALL_PHASES) {
      for (const [argsName, rawArgs] of [
        ['JSON', JSON.stringify({ command: EVIL })],
        ['not JSON', EVIL],
      ]) {
        it(`${kind} / ${phase} / rawArgs ${argsName}`, () => {
          const card = render({ ...evilRecord(subject, rawArgs!), phase });
          expectInert(card);
          expect(checkMessageLimits(card)).toEqual([]);
        });
      }
    }
  }

  it('escapes & so an entity in host text shows as typed', () => {
    const card = render(fileRecord({ title: 'a &amp; b', subject: { kind: 'fileAccess', path: '/x&y' } }));
    expect(allText(card)).toContain('*Title:* a &amp;amp; b');
    expect(allText(card)).toContain('`/x&amp;y`');
  });

  it('keeps our own mention of the deciding Slack user live, and only that', () => {
    const card = render(inPhase(fileRecord({ title: EVIL }), 'deciding'));
    expect(allText(card)).toContain('Being decided by <@U0APPROVER>…');
    expectInert(card, ['<@U0APPROVER>']);
  });

  it('button values still carry the exact choiceId', () => {
    const record = evilRecord(EVIL_SUBJECTS.fileAccess!, '{}');
    const card = render(record);
    expect(decodeChoiceValue(buttons(card)[0]!.value)).toEqual({
      s: 0,
      c: EVIL,
      a: record.approvalId,
      d: questionDigest(record),
    });
  });

  it('a ``` inside a command cannot close the code block', () => {
    const card = render(shellRecord(1, { subject: { kind: 'shell', command: 'echo ```\n<!channel>\n```' } }));
    const command = allText(card).split('*Command*\n')[1]!.split('\n*')[0]!;
    expect(command.match(/```/g)).toHaveLength(2);
    expect(command).toContain('&lt;!channel&gt;');
  });
});

function expectFits(card: RenderedMessage): void {
  expect(checkMessageLimits(card)).toEqual([]);
  expect(card.text.length).toBeLessThanOrEqual(MAX_CARD_FALLBACK_TEXT);
}

function manyStages(n: number, current: number) {
  const stages: ApprovalStage[] = Array.from({ length: n }, (_, i) => ({
    requirementId: { approvalId: 'big', sourceIndex: i },
    position: i + 1,
    totalStages: n,
    argv: ['echo', `step-${i}`, 'x'.repeat(30)],
    argvComplete: true,
    resolution: { kind: i < current ? 'allowOnce' : 'unresolved' },
  }));
  return shellRecord(1, {
    subject: {
      kind: 'shell',
      command: stages.map((s) => s.argv.join(' ')).join(' && '),
      stages,
    },
    currentRequirementId: { approvalId: 'big', sourceIndex: current },
  });
}

describe('oversized input stays inside Slack limits', () => {
  it('200 KB rawArgs, JSON or not', () => {
    for (const rawArgs of [JSON.stringify({ content: 'x'.repeat(200_000) }), 'y'.repeat(200_000)]) {
      const card = render(fileRecord({ rawArgs }));
      expectFits(card);
      expect(allText(card)).toMatch(/\*Arguments\*\n```\n[\s\S]*\n```\n… \d+ more characters/);
    }
  });

  for (const current of [0, 250, 499]) {
    it(`500-stage shell command, deciding stage ${current + 1}`, () => {
      for (const phase of ALL_PHASES) {
        const card = render(inPhase(manyStages(500, current), phase));
        expectFits(card);
        const text = allText(card);
        expect(text).toMatch(/… and \d+ more stages/);
        expect(text).toMatch(/```\n… \d+ more characters/);
        if (phase === 'pending' || phase === 'deciding' || phase === 'reviewing') {
          expect(text).toContain(`▶ ${current + 1}/500 \`echo step-${current} `);
        }
      }
    });
  }

  it('60 choices with 200-character labels: split across actions blocks, labels cut', () => {
    const choices: ApprovalChoice[] = Array.from({ length: 60 }, (_, i) => ({
      choiceId: `choice_${i}`,
      label: `${i}: ${'L'.repeat(200)}`,
      decision: i % 3 === 0 ? 'abort' : 'approved',
      scope: 'once',
    }));
    const card = render(fileRecord({ availableChoices: choices }));
    expectFits(card);
    const actions = blocksOfType(card, 'actions');
    expect(actions.map((b) => (b.elements as unknown[]).length)).toEqual([25, 25, 10]);
    expect(new Set(actions.map((b) => b.block_id)).size).toBe(3);
    const bs = buttons(card);
    expect(bs.map((b) => b.actionId)).toEqual(choices.map((_, i) => `cs_choice_${i}`));
    expect(bs.map((b) => decodeChoiceValue(b.value)?.c)).toEqual(choices.map((c) => c.choiceId));
    for (const b of bs) {
      expect(b.text.length).toBeLessThanOrEqual(MAX_BUTTON_TEXT);
      expect(b.text.endsWith('…')).toBe(true);
    }
    expect(allText(card)).toContain('*About these choices*');
  });

  it('60 choices with long labels and 1 KB rule previews', () => {
    const choices: ApprovalChoice[] = Array.from({ length: 60 }, (_, i) => ({
      choiceId: `choice_${i}`,
      label: `${i}: ${'L'.repeat(200)}`,
      decision: 'approvedForSession',
      scope: 'session',
      rulePreview: `allow ${'r'.repeat(1000)}`,
    }));
    const card = render(fileRecord({ availableChoices: choices }));
    expectFits(card);
    expect(buttons(card)).toHaveLength(60);
    expect(allText(card)).toMatch(/more characters/);
    expect(allText(card)).toMatch(/… and \d+ more choices/);
  });

  it('5 KB reason and reviewer reason', () => {
    const card = render(fileRecord({ reason: 'r'.repeat(5000), reviewerReason: 'v'.repeat(5000) }));
    expectFits(card);
    expect(allText(card)).toMatch(/\*Reason:\* r+… \d+ more characters/);
    expect(allText(card)).toMatch(/\*Reviewer's reason:\* v+… \d+ more characters/);
  });

  it('10 KB window title: cut, with the note outside the quotes', () => {
    const card = render(fileRecord({ cuaCardFacts: { windowTitle: 'w'.repeat(10_000) } }));
    expectFits(card);
    expect(allText(card)).toMatch(/Window title: “w+”… \d+ more characters/);
  });

  it('everything oversized at once, in every phase', () => {
    const huge = 'z'.repeat(20_000);
    const choices: ApprovalChoice[] = Array.from({ length: 120 }, (_, i) => ({
      choiceId: `reject_${i}`,
      label: `${i} ${huge}`,
      decision: 'abort',
      scope: 'once',
      rulePreview: huge,
    }));
    const base = manyStages(500, 499);
    const record: ApprovalRecord = {
      ...base,
      tool: huge,
      title: huge,
      rawArgs: huge,
      sessionTitle: huge,
      approvalId: huge,
      reason: huge,
      reviewerReason: huge,
      protectedWrite: true,
      judgeEscalated: true,
      subagentOrigin: { subagentId: huge },
      subject: { ...base.subject, workspaceRoot: huge },
      cuaCardFacts: {
        windowTitle: huge,
        page: { host: huge, hostAscii: `${huge}a` },
        steps: Array.from({ length: 1000 }, () => huge),
        data: Array.from({ length: 1000 }, () => ({ kind: huge, v: huge })),
      },
      availableChoices: choices,
      claim: {
        sourceIndex: 499,
        userId: 'U1',
        choiceId: 'reject_1',
        commandId: 'c',
        claimedAt: NOW.toISOString(),
      },
      resolution: {
        decision: huge,
        resolvedBy: huge,
        policyResult: huge,
        amendment: { durability: huge, rulePreview: huge },
        decidedAt: huge,
        feedback: huge,
      },
      supersededNote: huge,
      intake: {
        maskedSecrets: 123_456,
        truncated: true,
        stagesOmitted: 123_456,
        parts: { rawArgs: { maskedSecrets: 123_456, truncated: true } },
      },
    };
    for (const phase of ALL_PHASES) {
      const card = render({ ...record, phase });
      expectFits(card);
      if (phase === 'pending') {
        expect(buttons(card).length).toBeGreaterThan(0);
        expect(allText(card)).toMatch(/\d+ more choices are not shown here/);
      }
    }
  });

  it('a choiceId too long for a button value is named, not sent', () => {
    const card = render(
      fileRecord({
        availableChoices: [
          { choiceId: 'ok', label: 'Allow once', decision: 'approved', scope: 'once' },
          { choiceId: 'c'.repeat(3000), label: 'Odd', decision: 'approved', scope: 'once' },
        ],
      }),
    );
    expectFits(card);
    expect(buttons(card).map((b) => b.text)).toEqual(['Allow once']);
    expect(allText(card)).toContain('1 choice has an id too long for a Slack button and is not shown');
  });
});

describe('injection: a page data row draws no formatting', () => {
  // The page being driven writes these rows (msp-approvals.md §6.12): shown as JSON, the JSON
  // stays on one line, and no bold label, emoji, strike or code span of the page's is drawn.
  const EVIL_NOTE = '*:white_check_mark: Approved by Alice* ~card~ `x`';

  it.each([
    ['an object row', { kind: 'form', note: EVIL_NOTE }],
    ['a row of another shape', EVIL_NOTE],
  ])('%s', (_, row) => {
    const card = render(fileRecord({ cuaCardFacts: { data: [row, '```', 'between', '```'] } }));
    const rows = mrkdwnTexts(card)
      .filter((t) => t.startsWith('*Data it would send*'))
      .flatMap((t) => t.split('\n').slice(1));
    expect(rows).toHaveLength(4);
    for (const line of rows) {
      // Each row's JSON is one code span, where Slack formats nothing; nothing of it outside one.
      const spans = line.match(/`[^`]*`/g) ?? [];
      expect(spans, line).toHaveLength(1);
      expect(line.replace(spans[0]!, ''), line).not.toMatch(/[*`~]|:white_check_mark:|Alice/);
    }
    expect(rows[0]).toContain('Approved by Alice');
  });
});

describe('fidelity: what the card and the DM show is what runs', () => {
  const LINE_BREAK = '⟨U+000A⟩';
  const dmOf = (record: ApprovalRecord) => renderEscalationDm(record, { waitedMs: 60_000 });

  it('the escalation DM, which carries deciding buttons, keeps a line break and hidden characters visible', () => {
    const record = shellRecord(1, {
      subject: { kind: 'shell', command: 'echo "Cleaning up"\nrm -rf /srv/prod\u2028x\ufeff' },
    });
    const dm = dmOf(record);
    expect(buttons(dm).length).toBeGreaterThan(0);
    const all = allText(dm);
    // Two commands, not one harmless echo.
    expect(all).not.toContain('echo "Cleaning up" rm -rf');
    expect(all).toContain(`*Request:* \`echo "Cleaning up"${LINE_BREAK}rm -rf /srv/prod⟨U+2028⟩x⟨U+FEFF⟩\``);
    expect(dm.text).toContain(`echo "Cleaning up"${LINE_BREAK}rm -rf /srv/prod⟨U+2028⟩x⟨U+FEFF⟩`);
  });

  it('the escalation DM never presents the agent title as the request of a kind it cannot read', () => {
    const record = fileRecord({
      title: 'npm test',
      subject: { kind: 'shellV2', command: 'rm -rf /' } as never,
    });
    const dm = dmOf(record);
    expect(buttons(dm).length).toBeGreaterThan(0);
    expect(allText(dm)).not.toContain('npm test');
    expect(dm.text).not.toContain('npm test');
    expect(allText(dm)).toContain(
      '*Request:* a request of kind `shellV2`, not a kind this bot knows: open the card',
    );
  });

  it('a network host sent in Unicode shows beside its xn-- form', () => {
    const record = fileRecord({
      subject: { kind: 'network', host: 'gіthub.com', port: 443, protocol: 'https' },
    });
    expect(allText(render(record))).toContain(
      '*Connects to:* `https://gіthub.com:443` (`xn--gthub-n2e.com`)',
    );
    // An ASCII host reads as it is looked up: nothing added.
    const plain = fileRecord({
      subject: { kind: 'network', host: 'GitHub.com', port: 443, protocol: 'https' },
    });
    expect(allText(render(plain))).toContain('*Connects to:* `https://GitHub.com:443`\n');
  });

  it('a stage word holding a line break or spaces stays one quoted word', () => {
    const record = shellRecord(1);
    (record.subject.stages![0] as { argv: string[] }).argv = [
      'bash',
      '-c',
      'echo hello\n2/2  git status\nrm -rf ~',
    ];
    const all = allText(render(record));
    expect(all).not.toContain('`bash -c echo hello');
    expect(all).toContain(`▶ 1/2 \`bash -c "echo hello\\n2/2  git status\\nrm -rf ~"\``);
  });

  it('the pending list keeps a line break and hidden characters visible too', () => {
    const record = shellRecord(1, {
      subject: { kind: 'shell', command: 'echo ok \n  rm -rf /srv\u2028x\ufeff' },
    });
    const line = waitingLine({ record }, NOW);
    expect(line).toContain(`echo ok${LINE_BREAK}rm -rf /srv⟨U+2028⟩x⟨U+FEFF⟩`);
  });

  it('a path holding a line break does not read as another file', () => {
    const record = fileRecord({
      subject: { kind: 'fileAccess', path: '/srv/app/a\n.bashrc', access: 'write' },
    });
    const all = allText(render(record));
    expect(all).not.toContain('`/srv/app/a .bashrc`');
    expect(all).toContain(`*File:* \`/srv/app/a${LINE_BREAK}.bashrc\``);
  });
});
