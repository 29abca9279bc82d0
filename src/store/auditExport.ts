import { once } from 'node:events';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

/**
 * The kinds an export may ask for. `decision`, `risk` and `vote` live in `cs:{audit}`, `refusal`
 * in its own stream, and `grant` is every event of the grants' stream (created, used, revoked,
 * replaced, expired, exhausted), which names its own kind `event`.
 */
export const AUDIT_KINDS = ['decision', 'refusal', 'risk', 'vote', 'grant'] as const;
export type AuditKind = (typeof AUDIT_KINDS)[number];

/** One exported line: the stream's id (its time in ms, then a sequence) and the entry's fields. */
export interface ExportedAuditEntry {
  id: string;
  [field: string]: string;
}

export interface AuditExportFilter {
  /** Which kinds to write; every kind when absent. */
  kinds?: ReadonlySet<AuditKind>;
  /** Entries written at or after this time (ms since the epoch), by their stream id. */
  sinceMs?: number;
  /** Entries written before this time (ms since the epoch), by their stream id. */
  untilMs?: number;
  pageSize?: number;
}

/** What the export says besides its lines. */
export interface AuditExportNotices {
  /**
   * A stream read has lost entries to its cap (MAXLEN) that the export asked for: it holds
   * entries from `keptFromMs` on (its first entry's id), those before are gone.
   */
  trimmed?: (stream: string, keptFromMs: number) => void;
}

/** A stream the export reads, and how its entries become exported lines. */
interface Source {
  key: string;
  /** Which of the wanted kinds the stream holds. */
  kinds: readonly AuditKind[];
  /** The exported line of a raw entry. */
  line: (entry: ExportedAuditEntry) => ExportedAuditEntry;
}

const SOURCES: readonly Source[] = [
  { key: keys.audit, kinds: ['decision', 'risk', 'vote'], line: (entry) => entry },
  { key: keys.refusals, kinds: ['refusal'], line: (entry) => entry },
  // The grants' stream says what happened to a grant in `kind`; in the export `kind` says which
  // trail a line comes from, as in the other streams, and the grant's event moves to `event`.
  {
    key: keys.grantAudit,
    kinds: ['grant'],
    line: ({ id, kind, ...rest }) => ({ id, kind: 'grant', event: kind ?? '', ...rest }),
  },
];

/**
 * Reads the audit streams, merged oldest first by stream id, a page at a time, handing each
 * entry the filter lets through to `write`; returns how many were written. Ids are unique within
 * a stream only: entries of two streams written in the same millisecond may share one, and then
 * come in the order of SOURCES (decisions, refusals, grants).
 *
 * The time bounds are read as stream ids, so Redis skips what lies outside them; an entry's
 * id is when it was written, a few milliseconds after its own `at`. A stream read that its cap
 * trimmed of entries the bounds asked for is told to `notices.trimmed` before any is written.
 */
export async function exportAudit(
  redis: RedisClient,
  write: (entry: ExportedAuditEntry) => void | Promise<void>,
  filter: AuditExportFilter = {},
  notices: AuditExportNotices = {},
): Promise<number> {
  const pageSize = filter.pageSize ?? 1_000;
  const wanted = (kind: AuditKind) => !filter.kinds || filter.kinds.has(kind);
  const sinceMs = Math.max(0, filter.sinceMs ?? 0);
  const { untilMs } = filter;
  if (untilMs !== undefined && untilMs <= sinceMs) return 0;
  const start = filter.sinceMs === undefined ? '-' : String(sinceMs);
  // An incomplete end id takes every sequence of its millisecond: the last one before `until`.
  const end = untilMs === undefined ? '+' : String(untilMs - 1);
  const sources = SOURCES.filter((source) => source.kinds.some(wanted));
  if (notices.trimmed) {
    const keptFrom = await Promise.all(sources.map(({ key }) => trimmedBefore(redis, key)));
    sources.forEach(({ key }, i) => {
      const keptFromMs = keptFrom[i];
      // A stream holding entries from before `since` has lost none the export asked for.
      if (keptFromMs !== undefined && (filter.sinceMs === undefined || keptFromMs > sinceMs)) {
        notices.trimmed?.(key, keptFromMs);
      }
    });
  }
  const readers = sources.map((source) => readStream(redis, source, start, end, pageSize));
  let count = 0;
  for await (const entry of mergeById(readers)) {
    if (!wanted(entry.kind as AuditKind)) continue;
    const writing = write(entry);
    // Only a writer that is behind returns a promise: the next page waits for it.
    if (writing) await writing;
    count++;
  }
  return count;
}

/** Characters JSON.stringify leaves as they are that some readers take for a line's end. */
const UNICODE_LINE_BREAK = /[\u0085\u2028\u2029]/g;

/**
 * One entry as one line for every reader: JSON.stringify escapes \n and \r but not U+0085,
 * U+2028 and U+2029, where Python's splitlines and some log shippers end a line, and agent text
 * (a tool's name) may hold them. Escaped, the JSON reads the same.
 */
function ndjsonLine(entry: ExportedAuditEntry): string {
  return JSON.stringify(entry).replace(
    UNICODE_LINE_BREAK,
    (ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/**
 * The export as NDJSON lines on `out`, read no faster than `out` takes them: piped into a slow
 * reader (`| gzip`, `kubectl exec … > file`), Node would otherwise buffer the whole trail in
 * memory, in a pod that shares its limit with the bot.
 */
export function exportAuditTo(
  redis: RedisClient,
  out: NodeJS.WritableStream,
  filter: AuditExportFilter = {},
  notices: AuditExportNotices = {},
): Promise<number> {
  return exportAudit(
    redis,
    (entry) => (out.write(`${ndjsonLine(entry)}\n`) ? undefined : once(out, 'drain').then(() => {})),
    filter,
    notices,
  );
}

/**
 * When the stream has lost entries to its cap, the time (ms) of its first entry kept; undefined
 * when it lost none, is empty or missing, or Redis does not say (`entries-added` came in Redis
 * 7.0). The audit streams are only ever trimmed, never XDEL'd: what was added and is not there
 * was trimmed from the front.
 */
async function trimmedBefore(redis: RedisClient, key: string): Promise<number | undefined> {
  let info: unknown[];
  try {
    info = (await redis.xinfo('STREAM', key)) as unknown[];
  } catch (err) {
    if (err instanceof Error && /no such key/i.test(err.message)) return undefined;
    throw err;
  }
  const field = new Map<unknown, unknown>();
  for (let i = 0; i + 1 < info.length; i += 2) field.set(info[i], info[i + 1]);
  const added = Number(field.get('entries-added'));
  const first = field.get('first-entry');
  if (!Number.isFinite(added) || added <= Number(field.get('length')) || !Array.isArray(first))
    return undefined;
  return Number(String(first[0]).split('-')[0]);
}

/** One stream's entries between two ids, oldest first, read a page at a time. */
async function* readStream(
  redis: RedisClient,
  source: Source,
  from: string,
  to: string,
  pageSize: number,
): AsyncGenerator<ExportedAuditEntry> {
  let start = from;
  for (;;) {
    const page = await redis.xrange(source.key, start, to, 'COUNT', pageSize);
    for (const [id, fields] of page) {
      const entry: ExportedAuditEntry = { id };
      for (let i = 0; i + 1 < fields.length; i += 2) entry[fields[i]!] = fields[i + 1]!;
      yield source.line(entry);
    }
    if (page.length < pageSize) return;
    // An exclusive start (Redis 6.2+) continues after the last entry read.
    start = `(${page[page.length - 1]![0]}`;
  }
}

/** Several streams' entries in one order by id; on a tie, the earlier stream's entry first. */
async function* mergeById(
  streams: Array<AsyncGenerator<ExportedAuditEntry>>,
): AsyncGenerator<ExportedAuditEntry> {
  const heads = await Promise.all(streams.map((s) => s.next()));
  for (;;) {
    let first = -1;
    for (let i = 0; i < heads.length; i++) {
      const head = heads[i]!;
      if (head.done) continue;
      if (first === -1 || compareIds(head.value.id, (heads[first]!.value as ExportedAuditEntry).id) < 0)
        first = i;
    }
    if (first === -1) return;
    yield heads[first]!.value as ExportedAuditEntry;
    heads[first] = await streams[first]!.next();
  }
}

/** Stream ids (`<ms>-<seq>`) in the order Redis gives them. */
function compareIds(x: string, y: string): number {
  const [xMs, xSeq] = x.split('-').map(Number) as [number, number];
  const [yMs, ySeq] = y.split('-').map(Number) as [number, number];
  return xMs - yMs || xSeq - ySeq;
}
