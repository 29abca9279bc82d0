// npm run bench: the real bot against the fake MSP host, the fake Slack and real Redis, every
// figure beside a floor measured in the same run. `--quick` is the few-second smoke variant the
// test suite runs; `--out FILE` writes the results somewhere other than bench/results.json;
// `--only grant` (or `replicas`, `scale`, `throughput`, `latency`, `burst`) runs that scenario alone and puts its
// section into that file, keeping the others. The bot runs in the configuration a team would use
// (bench/lib/world.ts: approvers, grants with grants of other callers stored, masking); the floors
// do the least any relay must.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism, cpus } from 'node:os';
import { parseArgs } from 'node:util';
import { timelineLines } from './lib/burstTimeline.js';
import { type GoalFigures, goalsOf } from './lib/goals.js';
import { ratio, round, type Summary } from './lib/stats.js';
import { pinBenchOffMeasuredCore } from './lib/system.js';
import { type Floor, PostTracker, TOOLS, World } from './lib/world.js';
import {
  burstRows,
  grantRows,
  printGoals,
  printRows,
  printTable,
  replicaRows,
  scaleRows,
  throughputRows,
} from './report.js';
import { type BurstResult, burst } from './scenarios/burst.js';
import { clickLatency } from './scenarios/clickLatency.js';
import { type GrantResult, grantLatency } from './scenarios/grantLatency.js';
import { MEMORY_NODE_ARGS, memory } from './scenarios/memory.js';
import { redisCost } from './scenarios/redisCost.js';
import { relayLatency, runBatch } from './scenarios/relayLatency.js';
import { type ReplicasResult, replicas } from './scenarios/replicas.js';
import { type ScaleResult, scale } from './scenarios/scale.js';
import { type ThroughputResult, throughput } from './scenarios/throughput.js';

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string', default: 'bench/results.json' },
    only: { type: 'string' },
    // More interleaved throughput rounds: a steadier median when trying a change on a noisy machine.
    rounds: { type: 'string' },
  },
});
const ONLY = ['grant', 'replicas', 'scale', 'throughput', 'latency', 'redis', 'burst'];
if (args.only !== undefined && !ONLY.includes(args.only))
  throw new Error(`--only: unknown scenario ${args.only} (one of ${ONLY.join(', ')})`);
const quick = args.quick;
const sizes = quick
  ? {
      relay: 20,
      relayRate: 50,
      warmup: 10,
      tpWarmup: 20,
      clicks: 8,
      clickWarmup: 2,
      throughput: 100,
      throughputRounds: 3,
      redis: 6,
      pending: 100,
      pendingRate: 200,
      burst: 25,
      burstRate: 2,
      // 1,000,000 grants take a minute or more to store: the quick run shows the mechanism only.
      grantCounts: [1, 1_000, 10_000],
      grantApprovals: 30,
      grantWarmup: 10,
      grantLookups: 50,
      // As long as the full run's: the bot's slowest regular read at rest (the escalator's look,
      // at least once a second) must fall inside the window, or the estimate reads nothing.
      grantAtRestMs: 2_000,
      replicaWarmup: 20,
      replicaThroughput: 60,
      replicaClicks: 12,
      replicaClickWarmup: 2,
      takeovers: 1,
      otherGrants: 1_000,
      scaleLevels: [100, 300, 1_000],
      scaleRelay: 20,
      scaleChunk: 250,
    }
  : {
      relay: 500,
      relayRate: 50,
      warmup: 300,
      tpWarmup: 1000,
      clicks: 200,
      clickWarmup: 20,
      throughput: 3000,
      throughputRounds: 3,
      redis: 80,
      pending: 10_000,
      pendingRate: 150,
      burst: 500,
      burstRate: 10,
      grantCounts: [1, 10_000, 1_000_000],
      grantApprovals: 1000,
      // As long as the throughput run's: a short warm-up leaves the first count's run in the JIT.
      grantWarmup: 1000,
      grantLookups: 1000,
      grantAtRestMs: 2_000,
      replicaWarmup: 1000,
      replicaThroughput: 2000,
      replicaClicks: 200,
      replicaClickWarmup: 20,
      // The lease's phase at the kill moves a takeover by up to a third of the lease: a median.
      takeovers: 3,
      otherGrants: 10_000,
      scaleLevels: [1_000, 10_000, 100_000],
      // The relay scenario's rate; fewer approvals, since there are three counts to measure at.
      scaleRelay: 200,
      // Opened at once: the bot takes them as fast as it can, its queue never holding more.
      scaleChunk: 2_000,
    };
if (args.rounds !== undefined) sizes.throughputRounds = Number(args.rounds);

function log(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}

async function withFloor<T>(
  world: World,
  script: string,
  env: Record<string, string>,
  run: (floor: Floor) => Promise<T>,
): Promise<T> {
  const floor = await world.startFloor(script, env);
  try {
    return await run(floor);
  } finally {
    await floor.stop();
  }
}

/**
 * Auto-decide by grant with 1, 10,000 and 1,000,000 grants of other callers stored, on a fresh
 * bot; beside the relay floor of the same run.
 */
async function grants(world: World, relayFloor: Summary): Promise<GrantResult> {
  // The scenario stores its own grants of other callers, from one up.
  const bot = await world.startBot({}, [], { otherGrants: 0 });
  try {
    return await grantLatency(world, {
      grantCounts: sizes.grantCounts,
      count: sizes.grantApprovals,
      // The relay's rate: the grant figures stand beside the relay floor's, taken at the same pace.
      ratePerSec: sizes.relayRate,
      warmup: sizes.grantWarmup,
      lookups: sizes.grantLookups,
      atRestMs: sizes.grantAtRestMs,
      relayFloor,
      log,
    });
  } finally {
    await bot.stop();
    // A million grants are over a gigabyte of Redis: freed in the background, not left behind.
    await world.redis.flushdb('ASYNC');
  }
}

const relayFloorRun = (world: World, tag: string) =>
  withFloor(world, 'relay-floor.mjs', { FLOOR_MODE: 'webclient' }, () =>
    relayLatency(world, tag, { count: sizes.relay, ratePerSec: sizes.relayRate, warmup: sizes.warmup }),
  );

/**
 * `--only grant`: the grant scenario and the relay floor it is quoted against, nothing else; the
 * grant section of the results file is replaced, every other one kept.
 */
async function grantsOnly(world: World, machine: Record<string, unknown>): Promise<void> {
  log(`relay floor: ${sizes.relay} approvals at ${sizes.relayRate}/s`);
  const relayFloor = await relayFloorRun(world, 'rlfloor');
  const grant = await grants(world, relayFloor);
  const previous = existsSync(args.out!) ? JSON.parse(readFileSync(args.out!, 'utf8')) : { machine };
  writeFileSync(args.out!, `${JSON.stringify({ ...previous, grant }, null, 2)}\n`);
  printRows(grantRows(grant, relayFloor));
  log(`wrote the grant section of ${args.out}`);
}

/** Interleaved rounds of the floor and the bot; the last bot is handed back running. */
function throughputScenario(world: World) {
  return throughput(world, {
    rounds: sizes.throughputRounds,
    warmup: sizes.tpWarmup,
    count: sizes.throughput,
    log,
  });
}

/** 1,000, 10,000 and 100,000 pending approvals on one bot, started so that it collects garbage on a signal. */
async function scaleScenario(world: World): Promise<ScaleResult> {
  const bot = await world.startBot({}, MEMORY_NODE_ARGS);
  try {
    return await scale(world, bot, {
      levels: sizes.scaleLevels,
      relayCount: sizes.scaleRelay,
      ratePerSec: sizes.relayRate,
      chunk: sizes.scaleChunk,
      log,
    });
  } finally {
    await bot.stop();
    // A hundred thousand records are hundreds of MB of Redis: freed in the background.
    await world.redis.flushdb('ASYNC');
  }
}

const readResults = (machine: Record<string, unknown>): Record<string, unknown> =>
  existsSync(args.out!) ? JSON.parse(readFileSync(args.out!, 'utf8')) : { machine };

/**
 * Writes `sections` into the results file, keeping the others. The goals are recomputed from
 * what the file then holds, so they mix this run's figures with an earlier run's: `goalsFrom`
 * says so.
 */
function mergeResults(machine: Record<string, unknown>, sections: Record<string, unknown>): void {
  const merged = { ...readResults(machine), ...sections };
  const figures = merged as unknown as Partial<GoalFigures>;
  const complete =
    figures.relay &&
    figures.click &&
    figures.throughput?.cpuShare !== undefined &&
    figures.memory &&
    figures.burst?.withGrants;
  const goals = complete ? { ...goalsOf(figures as GoalFigures), goalsFrom: 'merged' } : undefined;
  writeFileSync(args.out!, `${JSON.stringify({ ...merged, ...(goals ? { goals } : {}) }, null, 2)}\n`);
  if (goals) printGoals({ ...merged, goals });
  log(`wrote the ${Object.keys(sections).join(', ')} section(s) of ${args.out}`);
}

/**
 * Relay latency at a steady rate (raw floor, same-client floor, bot), then click to decide (bot,
 * then the click floor on the same cards' ids).
 */
async function latencySection(world: World) {
  log(`relay latency: ${sizes.relay} approvals at ${sizes.relayRate}/s`);
  const relayRaw = await withFloor(world, 'relay-floor.mjs', { FLOOR_MODE: 'raw' }, () =>
    relayLatency(world, 'rlraw', { count: sizes.relay, ratePerSec: sizes.relayRate, warmup: sizes.warmup }),
  );
  const relayFloor = await relayFloorRun(world, 'rlfloor');
  const bot = await world.startBot();
  let relayBot: Summary;
  let clickBot: Summary;
  let botCards: ReturnType<PostTracker['postsOf']>;
  try {
    relayBot = await relayLatency(world, 'rlbot', {
      count: sizes.relay,
      ratePerSec: sizes.relayRate,
      warmup: sizes.warmup,
    });
    world.expectApproversOnCards();

    log(`click to decide: ${sizes.clicks} clicks, one at a time`);
    const tracker = new PostTracker(world.slack);
    await runBatch(world, 'ckbot', sizes.clicks, 200);
    botCards = tracker.postsOf('ckbot').sort((a, b) => a.index - b.index);
    clickBot = await clickLatency(world, bot.url, botCards, sizes.clickWarmup);
  } finally {
    await bot.stop();
  }
  const clickFloor = await withFloor(world, 'click-floor.mjs', {}, (floor) =>
    clickLatency(
      world,
      floor.url,
      botCards.map((c) => ({ ...c, approvalId: c.approvalId.replace('ckbot', 'ckfloor') })),
      sizes.clickWarmup,
    ),
  );
  return {
    relay: {
      ratePerSec: sizes.relayRate,
      count: sizes.relay,
      bot: relayBot,
      floor: relayFloor,
      rawFloor: relayRaw,
      p50Ratio: ratio(relayBot.p50Ms, relayFloor.p50Ms),
      p99Ratio: ratio(relayBot.p99Ms, relayFloor.p99Ms),
      maxRatio: ratio(relayBot.maxMs, relayFloor.maxMs),
      floorVsRawP50Ratio: ratio(relayFloor.p50Ms, relayRaw.p50Ms),
    },
    click: {
      count: sizes.clicks - sizes.clickWarmup,
      bot: clickBot,
      floor: clickFloor,
      p50Ratio: ratio(clickBot.p50Ms, clickFloor.p50Ms),
      p99Ratio: ratio(clickBot.p99Ms, clickFloor.p99Ms),
    },
  };
}

/** `--only latency`: relay and click latency beside their floors. */
async function latencyOnly(world: World, machine: Record<string, unknown>): Promise<void> {
  const { relay, click } = await latencySection(world);
  log(
    `relay p50 ${relay.bot.p50Ms} ms vs floor ${relay.floor.p50Ms} ms (${relay.p50Ratio}×); ` +
      `click p50 ${click.bot.p50Ms} ms vs floor ${click.floor.p50Ms} ms (${click.p50Ratio}×)`,
  );
  mergeResults(machine, { config: world.config, relay, click });
}

/**
 * `--only redis`: round trips and commands per approval, click and resolution, on a bot warmed as
 * the full run's (a throughput round's warm-up and batch first).
 */
async function redisOnly(world: World, machine: Record<string, unknown>): Promise<void> {
  const bot = await world.startBot();
  try {
    log(`redis cost: warm-up of ${sizes.tpWarmup} approvals, then ${sizes.redis} measured`);
    await runBatch(world, 'rcw', sizes.tpWarmup, 0, TOOLS);
    const redis = await redisCost(world, bot, sizes.redis);
    log(JSON.stringify(redis));
    mergeResults(machine, { config: world.config, redis });
  } finally {
    await bot.stop();
  }
}

/** `--only throughput`: the raw floor once, then the interleaved rounds. */
async function throughputOnly(world: World, machine: Record<string, unknown>): Promise<void> {
  const { rawPerSecond, result, bot } = await throughputSection(world);
  await bot.stop();
  const section = throughputFigures(result, rawPerSecond);
  printRows(throughputRows(section));
  mergeResults(machine, { config: world.config, throughput: section });
}

/** `--only scale`: the pending counts alone. */
async function scaleOnly(world: World, machine: Record<string, unknown>): Promise<void> {
  const result = await scaleScenario(world);
  printRows(scaleRows(result.rows, result.check));
  mergeResults(machine, { config: world.config, scale: result.rows, scaleCheck: result.check });
}

/**
 * The raw floor once (what the client library costs; a figure for the record, not a goal), then
 * the rounds. Resolves with the last round's bot still running.
 */
async function throughputSection(world: World) {
  log(`throughput: raw floor, ${sizes.throughput} approvals at once over ${TOOLS.length} channels`);
  const raw = await withFloor(world, 'relay-floor.mjs', { FLOOR_MODE: 'raw' }, async () => {
    await runBatch(world, 'tprw', sizes.tpWarmup, 0, TOOLS);
    return runBatch(world, 'tpraw', sizes.throughput, 0, TOOLS);
  });
  log(`throughput: ${sizes.throughputRounds} rounds of floor and bot, ${sizes.throughput} approvals each`);
  const { result, bot } = await throughputScenario(world);
  return { rawPerSecond: raw.perSecond, result, bot };
}

function throughputFigures(t: ThroughputResult, rawPerSecond: number) {
  return {
    ...t,
    rawFloorPerSecond: round(rawPerSecond, 0),
    floorVsRawShare: ratio(t.floorPerSecond, rawPerSecond),
  };
}

/** One replica and three against the same host, and a takeover; a baseline of its own (one replica). */
function replicaScenario(world: World): Promise<ReplicasResult> {
  return replicas(world, {
    warmup: sizes.replicaWarmup,
    throughput: sizes.replicaThroughput,
    clicks: sizes.replicaClicks,
    clickWarmupPerReplica: sizes.replicaClickWarmup,
    takeovers: sizes.takeovers,
    log,
  });
}

/**
 * The bursts under Slack's per-channel limit, each on a fresh bot: plain, then with as many
 * requests again that a grant answers. Both have the same cards to post, so the second differs
 * from the first only by the grants' work and their lines in the same channels.
 */
async function burstScenario(world: World): Promise<BurstResult & { withGrants: BurstResult }> {
  const run = async (grants: boolean) => {
    const approvals = grants ? sizes.burst * 2 : sizes.burst;
    log(
      `burst${grants ? ', a grant answering half' : ''}: ${approvals} approvals over ${TOOLS.length} channels at ${sizes.burstRate} posts/s per channel`,
    );
    const bot = await world.startBot();
    try {
      const result = await burst(world, approvals, sizes.burstRate, { grants });
      for (const line of timelineLines(result.timeline)) log(line);
      return result;
    } finally {
      await bot.stop();
    }
  };
  const plain = await run(false);
  return { ...plain, withGrants: await run(true) };
}

/** `--only burst`: the bursts alone; the other sections of the results file are kept. */
async function burstOnly(world: World, machine: Record<string, unknown>): Promise<void> {
  const result = await burstScenario(world);
  printRows(burstRows(result));
  mergeResults(machine, { burst: result });
}

/** `--only replicas`: the replicas scenario alone; the other sections of the results file are kept. */
async function replicasOnly(world: World, machine: Record<string, unknown>): Promise<void> {
  const result = await replicaScenario(world);
  const previous = existsSync(args.out!) ? JSON.parse(readFileSync(args.out!, 'utf8')) : { machine };
  writeFileSync(args.out!, `${JSON.stringify({ ...previous, replicas: result }, null, 2)}\n`);
  printRows(replicaRows(result));
  log(`wrote the replicas section of ${args.out}`);
}

async function main(): Promise<void> {
  const started = Date.now();
  const cores = availableParallelism(); // before pinning, which narrows what this process sees
  const pinned = pinBenchOffMeasuredCore();
  const machine = { cpus: cores, model: cpus()[0]?.model ?? 'unknown', node: process.version, pinned };
  const world = await World.start({ otherGrants: sizes.otherGrants });
  try {
    if (args.only === 'grant') return await grantsOnly(world, machine);
    if (args.only === 'replicas') return await replicasOnly(world, machine);
    if (args.only === 'throughput') return await throughputOnly(world, machine);
    if (args.only === 'scale') return await scaleOnly(world, machine);
    if (args.only === 'latency') return await latencyOnly(world, machine);
    if (args.only === 'redis') return await redisOnly(world, machine);
    if (args.only === 'burst') return await burstOnly(world, machine);
    const { relay, click } = await latencySection(world);

    // ---- throughput, all at once across the channels: interleaved rounds of floor and bot
    const tp = await throughputSection(world);
    let bot = tp.bot;

    // ---- Redis cost, on the last throughput round's bot (warm)
    log(`redis cost: ${sizes.redis} approvals, half resolved by the host, half clicked`);
    const redis = await redisCost(world, bot, sizes.redis);
    await bot.stop();

    // ---- memory with many pending
    log(`memory: ${sizes.pending} pending approvals at ${sizes.pendingRate}/s`);
    bot = await world.startBot({}, MEMORY_NODE_ARGS);
    const mem = await memory(world, bot, sizes.pending, sizes.pendingRate);
    await bot.stop();

    // ---- how cost grows with 1,000, 10,000 and 100,000 pending
    const scaleResult = await scaleScenario(world);

    // ---- burst under Slack's per-channel limit
    const burstResult = await burstScenario(world);

    // ---- one replica and three, and a takeover; before the grants, which leave Redis busy freeing
    const replicaResult = await replicaScenario(world);

    // ---- auto-decide by grant, last: it leaves a million grants to free
    const grant = await grants(world, relay.floor);

    const results = {
      generatedAt: new Date().toISOString(),
      quick,
      machine,
      config: world.config,
      relay,
      click,
      throughput: throughputFigures(tp.result, tp.rawPerSecond),
      redis,
      memory: mem,
      scale: scaleResult.rows,
      scaleCheck: scaleResult.check,
      burst: burstResult,
      grant,
      replicas: replicaResult,
      durationSeconds: round((Date.now() - started) / 1000, 0),
    };
    const goals = goalsOf(results);
    // The fault figures (npm run chaos) live in the same file: keep them.
    const faults = existsSync(args.out!)
      ? (JSON.parse(readFileSync(args.out!, 'utf8')) as { faults?: unknown }).faults
      : undefined;
    writeFileSync(
      args.out!,
      `${JSON.stringify({ ...results, goals, ...(faults ? { faults } : {}) }, null, 2)}\n`,
    );
    printTable(results);
    printGoals({ ...results, goals });
    log(`wrote ${args.out} in ${results.durationSeconds} s`);
  } finally {
    await world.close();
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(
      `[bench] failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    );
    process.exit(1);
  },
);
