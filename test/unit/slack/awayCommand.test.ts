import { describe, expect, it } from 'vitest';
import type { Person, Workspace } from '../../../src/domain/authorization.js';
import type { Away } from '../../../src/domain/away.js';
import { awayCommands } from '../../../src/slack/awayCommand.js';

// `/countersign away` and `back` as the command answers them: what Slack says of the people named
// (stubbed here) decides the refusals, and nothing is stored when one is given.

const NOW = Date.parse('2026-12-04T12:00:00Z');
const WORKSPACE: Workspace = { teamId: 'T1' };
const MEMBER: Person = { teamId: 'T1', guest: false };

function commands(people: Record<string, Person | undefined>) {
  const stored: Away[] = [];
  const changed: string[][] = [];
  const away = awayCommands({
    store: {
      set: async (a: Away) => {
        stored.push(a);
      },
      clear: async () => undefined,
    },
    authorizer: {
      whoIs: async (userId: string) => {
        const person = people[userId];
        return { ...(person ? { person } : {}), workspace: WORKSPACE };
      },
    },
    onChanged: (users) => changed.push([...users]),
    now: () => NOW,
  });
  return { away, stored, changed };
}

describe('awayCommands', () => {
  it('when Slack does not confirm who is typing, says so of them, not of a delegate, and changes nothing', async () => {
    const { away, stored, changed } = commands({ U0BOB: MEMBER });
    for (const args of [
      ['until', '3d'],
      ['until', '3d', 'delegate', '<@U0BOB|bob>'],
    ]) {
      const { text } = await away.away({ userId: 'U0ALICE', args });
      expect(text).toContain('Slack did not confirm who you are');
      expect(text).not.toContain('delegate');
      expect(text).toContain('Nothing was changed');
    }
    expect(stored).toEqual([]);
    expect(changed).toEqual([]);
  });
});
