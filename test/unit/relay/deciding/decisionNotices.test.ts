// When a resolution's notices store what became of them (the ledger's settle), against a ledger
// and an audit trail kept in memory.

import { describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../../../src/domain/audit.js';
import { DecisionNotices, type NoticeSender } from '../../../../src/relay/deciding/decisionNotices.js';
import { captureLogger } from '../../../support/logCapture.js';
import { sampleRecord } from '../../../support/sampleRecord.js';
import { until } from '../../../support/until.js';

function notices() {
  const events: string[] = [];
  let appended: () => void = () => {};
  const { logger } = captureLogger('debug');
  const sender: NoticeSender = {
    decisionLine: async () => {
      events.push('thread line');
    },
    requesterDm: async () => {},
    permalink: async () => undefined,
    nameOf: async () => undefined,
  };
  const followed = new DecisionNotices({
    sender,
    ledger: {
      claim: async (_id, kind) => {
        events.push(`claim ${kind}`);
        return true;
      },
      settle: async (_id, kind, outcome) => {
        events.push(`settle ${kind} ${outcome}`);
      },
    },
    audit: {
      append: (entry: AuditEntry) => {
        events.push(`append ${entry.kind}`);
        return new Promise<void>((resolve) => {
          appended = resolve;
        });
      },
    },
    ownerOf: () => undefined,
    logger,
  });
  return { followed, events, appended: () => appended() };
}

const resolved = sampleRecord('dn-1', {
  phase: 'resolved',
  resolution: { decision: 'approved', resolvedBy: 'policy', decidedAt: '2026-11-30T10:00:01.000Z' },
});

describe('DecisionNotices', () => {
  it('stores the audit notice as sent as its entry leaves, not after Redis answers it', async () => {
    const { followed, events, appended } = notices();
    followed.follow(resolved);
    // The append is still unanswered: its outcome went out with it.
    await until(() => events.includes('settle audit sent'));
    expect(events.indexOf('append decision')).toBeLessThan(events.indexOf('settle audit sent'));
    appended();
    await followed.idle();
    expect(events.filter((e) => e.startsWith('settle audit'))).toEqual(['settle audit sent']);
  });

  it('stores the thread line as sent only once it was posted', async () => {
    const { followed, events, appended } = notices();
    followed.follow({ ...resolved, slack: { channel: 'C1', ts: '1.000001' } });
    await until(() => events.includes('append decision'));
    appended();
    await followed.idle();
    expect(events.indexOf('thread line')).toBeLessThan(events.indexOf('settle thread sent'));
  });
});
