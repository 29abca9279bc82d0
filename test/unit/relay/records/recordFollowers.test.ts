import { describe, expect, it } from 'vitest';
import type { ApprovalRecord } from '../../../../src/domain/record.js';
import { RecordFollowers } from '../../../../src/relay/records/recordFollowers.js';

describe('RecordFollowers', () => {
  const record = { approvalId: 'a-1' } as ApprovalRecord;

  it('tells every follower of each change, in the order they were added', () => {
    const told: string[] = [];
    const followers = new RecordFollowers();
    for (const name of ['grantAnswerer', 'grantMaker', 'notices', 'home', 'escalator']) {
      followers.add({ follow: (r) => told.push(`${name}:${r.approvalId}`) });
    }
    followers.notify(record);
    followers.notify({ ...record, approvalId: 'a-2' });
    expect(told).toEqual([
      'grantAnswerer:a-1',
      'grantMaker:a-1',
      'notices:a-1',
      'home:a-1',
      'escalator:a-1',
      'grantAnswerer:a-2',
      'grantMaker:a-2',
      'notices:a-2',
      'home:a-2',
      'escalator:a-2',
    ]);
  });

  it('tells a follower added later of the changes after it joined, not before', () => {
    const followers = new RecordFollowers();
    followers.notify(record);
    const seen: string[] = [];
    followers.add({ follow: (r) => seen.push(r.approvalId) });
    followers.notify({ ...record, approvalId: 'a-2' });
    expect(seen).toEqual(['a-2']);
  });
});
