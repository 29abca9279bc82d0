import type { RunningBot } from '../../test/support/bot.js';
import { ratio, round } from '../lib/stats.js';
import { cpuMs, untilIdle } from '../lib/system.js';
import { TOOLS, type World } from '../lib/world.js';
import { runBatch } from './relayLatency.js';

// Approvals per second, all opened at once across the channels, and the CPU each one costs, for
// the floor (the Web API client one) and the bot in interleaved rounds: floor, bot, floor, bot, …
// On a shared machine a neighbour's burst lands in one round, not in every round of one side; the
// medians are reported. Both are started afresh each round on the same database (the grants of
// other callers, no approval), so no round inherits the pending approvals of the one before and
// each side gets the same treatment. Each round warms up first, long enough for the JIT to settle
// (a short warm-up leaves a fifth of the bot's CPU in the optimizing compiler), and only the
// batch after it counts.

export interface ThroughputRound {
  floorPerSecond: number;
  botPerSecond: number;
  /** Bot over floor. */
  share: number;
  /** CPU (user + system) of the process during the measured batch, per approval. */
  cpuMsPerApproval: { bot: number; floor: number };
}

export interface ThroughputResult {
  count: number;
  rounds: ThroughputRound[];
  /** Medians over the rounds. */
  perSecond: number;
  floorPerSecond: number;
  floorShare: number;
  cpuMsPerApproval: { bot: number; floor: number };
  /** Floor over bot: the share of the bot's CPU any relay would spend as well. */
  cpuShare: number;
}

export interface ThroughputOptions {
  rounds: number;
  warmup: number;
  count: number;
  log: (line: string) => void;
}

export interface Measured {
  perSecond: number;
  cpuMsPerApproval: number;
}

/**
 * A warm-up batch, then the measured one with the CPU `pid` spent on it. Batch prefixes are
 * letters then digits (`tpbotw0`, `tpbot0`), the shape PostTracker finds in a card.
 */
export async function measure(
  world: World,
  pid: number,
  side: string,
  index: number,
  opts: Pick<ThroughputOptions, 'warmup' | 'count'>,
): Promise<Measured> {
  const tag = `${side}${index}`;
  await runBatch(world, `${side}w${index}`, opts.warmup, 0, TOOLS);
  // The warm-up's last writes (after its posts) are not the measured batch's.
  await untilIdle(pid);
  const before = cpuMs(pid);
  const run = await runBatch(world, tag, opts.count, 0, TOOLS);
  // Nor are the measured batch's left out: its own writes after the last post count.
  await untilIdle(pid);
  return { perSecond: run.perSecond, cpuMsPerApproval: (cpuMs(pid) - before) / opts.count };
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/**
 * The rounds; resolves with the figures and the last round's bot, still running and warm, for
 * whatever comes next (the caller stops it).
 */
export async function throughput(
  world: World,
  opts: ThroughputOptions,
): Promise<{ result: ThroughputResult; bot: RunningBot }> {
  const rounds: ThroughputRound[] = [];
  let bot: RunningBot | undefined;
  for (let r = 0; r < opts.rounds; r++) {
    opts.log(`throughput round ${r + 1} of ${opts.rounds}: floor, then bot`);
    // The previous round's bot would share the measured core with this round's floor.
    await bot?.stop();
    const floorProc = await world.startFloor('relay-floor.mjs', { FLOOR_MODE: 'webclient' });
    let floor: Measured;
    try {
      floor = await measure(world, floorProc.proc.pid!, 'tpfloor', r, opts);
    } finally {
      await floorProc.stop();
    }
    bot = await world.startBot();
    let own: Measured;
    try {
      own = await measure(world, bot.proc.pid!, 'tpbot', r, opts);
    } catch (err) {
      await bot.stop();
      throw err;
    }
    rounds.push({
      floorPerSecond: Math.round(floor.perSecond),
      botPerSecond: Math.round(own.perSecond),
      share: ratio(own.perSecond, floor.perSecond),
      cpuMsPerApproval: { bot: round(own.cpuMsPerApproval, 3), floor: round(floor.cpuMsPerApproval, 3) },
    });
  }
  const cpu = {
    bot: round(median(rounds.map((r) => r.cpuMsPerApproval.bot)), 3),
    floor: round(median(rounds.map((r) => r.cpuMsPerApproval.floor)), 3),
  };
  return {
    result: {
      count: opts.count,
      rounds,
      perSecond: Math.round(median(rounds.map((r) => r.botPerSecond))),
      floorPerSecond: Math.round(median(rounds.map((r) => r.floorPerSecond))),
      floorShare: round(median(rounds.map((r) => r.share)), 2),
      cpuMsPerApproval: cpu,
      cpuShare: ratio(cpu.floor, cpu.bot),
    },
    bot: bot!,
  };
}
