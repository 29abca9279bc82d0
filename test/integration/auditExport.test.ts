// The audit export on a real Redis: the decisions', refusals' and grants' streams merged oldest
// first by id, across pages, narrowed by time (the stream ids) and by kind.

import { Writable } from 'node:stream';
import type { Redis } from 'ioredis';
import { pino } from 'pino';
import { beforeEach, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/domain/audit.js';
import type { Grant } from '../../src/domain/grants/grant.js';
import {
  type AuditExportFilter,
  type AuditKind,
  type ExportedAuditEntry,
  exportAudit,
  exportAuditTo,
} from '../../src/store/auditExport.js';
import { auditFields, RedisAuditTrail } from '../../src/store/auditStream.js';
import { GrantAuditTrail } from '../../src/store/grantAudit.js';
import { keys } from '../../src/store/keys.js';
import { decisionEntry as decision } from '../support/auditEntries.js';
import { useFreshRedis } from '../support/freshRedis.js';

const fresh = useFreshRedis();
/** The file's own database, emptied before each test. */
let redis: Redis;
beforeEach(() => {
  redis = fresh();
});

const T0 = 1_764_583_200_000;
/** A stream id `ms` after T0. */
const at = (ms: number, seq = 0) => `${T0 + ms}-${seq}`;

function refusal(n: number): AuditEntry {
  return {
    kind: 'refusal',
    approvalId: `a-${n}`,
    hostId: 'main',
    route: 'deploys',
    userId: 'U0EVE',
    action: 'click',
    reason: 'notApprover',
    at: '2026-12-01T10:00:00.000Z',
  };
}

function vote(n: number): AuditEntry {
  return {
    kind: 'vote',
    approvalId: `a-${n}`,
    hostId: 'main',
    userId: 'U0BOB',
    choiceId: 'allow_once',
    sourceIndex: 0,
    votes: 1,
    quorum: 2,
    at: '2026-12-01T10:00:00.000Z',
  };
}

/** The grants' stream as GrantAuditTrail writes it: kind is the grant's event. */
function grantEvent(kind: 'used' | 'revoked', n: number): string[] {
  return kind === 'used'
    ? [
        'kind',
        'used',
        'grantId',
        `g-${n}`,
        'at',
        '2026-12-01T10:00:00.000Z',
        'approvalId',
        `a-${n}`,
        'sourceIndex',
        '0',
      ]
    : ['kind', 'revoked', 'grantId', `g-${n}`, 'at', '2026-12-01T10:00:00.000Z', 'by', 'U0ADA'];
}

async function exported(filter: AuditExportFilter = {}): Promise<ExportedAuditEntry[]> {
  const out: ExportedAuditEntry[] = [];
  await exportAudit(
    redis,
    (entry) => {
      out.push(entry);
    },
    filter,
  );
  return out;
}

/** Entries of all three streams at hand-chosen ids, some sharing a millisecond across streams. */
async function writeAll(): Promise<void> {
  const written: Array<[string, string, string[]]> = [
    [keys.audit, at(1), auditFields(decision(1))],
    [keys.refusals, at(1), auditFields(refusal(0))],
    [keys.grantAudit, at(1), grantEvent('used', 10)],
    [keys.audit, at(2), auditFields(vote(2))],
    [keys.refusals, at(3), auditFields(refusal(3))],
    [keys.grantAudit, at(3), grantEvent('revoked', 11)],
    [keys.refusals, at(3, 1), auditFields(refusal(6))],
    [keys.audit, at(4), auditFields(decision(4))],
    [keys.audit, at(4, 1), auditFields(decision(5))],
    [keys.grantAudit, at(5), grantEvent('used', 12)],
    [keys.audit, at(6), auditFields(decision(7))],
  ];
  for (const [key, id, fields] of written) await redis.xadd(key, id, ...fields);
}

describe('exportAudit', () => {
  it('reads every entry once, oldest first, across pages', async () => {
    const trail = new RedisAuditTrail(redis, { maxLen: 1_000, logger: pino({ level: 'silent' }) });
    for (let n = 0; n < 20; n++) await trail.append(decision(n));
    const all = await exported({ pageSize: 7 });
    expect(all.map((e) => e.approvalId)).toEqual(Array.from({ length: 20 }, (_, n) => `a-${n}`));
    expect(all[0]).toEqual({ id: expect.stringMatching(/^\d+-\d+$/), ...decision(0) });
  });

  it('merges the three streams by id; on a shared millisecond decisions, then refusals, then grants', async () => {
    await writeAll();
    const all = await exported({ pageSize: 2 });
    expect(all.map((e) => [e.id, e.kind, e.approvalId])).toEqual([
      [at(1), 'decision', 'a-1'],
      [at(1), 'refusal', 'a-0'],
      [at(1), 'grant', 'a-10'],
      [at(2), 'vote', 'a-2'],
      [at(3), 'refusal', 'a-3'],
      [at(3), 'grant', undefined],
      [at(3, 1), 'refusal', 'a-6'],
      [at(4), 'decision', 'a-4'],
      [at(4, 1), 'decision', 'a-5'],
      [at(5), 'grant', 'a-12'],
      [at(6), 'decision', 'a-7'],
    ]);
    // A grant's event moves from kind to `event`; its other fields stay as the stream has them.
    expect(all[2]).toEqual({
      id: at(1),
      kind: 'grant',
      event: 'used',
      grantId: 'g-10',
      at: '2026-12-01T10:00:00.000Z',
      approvalId: 'a-10',
      sourceIndex: '0',
    });
    expect(all[5]).toMatchObject({ kind: 'grant', event: 'revoked', grantId: 'g-11', by: 'U0ADA' });
  });

  it('exports what GrantAuditTrail writes, a created grant with its JSON', async () => {
    const grants = new GrantAuditTrail(redis, { maxLen: 100, logger: pino({ level: 'silent' }) });
    const grant = { grantId: 'g-1', grantedBy: 'U0ALICE', tool: 'bash' } as unknown as Grant;
    await grants.record({ kind: 'created', at: '2026-12-01T10:00:00.000Z', grant });
    expect(await exported()).toEqual([
      {
        id: expect.stringMatching(/^\d+-\d+$/),
        kind: 'grant',
        event: 'created',
        grantId: 'g-1',
        at: '2026-12-01T10:00:00.000Z',
        grant: JSON.stringify(grant),
      },
    ]);
  });

  it('narrows by kind: one kind, several, and kinds that share a stream', async () => {
    await writeAll();
    const kinds = async (...wanted: AuditKind[]) =>
      (await exported({ kinds: new Set(wanted) })).map((e) => e.kind);
    expect(await kinds('grant')).toEqual(['grant', 'grant', 'grant']);
    expect(await kinds('refusal')).toEqual(['refusal', 'refusal', 'refusal']);
    expect(await kinds('vote')).toEqual(['vote']);
    expect(await kinds('decision', 'grant')).toEqual([
      'decision',
      'grant',
      'grant',
      'decision',
      'decision',
      'grant',
      'decision',
    ]);
    expect(await kinds('risk')).toEqual([]);
  });

  it('narrows by time: since inclusive, until exclusive, every sequence of a millisecond alike', async () => {
    await writeAll();
    const ids = async (filter: AuditExportFilter) => (await exported(filter)).map((e) => e.id);
    expect(await ids({ sinceMs: T0 + 3 })).toEqual([at(3), at(3), at(3, 1), at(4), at(4, 1), at(5), at(6)]);
    expect(await ids({ untilMs: T0 + 3 })).toEqual([at(1), at(1), at(1), at(2)]);
    expect(await ids({ sinceMs: T0 + 4, untilMs: T0 + 5, pageSize: 1 })).toEqual([at(4), at(4, 1)]);
    expect(await ids({ sinceMs: T0 + 4, untilMs: T0 + 6, kinds: new Set(['grant']) })).toEqual([at(5)]);
    expect(await ids({ sinceMs: T0 + 5, untilMs: T0 + 5 })).toEqual([]);
    expect(await ids({ sinceMs: T0 + 100 })).toEqual([]);
  });

  it('exports nothing from empty streams', async () => {
    expect(await exported()).toEqual([]);
  });
});

describe('a trail trimmed to its cap', () => {
  /** The streams the export said were trimmed, and the time of each one's first entry kept. */
  async function trimmedSaid(filter: AuditExportFilter): Promise<Array<[string, number]>> {
    const said: Array<[string, number]> = [];
    await exportAudit(redis, () => {}, filter, {
      trimmed: (stream, keptFromMs) => said.push([stream, keptFromMs]),
    });
    return said;
  }

  it('says which stream lost entries the export asked for, and from when it holds them', async () => {
    // 2,000 decisions a millisecond apart in a stream capped at about 100, as the bot writes them.
    const adds = redis.pipeline();
    for (let n = 0; n < 2_000; n++)
      adds.xadd(keys.audit, 'MAXLEN', '~', '100', at(n), ...auditFields(decision(n)));
    await adds.exec();
    await redis.xadd(keys.refusals, at(0), ...auditFields(refusal(0)));
    const [firstKept] = await redis.xrange(keys.audit, '-', '+', 'COUNT', 1);
    const keptFromMs = Number(firstKept![0].split('-')[0]);
    expect(keptFromMs).toBeGreaterThan(T0);

    expect(await trimmedSaid({ sinceMs: T0 })).toEqual([[keys.audit, keptFromMs]]);
    expect(await trimmedSaid({})).toEqual([[keys.audit, keptFromMs]]);
    // Nothing asked for is gone: from the first entry kept on, or only the untrimmed streams.
    expect(await trimmedSaid({ sinceMs: keptFromMs })).toEqual([]);
    expect(await trimmedSaid({ sinceMs: T0, kinds: new Set(['refusal', 'grant']) })).toEqual([]);
  });
});

describe('the export as lines', () => {
  it('one line per entry for any reader: Unicode line breaks in agent text are escaped', async () => {
    // A tool the agent names `shell<U+2028>x`: JSON.stringify leaves U+2028, U+2029 and U+0085
    // as they are, and readers that split on Unicode line breaks (Python's splitlines, some log
    // shippers) would read the entry as two lines, neither of them JSON.
    const tool = 'shell\u2028x\u2029y\u0085z';
    await redis.xadd(keys.audit, at(0), ...auditFields({ ...decision(0), tool }));
    await redis.xadd(keys.audit, at(1), ...auditFields(decision(1)));
    let text = '';
    const out = new Writable({
      write(chunk: Buffer, _encoding, done) {
        text += chunk.toString();
        done();
      },
    });
    expect(await exportAuditTo(redis, out)).toBe(2);
    expect(text).not.toMatch(/[\u2028\u2029\u0085]/);
    const lines = text.split(/\r\n|[\n\r\u0085\u2028\u2029]/).filter((l) => l !== '');
    expect(lines).toHaveLength(2);
    expect(JSON.parse(lines[0]!)).toMatchObject({ tool });
  });
});

describe('the export into a slow reader', () => {
  it('reads no faster than the reader takes its lines: memory stays bounded, every line arrives', async () => {
    const total = 3_000;
    const pipe = redis.pipeline();
    for (let n = 0; n < total; n++) pipe.xadd(keys.audit, at(n), ...auditFields(decision(n)));
    await pipe.exec();
    const lines: string[] = [];
    let peak = 0;
    // A reader that takes one chunk per turn of the event loop, as a pipe into gzip would.
    const slow = new Writable({
      highWaterMark: 4_096,
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        setImmediate(done);
      },
    });
    const write = slow.write.bind(slow);
    slow.write = ((...args: Parameters<typeof slow.write>) => {
      const ok = write(...args);
      peak = Math.max(peak, slow.writableLength);
      return ok;
    }) as typeof slow.write;

    expect(await exportAuditTo(redis, slow, { pageSize: 1_000 })).toBe(total);
    await new Promise<void>((resolve) => slow.end(resolve));
    expect(lines).toHaveLength(total);
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ id: at(total - 1), kind: 'decision' });
    // One line past the mark at most, not a page (about 1,000 lines) at a time.
    const longest = Math.max(...lines.map((l) => Buffer.byteLength(l)));
    expect(peak).toBeLessThanOrEqual(4_096 + longest);
  });
});
