import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { pino } from 'pino';
import { stageCapabilities } from '../../src/domain/grants/capabilities.js';
import type { ApprovalSubject } from '../../src/msp/protocol.js';
import { bucketOf, grantIdIn } from '../../src/store/grantIds.js';
import { newRow, packRows, ROW } from '../../src/store/grantRows.js';
import { KEEP_AFTER_END_MS, RedisGrantStore } from '../../src/store/grantStore.js';
import { keys } from '../../src/store/keys.js';
import { RawPipe } from './rawPipe.js';

// Grants of other callers, written straight into Redis in the store's exact format: what the
// create script and listOnce() in src/store/grantStore.ts write (the grant's row in its tag's
// string, its tag in its minute of ends, its entries in its channel's and granter's listings,
// kept on its row, each key with its TTL). Through RedisGrantStore.create every grant
// costs a script and two more round trips, and a million of them would take many minutes; here
// they are streamed (rawPipe.ts). The grant audit stream is left out: it is capped, and no lookup
// reads it. checkSeeded() reads some back through the real store, so a change of format fails
// the bench instead of measuring grants the bot would not read.

/** What every seeded grant shares: only the caller (and so the bucket) differs from the bench's own. */
export interface SeedSpec {
  tool: string;
  /** The route that places the bench's approvals of `tool`: a grant answers only its own route's. */
  route: string;
  sandboxMode: string;
  /** Canonical, as the store keeps them. */
  capabilities: string[];
  ttlMs: number;
}

/**
 * The spec of grants that would answer an approval of `tool` about `subject` placed by `route`, but
 * for their caller: the capabilities as the bot derives them. Throws if such an approval cannot be
 * granted at all.
 */
export function seedSpecFor(
  tool: string,
  route: string,
  subject: unknown,
  sandboxMode: string,
  ttlMs: number,
): SeedSpec {
  const derived = stageCapabilities({
    tool,
    subject: subject as ApprovalSubject,
    currentRequirementId: { approvalId: 'bench', sourceIndex: 0 },
    protectedWrite: false,
  });
  if (derived.notGrantable) throw new Error(`the bench's approval is not grantable: ${derived.notGrantable}`);
  return { tool, route, sandboxMode, capabilities: derived.capabilities, ttlMs };
}

/** The fake host's batch session as a caller: a route's grants follow the session. */
export const BENCH_CALLER = 'session:s-bench';
export const SANDBOX = 'default';
export const TTL_MS = 8 * 3_600_000;
/**
 * The bench's own grant, through the real store as "don't ask again" would store it: it answers
 * the approvals of `spec`'s tool and route asked in the batch session.
 */
export function storeBenchGrant(store: RedisGrantStore, spec: SeedSpec, channel: string) {
  return store.create({
    caller: BENCH_CALLER,
    tool: spec.tool,
    capabilities: spec.capabilities,
    sandboxMode: spec.sandboxMode,
    holder: 'bot',
    grantedBy: 'U0BENCH',
    approvalId: 'bench-grant',
    hostId: 'default',
    route: spec.route,
    channel,
    ttlMs: spec.ttlMs,
  });
}

/** Listing indexes are per channel and per granter: spread like a real workspace's, not one huge set. */
const CHANNELS = 100;
const GRANTERS = 1_000;
/** Grants per APPEND of their minute of ends. */
const CHUNK = 5_000;
const MINUTE_MS = 60_000;

export const otherCaller = (i: number) => `session:other-${i}`;
/** When the last seeded grant was made (ms): the next call's are made after it. */
let lastCreatedMs = 0;
/** Deterministic, so a check can find grant i again; the same length as a random suffix. */
const suffixOf = (i: number) => i.toString(16).padStart(12, '0');
const channelOf = (i: number) => `C0OTHER${i % CHANNELS}`;
const granterOf = (i: number) => `U0OTHER${i % GRANTERS}`;

/** Writes grants [from, to) of callers otherCaller(i) into the Redis database at `redisUrl`. */
export async function seedOtherGrants(
  redisUrl: string,
  from: number,
  to: number,
  spec: SeedSpec,
): Promise<void> {
  const nowMs = Date.now();
  const end = nowMs + spec.ttlMs;
  // Grant i is made at base + i ms: every stream's entry ids increase, within and across calls.
  const base = Math.max(nowMs, lastCreatedMs + 1) - from;
  lastCreatedMs = base + to - 1;
  const pipe = await RawPipe.open(redisUrl);
  try {
    for (let start = from; start < to; start += CHUNK) {
      writeChunk(pipe, start, Math.min(to, start + CHUNK), spec, base, end);
      await pipe.flushIfFull();
    }
    // The listings live as long as their latest grant (the store only ever extends them); tag
    // strings and the minutes of ends have no TTL, as the store writes them.
    const indexTtl = end - nowMs + KEEP_AFTER_END_MS;
    for (let c = 0; c < Math.min(CHANNELS, to); c++)
      pipe.send('PEXPIRE', keys.grantsListedIn(channelOf(c)), indexTtl);
    for (let g = 0; g < Math.min(GRANTERS, to); g++)
      pipe.send('PEXPIRE', keys.grantsListedBy(granterOf(g)), indexTtl);
    await pipe.sync();
  } finally {
    pipe.close();
  }
}

function writeChunk(
  pipe: RawPipe,
  from: number,
  to: number,
  spec: SeedSpec,
  base: number,
  end: number,
): void {
  const minute = Math.floor(end / MINUTE_MS);
  const channels = new Set<string>();
  let ends = '';
  for (let i = from; i < to; i++) {
    const caller = otherCaller(i);
    const bucket = bucketOf({ caller, tool: spec.tool, sandboxMode: spec.sandboxMode, route: spec.route });
    const row = newRow({
      suffix: suffixOf(i),
      caller,
      tool: spec.tool,
      sandboxMode: spec.sandboxMode,
      route: spec.route,
      capabilities: spec.capabilities,
      holder: 'bot',
      grantedBy: granterOf(i),
      approvalId: `seed-${i}`,
      hostId: 'default',
      channel: channelOf(i),
      createdMs: base + i,
      endMs: end,
    });
    // Listed as the store lists one (XADD's id, `<ms>-0`, kept on the row as its offset from the
    // grant's creation, `0:0`), at an id of our own: each grant made a millisecond after the
    // last, so that every stream's ids increase, across calls too.
    const entry = `${row[ROW.createdMs]}-0`;
    row[ROW.channelEntry] = '0:0';
    row[ROW.granterEntry] = '0:0';
    pipe.send('SET', keys.grantTag(bucket.tag), packRows([row]));
    pipe.send('XADD', keys.grantsListedIn(row[ROW.channel]), entry, 't', bucket.tag);
    pipe.send('XADD', keys.grantsListedBy(row[ROW.grantedBy]), entry, 't', bucket.tag);
    channels.add(row[ROW.channel]);
    ends += bucket.tag;
  }
  pipe.send('APPEND', keys.grantEnds(minute), ends);
  pipe.send('ZADD', keys.grantEndMinutes(), minute, minute);
  pipe.send('SADD', keys.grantChannels(), ...channels);
}

export function benchGrantStore(redis: Redis): RedisGrantStore {
  const logger: Logger = pino({ level: 'silent' });
  return new RedisGrantStore(redis, { logger, auditMaxLen: 1_000 });
}

/** Reads the first and last seeded grants back through the real store: both must match their caller. */
export async function checkSeeded(store: RedisGrantStore, count: number, spec: SeedSpec): Promise<void> {
  const now = new Date();
  for (const i of new Set([0, count - 1])) {
    const key = { caller: otherCaller(i), tool: spec.tool, sandboxMode: spec.sandboxMode, route: spec.route };
    const found = await store.candidates(key, now);
    const wanted = grantIdIn(bucketOf(key), suffixOf(i));
    if (found.length !== 1 || found[0]!.grantId !== wanted || (await store.get(wanted))?.uses !== 0) {
      throw new Error(`seeded grant ${i} does not read back through RedisGrantStore: the format changed?`);
    }
  }
  if ((await store.list({ grantedBy: granterOf(0) }, now)).length === 0) {
    throw new Error('seeded grants are not listed by RedisGrantStore: the index format changed?');
  }
}
