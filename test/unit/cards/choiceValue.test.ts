// What a choice button carries: enough to tell, at the press, whether the question it showed is
// still the one asked (docs/security.md, "Who may decide").
import { describe, expect, it } from 'vitest';
import { decodeChoiceValue, encodeChoiceValue } from '../../../src/cards/ids.js';
import { MAX_BUTTON_VALUE } from '../../../src/cards/limits.js';
import { renderCard } from '../../../src/cards/renderCard.js';
import { renderEscalationDm } from '../../../src/cards/renderEscalation.js';
import { renderFullView } from '../../../src/cards/renderFullView.js';
import type { RememberOffer } from '../../../src/domain/grants/match.js';
import { questionDigest } from '../../../src/domain/questionDigest.js';
import type { ApprovalRecord } from '../../../src/domain/record.js';
import { buttons, NOW, shellRecord } from '../../support/cardFixtures.js';

const offer: RememberOffer = {
  choiceId: 'allow_once',
  capabilities: ['exec:npm test'],
  caller: 'session:s1',
  scopes: [{ kind: 'time', ms: 3_600_000 }],
};

/** The same stage asked again with another command: same approval, stage and choices. */
function reasked(record: ApprovalRecord, argv: string[]): ApprovalRecord {
  const stages = record.subject.stages!.map((s, i) => (i === 0 ? { ...s, argv } : s));
  return {
    ...record,
    version: record.version + 1,
    subject: { ...record.subject, command: argv.join(' '), stages },
  };
}

/** The digest every deciding button of a render carries, one per button. */
function digestsOf(blocks: unknown[]): Array<string | undefined> {
  return buttons({ text: '', blocks } as never)
    .filter((b) => /^cs_(choice|remember)_/.test(b.actionId))
    .map((b) => decodeChoiceValue(b.value)?.d);
}

describe('choice button values', () => {
  it('round-trip the digest of the question shown, and drop one that is not a string', () => {
    const value = { s: 0, c: 'allow_once', a: 'a-1', k: 't3600000', d: 'AbC-_0123456789abcdefg' };
    expect(decodeChoiceValue(encodeChoiceValue(value))).toEqual(value);
    expect(decodeChoiceValue('{"s":0,"c":"allow_once","d":7}')).toEqual({ s: 0, c: 'allow_once' });
    // A value of a card posted before buttons carried it decodes without one (refused at the press).
    expect(decodeChoiceValue('{"s":0,"c":"allow_once","a":"a-1"}')).toEqual({
      s: 0,
      c: 'allow_once',
      a: 'a-1',
    });
  });

  it('every deciding button of the card, the escalation DM and the full view names the question it shows', () => {
    const shown = shellRecord(1);
    const asked = questionDigest(shown);
    const card = renderCard(shown, { now: NOW, remember: offer });
    const dm = renderEscalationDm(shown, { waitedMs: 60_000 });
    const full = renderFullView({
      record: shown,
      full: {},
      metadata: { channel: 'C1', ts: '1.1', approvalId: shown.approvalId },
    });
    expect(digestsOf(card.blocks)).toEqual([asked, asked, asked, asked]);
    expect(digestsOf(dm.blocks)).toEqual([asked, asked, asked]);
    expect(digestsOf(full.blocks)).toEqual([asked, asked, asked]);
    // Short: the digest adds a few dozen characters to a value, far below Slack's 2,000.
    for (const b of buttons(card)) expect(b.value.length).toBeLessThan(150);
  });

  it('a stage asked again with another command gets buttons naming the new question, not the old', () => {
    const before = shellRecord(1);
    const after = reasked(before, ['rm', '-rf', '/srv/prod']);
    const old = buttons(renderCard(before, { now: NOW, remember: offer }));
    const now = buttons(renderCard(after, { now: NOW, remember: offer }));
    // Everything else a press carries is the same: only the digest tells the two apart.
    const rest = (v: string) => {
      const { d: _d, ...others } = decodeChoiceValue(v)!;
      return others;
    };
    expect(now.map((b) => rest(b.value))).toEqual(old.map((b) => rest(b.value)));
    expect(new Set(now.map((b) => decodeChoiceValue(b.value)?.d))).toEqual(new Set([questionDigest(after)]));
    expect(questionDigest(after)).not.toBe(questionDigest(before));
  });

  it('keeps the digest when the approvalId has to be left out to fit', () => {
    const long = `a-${'x'.repeat(MAX_BUTTON_VALUE)}`;
    const record = shellRecord(1, {
      approvalId: long,
      currentRequirementId: { approvalId: long, sourceIndex: 0 },
    });
    const values = buttons(renderCard(record, { now: NOW })).map((b) => decodeChoiceValue(b.value));
    expect(values.map((v) => v?.a)).toEqual([undefined, undefined, undefined]);
    expect(values.map((v) => v?.d)).toEqual(Array(3).fill(questionDigest(record)));
  });
});
