// The command line of `npm run audit:export`: parseArgs in strict mode, time bounds as ISO 8601
// or a duration back from now, kinds from a closed set, and each mistake said in one line.

import { describe, expect, it } from 'vitest';
import { parseExportArgs, UsageError } from '../../src/auditExportArgs.js';

const NOW = new Date('2026-12-08T12:00:00.000Z');
const parse = (...args: string[]) => parseExportArgs(args, NOW);
const DAY = 86_400_000;

/** The one line a command line is refused with. */
function refused(...args: string[]): string {
  try {
    parse(...args);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    expect((err as Error).message).not.toContain('\n');
    return (err as Error).message;
  }
  throw new Error(`${args.join(' ')} was accepted`);
}

describe('parseExportArgs', () => {
  it('no arguments: every kind, all the time', () => {
    expect(parse()).toEqual({ filter: {}, notes: [] });
  });

  it('--since and --until: a duration back from now, an ISO date (UTC midnight) or a date-time with its zone', () => {
    expect(parse('--since', '7d').filter).toEqual({ sinceMs: NOW.getTime() - 7 * DAY });
    expect(parse('--since=1h30m', '--until', '30m').filter).toEqual({
      sinceMs: NOW.getTime() - 5_400_000,
      untilMs: NOW.getTime() - 1_800_000,
    });
    expect(parse('--since', '2026-12-01', '--until', '2026-12-02T10:30:00+02:00').filter).toEqual({
      sinceMs: Date.UTC(2026, 11, 1),
      untilMs: Date.UTC(2026, 11, 2, 8, 30),
    });
    expect(parse('--until', '2026-12-01T10:00:00.250Z').filter).toEqual({
      untilMs: Date.UTC(2026, 11, 1, 10, 0, 0, 250),
    });
  });

  it('refuses a time it cannot read, one without its zone, and bounds in the wrong order', () => {
    expect(refused('--since', 'yesterday')).toBe(
      '--since "yesterday" is neither a time nor a duration: give an ISO 8601 date or date-time with its zone (2026-12-01, 2026-12-01T10:00:00Z) or a duration back from now (7d, 12h, 30m)',
    );
    expect(refused('--until', '2026-12-01T10:00:00')).toMatch(/^--until "2026-12-01T10:00:00" is neither/);
    expect(refused('--since', '2026-13-40')).toMatch(/^--since "2026-13-40" is neither/);
    expect(refused('--since=')).toMatch(/^--since "" is neither/);
    expect(refused('--since', '1d', '--until', '2d')).toBe(
      '--since 1d is not before --until 2d: nothing lies between them',
    );
  });

  it('refuses a day the calendar does not have, which Date would roll over into the next month', () => {
    expect(refused('--since', '2026-02-30')).toBe(
      '--since "2026-02-30" names a day that does not exist (2026-02 has 28 days): give a date of the calendar',
    );
    expect(refused('--until', '2026-06-31')).toMatch(
      /^--until "2026-06-31" names a day that does not exist \(2026-06 has 30 days\)/,
    );
    expect(refused('--since', '2026-04-31T23:00Z')).toMatch(
      /^--since "2026-04-31T23:00Z" names a day that does not exist/,
    );
    expect(refused('--since', '2026-02-29')).toMatch(/^--since "2026-02-29" names a day that does not exist/);
    expect(refused('--since', '2026-12-00')).toMatch(/^--since "2026-12-00" names a day that does not exist/);
    // The last day of each kind of month, and a leap day, still parse as before.
    expect(parse('--since', '2028-02-29', '--until', '2028-04-30T23:59:59-05:00').filter).toEqual({
      sinceMs: Date.UTC(2028, 1, 29),
      untilMs: Date.UTC(2028, 4, 1, 4, 59, 59),
    });
    expect(parse('--since', '2026-01-31T10:00+02:00', '--until', '2026-12-31').filter).toEqual({
      sinceMs: Date.UTC(2026, 0, 31, 8),
      untilMs: Date.UTC(2026, 11, 31),
    });
  });

  it('--kind: once or more, each a kind or a comma-separated list of them', () => {
    expect(parse('--kind', 'grant').filter).toEqual({ kinds: new Set(['grant']) });
    expect(parse('--kind', 'decision,refusal', '--kind', 'vote', '--kind=risk').filter).toEqual({
      kinds: new Set(['decision', 'refusal', 'vote', 'risk']),
    });
    expect(refused('--kind', 'decisions')).toBe(
      '--kind "decisions" is not a kind: give decision, refusal, risk, vote, grant',
    );
    expect(refused('--kind', 'grant,')).toBe(
      '--kind "" is not a kind: give decision, refusal, risk, vote, grant',
    );
  });

  it('an unknown flag, a stray argument or a missing value is one line naming it', () => {
    const takes = 'the export takes --since, --until and --kind (docs/operations.md, "Exporting the trail")';
    expect(refused('--refusal')).toBe(`unknown option --refusal: ${takes}`);
    expect(refused('-k', 'grant')).toBe(`unknown option -k: ${takes}`);
    expect(refused('grant')).toBe(`unexpected argument "grant": ${takes}`);
    expect(refused('--since')).toBe(`--since needs a value: ${takes}`);
  });

  it('--refusals and --no-refusals still write what they did, with a note on what replaces them', () => {
    expect(parse('--refusals')).toEqual({
      filter: { kinds: new Set(['refusal']) },
      notes: ['--refusals is deprecated and will go: use --kind refusal'],
    });
    // Before grants were exported: the decisions' stream alone.
    expect(parse('--no-refusals', '--since', '1d')).toEqual({
      filter: { kinds: new Set(['decision', 'risk', 'vote']), sinceMs: NOW.getTime() - DAY },
      notes: ['--no-refusals is deprecated and will go: use --kind decision,risk,vote'],
    });
    expect(refused('--refusals', '--kind', 'grant')).toBe(
      '--refusals cannot go with --kind: give --kind alone',
    );
    expect(refused('--refusals', '--no-refusals')).toBe(
      '--refusals cannot go with --no-refusals: give --kind alone',
    );
  });
});
