// Grants as Slack shows them: /countersign grants, the Grants section of App Home, the line a
// revocation leaves in the channel and the answer the person gets. Everything of a grant comes
// from the agent or its host, so none of it may become a live mention or link.

import { describe, expect, it } from 'vitest';
import { REVOKE_GRANT_ACTION_ID } from '../../../src/cards/ids.js';
import { checkMessageLimits, checkViewLimits } from '../../../src/cards/limits.js';
import { MAX_LISTED_GRANTS, renderChannelGrants } from '../../../src/cards/renderGrantList.js';
import { MAX_HOME_BLOCKS, MAX_HOME_WAITING, renderHome } from '../../../src/cards/renderHome.js';
import { renderRevokedLine, revokeAnswer } from '../../../src/cards/renderRevocation.js';
import type { WaitingApproval } from '../../../src/cards/renderWaiting.js';
import type { Grant } from '../../../src/domain/grants/grant.js';
import { fileRecord, NOW } from '../../support/cardFixtures.js';

const HOSTILE = '<!channel> <@U0BOSS> <https://evil.example|docs> @here';

function grant(overrides: Partial<Grant> = {}): Grant {
  return {
    grantId: '0123456789-abcdef012345',
    caller: 'session:s-1',
    tool: 'shell',
    capabilities: ['exec:echo <!channel>'],
    sandboxMode: 'workspace-write',
    holder: 'bot',
    grantedBy: 'U0ALICE',
    approvalId: 'a-1',
    hostId: 'main',
    route: 'deploys',
    channel: 'C0DEPLOYS',
    createdAt: '2026-12-01T10:00:00.000Z',
    expiresAt: '2026-12-01T18:00:00.000Z',
    uses: 3,
    ...overrides,
  };
}

const hostile = (i = 0): Grant =>
  grant({
    grantId: `0123456789-${HOSTILE}-${i}`,
    caller: `session:${HOSTILE}`,
    tool: HOSTILE,
    capabilities: Array.from({ length: 30 }, (_, k) => `exec:echo <!channel> ${k} ${'x'.repeat(300)}`),
    sandboxMode: HOSTILE,
  });

/** Every mrkdwn text in `value` (a message, a view, blocks): where Slack reads markup. */
function mrkdwnTexts(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(mrkdwnTexts);
  if (!value || typeof value !== 'object') return [];
  const o = value as Record<string, unknown>;
  if (o.type === 'mrkdwn' && typeof o.text === 'string') return [o.text];
  // A button's value and plain_text are never read as markup.
  if (o.type === 'plain_text' || o.type === 'button') return [];
  return Object.values(o).flatMap(mrkdwnTexts);
}

/** No `<` that Slack would read as markup, except the tokens we make ourselves. */
function liveMarkup(message: unknown): string[] {
  const tokens = mrkdwnTexts(message).flatMap((text) => [
    ...(text.match(/<[^>]*>/g) ?? []),
    ...(text.match(/@(here|channel|everyone)/g) ?? []),
  ]);
  return tokens.filter(
    (t) =>
      !/^<(@U0[A-Z0-9]+|#C0[A-Z0-9]+|!date\^\d+\^[^|]*\|[^>]*|https:\/\/test\.slack\.com\/archives\/[^|]+\|write_file)>$/.test(
        t,
      ),
  );
}

function sectionsOf(
  blocks: unknown[],
): Array<{ text: { text: string }; accessory?: Record<string, unknown> }> {
  return (blocks as Array<{ type: string }>).filter((b) => b.type === 'section') as never;
}

describe('/countersign grants', () => {
  it('lists each grant: tool, capabilities, caller, sandbox, granter, expiry and uses, with a Revoke button', () => {
    const answer = renderChannelGrants({
      grants: [grant()],
      scope: { kind: 'channel', channel: 'C0DEPLOYS' },
    });
    const [head, entry] = sectionsOf(answer.blocks);
    expect(head!.text.text).toBe('*1 active grant* in <#C0DEPLOYS>, newest first:');
    const line = entry!.text.text;
    expect(line).toContain('*`shell`*');
    expect(line).toContain('`echo &lt;!channel&gt;`');
    expect(line).toContain('in session `s-1`');
    expect(line).toContain('sandbox `workspace-write`');
    expect(line).toContain('granted by <@U0ALICE>');
    expect(line).toMatch(/until <!date\^\d+\^/);
    expect(line).toContain('used 3 times');
    expect(entry!.accessory).toMatchObject({
      type: 'button',
      action_id: REVOKE_GRANT_ACTION_ID,
      value: '0123456789-abcdef012345',
      text: { text: 'Revoke' },
      style: 'danger',
    });
    expect(liveMarkup(answer)).toEqual([]);
  });

  it('lists a host-held grant with its rule and no Revoke button, saying the host keeps it', () => {
    const answer = renderChannelGrants({
      grants: [
        grant({ holder: 'host', expiresAt: undefined, rulePreview: `allow ${HOSTILE}`, scope: 'session' }),
      ],
      scope: { kind: 'all' },
    });
    const [head, entry] = sectionsOf(answer.blocks);
    expect(head!.text.text).toContain('in every channel (you are an admin)');
    expect(entry!.accessory).toBeUndefined();
    expect(entry!.text.text).toContain('Kept by the host (session)');
    expect(entry!.text.text).toContain('remove it on the host side; MSP cannot revoke it');
    expect(entry!.text.text).toContain('allow &lt;!channel&gt;');
    expect(JSON.stringify(answer)).toContain('Grants kept by the host have no button');
    expect(liveMarkup(answer)).toEqual([]);
  });

  it('stays within message limits for many hostile grants, and counts those left out', () => {
    const grants = Array.from({ length: 100 }, (_, i) => hostile(i));
    const answer = renderChannelGrants({ grants, scope: { kind: 'channel', channel: 'C0DEPLOYS' } });
    expect(checkMessageLimits(answer)).toEqual([]);
    // Hostile grants are long: fewer fit in the message's text budget than the count allows.
    const buttons = sectionsOf(answer.blocks).filter((s) => s.accessory).length;
    expect(buttons).toBeGreaterThan(0);
    expect(buttons).toBeLessThan(MAX_LISTED_GRANTS);
    const json = JSON.stringify(answer);
    expect(json).toContain(`…and ${100 - buttons} more, older than these.`);
    expect(json).toContain('*100+ active grants*');
    expect(json).toContain('and 20 more');
    // Ordinary grants: as many as the count allows.
    const plain = Array.from({ length: 30 }, (_, i) => grant({ grantId: `0123456789-${i}` }));
    const many = renderChannelGrants({ grants: plain, scope: { kind: 'all' } });
    expect(checkMessageLimits(many)).toEqual([]);
    expect(sectionsOf(many.blocks).filter((s) => s.accessory)).toHaveLength(MAX_LISTED_GRANTS);
    expect(JSON.stringify(many)).toContain(`…and ${30 - MAX_LISTED_GRANTS} more, older than these.`);
    expect(liveMarkup(answer)).toEqual([]);
  });

  it('says when a channel has none', () => {
    const answer = renderChannelGrants({ grants: [], scope: { kind: 'channel', channel: 'C0SHELL' } });
    expect(answer.text).toBe('No active grants in <#C0SHELL>.');
  });
});

describe('App Home grants', () => {
  function waiting(n: number): WaitingApproval[] {
    return Array.from({ length: n }, (_, i) => ({
      record: fileRecord({ approvalId: `w-${i}`, slack: { channel: 'C0A', ts: `1700000000.${i}` } }),
      permalink: `https://test.slack.com/archives/C0A/p${i}`,
    }));
  }

  it('a full Home still fits in 100 blocks: the grants are capped and the rest counted', () => {
    const view = renderHome({
      waiting: waiting(MAX_HOME_WAITING + 3),
      recent: [],
      channel: 'C0A',
      status: { host: true, redis: true },
      now: NOW,
      grants: Array.from({ length: 100 }, (_, i) => hostile(i)),
      notice: revokeAnswer({ kind: 'revoked', grant: hostile(), by: 'U0BOB', because: 'user' }),
    });
    expect(view.blocks.length).toBeLessThanOrEqual(MAX_HOME_BLOCKS);
    expect(checkViewLimits(view)).toEqual([]);
    const json = JSON.stringify(view.blocks);
    const revokes = json.split(`"action_id":"${REVOKE_GRANT_ACTION_ID}"`).length - 1;
    expect(revokes).toBeGreaterThan(0);
    expect(json).toContain(`…and ${100 - revokes} more, older than these.`);
    expect(liveMarkup(view)).toEqual([]);
  });

  it('shows the Grants section with Revoke buttons, and says when there are none', () => {
    const base = { waiting: [], recent: [], channel: 'C0A', status: { host: true, redis: true }, now: NOW };
    const view = renderHome({
      ...base,
      grants: [grant(), grant({ grantId: '0123456789-h1', holder: 'host' })],
    });
    const start = view.blocks.findIndex((b) => b.type === 'header' && JSON.stringify(b).includes('"Grants"'));
    expect(start).toBeGreaterThan(0);
    const after = sectionsOf(view.blocks.slice(start + 1));
    expect(after.map((s) => (s.accessory as { value?: string } | undefined)?.value)).toEqual([
      '0123456789-abcdef012345',
      undefined,
    ]);
    expect(JSON.stringify(renderHome(base))).toContain('No active grants of yours or in your channels.');
  });
});

describe('revocations', () => {
  it('the channel line says who revoked what, by name, escaped', () => {
    const line = renderRevokedLine({
      grant: hostile(),
      by: 'U0BOB',
      byName: 'bob <!here>',
      grantedByName: 'alice',
    });
    expect(line).toMatch(/^:no_entry_sign: Grant `0123456789-&lt;!channel&gt;/);
    expect(line).toContain('was revoked by bob &lt;!here&gt;');
    expect(line).toContain('granted by alice');
    expect(line).toContain('echo &lt;!channel&gt; 0');
    expect(liveMarkup(line)).toEqual([]);
    // Without names, people are mentioned.
    expect(renderRevokedLine({ grant: grant(), by: 'U0BOB' })).toContain('revoked by <@U0BOB>');
  });

  it("the channel line names the owner of an owner's grant, never pinging them", () => {
    const line = renderRevokedLine({
      grant: grant({ caller: 'user:U0OWNER' }),
      by: 'U0BOB',
      byName: 'bob',
      grantedByName: 'alice',
      ownerName: 'olga',
    });
    expect(line).toContain('for olga’s agents');
    expect(line).not.toContain('<@');
  });

  it('each outcome has its own answer for the person, never with live markup from the grant', () => {
    const g = hostile();
    const answers = [
      revokeAnswer({ kind: 'revoked', grant: g, by: 'U0BOB', because: 'user' }),
      revokeAnswer({ kind: 'unknown', grantId: HOSTILE }),
      revokeAnswer({ kind: 'expired', grant: g }),
      revokeAnswer({
        kind: 'alreadyRevoked',
        grant: { ...g, revokedBy: 'U0ADA', revokedAt: NOW.toISOString() },
      }),
      revokeAnswer({ kind: 'hostHeld', grant: { ...g, holder: 'host', rulePreview: HOSTILE } }),
      revokeAnswer({ kind: 'refused', grantId: HOSTILE }),
    ];
    expect(answers[0]).toMatch(/^:white_check_mark: You revoked grant /);
    expect(answers[1]).toMatch(/^There is no grant `&lt;!channel&gt;/);
    expect(answers[2]).toContain('already expired');
    expect(answers[3]).toContain('was already revoked by <@U0ADA>');
    expect(answers[4]).toContain('Countersign cannot revoke it');
    // Who may not revoke a grant may not see it: refused reads exactly as an unknown id.
    expect(answers[5]).toBe(answers[1]);
    for (const text of answers) {
      expect(liveMarkup(text)).toEqual([]);
    }
  });

  it('a spent grant says it was used up, never that someone revoked it', () => {
    const one = revokeAnswer({
      kind: 'spent',
      grant: { ...hostile(), maxUses: 1, usesLeft: 0, uses: 1, lastUsedAt: NOW.toISOString() },
    });
    expect(one).toMatch(
      /^Grant `0123456789-&lt;!channel&gt;.* was already used up \(its one use spent, the last <!date\^/,
    );
    expect(one).toContain('there is nothing to revoke');
    expect(one).not.toContain('revoked');
    expect(liveMarkup(one.replace(/<!date\^[^>]*>/g, ''))).toEqual([]);
    const three = revokeAnswer({ kind: 'spent', grant: { ...grant(), maxUses: 3, usesLeft: 0, uses: 3 } });
    expect(three).toContain('(all 3 of its uses spent)');
  });

  it('a grant replaced by a new "don\'t ask again" names the grant that took its place, and who pressed', () => {
    const replaced = revokeAnswer({
      kind: 'alreadyRevoked',
      grant: {
        ...hostile(),
        revokedBy: 'U0BOB',
        revokedAt: NOW.toISOString(),
        replacedBy: `0123456789-${HOSTILE}`,
      },
    });
    expect(replaced).toContain('was replaced by grant `0123456789-&lt;!channel&gt;');
    expect(replaced).toContain('of <@U0BOB>');
    expect(replaced).not.toContain('already revoked');
    expect(liveMarkup(replaced)).toEqual([]);
  });
});
