import { testRedisUrl } from '../../test/support/testRedis.js';
import { DecideTracker } from '../lib/decideTracker.js';
import {
  benchGrantStore,
  BENCH_CALLER as CALLER,
  checkSeeded,
  SANDBOX,
  type SeedSpec,
  seedOtherGrants,
  seedSpecFor,
  storeBenchGrant,
  TTL_MS,
} from '../lib/grantSeed.js';
import { type RedisStalls, watchRedisStalls } from '../lib/redisStalls.js';
import { msBetween, ratio, round, type Summary, summarize } from '../lib/stats.js';
import { counterOverhead, redisCounters, redisUsedBytes, trafficAtRest } from '../lib/system.js';
import {
  CHANNELS,
  GRANT_TEMPLATE,
  ONCE_CHOICE,
  PostTracker,
  REDIS_DB,
  ROUTES,
  TEMPLATE,
  TOOLS,
  type World,
} from '../lib/world.js';

// Auto-decide by a remembered grant, with more and more grants of other callers stored: from the
// host writing approval/requested to the host reading the bot's approval/decide (no card). The
// lookup reads one bucket (caller, tool, sandbox mode, route), so neither figure may grow with the
// count. The other callers' grants differ from the bench's own only by caller: the closest a
// grant can come to matching without matching. One bot runs every count, the grants added in
// between, so the runs differ by the grants stored and nothing else.

const TOOL = TOOLS[0]!;
/** The route that places TOOL's approvals: the bench's grant must be of it to answer them. */
const ROUTE = ROUTES[0]!;
/** After the last decide: a card posted after all would show up, and each approval's tail (its line, the resolution) is done. */
const SETTLE_MS = 500;
const WARMUP_RATE = 200;
/**
 * Commands, each its own round trip, that the stall window (bench/lib/redisStalls.ts) sends
 * between the counters' two readings: CONFIG GET, two CONFIG SETs and two RESETs to open it;
 * LATENCY LATEST, SLOWLOG GET and two CONFIG SETs to close it. The bench's, not the bot's.
 */
const STALL_WATCH_COMMANDS = 9;

export interface GrantRun {
  /** Grants of other callers stored; the bench's own matching grant is one more. */
  grants: number;
  /** Approvals asked; n of them were auto-decided and timed. */
  approvals: number;
  n: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  /** Approvals the bot decided itself, with the offered approved/once choice. */
  autoDecidedOnce: number;
  /** approval/decide with another choice, or a second one for the same approval. */
  otherDecides: number;
  /** Cards posted for these approvals: a grant's answer posts none, only a line. */
  cards: number;
  /** Redis commands per approval, scripts' inner calls included, its whole life (decide, line, resolution). */
  redisCommandsPerApproval: number;
  /** Redis round trips per approval over the same window (Redis's reads: a pipeline is one). */
  redisRoundTripsPerApproval: number;
  /** The bot's traffic at rest, taken off the window above (and off its commands) by its length. */
  backgroundRoundTripsPerSec: number;
  /** The lookup alone (RedisGrantStore.candidates from the bench, one at a time). */
  lookup: Summary;
  /**
   * Bare Redis round trips (PING) from the bench at the approvals' pace, during the batch: what
   * Redis itself answers in, whatever the bot does. Its tail is the floor of the bot's.
   */
  redisPing: Summary;
  /** What Redis itself logged as slow during the batch (LATENCY LATEST, SLOWLOG). */
  redisStalls: RedisStalls;
  /** Seconds to add this run's grants to the previous run's; Redis's memory afterwards. */
  seedSeconds: number;
  redisMB: number;
  /** used_memory grown by this run's seeding over the grants it added (0 when it added none). */
  redisBytesPerGrant: number;
}

export interface GrantResult {
  ratePerSec: number;
  runs: GrantRun[];
  /** The figures at the largest count, with that count beside them. */
  grants: number;
  p50Ms: number;
  p99Ms: number;
  /** Largest count over the single grant's run (the baseline measured in the same run). */
  p50GrowthRatio: number;
  p99GrowthRatio: number;
  lookupP99GrowthRatio: number;
  redisPingP99GrowthRatio: number;
  /** p99 at the largest count over the relay floor's p99 (frame in, one Redis write, one post). */
  p99Ratio: number;
  /** The most of any count's runs: an auto-decided approval's whole life, scripts' inner calls included. */
  commandsPerApproval: number;
  roundTripsPerApproval: number;
  /** used_memory grown by the largest count's seeding, over the grants it added. */
  redisBytesPerGrant: number;
  /** A bare PING's p99 at each count, in the order of `runs`. */
  pingP99Ms: number[];
}

export interface GrantOptions {
  grantCounts: number[];
  count: number;
  ratePerSec: number;
  warmup: number;
  lookups: number;
  /** How long the bot's traffic at rest is measured before each batch. */
  atRestMs: number;
  /** The relay floor of the same run, at the same rate. */
  relayFloor: Summary;
  log: (line: string) => void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs with the bot started on an empty database; leaves every grant it stored behind. */
export async function grantLatency(world: World, opts: GrantOptions): Promise<GrantResult> {
  const spec = seedSpecFor(TOOL, ROUTE, TEMPLATE.subject, SANDBOX, TTL_MS);
  const store = benchGrantStore(world.redis);
  await storeBenchGrant(store, spec, CHANNELS[0]);

  const runs: GrantRun[] = [];
  let stored = 0;
  for (const [i, grants] of opts.grantCounts.entries()) {
    opts.log(`grants: storing ${grants - stored} more grants of other callers (${grants} in all)`);
    const seedStarted = Date.now();
    const bytesBefore = await redisUsedBytes(world.redis);
    await seedOtherGrants(testRedisUrl(REDIS_DB), stored, grants, spec);
    const seedSeconds = round((Date.now() - seedStarted) / 1000, 1);
    await checkSeeded(store, grants, spec);
    // Redis finishes growing its key table in the background: up to 2 s after a million grants.
    await sleep(Math.min(2_000, (grants - stored) / 500));
    const bytesAfter = await redisUsedBytes(world.redis);
    const redisBytesPerGrant = grants > stored ? round((bytesAfter - bytesBefore) / (grants - stored), 0) : 0;
    stored = grants;
    const redisMB = round(bytesAfter / 2 ** 20, 0);

    opts.log(`grants: ${opts.count} approvals at ${opts.ratePerSec}/s with ${grants} stored`);
    await decideBatch(world, `gw${i}`, opts.warmup, WARMUP_RATE);
    // The bot's own traffic at rest is no approval's: taken off the batch's window by its length,
    // as the redis section does.
    const idle = await trafficAtRest(world.redis, opts.atRestMs);
    const overhead = await counterOverhead(world.redis);
    const before = await redisCounters(world.redis);
    const stalls = await watchRedisStalls(world.redis);
    const pings = pingAtPace(world, opts.ratePerSec);
    const batchStarted = performance.now();
    const batch = await decideBatch(world, `gr${i}`, opts.count, opts.ratePerSec);
    const redisPing = await pings.stop();
    const redisStalls = await stalls.stop();
    const after = await redisCounters(world.redis);
    const windowMs = performance.now() - batchStarted;
    const commands =
      after.commands -
      before.commands -
      overhead.commands -
      STALL_WATCH_COMMANDS -
      idle.commandsPerMs * windowMs;
    const reads =
      after.reads - before.reads - overhead.reads - STALL_WATCH_COMMANDS - idle.readsPerMs * windowMs;
    runs.push({
      grants,
      approvals: opts.count,
      ...summarize(batch.latencies),
      autoDecidedOnce: batch.latencies.length,
      otherDecides: batch.otherDecides,
      cards: batch.cards,
      // The pings are Redis commands too.
      redisCommandsPerApproval: round((commands - redisPing.n) / opts.count, 2),
      redisRoundTripsPerApproval: round((reads - redisPing.n) / opts.count, 2),
      backgroundRoundTripsPerSec: round(idle.readsPerMs * 1000, 1),
      lookup: await lookups(store, spec, opts.lookups),
      redisPing,
      redisStalls,
      seedSeconds,
      redisMB,
      redisBytesPerGrant,
    });
  }
  const base = runs[0]!;
  const top = runs[runs.length - 1]!;
  return {
    ratePerSec: opts.ratePerSec,
    runs,
    grants: top.grants,
    p50Ms: top.p50Ms,
    p99Ms: top.p99Ms,
    p50GrowthRatio: ratio(top.p50Ms, base.p50Ms),
    p99GrowthRatio: ratio(top.p99Ms, base.p99Ms),
    lookupP99GrowthRatio: ratio(top.lookup.p99Ms, base.lookup.p99Ms),
    redisPingP99GrowthRatio: ratio(top.redisPing.p99Ms, base.redisPing.p99Ms),
    p99Ratio: ratio(top.p99Ms, opts.relayFloor.p99Ms),
    commandsPerApproval: Math.max(...runs.map((run) => run.redisCommandsPerApproval)),
    roundTripsPerApproval: Math.max(...runs.map((run) => run.redisRoundTripsPerApproval)),
    redisBytesPerGrant: top.redisBytesPerGrant,
    pingP99Ms: runs.map((run) => run.redisPing.p99Ms),
  };
}

interface DecideBatch {
  /** Frame written to decide read, in ms, for each approval decided with the once choice. */
  latencies: number[];
  otherDecides: number;
  cards: number;
}

/** Opens a batch at a steady rate and waits until each approval got a decide or a card. */
async function decideBatch(
  world: World,
  prefix: string,
  count: number,
  ratePerSec: number,
): Promise<DecideBatch> {
  const posts = new PostTracker(world.slack);
  const decides = new DecideTracker(world.host);
  await world.host.openBatch({ prefix, count, ratePerSec, tools: [TOOL], template: GRANT_TEMPLATE as never });
  const deadline = Date.now() + (count / ratePerSec) * 1000 + 30_000;
  while (decides.of(prefix).length + posts.postsOf(prefix).length < count && Date.now() < deadline) {
    await sleep(20);
  }
  await sleep(SETTLE_MS);
  const written = await world.host.batchTimes(prefix);
  const decided = decides.of(prefix);
  const once = decided.filter((d) => d.choiceId === ONCE_CHOICE);
  return {
    latencies: once.map((d) => msBetween(written.get(d.approvalId)!, d.hr)),
    otherDecides:
      decided.length - once.length + decides.duplicates.filter((id) => id.startsWith(`${prefix}-`)).length,
    cards: posts.postsOf(prefix).length,
  };
}

/** The bucket read on its own, from the bench: what a lookup costs Redis, without the bot around it. */
async function lookups(
  store: ReturnType<typeof benchGrantStore>,
  spec: SeedSpec,
  count: number,
): Promise<Summary> {
  const times: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = process.hrtime.bigint();
    const key = { caller: CALLER, tool: spec.tool, sandboxMode: spec.sandboxMode, route: spec.route };
    const found = await store.candidates(key, new Date());
    times.push(msBetween(started, process.hrtime.bigint()));
    if (found.length !== 1) throw new Error(`the bench's own bucket holds ${found.length} grants, not 1`);
  }
  return summarize(times);
}

/** PINGs Redis every 1/rate seconds until stopped; resolves with their round trips. */
function pingAtPace(world: World, ratePerSec: number): { stop(): Promise<Summary> } {
  const times: number[] = [];
  let running = true;
  const loop = (async () => {
    while (running) {
      const started = process.hrtime.bigint();
      await world.redis.ping();
      times.push(msBetween(started, process.hrtime.bigint()));
      await sleep(1000 / ratePerSec);
    }
  })();
  return {
    async stop() {
      running = false;
      await loop;
      return summarize(times);
    },
  };
}
