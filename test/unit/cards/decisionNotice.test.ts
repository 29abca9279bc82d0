// The thread audit line and the requester DM: pure renders of a resolved record.

import { describe, expect, it } from 'vitest';
import { renderCard } from '../../../src/cards/renderCard.js';
import { renderRequesterDm, renderThreadLine } from '../../../src/cards/renderDecisionNotice.js';
import type { ResolvedRecord } from '../../../src/domain/decisionNotice.js';
import type { Resolution } from '../../../src/domain/record.js';
import { APPROVER, allText, DECIDED_AT, fileRecord, NOW, shellRecord } from '../../support/cardFixtures.js';

const DATE_TOKEN = `<!date^${Math.floor(Date.parse(DECIDED_AT) / 1000)}^`;

function resolved(resolution: Partial<Resolution>): ResolvedRecord {
  return fileRecord({
    phase: 'resolved',
    resolution: { decision: 'approved', resolvedBy: 'user', decidedAt: DECIDED_AT, ...resolution },
  }) as ResolvedRecord;
}

const names = { nameOf: (id: string) => (id === APPROVER ? 'Alice Approver' : undefined) };

describe('renderThreadLine', () => {
  it('names the clicking user without a mention, the choice’s label, and when', () => {
    const line = renderThreadLine(
      resolved({ slackUserId: APPROVER, choiceId: 'allow_session', decision: 'approvedForSession' }),
      names,
    );
    expect(line).toContain('*Approved for the rest of the session* by Alice Approver');
    expect(line).toContain('choosing *Allow for this session*');
    expect(line).toContain(DATE_TOKEN);
    expect(line).not.toContain('<@');
  });

  it('names each quorum voter who stood in for someone away, "for @X"', () => {
    const quorum = resolved({
      slackUserId: 'U0BOB',
      voters: ['U0CAROL', 'U0BOB'],
      stoodInFor: { U0CAROL: 'U0ALICE' },
      // The last voter's own standing: Bob voted as himself.
      choiceId: 'allow_once',
    });
    const byName = { nameOf: (id: string) => ({ U0CAROL: 'Carol', U0BOB: 'Bob', U0ALICE: 'Alice' })[id] };
    expect(renderThreadLine(quorum, byName)).toContain('by Carol for @Alice and Bob');
    // Without names, people are mentioned.
    expect(renderThreadLine(quorum, { nameOf: () => undefined })).toContain(
      'by <@U0CAROL> for <@U0ALICE> and <@U0BOB>',
    );
  });

  it('a name that reads as a broadcast pings nobody, with the "@" before it too', () => {
    const quorum = resolved({
      slackUserId: 'U0BOB',
      voters: ['U0CAROL', 'U0BOB'],
      stoodInFor: { U0CAROL: 'U0ALICE' },
      choiceId: 'allow_once',
    });
    const named = { nameOf: (id: string) => ({ U0CAROL: 'Carol', U0BOB: 'Bob', U0ALICE: 'channel' })[id] };
    const line = renderThreadLine(quorum, named);
    expect(line).toMatch(/by Carol for @\S*channel and Bob/);
    expect(line).not.toContain('@channel');
  });

  it('falls back to a mention when no name is known', () => {
    const line = renderThreadLine(resolved({ slackUserId: APPROVER, choiceId: 'allow_once' }));
    expect(line).toContain(`by <@${APPROVER}>`);
  });

  it('shows the feedback, escaped: it cannot ping the channel or fake a link', () => {
    const line = renderThreadLine(
      resolved({
        slackUserId: APPROVER,
        choiceId: 'abort',
        decision: 'abort',
        feedback: 'no <!channel> see <https://evil.example|docs> @here',
      }),
      names,
    );
    expect(line).toContain(':no_entry: *Rejected* by Alice Approver, choosing *Reject*');
    expect(line).toContain(
      '*Feedback:* no &lt;!channel&gt; see &lt;https://evil.example|docs&gt; @\u200Bhere',
    );
    expect(line).not.toContain('<!channel>');
    expect(line).not.toContain('<https://evil');
  });

  it('escapes a display name, which its owner chooses', () => {
    const line = renderThreadLine(resolved({ slackUserId: APPROVER, choiceId: 'allow_once' }), {
      nameOf: () => '<!here> Mallory',
    });
    expect(line).toContain('by &lt;!here&gt; Mallory');
  });

  it.each([
    ['policy', 'by policy'],
    ['llmJudge', 'by automated reviewer'],
    ['user', 'by user (another client)'],
  ])('says who decided when it was not a click: %s', (resolvedBy, said) => {
    const line = renderThreadLine(resolved({ resolvedBy, decision: 'denied' }), names);
    expect(line).toContain(`*Denied* ${said}, ${DATE_TOKEN}`);
    expect(line).not.toContain('choosing');
  });
});

describe('renderRequesterDm', () => {
  const PERMALINK = 'https://test.slack.com/archives/C0APPROVALS/p1754590943000100';

  it('says what was decided, by whom, why, when, and links the card', () => {
    const dm = renderRequesterDm(
      resolved({ slackUserId: APPROVER, choiceId: 'abort', decision: 'abort', feedback: 'Use a PR' }),
      'main',
      PERMALINK,
      names,
    );
    expect(dm).toContain("Your agent's request `write_file` on host `main` was decided: *Rejected*");
    expect(dm).toContain('*Decided by:* Alice Approver (*Reject*)');
    expect(dm).toContain('*Reason:* Use a PR');
    expect(dm).toContain(`*When:* ${DATE_TOKEN}`);
    expect(dm).toContain(`<${PERMALINK}|Open the card>`);
  });

  it('leaves out a link that is not a plain https URL', () => {
    const dm = renderRequesterDm(resolved({ resolvedBy: 'policy' }), 'main', 'https://x|fake>', names);
    expect(dm).not.toContain('Open the card');
    expect(dm).toContain('*Decided by:* policy');
  });
});

describe('a command decided stage by stage', () => {
  // Alice approved `npm test`; Bob approved `git push` and so resolved the command.
  const twoStages = shellRecord(2, {
    phase: 'resolved',
    stageDecisions: [
      { sourceIndex: 0, via: 'click', userId: 'U0ALICE', choiceId: 'allow_once', decision: 'approved' },
    ],
    resolution: {
      decision: 'approved',
      resolvedBy: 'user',
      decidedAt: DECIDED_AT,
      slackUserId: 'U0BOB',
      choiceId: 'allow_once',
      via: 'click',
    },
  }) as ResolvedRecord;
  const byName = { nameOf: (id: string) => ({ U0ALICE: 'Alice', U0BOB: 'Bob' })[id] };

  it('the thread line and the owner’s DM name who decided each earlier stage, not only the last', () => {
    for (const text of [
      renderThreadLine(twoStages, byName),
      renderRequesterDm(twoStages, 'main', undefined, byName),
    ]) {
      expect(text).toMatch(/by(:\*)? Bob/);
      expect(text).toContain('Stage 1 of 2: *Approved (this request only)* by Alice');
      expect(text).not.toContain('<@');
    }
  });

  it('a stage a grant decided is named with its grant; a single-stage decision says nothing more', () => {
    const granted = {
      ...twoStages,
      stageDecisions: [
        {
          sourceIndex: 0,
          via: 'grant' as const,
          grantId: 'g-1',
          choiceId: 'allow_once',
          decision: 'approved',
        },
      ],
      grantUses: [{ sourceIndex: 0, grantId: 'g-1', grantedBy: 'U0CAROL' }],
    };
    expect(renderThreadLine(granted, byName)).toMatch(
      /Stage 1 of 2: \*Approved \(this request only\)\* by a remembered grant.*g-1/,
    );
    expect(renderThreadLine(resolved({ slackUserId: APPROVER }), names)).not.toContain('Earlier stages');
  });

  it('the card names them too, while the later stage is asked and once it is decided', () => {
    const asking = shellRecord(2, { stageDecisions: twoStages.stageDecisions });
    expect(allText(renderCard(asking, { now: NOW }))).toContain(
      'Stage 1 of 2: *Approved (this request only)* by <@U0ALICE>',
    );
    expect(allText(renderCard(twoStages, { now: NOW }))).toContain(
      'Stage 1 of 2: *Approved (this request only)* by <@U0ALICE>',
    );
  });
});
