// Replicas of the bot as the end-to-end tests run them: processes of their own on one Redis
// database, each with its replica id and a lease short enough for a test to wait out, and what
// GET /readyz says of each one's part.

import { type RunningBot, type StartBotOptions, startBot } from './bot.js';
import { probeUntil } from './until.js';

/** The replicas' host lease: a takeover waits it out. */
export const REPLICA_LEASE_TTL_MS = 3_000;

/** The environment of replica `name`: its id and the tests' lease. */
export function replicaEnv(name: string, extra: Record<string, string> = {}): Record<string, string> {
  return { COUNTERSIGN_REPLICA_ID: name, COUNTERSIGN_LEASE_TTL: `${REPLICA_LEASE_TTL_MS / 1000}s`, ...extra };
}

/**
 * Starts one replica per name, each on `options` with its own replica env, and waits until each
 * is ready; `cleanups` stops them. One after the other, so that the first takes every host,
 * unless `together`: started at once, each takes its share.
 */
export async function startReplicas(
  names: readonly string[],
  options: StartBotOptions & { together?: boolean },
  cleanups: Array<() => unknown>,
): Promise<RunningBot[]> {
  const { together, env, ...rest } = options;
  const start = async (name: string) => {
    const bot = await startBot({ ...rest, env: replicaEnv(name, env) });
    cleanups.push(() => bot.stop(5_000));
    return bot;
  };
  if (together) {
    const bots = await Promise.all(names.map(start));
    await Promise.all(bots.map((bot) => bot.waitReady(20_000)));
    return bots;
  }
  const bots: RunningBot[] = [];
  for (const name of names) {
    const bot = await start(name);
    await bot.waitReady(20_000);
    bots.push(bot);
  }
  return bots;
}

/** What GET /readyz says of this replica's part. */
export async function standingOf(
  bot: RunningBot,
): Promise<{ id: string; owns: string[]; standby: string[] }> {
  // A paused replica answers nothing: it must not hold the test up.
  const response = await fetch(`${bot.readyzUrl}/readyz`, { signal: AbortSignal.timeout(1_000) });
  return ((await response.json()) as { replica: { id: string; owns: string[]; standby: string[] } }).replica;
}

/** The replica among `bots` that runs host `hostId` now, by its /readyz. */
export function replicaRunning(
  bots: readonly RunningBot[],
  hostId = 'default',
  timeoutMs = 10_000,
): Promise<RunningBot> {
  return probeUntil(
    `an owner of ${hostId}`,
    async () => {
      for (const bot of bots) {
        if (bot.proc.exitCode !== null || bot.proc.signalCode !== null) continue;
        const standing = await standingOf(bot).catch(() => undefined);
        if (standing?.owns.includes(hostId)) return bot;
      }
      return undefined;
    },
    timeoutMs,
  );
}
