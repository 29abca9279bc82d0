import { decode, encode } from '@msgpack/msgpack';
import { z } from 'zod';
import type { Grant } from '../domain/grants/grant.js';
import type { GrantScope } from '../domain/grants/scope.js';

// A grant as the compact layout stores it (grantStore.ts): one row, an array of positional fields,
// among the rows of its bucket tag's string, all in MessagePack (which Redis's Lua reads and
// writes as cmsgpack). Positional, in MessagePack, with times in ms, a row is about a sixth of
// the hash that held a grant before (docs/performance.md, "Grants at a million"). The scripts
// (grantScripts.ts) read and write rows by these positions, 1-based in Lua: change one here and
// there together.

/** A row's fields, by position. */
export const ROW = {
  suffix: 0,
  caller: 1,
  tool: 2,
  sandboxMode: 3,
  route: 4,
  /** The canonical capabilities as JSON: compared whole, never decoded by a script. */
  capabilities: 5,
  /** 'b' bot-held, 'h' host-held. */
  holder: 6,
  grantedBy: 7,
  approvalId: 8,
  hostId: 9,
  channel: 10,
  createdMs: 11,
  /** How long after its creation it stops being live (bot-held) or listed (host-held). */
  lifeMs: 12,
  uses: 13,
  /** 0: never used. */
  lastUsedMs: 14,
  /** -1 for both when it is not a grant by uses. */
  usesLeft: 15,
  maxUses: 16,
  /** 0: not revoked. */
  revokedMs: 17,
  revokedBy: 18,
  /** The suffix of the grant that replaced it ('' none): it shares this one's bucket, so its tag. */
  replacedBy: 19,
  /** 1 once a count counted its last use (`exhausted` is recorded once, then). */
  exhausted: 20,
  /** JSON of what few grants have (lasts, rulePreview, scope), or ''. */
  extras: 21,
  /** Its entries in its channel's and its granter's listing ('' until listed): see listingIdOf. */
  channelEntry: 22,
  granterEntry: 23,
} as const;

/** A grant's scope as stored (GrantScope), here and in the earlier layout's `d`. */
export const StoredScope = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('time'), ms: z.number() }),
  z.object({ kind: z.literal('session') }),
  z.object({ kind: z.literal('uses'), uses: z.number() }),
]);

const Extras = z.object({
  lasts: StoredScope.optional(),
  rulePreview: z.string().optional(),
  scope: z.string().optional(),
});

const str = z.string();
const num = z.number();
const Row = z.tuple([
  str,
  str,
  str,
  str,
  str,
  str,
  z.enum(['b', 'h']),
  str,
  str,
  str,
  str,
  num,
  num,
  num,
  num,
  num,
  num,
  num,
  str,
  str,
  num,
  str,
  str,
  str,
]);
export type GrantRow = z.infer<typeof Row>;

/** What a new grant is made of: everything but its counters, which start at nothing. */
export interface NewRow {
  suffix: string;
  caller: string;
  tool: string;
  sandboxMode: string;
  route: string;
  capabilities: readonly string[];
  holder: 'bot' | 'host';
  grantedBy: string;
  approvalId: string;
  hostId: string;
  channel: string;
  createdMs: number;
  endMs: number;
  maxUses?: number;
  lasts?: GrantScope;
  rulePreview?: string;
  scope?: string;
}

export function newRow(g: NewRow): GrantRow {
  const extras = {
    ...(g.lasts === undefined ? {} : { lasts: g.lasts }),
    ...(g.rulePreview === undefined ? {} : { rulePreview: g.rulePreview }),
    ...(g.scope === undefined ? {} : { scope: g.scope }),
  };
  const byUses = g.maxUses ?? -1;
  return [
    g.suffix,
    g.caller,
    g.tool,
    g.sandboxMode,
    g.route,
    JSON.stringify(g.capabilities),
    g.holder === 'bot' ? 'b' : 'h',
    g.grantedBy,
    g.approvalId,
    g.hostId,
    g.channel,
    g.createdMs,
    g.endMs - g.createdMs,
    0,
    0,
    byUses,
    byUses,
    0,
    '',
    '',
    0,
    Object.keys(extras).length === 0 ? '' : JSON.stringify(extras),
    '',
    '',
  ];
}

/** A tag string's rows; a row this release cannot read is left out (and logged by the caller). */
export function parseRows(raw: Uint8Array | null): { rows: GrantRow[]; unreadable: number } {
  if (raw === null) return { rows: [], unreadable: 0 };
  const parsed: unknown = decode(raw);
  if (!Array.isArray(parsed)) return { rows: [], unreadable: 1 };
  const rows: GrantRow[] = [];
  let unreadable = 0;
  for (const r of parsed) {
    const row = Row.safeParse(r);
    if (row.success) rows.push(row.data);
    else unreadable++;
  }
  return { rows, unreadable };
}

/** One row, as a script hands it back. */
export function parseRow(packed: Uint8Array): GrantRow {
  return Row.parse(decode(packed));
}

/** Rows as a tag's string holds them (and as a script takes a new one, alone in its list). */
export function packRows(rows: readonly GrantRow[]): Buffer {
  const packed = encode(rows);
  return Buffer.from(packed.buffer, packed.byteOffset, packed.byteLength);
}

/** One row, as a script takes it. */
export function packRow(row: GrantRow): Buffer {
  const packed = encode(row);
  return Buffer.from(packed.buffer, packed.byteOffset, packed.byteLength);
}

/** A row read back, with `end`: when it stops being live (bot-held) or listed (host-held). */
export interface StoredRow {
  grant: Grant;
  end: number;
  row: GrantRow;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function grantOf(tag: string, row: GrantRow): StoredRow {
  const r = row;
  const extras = r[ROW.extras] === '' ? {} : Extras.parse(JSON.parse(r[ROW.extras]));
  const grant: Grant = {
    caller: r[ROW.caller],
    tool: r[ROW.tool],
    capabilities: JSON.parse(r[ROW.capabilities]) as string[],
    sandboxMode: r[ROW.sandboxMode],
    holder: r[ROW.holder] === 'b' ? 'bot' : 'host',
    grantedBy: r[ROW.grantedBy],
    approvalId: r[ROW.approvalId],
    hostId: r[ROW.hostId],
    route: r[ROW.route],
    channel: r[ROW.channel],
    createdAt: iso(r[ROW.createdMs]),
    ...extras,
    grantId: `${tag}-${r[ROW.suffix]}`,
    uses: r[ROW.uses],
  };
  const end = endOf(r);
  if (grant.holder === 'bot') grant.expiresAt = iso(end);
  if (r[ROW.lastUsedMs] > 0) grant.lastUsedAt = iso(r[ROW.lastUsedMs]);
  if (r[ROW.maxUses] >= 0) {
    grant.maxUses = r[ROW.maxUses];
    grant.usesLeft = Math.max(0, r[ROW.usesLeft]);
  }
  if (r[ROW.revokedMs] > 0) {
    grant.revokedAt = iso(r[ROW.revokedMs]);
    grant.revokedBy = r[ROW.revokedBy];
  }
  if (r[ROW.replacedBy] !== '') grant.replacedBy = `${tag}-${r[ROW.replacedBy]}`;
  return { grant, end, row };
}

export function endOf(row: GrantRow): number {
  return row[ROW.createdMs] + row[ROW.lifeMs];
}

/** Not revoked, not ended, and, for a grant by uses, not spent: as the scripts' `live`. */
export function rowIsLive(row: GrantRow, nowMs: number): boolean {
  return row[ROW.revokedMs] === 0 && endOf(row) > nowMs && row[ROW.usesLeft] !== 0 && !rowIsSpent(row);
}

/**
 * Every use of a grant by uses counted: spent for good, though a use given back before its
 * decision was counted after all (a replay) left one in usesLeft. As the scripts' `spent`.
 */
export function rowIsSpent(row: GrantRow): boolean {
  return row[ROW.maxUses] >= 0 && row[ROW.uses] >= row[ROW.maxUses];
}

/**
 * A listing entry's id as a row keeps it: its time less the grant's creation (Redis's clock and
 * ours are near, so a few digits) and its sequence. An XADD id is "<ms>-<seq>".
 */
export function listingIdOf(streamId: string, createdMs: number): string {
  const [ms, seq] = streamId.split('-');
  return `${Number(ms) - createdMs}:${seq}`;
}

export function streamIdOf(kept: string, createdMs: number): string | undefined {
  const m = /^(-?\d+):(\d+)$/.exec(kept);
  return m ? `${createdMs + Number(m[1])}-${m[2]}` : undefined;
}
