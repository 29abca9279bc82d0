import { describe, expect, it } from 'vitest';
import { type Away, delegateRefusal, MAX_AWAY_MS, parseAway, untilOf } from '../../../src/domain/away.js';
import { withoutAway } from '../../../src/relay/escalation/awayFilter.js';

// How `/countersign away` is read and which delegates are refused; and whom escalation reaches
// once the people away are passed by.

const NOW = Date.parse('2026-12-04T12:00:00Z');
const WORKSPACE = { teamId: 'T1' };

describe('parseAway', () => {
  it('reads a duration, a day (its end, UTC) or an ISO time, and a delegate as Slack escapes it', () => {
    expect(untilOf('3d', NOW)).toBe(NOW + 3 * 86_400_000);
    expect(untilOf('1h30m', NOW)).toBe(NOW + 90 * 60_000);
    expect(untilOf('2026-12-24', NOW)).toBe(Date.parse('2026-12-25T00:00:00Z'));
    expect(untilOf('2026-12-24T09:00Z', NOW)).toBe(Date.parse('2026-12-24T09:00:00Z'));
    expect(untilOf('tomorrow', NOW)).toBeUndefined();
    expect(untilOf('0s', NOW)).toBeUndefined();
    expect(parseAway(['until', '3d', 'delegate', '<@U0BOB|bob>'], 'U0ALICE', NOW)).toEqual({
      ok: true,
      untilMs: NOW + 3 * 86_400_000,
      delegate: 'U0BOB',
    });
    expect(parseAway(['until', '3d'], 'U0ALICE', NOW)).toEqual({ ok: true, untilMs: NOW + 3 * 86_400_000 });
  });

  it('refuses a day or a time that does not exist, rather than rolling it over into the next month', () => {
    for (const text of [
      '2026-02-30',
      '2026-02-29',
      '2026-04-31',
      '2026-02-30T10:00Z',
      '2026-12-32T10:00Z',
      '2026-12-24T24:00Z',
      '2026-12-24T10:00:60Z',
    ])
      expect(untilOf(text, NOW), text).toBeUndefined();
    expect(parseAway(['until', '2026-02-30'], 'U0ALICE', NOW)).toEqual({
      ok: false,
      why: { kind: 'badUntil', text: '2026-02-30' },
    });
    // A leap day is a day, and a time with an offset keeps it.
    expect(untilOf('2028-02-29', NOW)).toBe(Date.parse('2028-03-01T00:00:00Z'));
    expect(untilOf('2026-12-24T23:59:59+02:00', NOW)).toBe(Date.parse('2026-12-24T21:59:59Z'));
  });

  it('refuses what cannot be right, saying which', () => {
    const why = (...args: string[]) => {
      const parsed = parseAway(args, 'U0ALICE', NOW);
      return parsed.ok ? 'ok' : parsed.why.kind;
    };
    expect(why()).toBe('usage');
    expect(why('until')).toBe('usage');
    expect(why('from', '3d')).toBe('usage');
    expect(why('until', '3d', 'delegate')).toBe('usage');
    expect(why('until', '3d', 'to', '<@U0BOB>')).toBe('usage');
    expect(why('until', 'soon')).toBe('badUntil');
    expect(why('until', '2026-12-01')).toBe('untilPast');
    expect(why('until', `${MAX_AWAY_MS / 86_400_000 + 1}d`)).toBe('untilTooFar');
    expect(why('until', '30d')).toBe('ok');
    expect(why('until', '3d', 'delegate', '@bob')).toBe('badDelegate');
    expect(why('until', '3d', 'delegate', '<@U0ALICE|alice>')).toBe('delegateSelf');
  });

  it('refuses a bot, a deactivated account, a guest, another team’s user and one Slack does not describe as a delegate', () => {
    expect(delegateRefusal({ teamId: 'T1', guest: false, bot: true }, WORKSPACE)?.kind).toBe('delegateBot');
    expect(delegateRefusal({ teamId: 'T1', guest: true }, WORKSPACE)).toEqual({
      kind: 'delegateStranger',
      external: false,
    });
    expect(delegateRefusal({ teamId: 'T2', guest: false }, WORKSPACE)).toEqual({
      kind: 'delegateStranger',
      external: true,
    });
    expect(delegateRefusal({ teamId: 'T1', guest: false, deactivated: true }, WORKSPACE)?.kind).toBe(
      'delegateDeactivated',
    );
    expect(delegateRefusal(undefined, WORKSPACE)?.kind).toBe('delegateUnknown');
    expect(delegateRefusal({ teamId: 'T1', guest: false }, WORKSPACE)).toBeUndefined();
  });
});

describe('withoutAway', () => {
  const away = (entries: Record<string, string | undefined>) => ({
    whoIsAway: async (ids: readonly string[]) =>
      new Map<string, Away>(
        ids.flatMap((id) =>
          id in entries
            ? [
                [
                  id,
                  {
                    userId: id,
                    until: '2099-01-01T00:00:00Z',
                    since: '',
                    ...(entries[id] ? { delegate: entries[id] } : {}),
                  },
                ] as const,
              ]
            : [],
        ),
      ),
  });
  const members = async () => ['U0ALICE', 'U0DAVE'];

  it('replaces each person away by their delegate, in place, once; a delegate away is not followed', async () => {
    const found = { users: ['U0ALICE', 'U0BOB', 'U0CAROL'], source: 'rotation' as const };
    expect(
      (await withoutAway(found, away({ U0ALICE: 'U0BOB', U0CAROL: 'U0ERIN', U0ERIN: 'U0FRANK' }), members))
        .target.users,
    ).toEqual(['U0BOB']);
    expect((await withoutAway(found, away({}), members)).target).toBe(found);
  });

  it('reaches a delegate only while they may still stand in (a full member of the team, as Slack says now)', async () => {
    const found = { users: ['U0ALICE', 'U0CAROL'], source: 'rotation' as const };
    // Bob became a guest after Alice named him; Erin still may.
    const asked: string[] = [];
    const mayStandIn = async (id: string) => {
      asked.push(id);
      return id !== 'U0BOB';
    };
    const present = await withoutAway(
      found,
      away({ U0ALICE: 'U0BOB', U0CAROL: 'U0ERIN' }),
      members,
      mayStandIn,
    );
    expect(present.target.users).toEqual(['U0ERIN']);
    expect(present.skipped).toEqual(['U0ALICE', 'U0CAROL']);
    expect(asked.sort()).toEqual(['U0BOB', 'U0ERIN']);
  });

  it('asks only about the delegates it would reach: not one away, nor their delegate', async () => {
    const asked: string[] = [];
    const mayStandIn = async (id: string) => {
      asked.push(id);
      return true;
    };
    // Alice's delegate Bob is away himself, with Carol standing in for him: one hop only.
    const present = await withoutAway(
      { users: ['U0ALICE', 'U0DAVE'], source: 'rotation' },
      away({ U0ALICE: 'U0BOB', U0BOB: 'U0CAROL' }),
      members,
      mayStandIn,
    );
    expect(present.target.users).toEqual(['U0DAVE']);
    expect(asked).toEqual([]);
  });

  it('reaches someone on call as themselves whatever their standing as a delegate', async () => {
    const present = await withoutAway(
      { users: ['U0ALICE', 'U0BOB'], source: 'rotation' },
      away({ U0ALICE: 'U0BOB' }),
      members,
      async () => false,
    );
    expect(present.target.users).toEqual(['U0BOB']);
    expect(present.target.inPlaceOf).toEqual({});
  });

  it('names a group member by member when one of them is away', async () => {
    const present = await withoutAway(
      { users: [], usergroup: 'S0ONCALL', source: 'usergroup' },
      away({ U0ALICE: 'U0BOB' }),
      members,
    );
    expect(present.target).toEqual({
      users: ['U0BOB', 'U0DAVE'],
      source: 'usergroup',
      inPlaceOf: { U0BOB: 'U0ALICE' },
    });
    expect(present.skipped).toEqual(['U0ALICE']);
  });
});

describe('renderAway', () => {
  it('says why for every refusal, and that nothing changed', async () => {
    const { renderAwayRefusal } = await import('../../../src/cards/renderAway.js');
    const problems = [
      { kind: 'usage' },
      { kind: 'badUntil', text: '<!channel>' },
      { kind: 'untilPast' },
      { kind: 'untilTooFar', maxMs: MAX_AWAY_MS },
      { kind: 'badDelegate', text: '@bob' },
      { kind: 'delegateSelf' },
      { kind: 'delegateBot' },
      { kind: 'delegateDeactivated' },
      { kind: 'delegateStranger', external: true },
      { kind: 'delegateStranger', external: false },
      { kind: 'delegateUnknown' },
      { kind: 'delegateFull', max: 20 },
      { kind: 'youUnknown' },
      { kind: 'youStranger' },
    ] as const;
    for (const problem of problems) {
      const { text } = renderAwayRefusal(problem);
      expect(text, problem.kind).toContain('Nothing was changed');
      expect(text, problem.kind).not.toContain('<!channel>');
    }
    expect(renderAwayRefusal({ kind: 'untilTooFar', maxMs: MAX_AWAY_MS }).text).toContain('30 days');
  });

  it('shows your own status and whom you stand in for on App Home', async () => {
    const { awayStatusLines } = await import('../../../src/cards/renderAway.js');
    const alice: Away = { userId: 'U0ALICE', until: '2026-12-24T00:00:00Z', delegate: 'U0BOB', since: '' };
    expect(awayStatusLines(undefined, [])).toEqual([expect.stringContaining('You are not away')]);
    const lines = awayStatusLines(alice, [{ ...alice, userId: 'U0CAROL', delegate: 'U0ALICE' }]);
    expect(lines[0]).toContain('You are away until <!date^');
    expect(lines[0]).toContain('<@U0BOB> stands in for you');
    expect(lines[1]).toContain('You stand in for <@U0CAROL>');
  });
});
