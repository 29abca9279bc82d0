import { describe, expect, it } from 'vitest';
import {
  commandOf,
  type DecisionFact,
  percentile,
  summarize,
  waitedFor,
} from '../../../src/domain/decisionStats.js';
import { parseStatsArgs } from '../../../src/slack/userStats.js';
import { factOf } from '../../../src/store/decisionStatsReader.js';

function fact(more: Partial<DecisionFact>): DecisionFact {
  return {
    route: 'deploys',
    tool: 'bash',
    by: 'person',
    steps: 0,
    slaTracked: false,
    slaBreached: false,
    ...more,
  };
}

describe('decision stats', () => {
  it('percentiles by nearest rank', () => {
    const sorted = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
    expect(percentile(sorted, 50)).toBe(5);
    expect(percentile(sorted, 90)).toBe(9);
    expect(percentile([7], 90)).toBe(7);
    expect(percentile([], 50)).toBeUndefined();
  });

  it('sums a route: waits by how it was decided, grants, timeouts, steps, SLA, top tools and commands', () => {
    const [deploys] = summarize([
      fact({ waitedMs: 1_000, command: 'git push' }),
      fact({ waitedMs: 3_000, slaTracked: true, slaBreached: true, command: 'git push' }),
      fact({ by: 'grant', waitedMs: 20, tool: 'shell', command: 'make' }),
      fact({ by: 'timeout', waitedMs: 60_000, steps: 2 }),
      // Written before waits were kept: counted, without a wait.
      fact({ by: 'policy' }),
    ]);
    expect(deploys).toMatchObject({
      route: 'deploys',
      decisions: 5,
      waits: { count: 4, p50: 1_000, p90: 60_000 },
      byDecider: {
        person: { count: 2, p50: 1_000, p90: 3_000 },
        grant: { count: 1, p50: 20, p90: 20 },
        timeout: { count: 1 },
        policy: { count: 0 },
      },
      timeouts: 1,
      stepsFired: 2,
      byGrant: 1,
      slaTracked: 1,
      slaBreached: 1,
      tools: [
        { name: 'bash', count: 4 },
        { name: 'shell', count: 1 },
      ],
      commands: [
        { name: 'git push', count: 2 },
        { name: 'make', count: 1 },
      ],
    });
  });

  it('keeps only a program and a word-like subcommand of a shell request', () => {
    const stage = (argv: string[]) => ({ kind: 'shell', stages: [{ argv } as never] });
    expect(commandOf(stage(['/usr/bin/git', 'push', '--force', 'origin']))).toBe('git push');
    expect(commandOf(stage(['curl', 'https://x.example/?token=abc']))).toBe('curl');
    // A second word is kept only for programs that take subcommands, and only if it looks like one.
    expect(commandOf(stage(['ssh', 'db01.prod.internal']))).toBe('ssh');
    expect(commandOf(stage(['curl', 'evil.example.com']))).toBe('curl');
    expect(commandOf(stage(['cat', 'credentials.json']))).toBe('cat');
    expect(commandOf(stage(['ssh', 'db01']))).toBe('ssh');
    expect(commandOf(stage(['kubectl', 'delete', 'ns', 'prod']))).toBe('kubectl delete');
    expect(commandOf(stage(['git', 'db01.prod.internal']))).toBe('git');
    expect(commandOf(stage(['ghp_secret=1', 'x']))).toBeUndefined();
    expect(commandOf({ kind: 'network' })).toBeUndefined();
    expect(commandOf({ kind: 'shell', command: 'npm test --watch' })).toBe('npm test');
  });

  it('reads a decision entry of the stream, and nothing else', () => {
    expect(
      factOf([
        'kind',
        'decision',
        'route',
        'ops',
        'tool',
        'bash',
        'via',
        'reviewer',
        'waitedMs',
        '42',
        'steps',
        '2',
      ]),
    ).toEqual({
      route: 'ops',
      tool: 'bash',
      by: 'policy',
      waitedMs: 42,
      steps: 2,
      slaTracked: false,
      slaBreached: false,
    });
    expect(factOf(['kind', 'vote', 'route', 'ops'])).toBeUndefined();
    expect(factOf(['kind', 'decision', 'via', 'bogus'])).toBeUndefined();
    // A decide its host went away with: whether it was decided at all is not known.
    expect(
      factOf([
        'kind',
        'decision',
        'route',
        'ops',
        'via',
        'click',
        'decision',
        'unknown',
        'unsettled',
        'hostLost',
      ]),
    ).toBeUndefined();
  });

  it('waits from the first card of the request to the decision', () => {
    const openedAt = '2026-01-01T00:00:10.000Z';
    const resolution = { decidedAt: '2026-01-01T00:01:00.000Z' };
    expect(waitedFor({ openedAt, resolution })).toBe(50_000);
    const escalation = { startedAt: '2026-01-01T00:00:00.000Z', origin: 'a', fired: [] };
    expect(waitedFor({ openedAt, escalation, resolution })).toBe(60_000);
    expect(waitedFor({ openedAt }, new Date('2026-01-01T00:00:11.000Z'))).toBe(1_000);
  });

  it("waits until the bot recorded the decision, by the clock that started it, not the host's", () => {
    const openedAt = '2026-01-01T00:00:10.000Z';
    // The host's clock runs 3 min ahead; the bot heard the decision 1.5 s after the card.
    const resolution = { decidedAt: '2026-01-01T00:03:11.000Z', recordedAt: '2026-01-01T00:00:11.500Z' };
    expect(waitedFor({ openedAt, resolution })).toBe(1_500);
  });

  it('parses [route] [7d|30d] in either order', () => {
    expect(parseStatsArgs([])).toEqual({ window: '7d' });
    expect(parseStatsArgs(['30D', 'deploys'])).toEqual({ window: '30d', route: 'deploys' });
    expect(parseStatsArgs(['routes[0]', '7d'])).toEqual({ window: '7d', route: 'routes[0]' });
  });
});
