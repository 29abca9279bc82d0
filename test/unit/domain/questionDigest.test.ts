// The digest a confirmation modal carries of the question it showed.

import { describe, expect, it } from 'vitest';
import { questionDigest } from '../../../src/domain/questionDigest.js';
import { fileRecord } from '../../support/cardFixtures.js';

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
});
