import type { RunningBot } from '../../test/support/bot.js';
import { round } from '../lib/stats.js';
import { rssMB } from '../lib/system.js';
import type { World } from '../lib/world.js';
import { runBatch } from './relayLatency.js';

// The bot's resident memory with many approvals pending, against the same process at idle.
// State lives in Redis, so pending approvals should cost the heap next to nothing.

export interface MemoryResult {
  pending: number;
  idleMB: number;
  pendingMB: number;
  growthMB: number;
}

export async function memory(world: World, bot: RunningBot, pending: number): Promise<MemoryResult> {
  const pid = bot.proc.pid!;
  // Idle means started and warmed up: every code path has run once.
  await runBatch(world, 'memw', 200, 500);
  await settle();
  const idleMB = rssMB(pid);
  await runBatch(world, 'mem', pending, 1000);
  await settle();
  const pendingMB = rssMB(pid);
  return {
    pending,
    idleMB: round(idleMB, 1),
    pendingMB: round(pendingMB, 1),
    growthMB: round(pendingMB - idleMB, 1),
  };
}

function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 2_000));
}
