import { keys } from '../../src/store/keys.js';
import type { RunningBot } from '../../test/support/bot.js';
import { ratio, round } from '../lib/stats.js';
import { redisUsedBytes, untilIdle } from '../lib/system.js';
import { TOOLS, type World } from '../lib/world.js';
import { gcReading } from './memory.js';
import { runBatch } from './relayLatency.js';

// How the bot's cost grows with the approvals left pending: relay latency, the bot's memory and
// Redis's memory at 1,000, 10,000 and 100,000 pending. One bot, the counts reached one after the
// other (each level adds to the last), filled as fast as the bot takes them: through the host and
// the bot, each one a real record with its card posted, none resolved. At each level the bot's
// RSS (after a full collection) and Redis's used_memory are read with exactly that many pending,
// then relay latency is taken at a steady rate with them (its approvals stay pending too and
// count towards the next level).

export interface ScaleRow {
  pending: number;
  /** Host writes approval/requested to the fake Slack reads chat.postMessage, at the steady rate. */
  relayP50Ms: number;
  relayP99Ms: number;
  /** The bot's resident memory after a full collection. */
  rssMB: number;
  heapMB: number;
  /** Redis's used_memory over its reading before the first approval, per pending approval. */
  redisBytesPerPending: number;
  /** How fast this level's approvals were taken (all at once, over every bench channel). */
  fillPerSecond: number;
}

export interface ScaleCheck {
  /** The largest count's row over the smallest's. */
  relayP50Ratio: number;
  redisBytesPerPendingRatio: number;
  /** Both within 1.5×: neither grows with the count. */
  met: boolean;
}

export interface ScaleResult {
  rows: ScaleRow[];
  check: ScaleCheck;
  relayCount: number;
  ratePerSec: number;
}

export interface ScaleOptions {
  /** Ascending counts of pending approvals. */
  levels: number[];
  /** Approvals per relay measurement, at ratePerSec. */
  relayCount: number;
  ratePerSec: number;
  /** Approvals opened at once while filling: the bot takes each chunk at full speed. */
  chunk: number;
  log: (line: string) => void;
}

/** The database's only host (the bench's fake host) keeps its open approvals in one set. */
const OPEN = keys.openApprovals('default');
/** The growth the issue allows from the smallest count to the largest. */
export const SCALE_LIMIT = 1.5;

/** Runs on `bot`, started with MEMORY_NODE_ARGS on a database without approvals; leaves them all pending. */
export async function scale(world: World, bot: RunningBot, opts: ScaleOptions): Promise<ScaleResult> {
  const pid = bot.proc.pid!;
  if ((await world.redis.scard(OPEN)) !== 0) throw new Error('scale: the database already holds approvals');
  const before = await redisUsedBytes(world.redis);
  const rows: ScaleRow[] = [];
  let pending = 0;
  let batches = 0;
  for (const [level, count] of opts.levels.entries()) {
    opts.log(`scale: filling to ${count} pending approvals`);
    const fillFrom = pending;
    const fillStarted = process.hrtime.bigint();
    while (pending < count) {
      const n = Math.min(opts.chunk, count - pending);
      await runBatch(world, `scf${batches++}`, n, 0, TOOLS);
      pending += n;
    }
    const fillSeconds = Number(process.hrtime.bigint() - fillStarted) / 1e9;
    // A card is posted before the bot's last writes for it (its message key, the record's ts).
    await untilIdle(pid);
    await expectPending(world, pending);
    const memory = await gcReading(bot);
    const used = await redisUsedBytes(world.redis);

    opts.log(`scale: ${opts.relayCount} approvals at ${opts.ratePerSec}/s with ${count} pending`);
    const relay = await runBatch(world, `scr${level}`, opts.relayCount, opts.ratePerSec);
    pending += opts.relayCount;
    rows.push({
      pending: count,
      relayP50Ms: relay.latency.p50Ms,
      relayP99Ms: relay.latency.p99Ms,
      rssMB: round(memory.rss, 1),
      heapMB: round(memory.heap, 1),
      redisBytesPerPending: Math.round((used - before) / count),
      fillPerSecond: Math.round((count - fillFrom) / fillSeconds),
    });
  }
  await untilIdle(pid);
  await expectPending(world, pending);
  const first = rows[0]!;
  const last = rows[rows.length - 1]!;
  const relayP50Ratio = ratio(last.relayP50Ms, first.relayP50Ms);
  const redisBytesPerPendingRatio = ratio(last.redisBytesPerPending, first.redisBytesPerPending);
  return {
    rows,
    check: {
      relayP50Ratio,
      redisBytesPerPendingRatio,
      met: relayP50Ratio <= SCALE_LIMIT && redisBytesPerPendingRatio <= SCALE_LIMIT,
    },
    relayCount: opts.relayCount,
    ratePerSec: opts.ratePerSec,
  };
}

/** Every approval opened is still open in the bot's own index: none was resolved or lost. */
async function expectPending(world: World, pending: number): Promise<void> {
  const open = await world.redis.scard(OPEN);
  if (open !== pending) throw new Error(`scale: ${open} approvals open in Redis, ${pending} expected`);
}
