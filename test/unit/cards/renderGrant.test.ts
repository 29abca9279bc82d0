import { describe, expect, it } from 'vitest';
import { decodeChoiceValue } from '../../../src/cards/ids.js';
import { renderCard } from '../../../src/cards/renderCard.js';
import {
  capabilitiesText,
  grantListLine,
  rememberHeading,
  renderGrantLine,
  scopeLabel,
} from '../../../src/cards/renderGrant.js';
import type { Grant } from '../../../src/domain/grants/grant.js';
import { questionDigest } from '../../../src/domain/questionDigest.js';
import {
  allText,
  blocksOfType,
  buttons,
  DECIDED_AT,
  inPhase,
  type Json,
  NOW,
  shellRecord,
} from '../../support/cardFixtures.js';

const EVIL = '<!channel> <https://evil|docs> @here <@U123>';
const LIVE = ['<!channel>', '<https://evil', '<@U123>'];

const offer = {
  choiceId: 'allow_once',
  capabilities: ['exec:npm test'],
  caller: 'session:s1',
  scopes: [
    { kind: 'time' as const, ms: 3_600_000 },
    { kind: 'time' as const, ms: 8 * 3_600_000 },
    { kind: 'session' as const },
    { kind: 'uses' as const, uses: 10 },
  ],
};

const isRemember = (b: { actionId: string }) => /^cs_remember/.test(b.actionId);

describe('the "don\'t ask again" buttons', () => {
  it('say what is remembered once, and each scope on its own button', () => {
    expect(rememberHeading(['exec:git push'], 'session:s1')).toBe(
      "*Approve and don't ask again:* `git push` in this session",
    );
    expect(rememberHeading(['file-write:/srv/a.ts', 'exec:ls'], 'host:ci')).toBe(
      "*Approve and don't ask again:* 2 capabilities on this host",
    );
    expect(rememberHeading([`exec:${EVIL}`], 'user:U0ALICE')).not.toContain('<!channel>');
    expect(offer.scopes.map(scopeLabel)).toEqual([
      'For 1 h',
      'For 8 h',
      'For this session',
      'For the next 10 uses',
    ]);
    expect(scopeLabel({ kind: 'time', ms: 7 * 86_400_000 })).toBe('For 7 days');
    expect(scopeLabel({ kind: 'uses', uses: 1 })).toBe('For the next use');
  });

  it('sit in their own actions block after the host’s choices, each carrying the once-choice of this stage and its scope', () => {
    const card = renderCard(shellRecord(1), { now: NOW, remember: offer });
    const actions = blocksOfType(card, 'actions');
    const last = actions.at(-1) as Json;
    expect(String(last.block_id)).toMatch(/^cs_remember_v\d+$/);
    const all = buttons(card);
    expect(all.filter((b) => !isRemember(b)).map((b) => b.actionId)).toEqual(
      shellRecord(1).availableChoices.map((_, i) => `cs_choice_${i}`),
    );
    const remember = all.filter(isRemember);
    expect(remember.map((b) => b.actionId)).toEqual([
      'cs_remember_0',
      'cs_remember_1',
      'cs_remember_2',
      'cs_remember_3',
    ]);
    expect(remember.map((b) => decodeChoiceValue(b.value))).toEqual(
      ['t3600000', 't28800000', 's', 'u10'].map((k) => ({
        s: 0,
        c: 'allow_once',
        a: shellRecord(1).approvalId,
        k,
        d: questionDigest(shellRecord(1)),
      })),
    );
    expect(allText(card)).toContain("*Approve and don't ask again:* `npm test` in this session");
  });

  it('are not shown without an offer, nor when the offered choice is not on the card', () => {
    expect(buttons(renderCard(shellRecord(1), { now: NOW })).some(isRemember)).toBe(false);
    const elsewhere = renderCard(shellRecord(1), { now: NOW, remember: { ...offer, choiceId: 'gone' } });
    expect(buttons(elsewhere).some(isRemember)).toBe(false);
    expect(allText(elsewhere)).not.toContain("don't ask again");
  });
});

describe('what a card says about grants', () => {
  it('a resolved card says what was remembered, until when and how to revoke it', () => {
    const record = inPhase(shellRecord(1), 'resolved');
    const card = renderCard(
      {
        ...record,
        remembered: {
          grantId: 'ab12-cd34',
          grantedBy: 'U0ALICE',
          expiresAt: '2026-08-08T02:44:44.000Z',
          capabilities: ['exec:npm test'],
        },
      },
      { now: NOW },
    );
    const text = allText(card);
    expect(text).toContain(':repeat: *Remembered:* `npm test`');
    expect(text).toContain('<!date^1786157084^');
    expect(text).toContain('`/countersign revoke ab12-cd34`');
  });

  it('a card shown after a grant decided a stage says which stage, by which grant', () => {
    const record = shellRecord(2, {
      grantUses: [{ sourceIndex: 0, grantId: 'ab12-cd34', grantedBy: 'U0ALICE', expiresAt: DECIDED_AT }],
    });
    expect(allText(renderCard(record, { now: NOW }))).toContain(
      'Stage 1 of 2 was approved by a remembered grant, `ab12-cd34` (granted by <@U0ALICE>',
    );
  });
});

const grant: Grant = {
  grantId: 'ab12-cd34',
  holder: 'bot',
  caller: 'session:s1',
  tool: EVIL,
  capabilities: [`exec:echo ${EVIL}`, `file-write:/srv/${EVIL}`],
  sandboxMode: EVIL,
  grantedBy: 'U0ALICE',
  approvalId: 'a1',
  hostId: 'main',
  route: 'default',
  channel: 'C0APPROVALS',
  createdAt: '2026-12-01T10:00:00Z',
  expiresAt: '2026-12-01T18:00:00Z',
  uses: 3,
};

describe('grant lines are inert whatever the agent sent', () => {
  it('the line left by a grant’s use names the grant, the granter by name, the expiry and how to revoke', () => {
    const line = renderGrantLine({
      tool: EVIL,
      capabilities: grant.capabilities,
      stage: { position: 1, total: 2 },
      grant: { grantId: grant.grantId, grantedBy: 'U0ALICE', expiresAt: grant.expiresAt! },
      grantedByName: 'Alice',
    });
    for (const live of LIVE) expect(line).not.toContain(live);
    expect(line).not.toMatch(/(?<!`)@here/);
    expect(line).toContain('(stage 1 of 2)');
    expect(line).toContain('granted by Alice');
    expect(line).not.toContain('<@U0ALICE>');
    expect(line).toContain('`/countersign revoke ab12-cd34`');
  });

  it('a listed grant shows caller, tool, capabilities, sandbox mode, granter, expiry and uses', () => {
    const line = grantListLine(grant);
    for (const live of LIVE) expect(line).not.toContain(live);
    expect(line).toContain('in session `s1`');
    expect(line).toContain('used 3 times');
    expect(line).toContain('granted by <@U0ALICE>');
    expect(line).toContain('until <!date^');
  });

  it('a listed grant says the time left as of the listing, and a grant by uses its uses left', () => {
    const at = new Date('2026-12-01T15:00:00Z');
    expect(grantListLine(grant, undefined, at)).toContain('expires in 3 h (until <!date^');
    const counted = grantListLine({ ...grant, maxUses: 3, usesLeft: 2, uses: 1 }, undefined, at);
    expect(counted).toContain('2 uses left of 3 · expires in 3 h');
    expect(grantListLine({ ...grant, maxUses: 3, usesLeft: 1 }, undefined, at)).toContain('1 use left of 3');
    expect(grantListLine({ ...grant, lasts: { kind: 'session' } }, undefined, at)).toContain(
      'for the session, expires in 3 h',
    );
  });

  it('the line of a use by a grant by uses says how many are left', () => {
    const line = renderGrantLine({
      tool: 'bash',
      capabilities: ['exec:npm test'],
      grant: { grantId: 'ab12-cd34', grantedBy: 'U0ALICE', expiresAt: grant.expiresAt!, usesLeft: 2 },
    });
    expect(line).toContain('(granted by <@U0ALICE>, 2 uses left, until <!date^');
  });

  it('a shell grant reads as its command in its workspace, wherever it is shown', () => {
    const capabilities = ['exec:make install', 'in:/srv/a'];
    expect(rememberHeading(capabilities, 'session:s1')).toBe(
      "*Approve and don't ask again:* `make install` in `/srv/a` in this session",
    );
    const line = renderGrantLine({
      tool: 'bash',
      capabilities,
      grant: { grantId: 'ab12-cd34', grantedBy: 'U0ALICE', expiresAt: grant.expiresAt! },
    });
    expect(line).toContain('— `make install` in `/srv/a`.');
    expect(grantListLine({ ...grant, tool: 'bash', capabilities })).toContain(
      '*`bash`* `make install` in `/srv/a` in session `s1`',
    );
    const card = renderCard(
      {
        ...inPhase(shellRecord(1), 'resolved'),
        remembered: { grantId: 'ab12-cd34', grantedBy: 'U0ALICE', expiresAt: DECIDED_AT, capabilities },
      },
      { now: NOW },
    );
    expect(allText(card)).toContain(':repeat: *Remembered:* `make install` in `/srv/a` ');
    // An agent's root is code too, however it is spelled.
    expect(rememberHeading(['exec:ls', `in:/srv/${EVIL}`], 'host:ci')).not.toContain('<!channel>');
  });

  it('a tool grant says it covers the tool whatever its arguments, wherever it is shown', () => {
    // The card showed one call's arguments; the grant answers every call of the tool.
    expect(rememberHeading(['tool:run_sql'], 'session:s1')).toBe(
      "*Approve and don't ask again:* tool `run_sql`, any arguments in this session",
    );
    expect(capabilitiesText(['tool:run_sql'])).toBe('tool `run_sql`, any arguments');
  });

  it('a host-held grant is listed with its rule, kept by the host', () => {
    const line = grantListLine({ ...grant, holder: 'host', rulePreview: EVIL, scope: 'localPersistent' });
    for (const live of LIVE) expect(line).not.toContain(live);
    expect(line).toContain('Kept by the host (localPersistent)');
    expect(line).toContain('MSP cannot revoke it');
  });
});
