import { PRODUCTION_NODE_ARGS } from '../../test/support/bot.js';

// The performance goals of issue 14, each a figure of one run of npm run bench beside the floor
// measured in that same run.

export interface Goals {
  /** Throughput, bot over the same-client floor (median of the interleaved rounds): ≥ 0.8. */
  throughputShare: number;
  /** CPU per approval, floor over bot (medians of the rounds): ≥ 0.8. */
  cpuShare: number;
  /** Relay p50, bot over floor: ≤ 1.25. */
  relayP50Ratio: number;
  /** Click → decide p50, bot over floor: ≤ 1.25. */
  clickP50Ratio: number;
  /** RSS growth with 10,000 pending (full collections before both readings): ≤ 50 MB. */
  rssGrowthMB: number;
  /** Burst under Slack's per-channel limit, seconds over the channels' ideal (issue 31): ≤ 1.1. */
  burstRatio: number;
  /** The same with a grant answering half the requests, its lines in the same channels: ≤ 1.1. */
  burstWithGrantsRatio: number;
  /** The young generation the bot runs with (`npm start`'s flag), which the RSS figure depends on. */
  youngGeneration: string;
  met: boolean;
}

export const GOAL = {
  throughputShare: 0.8,
  cpuShare: 0.8,
  relayP50Ratio: 1.25,
  clickP50Ratio: 1.25,
  rssGrowthMB: 50,
  burstRatio: 1.1,
} as const;

/**
 * The grant goals of issue 31, each a figure of the grant scenario (bench/scenarios/grantLatency.ts)
 * beside the relay floor of the same run. Rows of the report, apart from issue 14's `met`.
 */
export const GRANT_GOAL = {
  /** Auto-decide p99 at the largest count over the relay floor's p99. */
  p99Ratio: 1.5,
  /** An auto-decided approval's whole life, scripts' inner calls included. */
  commandsPerApproval: 12,
  roundTripsPerApproval: 3,
  /** used_memory grown by seeding, over the grants seeded. */
  redisBytesPerGrant: 400,
} as const;

/**
 * Issue 31's goals, each its own line beside the ones above: Redis round trips per resolution and
 * per click at the owner, and a click at a standby (forwarded to the owner) against one at the
 * owner, p50 over p50 in the replicas scenario.
 */
export const ROUND_TRIP_GOAL = {
  perResolution: 3,
  perClick: 1.2,
  standbyClickP50Ratio: 2,
} as const;

/** `npm start`'s --max-semi-space-size, or V8's default when it sets none. */
export function youngGeneration(nodeArgs: string[] = PRODUCTION_NODE_ARGS): string {
  const flag = nodeArgs.find((a) => a.startsWith('--max-semi-space-size='));
  if (!flag) return 'V8 default semi-spaces (16 MB each on 64-bit)';
  return `${flag.split('=')[1]} MB semi-spaces (${flag})`;
}

/** What each goal's figure is in one run's results: only those figures, nothing carried over. */
export interface GoalFigures {
  relay: { p50Ratio: number };
  click: { p50Ratio: number };
  throughput: { floorShare: number; cpuShare: number };
  memory: { growthMB: number };
  burst: BurstSeconds & { withGrants: BurstSeconds };
}

interface BurstSeconds {
  seconds: number;
  idealSeconds: number;
}

/** A burst's time over its ideal, as the goal reads it. */
export const burstRatio = (b: BurstSeconds) => Math.round((b.seconds / b.idealSeconds) * 100) / 100;

export function goalsOf(r: GoalFigures): Goals {
  const figures = {
    throughputShare: r.throughput.floorShare,
    cpuShare: r.throughput.cpuShare,
    relayP50Ratio: r.relay.p50Ratio,
    clickP50Ratio: r.click.p50Ratio,
    rssGrowthMB: r.memory.growthMB,
    burstRatio: burstRatio(r.burst),
    burstWithGrantsRatio: burstRatio(r.burst.withGrants),
  };
  return { ...figures, youngGeneration: youngGeneration(), met: goalMet(figures) };
}

type Figures = Omit<Goals, 'youngGeneration' | 'met'>;

/** Every goal met; a figure missing (NaN) is not met. */
export function goalMet(f: Figures): boolean {
  return (
    f.throughputShare >= GOAL.throughputShare &&
    f.cpuShare >= GOAL.cpuShare &&
    f.relayP50Ratio <= GOAL.relayP50Ratio &&
    f.clickP50Ratio <= GOAL.clickP50Ratio &&
    f.rssGrowthMB <= GOAL.rssGrowthMB &&
    f.burstRatio <= GOAL.burstRatio &&
    f.burstWithGrantsRatio <= GOAL.burstRatio
  );
}
