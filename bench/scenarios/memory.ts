import type { RunningBot } from '../../test/support/bot.js';
import { round } from '../lib/stats.js';
import { rssMB } from '../lib/system.js';
import type { World } from '../lib/world.js';
import { runBatch } from './relayLatency.js';

// The bot's resident memory with many approvals pending, against the same process at idle.
// State lives in Redis, so pending approvals should cost the heap next to nothing.

export interface MemoryResult {
  pending: number;
  ratePerSec: number;
  idleMB: number;
  pendingMB: number;
  growthMB: number;
  /** V8 heap in use (from /metrics): what the pending approvals keep alive, garbage aside. */
  heapIdleMB: number;
  heapGrowthMB: number;
}

async function heapMB(bot: RunningBot): Promise<number> {
  const metrics = await (await fetch(`${bot.url}/metrics`)).text();
  return Number(/^nodejs_heap_size_used_bytes (\d+)/m.exec(metrics)?.[1]) / 1024 / 1024;
}

export async function memory(
  world: World,
  bot: RunningBot,
  pending: number,
  ratePerSec: number,
  settleMs: number,
): Promise<MemoryResult> {
  const pid = bot.proc.pid!;
  // Idle means started and warmed up: every code path has run once.
  await runBatch(world, 'memw', Math.min(200, pending), 200);
  await sleep(settleMs);
  const idleMB = rssMB(pid);
  const heapIdleMB = await heapMB(bot);
  // At a pace the bot keeps up with: what is measured is what pending approvals keep, not the
  // backlog of a burst (a V8 heap that grew for a backlog is not given back to the system).
  await runBatch(world, 'mem', pending, ratePerSec);
  await sleep(settleMs);
  const pendingMB = rssMB(pid);
  return {
    pending,
    ratePerSec,
    idleMB: round(idleMB, 1),
    pendingMB: round(pendingMB, 1),
    growthMB: round(pendingMB - idleMB, 1),
    heapIdleMB: round(heapIdleMB, 1),
    heapGrowthMB: round((await heapMB(bot)) - heapIdleMB, 1),
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
