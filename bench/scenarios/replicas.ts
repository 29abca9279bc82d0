import { keys } from '../../src/store/keys.js';
import type { RunningBot } from '../../test/support/bot.js';
import { DecideTracker } from '../lib/decideTracker.js';
import { percentile, ratio, round, summarize } from '../lib/stats.js';
import { PostTracker, TEMPLATE, TOOLS, type World } from '../lib/world.js';
import { click, sendClick } from './clickLatency.js';
import { runBatch } from './relayLatency.js';

// Several replicas on one Redis, against one MSP host: the same relay throughput and click
// latency taken with one replica and with three, and how long a standby takes to run the host
// after its owner is SIGKILLed. One host has one owner, so the host's approvals are relayed by
// one process whatever the count; what three replicas change is where clicks land: spread
// round-robin, two in three reach a replica that does not run the host and go to its owner
// through the host's decision stream. Each count starts from an empty database and fresh
// processes with the same warm-up, so the two differ by the replicas beside the owner only.

/** MSP_HOST_COMMAND's host. */
const HOST_ID = 'default';
const REPLICAS = ['bench-r1', 'bench-r2', 'bench-r3'];
/** The fastest takeover the configuration allows (it refuses under 2 s), a little above it. */
export const LEASE_TTL_MS = 3_000;
const CARD_RATE = 200;

export interface ReplicaRun {
  replicas: number;
  /** Approvals the host asked (warm-ups included), and the cards Slack got for them. */
  approvals: number;
  cards: number;
  duplicateCards: number;
  /** Cards posted per second, from the first approval/requested written to the last card. */
  throughputPerSec: number;
  /** Clicks sent (warm-ups included), and the approval/decide the host read for them. */
  clicks: number;
  decides: number;
  duplicateDecides: number;
  /** Timed clicks: from the signed POST leaving the bench to the host reading approval/decide. */
  n: number;
  clickP50Ms: number;
  clickP99Ms: number;
  clickMaxMs: number;
  /** Timed clicks that landed at a replica not running the host (0 with one replica). */
  forwardedClicks: number;
  /** p50 of those alone, and of the clicks that landed at the owner. */
  forwardedClickP50Ms?: number;
  ownerClickP50Ms?: number;
}

export interface Takeover {
  /**
   * What was left of the owner's lease at the kill (PTTL). The owner renews every third of the
   * lease, so this is between about two thirds of it and all of it, and sets most of the wait.
   */
  leaseLeftMs: number;
  /** SIGKILL of the owner to the next host process connecting (its new incarnation). */
  hostMs: number;
  /** From the lease running out to that host process: a standby's look, its lease, the spawn. */
  afterLeaseMs: number;
  /** SIGKILL to the host reading the approval/decide of a click sent right after the kill. */
  decideMs: number;
}

export interface ReplicasResult {
  leaseTtlMs: number;
  one: ReplicaRun;
  three: ReplicaRun;
  ratios: {
    /** Three replicas' throughput over one's: one owner relays either way, so about 1. */
    throughput: number;
    clickP50: number;
    clickP99: number;
  };
  /**
   * With three replicas: p50 of the clicks that landed at a standby (forwarded to the owner) over
   * p50 of those that landed at the owner.
   */
  standbyClickP50Ratio: number;
  takeovers: Takeover[];
  /** Medians over the takeovers. */
  takeoverMs: number;
  takeoverDecideMs: number;
  takeoverAfterLeaseMs: number;
  takeoverOverLease: number;
  takeoverDecideOverLease: number;
}

export interface ReplicasOptions {
  /** Approvals relayed first by each count's fresh owner, not timed (the JIT settles). */
  warmup: number;
  /** Approvals asked all at once over the bench's channels, timed. */
  throughput: number;
  /** Timed clicks, and clicks before them per replica, not timed. */
  clicks: number;
  clickWarmupPerReplica: number;
  takeovers: number;
  log: (line: string) => void;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function replicas(world: World, opts: ReplicasOptions): Promise<ReplicasResult> {
  opts.log(`replicas: 1 replica, ${opts.throughput} approvals at once, ${opts.clicks} clicks`);
  const one = await measure(world, 1, opts);
  opts.log(`replicas: 3 replicas, ${opts.throughput} approvals at once, ${opts.clicks} clicks round-robin`);
  const three = await measure(world, 3, opts);
  opts.log(`replicas: ${opts.takeovers} takeover(s) after SIGKILL of the owner, lease ${LEASE_TTL_MS} ms`);
  const takeovers = await takeoverRuns(world, opts.takeovers);
  const median = (values: number[]) =>
    percentile(
      [...values].sort((a, b) => a - b),
      50,
    );
  const takeoverMs = round(median(takeovers.map((t) => t.hostMs)), 0);
  const takeoverDecideMs = round(median(takeovers.map((t) => t.decideMs)), 0);
  const takeoverAfterLeaseMs = round(median(takeovers.map((t) => t.afterLeaseMs)), 0);
  return {
    leaseTtlMs: LEASE_TTL_MS,
    one,
    three,
    ratios: {
      throughput: ratio(three.throughputPerSec, one.throughputPerSec),
      clickP50: ratio(three.clickP50Ms, one.clickP50Ms),
      clickP99: ratio(three.clickP99Ms, one.clickP99Ms),
    },
    standbyClickP50Ratio: ratio(three.forwardedClickP50Ms ?? Number.NaN, three.ownerClickP50Ms ?? Number.NaN),
    takeovers,
    takeoverMs,
    takeoverDecideMs,
    takeoverAfterLeaseMs,
    takeoverOverLease: ratio(takeoverMs, LEASE_TTL_MS),
    takeoverDecideOverLease: ratio(takeoverDecideMs, LEASE_TTL_MS),
  };
}

/** The host in memory (the bench's default): only a takeover needs it to outlive its process. */
const replicaEnv = (extra: Record<string, string> = {}) => ({
  COUNTERSIGN_LEASE_TTL: `${LEASE_TTL_MS}ms`,
  ...extra,
});

/**
 * Starts `count` replicas on a database holding only the grants of other callers, the first
 * alone until it owns the host.
 */
async function startReplicas(
  world: World,
  count: number,
  extraEnv: Record<string, string> = {},
): Promise<RunningBot[]> {
  await world.resetDb();
  const bots: RunningBot[] = [];
  try {
    // Ready means running the host: the others then find it owned and stand by.
    bots.push(await world.startReplica(REPLICAS[0]!, replicaEnv(extraEnv)));
    for (const name of REPLICAS.slice(1, count))
      bots.push(await world.startReplica(name, replicaEnv(extraEnv)));
  } catch (err) {
    await Promise.all(bots.map((b) => b.stop()));
    throw err;
  }
  return bots;
}

async function measure(world: World, count: number, opts: ReplicasOptions): Promise<ReplicaRun> {
  const bots = await startReplicas(world, count);
  const tag = count === 1 ? 'rpone' : 'rpthree';
  try {
    const owner = await ownerOf(bots);
    const posts = new PostTracker(world.slack);
    const decides = new DecideTracker(world.host);
    const prefixes: string[] = [];
    const batch = async (suffix: string, n: number, rate: number) => {
      prefixes.push(`${tag}${suffix}`);
      return runBatch(world, `${tag}${suffix}`, n, rate, TOOLS);
    };

    await batch('w', opts.warmup, 0);
    const tp = await batch('t', opts.throughput, 0);

    // Clicks one at a time, each at the next replica in turn; every replica gets its warm-up.
    const warmupClicks = opts.clickWarmupPerReplica * count;
    await batch('c', warmupClicks + opts.clicks, CARD_RATE);
    const cards = posts.postsOf(`${tag}c`).sort((a, b) => a.index - b.index);
    const atOwner: number[] = [];
    const forwarded: number[] = [];
    for (const [i, card] of cards.entries()) {
      const bot = bots[i % count]!;
      const ms = await click(world, bot.url, card);
      if (i >= warmupClicks) (bot === owner ? atOwner : forwarded).push(ms);
    }

    const all = summarize([...atOwner, ...forwarded]);
    const approvals = opts.warmup + opts.throughput + cards.length;
    const cardCount = prefixes.reduce((n, p) => n + posts.postsOf(p).length, 0);
    return {
      replicas: count,
      approvals,
      cards: cardCount,
      duplicateCards: posts.duplicates.length,
      throughputPerSec: round(tp.perSecond, 0),
      clicks: cards.length,
      decides: decides.of(`${tag}c`).length,
      duplicateDecides: decides.duplicates.length,
      n: all.n,
      clickP50Ms: all.p50Ms,
      clickP99Ms: all.p99Ms,
      clickMaxMs: all.maxMs,
      forwardedClicks: forwarded.length,
      ...(forwarded.length > 0
        ? {
            forwardedClickP50Ms: summarize(forwarded).p50Ms,
            ownerClickP50Ms: summarize(atOwner).p50Ms,
          }
        : {}),
    };
  } finally {
    await Promise.all(bots.map((b) => b.stop()));
  }
}

/** The replica running the host, as its /metrics says (PORT's /readyz says ready or not alone). */
async function ownerOf(bots: RunningBot[], timeoutMs = 10_000): Promise<RunningBot> {
  const deadline = Date.now() + timeoutMs;
  const owned = new RegExp(`^countersign_host_owned\\{host="${HOST_ID}"\\} 1$`, 'm');
  for (;;) {
    const owners: RunningBot[] = [];
    for (const bot of bots) {
      const res = await fetch(`${bot.metricsUrl}/metrics`, { signal: AbortSignal.timeout(2_000) });
      if (owned.test(await res.text())) owners.push(bot);
    }
    if (owners.length === 1) return owners[0]!;
    if (Date.now() > deadline) throw new Error(`replicas: ${owners.length} replicas say they run the host`);
    await sleep(100);
  }
}

/**
 * Three replicas; the owner is SIGKILLed with a card pending, and its card is clicked at once at
 * a standby. The host keeps its state in a file here, as a durable host keeps its session log, so
 * the next host process knows the approval by the same id and the forwarded click can be carried
 * out through it. The killed replica is started again as a standby before the next round.
 */
async function takeoverRuns(world: World, rounds: number): Promise<Takeover[]> {
  const stateEnv = { FAKE_HOST_STATE: world.host.statePath };
  const bots = await startReplicas(world, 3, stateEnv);
  const names = new Map(bots.map((b, i) => [b, REPLICAS[i]!]));
  const out: Takeover[] = [];
  try {
    await world.host.configure({ recovery: 'sameId' });
    const decides = new DecideTracker(world.host);
    for (let round = 0; round < rounds; round++) {
      const approvalId = `rptk${round}-000000`;
      const posts = new PostTracker(world.slack);
      await world.host.open({
        ...(TEMPLATE as object),
        approvalId,
        sessionId: 's-bench',
        toolName: TOOLS[0],
      });
      const [card] = await posts.waitForPosts(`rptk${round}`, 1, 10_000);
      const owner = await ownerOf(bots);
      const standby = bots.find((b) => b !== owner)!;
      const before = world.host.incarnation ?? 0;

      const leaseLeftMs = await world.redis.pttl(keys.hostLease(HOST_ID));
      const killedAt = Date.now();
      await owner.kill();
      await sendClick(world, standby.url, card!);
      const next = await world.host.waitForIncarnation(before + 1, 10 * LEASE_TTL_MS);
      const decide = await world.host.waitForFrame(
        (f) =>
          typeof f.frame !== 'string' &&
          f.frame.method === 'approval/decide' &&
          (f.frame.params as { approvalId?: string }).approvalId === approvalId,
        10 * LEASE_TTL_MS,
      );
      if (decide.incarnation !== next.incarnation)
        throw new Error(
          `takeover: ${approvalId} decided by host process ${decide.incarnation}, not ${next.incarnation}`,
        );
      const hostMs = next.startedAt - killedAt;
      out.push({ leaseLeftMs, hostMs, afterLeaseMs: hostMs - leaseLeftMs, decideMs: decide.at - killedAt });

      const name = names.get(owner)!;
      const restarted = await world.startReplica(name, replicaEnv(stateEnv));
      bots[bots.indexOf(owner)] = restarted;
      names.set(restarted, name);
    }
    if (decides.duplicates.length > 0)
      throw new Error(`takeover: decided twice: ${decides.duplicates.join(', ')}`);
    return out;
  } finally {
    await Promise.all(bots.map((b) => b.stop()));
  }
}
