import type { RunningBot } from '../../test/support/bot.js';
import { round } from '../lib/stats.js';
import { rssMB } from '../lib/system.js';
import type { World } from '../lib/world.js';
import { runBatch } from './relayLatency.js';

// The bot's resident memory with many approvals pending, against the same process at idle.
// State lives in Redis, so pending approvals should cost the heap next to nothing. V8 collects
// old garbage lazily, so a reading at an arbitrary moment holds tens of MB of it: both readings
// are taken right after a full collection (bench/lib/gc-on-signal.mjs, on SIGUSR2).

export interface MemoryResult {
  pending: number;
  ratePerSec: number;
  idleMB: number;
  pendingMB: number;
  growthMB: number;
  /** V8 heap in use after the full collection: what the pending approvals keep alive. */
  heapIdleMB: number;
  heapGrowthMB: number;
}

/** Node flags memory() needs the bot started with. */
export const MEMORY_NODE_ARGS = ['--expose-gc', '--import', './bench/lib/gc-on-signal.mjs'];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** RSS and V8 heap in use, in MB, right after a full collection; the bot needs MEMORY_NODE_ARGS. */
export async function gcReading(bot: RunningBot): Promise<{ rss: number; heap: number }> {
  process.kill(bot.proc.pid!, 'SIGUSR2');
  // The collection runs when the signal is handled; give the allocator a moment to hand pages back.
  await sleep(1_000);
  const metrics = await (await fetch(`${bot.metricsUrl}/metrics`)).text();
  const heap = Number(/^nodejs_heap_size_used_bytes (\d+)/m.exec(metrics)?.[1]) / 1024 / 1024;
  return { rss: rssMB(bot.proc.pid!), heap };
}

export async function memory(
  world: World,
  bot: RunningBot,
  pending: number,
  ratePerSec: number,
): Promise<MemoryResult> {
  // Idle means started and warmed up: every code path has run once.
  await runBatch(world, 'memw', Math.min(200, pending), 200);
  const idle = await gcReading(bot);
  await runBatch(world, 'mem', pending, ratePerSec);
  const loaded = await gcReading(bot);
  return {
    pending,
    ratePerSec,
    idleMB: round(idle.rss, 1),
    pendingMB: round(loaded.rss, 1),
    growthMB: round(loaded.rss - idle.rss, 1),
    heapIdleMB: round(idle.heap, 1),
    heapGrowthMB: round(loaded.heap - idle.heap, 1),
  };
}
