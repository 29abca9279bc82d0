import type { RunningBot } from '../../test/support/bot.js';
import { round } from '../lib/stats.js';
import { counterOverhead, type RedisCounters, redisCounters } from '../lib/system.js';
import type { World } from '../lib/world.js';
import { clickLatency } from './clickLatency.js';
import { runBatch } from './relayLatency.js';

// Round trips and commands per relayed approval, per click and per resolution, from Redis's own
// counters before and after (nothing else uses Redis while the bench runs).

export interface RedisCost {
  roundTripsPerApproval: number;
  commandsPerApproval: number;
  roundTripsPerClick: number;
  commandsPerClick: number;
  roundTripsPerResolution: number;
  commandsPerResolution: number;
}

async function measured(world: World, work: () => Promise<void>): Promise<RedisCounters> {
  const overhead = await counterOverhead(world.redis);
  const before = await redisCounters(world.redis);
  await work();
  const after = await redisCounters(world.redis);
  return {
    reads: after.reads - before.reads - overhead.reads,
    commands: after.commands - before.commands - overhead.commands,
  };
}

/** Waits until every card of these approvals has reached `versions` states in the fake Slack. */
async function cardsReach(world: World, cards: Array<{ channel: string; ts: string }>, versions: number) {
  const deadline = Date.now() + 30_000;
  while (!cards.every((c) => (world.slack.message(c.channel, c.ts)?.versions.length ?? 0) >= versions)) {
    if (Date.now() > deadline) throw new Error(`cards did not reach ${versions} versions`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  // The last Slack call of a card comes after its last Redis write; give the log line a moment.
  await new Promise((resolve) => setTimeout(resolve, 200));
}

export async function redisCost(world: World, bot: RunningBot, count: number): Promise<RedisCost> {
  // Approvals: from the host's frame to the card posted and stored.
  let cards: Awaited<ReturnType<World['slack']['messagesIn']>> = [];
  const approvals = await measured(world, async () => {
    await runBatch(world, 'rca', count, 200);
    await new Promise((resolve) => setTimeout(resolve, 200));
  });
  cards = world.slack.messagesIn('C0BENCH0').filter((m) => JSON.stringify(m.blocks).includes('rca-'));

  // Resolutions the host makes by itself (policy): what a decision costs after it is sent.
  const policy = await measured(world, async () => {
    for (const card of cards.slice(0, count / 2)) {
      await world.host.resolve({ approvalId: approvalIdIn(card.blocks), decision: 'approved' });
    }
    await cardsReach(world, cards.slice(0, count / 2), 2);
  });
  const perResolution = policy.reads / (count / 2);
  const perResolutionCommands = policy.commands / (count / 2);

  // Clicks: each is a decision and then the host's resolution; the resolution's share is taken off.
  const clicked = cards.slice(count / 2);
  const clicks = await measured(world, async () => {
    await clickLatency(
      world,
      bot.url,
      clicked.map((c) => ({ approvalId: approvalIdIn(c.blocks), channel: c.channel, ts: c.ts })),
      0,
    );
    await cardsReach(world, clicked, 3);
  });
  const n = clicked.length;
  return {
    roundTripsPerApproval: round(approvals.reads / count, 2),
    commandsPerApproval: round(approvals.commands / count, 2),
    roundTripsPerClick: round(clicks.reads / n - perResolution, 2),
    commandsPerClick: round(clicks.commands / n - perResolutionCommands, 2),
    roundTripsPerResolution: round(perResolution, 2),
    commandsPerResolution: round(perResolutionCommands, 2),
  };
}

function approvalIdIn(blocks: unknown[]): string {
  const id = /\b(rca-\d{6})\b/.exec(JSON.stringify(blocks))?.[1];
  if (!id) throw new Error('card without a bench approvalId');
  return id;
}
