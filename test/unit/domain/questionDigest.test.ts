// The digest every deciding button and confirmation modal carries of the question it showed.

import { describe, expect, it } from 'vitest';
import { questionDigest } from '../../../src/domain/questionDigest.js';
import { fileRecord, shellRecord } from '../../support/cardFixtures.js';

describe('questionDigest', () => {
  it('is the same for the same question whatever the order of its keys, and differs when it changes', () => {
    const record = fileRecord();
    // The same record with every object's keys in reverse order, as another replica may hold it.
    const reversed = JSON.parse(JSON.stringify(record), (_key, value: unknown) =>
      value && typeof value === 'object' && !Array.isArray(value)
        ? Object.fromEntries(Object.entries(value).reverse())
        : value,
    ) as typeof record;
    expect(JSON.stringify(reversed.subject)).not.toBe(JSON.stringify(record.subject));
    expect(questionDigest(reversed)).toBe(questionDigest(record));
    const otherPath = { ...record, subject: { ...record.subject, path: '/etc/other' } };
    expect(questionDigest(otherPath)).not.toBe(questionDigest(record));
    const risky = { ...record, risks: [{ name: 'secrets', warning: 'Writes a secret' }] };
    expect(questionDigest(risky)).not.toBe(questionDigest(record));
  });

  it('differs when the card marks a protected write or a judge escalation, or shows other computer-use facts', () => {
    const record = fileRecord();
    const facts = { page: { host: 'bank.example' }, windowTitle: 'Pay', steps: ['click Pay'], data: [] };
    const withFacts = fileRecord({ cuaCardFacts: facts });
    const asked = [
      record,
      fileRecord({ protectedWrite: true }),
      fileRecord({ judgeEscalated: true }),
      fileRecord({ protectedWrite: true, judgeEscalated: true }),
      withFacts,
      fileRecord({ cuaCardFacts: { ...facts, page: { host: 'xn--bnk-sla.example', hostAscii: 'xn--bnk' } } }),
      fileRecord({ cuaCardFacts: { ...facts, page: { host: 'other.example' } } }),
      fileRecord({ cuaCardFacts: { ...facts, windowTitle: 'Pay 10,000' } }),
      fileRecord({ cuaCardFacts: { ...facts, steps: ['click Pay', 'click Confirm'] } }),
      fileRecord({ cuaCardFacts: { ...facts, data: [{ kind: 'card', last4: '4242' }] } }),
    ];
    // Each of these is another question to the person who sees the card: no two share a digest.
    expect(new Set(asked.map(questionDigest)).size).toBe(asked.length);
  });

  it('leaves out what the card does not show, and is unchanged for a card without those marks', () => {
    const facts = { page: { host: 'bank.example' }, steps: ['click Pay'] };
    const withFacts = fileRecord({ cuaCardFacts: facts });
    // Fields of the computer-use facts the card never renders change nothing a person sees.
    const unshown = fileRecord({
      cuaCardFacts: { ...facts, cursor: [10, 20], page: { ...facts.page, tabId: 7 } },
    });
    expect(questionDigest(unshown)).toBe(questionDigest(withFacts));
    // A card that marks none of them keeps the digest its buttons carried before these were
    // covered: those pending across the upgrade are not refused for it (docs/security.md).
    expect(questionDigest(fileRecord())).toBe('NeI0CTXd1hSAk8a5AJKGei');
    expect(questionDigest(shellRecord(1))).toBe('Y3oizWP3SUq2Q42VM0zph6');
  });
});
