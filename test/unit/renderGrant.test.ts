import { describe, expect, it } from 'vitest';
import { decodeChoiceValue, REMEMBER_ACTION_ID } from '../../src/cards/ids.js';
import { renderCard } from '../../src/cards/renderCard.js';
import { grantListLine, rememberLabel, renderGrantLine } from '../../src/cards/renderGrant.js';
import type { Grant } from '../../src/grants/grant.js';
import {
  allText,
  blocksOfType,
  buttons,
  DECIDED_AT,
  inPhase,
  type Json,
  NOW,
  shellRecord,
} from './cardFixtures.js';

const EVIL = '<!channel> <https://evil|docs> @here <@U123>';
const LIVE = ['<!channel>', '<https://evil', '<@U123>'];

const offer = {
  choiceId: 'allow_once',
  capabilities: ['exec:npm test'],
  caller: 'session:s1',
  ttlMs: 8 * 3_600_000,
};

describe('the "don\'t ask again" button', () => {
  it('says what it covers and for how long, in at most 75 characters', () => {
    expect(rememberLabel(['exec:git push'], 'session:s1', 8 * 3_600_000)).toBe(
      "Don't ask again: git push in this session for 8 h",
    );
    expect(rememberLabel(['file-write:/srv/a.ts'], 'host:ci', 7 * 86_400_000)).toBe(
      "Don't ask again: write /srv/a.ts on this host for 7 days",
    );
    expect(
      rememberLabel([`exec:${'x'.repeat(200)}`], 'user:U0ALICE', 30 * 60_000).length,
    ).toBeLessThanOrEqual(75);
  });

  it('sits in its own actions block after the host’s choices, and carries the once-choice of this stage', () => {
    const card = renderCard(shellRecord(1), { now: NOW, remember: offer });
    const actions = blocksOfType(card, 'actions');
    const last = actions.at(-1) as Json;
    expect(String(last.block_id)).toMatch(/^cs_remember_v\d+$/);
    const all = buttons(card);
    expect(all.slice(0, -1).map((b) => b.actionId)).toEqual(
      shellRecord(1).availableChoices.map((_, i) => `cs_choice_${i}`),
    );
    const remember = all.at(-1)!;
    expect(remember.actionId).toBe(REMEMBER_ACTION_ID);
    expect(decodeChoiceValue(remember.value)).toEqual({
      s: 0,
      c: 'allow_once',
      a: shellRecord(1).approvalId,
    });
  });

  it('is not shown without an offer, nor when the offered choice is not on the card', () => {
    expect(
      buttons(renderCard(shellRecord(1), { now: NOW })).some((b) => b.actionId === REMEMBER_ACTION_ID),
    ).toBe(false);
    const elsewhere = renderCard(shellRecord(1), { now: NOW, remember: { ...offer, choiceId: 'gone' } });
    expect(buttons(elsewhere).some((b) => b.actionId === REMEMBER_ACTION_ID)).toBe(false);
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

  it('a host-held grant is listed with its rule, kept by the host', () => {
    const line = grantListLine({ ...grant, holder: 'host', rulePreview: EVIL, scope: 'localPersistent' });
    for (const live of LIVE) expect(line).not.toContain(live);
    expect(line).toContain('Kept by the host (localPersistent)');
    expect(line).toContain('MSP cannot revoke it');
  });
});
