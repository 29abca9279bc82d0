// What the host says of a resolution (who decided, what, under which policy, when) is stored on
// the record, written to the audit stream and its log line, and shown on the card. The request's
// own text is cut and masked at intake; these words must be bounded too, or one approval/resolved
// with a megabyte in `resolvedBy` puts a megabyte in Redis, the audit and the log.
import { describe, expect, it } from 'vitest';
import {
  ApprovalAlreadyResolvedData,
  ApprovalResolvedParams,
  MAX_HOST_WORD_UNITS,
} from '../../../src/msp/protocol.js';

const base = {
  sessionId: 's1',
  approvalId: 'a1',
  decision: 'approved',
  resolvedBy: 'user',
  decidedAt: '2026-10-01T09:06:12Z',
};

describe('the words of a resolution', () => {
  it('keeps what hosts send as it is', () => {
    const parsed = ApprovalResolvedParams.parse({
      ...base,
      policyResult: 'allow',
      amendment: { durability: 'session', rulePreview: 'npm test' },
    });
    expect(parsed).toMatchObject({ ...base, policyResult: 'allow', amendment: { durability: 'session' } });
    expect(
      ApprovalResolvedParams.parse({ ...base, decidedAt: '2026-10-01T09:06:12.123+02:00' }).decidedAt,
    ).toBe('2026-10-01T09:06:12.123+02:00');
  });

  it('cuts a decision, resolvedBy, policyResult and durability past the bound, at a whole character', () => {
    const huge = `${'x'.repeat(MAX_HOST_WORD_UNITS - 1)}😀${'y'.repeat(1_000_000)}`;
    const parsed = ApprovalResolvedParams.parse({
      ...base,
      decision: huge,
      resolvedBy: huge,
      policyResult: huge,
      amendment: { durability: huge, rulePreview: 'r' },
    });
    for (const word of [
      parsed.decision,
      parsed.resolvedBy,
      parsed.policyResult,
      parsed.amendment?.durability,
    ]) {
      expect(word).toBe('x'.repeat(MAX_HOST_WORD_UNITS - 1));
    }
    const winner = ApprovalAlreadyResolvedData.parse({ resolution: { decision: huge, resolvedBy: huge } });
    expect(winner.resolution?.decision).toHaveLength(MAX_HOST_WORD_UNITS - 1);
    expect(winner.resolution?.resolvedBy).toHaveLength(MAX_HOST_WORD_UNITS - 1);
  });

  it('drops a decidedAt that is no time with its zone, so the record takes its own', () => {
    for (const decidedAt of [
      'yesterday',
      '2026-10-01 09:06',
      '2026-02-30T09:06:12Z',
      `2026-10-01T09:06:12Z${' '.repeat(1e6)}`,
    ]) {
      expect(ApprovalResolvedParams.parse({ ...base, decidedAt }).decidedAt).toBeUndefined();
    }
  });
});
