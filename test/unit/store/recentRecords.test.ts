import { expect, it } from 'vitest';
import type { ApprovalRecord } from '../../../src/domain/record.js';
import { RecentRecords } from '../../../src/store/recentRecords.js';

const record = (approvalId: string, version = 1) => ({ approvalId, version }) as ApprovalRecord;

it('keeps the records seen last, the least recently seen leaving first', () => {
  const recent = new RecentRecords(2);
  recent.seen(record('a'));
  recent.seen(record('b'));
  recent.seen(record('a', 2));
  recent.seen(record('c'));
  expect(recent.get('a')?.version).toBe(2);
  expect(recent.get('b')).toBeUndefined();
  expect(recent.get('c')?.version).toBe(1);
  recent.forget('a');
  expect(recent.get('a')).toBeUndefined();
});
