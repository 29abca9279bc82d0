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
  const current = new Map<string, Away>();
  const away = awayCommands({
    store: {
      set: async (a: Away) => {
        stored.push(a);
        const was = current.get(a.userId);
        current.set(a.userId, a);
        return { full: false as const, previous: was };
      },
      clear: async (userId: string) => {
        const was = current.get(userId);
        current.delete(userId);
        return was;
      },
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

  it('shows the change on the Homes of the user, their delegate and the delegate they had before', async () => {
    const { away, changed } = commands({ U0ALICE: MEMBER, U0BOB: MEMBER, U0CAROL: MEMBER });
    await away.away({ userId: 'U0ALICE', args: ['until', '3d', 'delegate', '<@U0BOB|bob>'] });
    await away.away({ userId: 'U0ALICE', args: ['until', '3d', 'delegate', '<@U0CAROL|carol>'] });
    await away.away({ userId: 'U0ALICE', args: ['until', '3d', 'delegate', '<@U0CAROL|carol>'] });
    await away.away({ userId: 'U0ALICE', args: ['until', '3d'] });
    await away.back({ userId: 'U0ALICE' });
    expect(changed).toEqual([
      ['U0ALICE', 'U0BOB'],
      ['U0ALICE', 'U0CAROL', 'U0BOB'],
      ['U0ALICE', 'U0CAROL'],
      ['U0ALICE', 'U0CAROL'],
      ['U0ALICE'],
    ]);
  });
});
