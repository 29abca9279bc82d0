import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { SyncMarks } from '../../../../src/relay/records/syncMarks.js';

/** SyncMarks over a store whose record is at `stored`, and the approvals it calls behind. */
function marksAt(stored: number) {
  const behind: string[] = [];
  const tasks: Promise<unknown>[] = [];
  const store = {
    cardsSynced: async () => {},
    unsyncedCards: async () => [],
    claimCardSync: async () => true,
    syncStamp: () => 1,
    get: async () => undefined,
    rideNextWrite: () => {},
    storedVersion: async () => stored,
  };
  const marks = new SyncMarks(
    store as never,
    (t) => tasks.push(t),
    pino({ level: 'silent' }),
    (id) => behind.push(id),
  );
  return { marks, behind, settled: () => Promise.all(tasks) };
}

describe('SyncMarks', () => {
  it('renders again a card an update of another writer left behind its record', async () => {
    const { marks, behind, settled } = marksAt(5);
    marks.landed('a-1', marks.handOut('a-1'), 1, 4);
    marks.flush();
    await settled();
    expect(behind).toEqual(['a-1']);
  });

  it('does not render again the version this process just gave up on: Slack refused it already', async () => {
    const { marks, behind, settled } = marksAt(5);
    marks.landed('a-1', marks.handOut('a-1'), 1, 4);
    // The record's next write (version 5) is handed out and given up (message_not_found) before
    // the landing of version 4 is checked against the record.
    marks.givenUp('a-1', marks.handOut('a-1'), 5);
    marks.flush();
    await settled();
    expect(behind).toEqual([]);
  });

  it('renders again when the record moved past the version given up on', async () => {
    const { marks, behind, settled } = marksAt(6);
    marks.landed('a-1', marks.handOut('a-1'), 1, 4);
    marks.givenUp('a-1', marks.handOut('a-1'), 5);
    marks.flush();
    await settled();
    expect(behind).toEqual(['a-1']);
  });
});
