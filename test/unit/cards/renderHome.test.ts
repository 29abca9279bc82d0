// App Home and /countersign answers as data: Block Kit limits hold for long lists and long host
// text, agent text is escaped, and links are only ever the ones Slack gave.

import { describe, expect, it } from 'vitest';
import { checkMessageLimits, checkViewLimits } from '../../../src/cards/limits.js';
import { MAX_LISTED, renderPending, renderWhoami } from '../../../src/cards/renderCommandAnswers.js';
import { MAX_HOME_WAITING, renderHome } from '../../../src/cards/renderHome.js';
import type { WaitingApproval } from '../../../src/cards/renderWaiting.js';
import type { RecentDecision } from '../../../src/domain/recentDecision.js';
import { fileRecord, NOW, OPENED_AT } from '../../support/cardFixtures.js';

const HOSTILE = `<!channel> @here <https://evil.example|docs> ${'x'.repeat(5_000)}\nrm -rf /`;

function waiting(n: number, tool = 'write_file'): WaitingApproval[] {
  return Array.from({ length: n }, (_, i) => ({
    record: fileRecord({
      approvalId: `a-${i}`,
      tool,
      title: HOSTILE,
      subject: { kind: 'shell', command: HOSTILE } as never,
      slack: { channel: 'C0APPROVALS', ts: `1700000000.${String(i).padStart(6, '0')}` },
    }),
    permalink: `https://test.slack.com/archives/C0APPROVALS/p1700000000${String(i).padStart(6, '0')}`,
  }));
}

const recent: RecentDecision[] = Array.from({ length: 10 }, (_, i) => ({
  approvalId: `r-${i}`,
  tool: HOSTILE,
  summary: HOSTILE,
  decision: i % 2 ? 'approved' : '<!channel>',
  decidedAt: OPENED_AT,
  channel: 'C0APPROVALS',
}));

describe('renderHome', () => {
  const home = (items: WaitingApproval[]) =>
    renderHome({
      waiting: items,
      recent: recent.map((decision) => ({ decision })),
      channel: 'C0APPROVALS',
      status: { host: true, redis: false },
      now: NOW,
    });

  it('keeps the view within Slack limits with a long list of hostile text, and says how many are left out', () => {
    const view = home(waiting(MAX_HOME_WAITING + 7, HOSTILE));
    expect(checkViewLimits(view)).toEqual([]);
    const json = JSON.stringify(view);
    expect(json).not.toMatch(/<!channel>|<https:\/\/evil/);
    expect(json).toContain('@\u200Bhere');
    expect(json).toContain('…and 7 more, newer than these.');
    const buttons = view.blocks.flatMap((b) => ('accessory' in b && b.accessory ? [b.accessory] : []));
    expect(buttons).toHaveLength(MAX_HOME_WAITING);
    expect(json).toContain('Redis: :red_circle: down');
  });

  it('a subject stays on one line, and a link Slack did not give (or that could break out) is not made a link', () => {
    const [item] = waiting(1);
    const multiLine = {
      ...item!.record,
      subject: { kind: 'shell', command: 'make test\n<!channel>\n  && deploy' },
    };
    const view = home([{ record: multiLine as never, permalink: 'https://x.example/a|<!channel>' }]);
    expect(view.blocks.some((b) => 'accessory' in b)).toBe(false);
    const json = JSON.stringify(view.blocks);
    expect(json).not.toContain('x.example');
    // A line break shows as its marker, so the two commands do not read as one.
    expect(json).toContain('make test⟨U+000A⟩&lt;!channel&gt;⟨U+000A⟩&amp;&amp; deploy');
  });

  it('an empty Home says nothing waits and nothing was decided yet', () => {
    const view = renderHome({
      waiting: [],
      recent: [],
      channel: 'C0APPROVALS',
      status: { host: true, redis: true },
      now: NOW,
    });
    const json = JSON.stringify(view);
    expect(json).toContain('Nothing is waiting for you to decide.');
    expect(json).toContain('Nothing yet.');
  });
});

describe('/countersign answers', () => {
  it('pending stays within message limits for a long list and says how many more there are', () => {
    const answer = renderPending(waiting(MAX_LISTED + 5, HOSTILE), NOW, false);
    expect(checkMessageLimits(answer)).toEqual([]);
    expect(JSON.stringify(answer)).toContain('…and 5 more, newer than these.');
    expect(JSON.stringify(answer)).not.toContain('<!channel>');
  });

  it('whoami names no route to a stranger it refuses as such: not its name, channel or approvers', () => {
    const refusedAsGuest = (route: string, channel: string) => ({
      route,
      channel,
      ordinary: { allowed: false as const, why: 'guest' as const, route },
      notOwnAgents: false,
    });
    const guest = renderWhoami(
      'U0GUEST',
      [refusedAsGuest('prod-secret', 'C0PRODSECRET'), refusedAsGuest('deploys', 'C0DEPLOYS')],
      false,
    );
    const shown = JSON.stringify(guest.blocks);
    expect(shown).toContain('• all 2 routes: you may not decide: guests may not.');
    for (const hidden of ['prod-secret', 'C0PRODSECRET', 'deploys', 'C0DEPLOYS'])
      expect(shown).not.toContain(hidden);
    // A route that lets guests in is named to them, the others are not.
    const open = renderWhoami(
      'U0GUEST',
      [
        refusedAsGuest('prod-secret', 'C0PRODSECRET'),
        {
          route: 'sandbox',
          channel: 'C0SANDBOX',
          ordinary: { allowed: true, because: 'channelMember', channel: 'C0SANDBOX' },
          notOwnAgents: false,
        },
      ],
      false,
    );
    expect(JSON.stringify(open.blocks)).toContain('*sandbox* in <#C0SANDBOX>: you may decide');
    expect(JSON.stringify(open.blocks)).toContain('• every other route: you may not decide: guests may not.');
    expect(JSON.stringify(open.blocks)).not.toContain('prod-secret');
  });

  it('whoami names ten approvers of a route and counts the rest, within message limits', () => {
    const users = Array.from({ length: 200 }, (_, i) => `U0APPROVER${String(i).padStart(3, '0')}`);
    const refused = {
      allowed: false as const,
      why: 'notApprover' as const,
      route: 'deploys',
      protectedWrite: false,
    };
    const answer = renderWhoami(
      'U0ALICE',
      [
        {
          route: 'deploys',
          channel: 'C0DEPLOYS',
          ordinary: { ...refused, approvers: { users, usergroups: ['S0SRE'] } },
          notOwnAgents: false,
        },
      ],
      false,
    );
    expect(checkMessageLimits(answer)).toEqual([]);
    const shown = JSON.stringify(answer.blocks);
    expect(shown).toContain('<@U0APPROVER009> and 191 more.');
    expect(shown).not.toContain('U0APPROVER010');
  });

  it('whoami stops listing routes at the message text budget and counts the rest', () => {
    const users = Array.from({ length: 10 }, (_, i) => `U0APPROVER${i}`);
    const route = (i: number) => ({
      route: `route-${i}-${'r'.repeat(60)}`,
      channel: `C0ROUTE${i}`,
      ordinary: {
        allowed: false as const,
        why: 'notApprover' as const,
        route: `route-${i}`,
        approvers: { users, usergroups: [] },
        protectedWrite: false,
      },
      protectedWrite: {
        allowed: false as const,
        why: 'notApprover' as const,
        route: `route-${i}`,
        approvers: { users, usergroups: [] },
        protectedWrite: true,
      },
      notOwnAgents: true,
    });
    const answer = renderWhoami(
      'U0ALICE',
      Array.from({ length: 80 }, (_, i) => route(i)),
      false,
    );
    expect(checkMessageLimits(answer)).toEqual([]);
    const shown = JSON.stringify(answer.blocks);
    expect(shown).toContain('route-0-');
    expect(shown).toMatch(/… and \d+ more routes/);
  });

  it('whoami names the owner rule and an escaped route name', () => {
    const answer = renderWhoami(
      'U0ALICE',
      [
        {
          route: '<!channel>',
          channel: 'C0X',
          ordinary: { allowed: true, because: 'channelMember', channel: 'C0X' },
          notOwnAgents: true,
        },
      ],
      false,
    );
    expect(JSON.stringify(answer.blocks)).toContain(
      "• *&lt;!channel&gt;* in <#C0X>: you may decide: you are a member of its channel; never your own agents' approvals.",
    );
  });
});
