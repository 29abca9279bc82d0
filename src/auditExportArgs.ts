// The command line of `npm run audit:export` (docs/operations.md, "Exporting the trail"), read
// with node:util's parseArgs in strict mode: a flag it does not know is a mistake, said in one
// line, never ignored.
import { parseArgs } from 'node:util';
import { AUDIT_KINDS, type AuditExportFilter, type AuditKind } from './store/auditExport.js';
import { daysIn } from './util/calendar.js';
import { parseDuration } from './util/duration.js';

/** A command line the export does not understand: said in one line, like a bad setting. */
export class UsageError extends Error {}

export interface ExportRequest {
  filter: AuditExportFilter;
  /** Lines for stderr before the export (a deprecated flag and what replaces it). */
  notes: string[];
}

const USAGE = 'the export takes --since, --until and --kind (docs/operations.md, "Exporting the trail")';

/**
 * What the deprecated flags wrote, as kinds: they predate --kind and the grants' stream, and
 * still write exactly what they did (so `--no-refusals` leaves the grants out).
 */
const DEPRECATED = {
  refusals: { kinds: ['refusal'], instead: '--kind refusal' },
  'no-refusals': { kinds: ['decision', 'risk', 'vote'], instead: '--kind decision,risk,vote' },
} as const satisfies Record<string, { kinds: readonly AuditKind[]; instead: string }>;

const ISO_DATE = /^\d{4}-\d{2}-\d{2}$/;
// A time of day needs its zone: without one, Date would read it in the machine's local time.
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?(?:Z|[+-]\d{2}:\d{2})$/;

/**
 * The day the text starts with, when the calendar does not have it. Date.parse rolls such a
 * day over (2026-02-30 is 2026-03-02), so a typo would quietly move the bound by days.
 */
function missingDay(flag: string, text: string): UsageError | undefined {
  const [, year, month, day] = /^(\d{4})-(\d{2})-(\d{2})/.exec(text) ?? [];
  // A month out of range is left to Date.parse, which refuses it (no rollover there).
  if (year === undefined || Number(month) < 1 || Number(month) > 12) return undefined;
  const days = daysIn(Number(year), Number(month));
  if (Number(day) >= 1 && Number(day) <= days) return undefined;
  return new UsageError(
    `${flag} ${JSON.stringify(text)} names a day that does not exist (${year}-${month} has ${days} days): give a date of the calendar`,
  );
}

/**
 * A time bound: an ISO 8601 date (midnight UTC) or date-time with its zone, or a duration back
 * from `now` (`7d`, `12h`, `1h30m`).
 */
function timeOf(flag: string, text: string, now: Date): number {
  const back = parseDuration(text);
  if (back !== undefined) return now.getTime() - back;
  const missing = ISO_DATE.test(text) || ISO_DATE_TIME.test(text) ? missingDay(flag, text) : undefined;
  if (missing) throw missing;
  const ms = ISO_DATE.test(text) || ISO_DATE_TIME.test(text) ? Date.parse(text) : Number.NaN;
  if (Number.isNaN(ms)) {
    throw new UsageError(
      `${flag} ${JSON.stringify(text)} is neither a time nor a duration: give an ISO 8601 date or date-time with its zone (2026-12-01, 2026-12-01T10:00:00Z) or a duration back from now (7d, 12h, 30m)`,
    );
  }
  return ms;
}

/** `--kind` given once or more, each a kind or a comma-separated list of them. */
function kindsOf(values: string[]): Set<AuditKind> {
  const kinds = new Set<AuditKind>();
  for (const word of values.flatMap((v) => v.split(','))) {
    const kind = word.trim();
    if (!(AUDIT_KINDS as readonly string[]).includes(kind)) {
      throw new UsageError(`--kind ${JSON.stringify(kind)} is not a kind: give ${AUDIT_KINDS.join(', ')}`);
    }
    kinds.add(kind as AuditKind);
  }
  return kinds;
}

/** parseArgs' own errors, in one line of ours that names the flag and what the export takes. */
function usageOf(err: unknown): UsageError {
  const { code, message } = err as { code?: string; message?: string };
  const quoted = /'([^' ]+)/.exec(message ?? '')?.[1];
  switch (code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return new UsageError(`unknown option ${quoted ?? message}: ${USAGE}`);
    case 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL':
      return new UsageError(`unexpected argument ${JSON.stringify(quoted ?? message)}: ${USAGE}`);
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return new UsageError(`${quoted ?? 'an option'} needs a value: ${USAGE}`);
    default:
      return new UsageError(`${message ?? String(err)}: ${USAGE}`);
  }
}

export function parseExportArgs(args: string[], now: Date): ExportRequest {
  let values: {
    since?: string;
    until?: string;
    kind?: string[];
    refusals?: boolean;
    'no-refusals'?: boolean;
  };
  try {
    ({ values } = parseArgs({
      args,
      strict: true,
      allowPositionals: false,
      options: {
        since: { type: 'string' },
        until: { type: 'string' },
        kind: { type: 'string', multiple: true },
        refusals: { type: 'boolean' },
        'no-refusals': { type: 'boolean' },
      },
    }));
  } catch (err) {
    throw usageOf(err);
  }
  const filter: AuditExportFilter = {};
  const notes: string[] = [];
  if (values.since !== undefined) filter.sinceMs = timeOf('--since', values.since, now);
  if (values.until !== undefined) filter.untilMs = timeOf('--until', values.until, now);
  if (filter.sinceMs !== undefined && filter.untilMs !== undefined && filter.sinceMs >= filter.untilMs) {
    throw new UsageError(
      `--since ${values.since} is not before --until ${values.until}: nothing lies between them`,
    );
  }
  const deprecated = (['refusals', 'no-refusals'] as const).filter((flag) => values[flag]);
  if (deprecated.length > 1 || (deprecated.length > 0 && values.kind)) {
    throw new UsageError(
      `--${deprecated[0]} cannot go with ${deprecated.length > 1 ? `--${deprecated[1]}` : '--kind'}: give --kind alone`,
    );
  }
  if (values.kind) filter.kinds = kindsOf(values.kind);
  for (const flag of deprecated) {
    filter.kinds = new Set(DEPRECATED[flag].kinds);
    notes.push(`--${flag} is deprecated and will go: use ${DEPRECATED[flag].instead}`);
  }
  return { filter, notes };
}
