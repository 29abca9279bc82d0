// Audit entries as the bot writes them, for tests of the streams that hold them.

import type { DecisionEntry } from '../../src/domain/audit.js';

/** Alice's click that approved `a-<n>` once, on host `main`; `extra` overrides any field. */
export function decisionEntry(n: number, extra: Partial<DecisionEntry> = {}): DecisionEntry {
  return {
    kind: 'decision',
    approvalId: `a-${n}`,
    hostId: 'main',
    tool: 'shell',
    userId: 'U0ALICE',
    via: 'click',
    choiceId: 'allow_once',
    decision: 'approved',
    at: '2026-12-01T10:00:00.000Z',
    ...extra,
  };
}
