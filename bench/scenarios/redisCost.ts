import type { RunningBot } from '../../test/support/bot.js';
import { round } from '../lib/stats.js';
import {
  counterOverhead,
  type RedisCounters,
  redisCounters,
  type TrafficRate,
  trafficAtRest,
} from '../lib/system.js';
import { type Post, PostTracker, type World } from '../lib/world.js';
import { clickLatency } from './clickLatency.js';
import { runBatch } from './relayLatency.js';

// Round trips and commands per relayed approval, per click and per resolution, from Redis's own
// counters before and after (nothing else uses Redis while the bench runs). Clicks and
// resolutions are measured one at a time: a request a client sends while Redis still holds its
// previous one can be read in the same read event, which would undercount.

export interface RedisCost {
  roundTripsPerApproval: number;
  commandsPerApproval: number;
  roundTripsPerClick: number;
  commandsPerClick: number;
  roundTripsPerResolution: number;
  commandsPerResolution: number;
  /** The bot's traffic at rest, taken off each window above by its length. */
  backgroundRoundTripsPerSec: number;
}

/**
 * What `work` cost at Redis, less the bot's background over as long (`idle`: its timers' polls
 * and renewals, which run whatever it is asked).
 */
async function measured(world: World, work: () => Promise<void>, idle: TrafficRate): Promise<RedisCounters> {
  const overhead = await counterOverhead(world.redis);
  const before = await redisCounters(world.redis);
  const started = performance.now();
  await work();
  const after = await redisCounters(world.redis);
  const ms = performance.now() - started;
  return {
    reads: after.reads - before.reads - overhead.reads - idle.readsPerMs * ms,
    commands: after.commands - before.commands - overhead.commands - idle.commandsPerMs * ms,
  };
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits until a card has reached `versions` states (the post, then each update) in the fake Slack. */
async function cardReaches(world: World, card: Post, versions: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((world.slack.message(card.channel, card.ts)?.versions.length ?? 0) < versions) {
    if (Date.now() > deadline)
      throw new Error(`card of ${card.approvalId} did not reach ${versions} versions`);
    await sleep(5);
  }
}

/** Waits until the card's thread has the decision's line (DecisionNotices). */
async function threadLine(world: World, card: Post): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (world.slack.repliesTo(card.channel, card.ts).length === 0) {
    if (Date.now() > deadline) throw new Error(`no thread line under the card of ${card.approvalId}`);
    await sleep(2);
  }
}

function perItem(windows: RedisCounters[]): { reads: number; commands: number } {
  const sum = windows.reduce((a, w) => ({ reads: a.reads + w.reads, commands: a.commands + w.commands }), {
    reads: 0,
    commands: 0,
  });
  return { reads: round(sum.reads / windows.length, 2), commands: round(sum.commands / windows.length, 2) };
}

export async function redisCost(world: World, bot: RunningBot, count: number): Promise<RedisCost> {
  // What the bot sends at rest (its timers: escalations due, its lease, health), taken off
  // every window below by its length: it is no approval's, click's or resolution's.
  const idle = await trafficAtRest(world.redis, 2_000);

  // Approvals, at a pace where each is handled alone: from the host's frame to the card stored.
  const tracker = new PostTracker(world.slack);
  const approvals = await measured(
    world,
    async () => {
      await runBatch(world, 'rca', count, 50);
      await sleep(200);
    },
    idle,
  );
  const cards = tracker.postsOf('rca').sort((a, b) => a.index - b.index);
  const half = Math.floor(cards.length / 2);

  // A resolution the host makes by itself (policy), with all it brings: the card turns final, the
  // line in its thread is posted, and what is written after (the notices' outcomes, the cards'
  // sync marks) lands. One window over them all, each resolution alone in turn, with a pause
  // after each for its last writes (they follow Slack's answer, not the card).
  const resolved = cards.slice(0, half);
  const resolutions = await measured(
    world,
    async () => {
      for (const card of resolved) {
        await world.host.resolve({ approvalId: card.approvalId, decision: 'approved' });
        await cardReaches(world, card, 2);
        await threadLine(world, card);
        await sleep(10);
      }
      // The last one's notice outcome and card strike wait up to 250 ms for a write to ride.
      await sleep(300);
    },
    idle,
  );

  // A click, up to the decision written to the host; the host holds its answer meanwhile, so
  // the resolution that follows is not counted here.
  const clicks: RedisCounters[] = [];
  for (const card of cards.slice(half)) {
    await world.host.delayDecide(300);
    clicks.push(
      await measured(
        world,
        async () => {
          await clickLatency(world, bot.url, [card], 0);
          await cardReaches(world, card, 2); // the card shows "deciding"
        },
        idle,
      ),
    );
    // Resolved, outside the window, with what follows (its thread line, then its notice outcome
    // and card strike, which wait up to 250 ms to ride another write): none of it may spill into
    // the next click's window.
    await cardReaches(world, card, 3);
    await threadLine(world, card);
    await sleep(300);
  }

  const perClick = perItem(clicks);
  return {
    roundTripsPerApproval: round(approvals.reads / count, 2),
    commandsPerApproval: round(approvals.commands / count, 2),
    roundTripsPerClick: perClick.reads,
    commandsPerClick: perClick.commands,
    roundTripsPerResolution: round(resolutions.reads / resolved.length, 2),
    commandsPerResolution: round(resolutions.commands / resolved.length, 2),
    backgroundRoundTripsPerSec: round(idle.readsPerMs * 1000, 1),
  };
}
