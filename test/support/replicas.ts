// Replicas of the bot as the end-to-end tests run them: processes of their own on one Redis
// database, each with its replica id and a lease short enough for a test to wait out, and what
// GET /metrics says of each one's part (PORT's /readyz says ready or not alone).

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

/** Which hosts this replica runs and which it stands by for, as its /metrics says. */
export async function standingOf(bot: RunningBot): Promise<{ owns: string[]; standby: string[] }> {
  // A paused replica answers nothing: it must not hold the test up.
  const response = await fetch(`${bot.metricsUrl}/metrics`, { signal: AbortSignal.timeout(1_000) });
  const standing = { owns: [] as string[], standby: [] as string[] };
  for (const [, host, owned] of (await response.text()).matchAll(
    /^countersign_host_owned\{host="([^"]+)"\} ([01])$/gm,
  )) {
    (owned === '1' ? standing.owns : standing.standby).push(host!);
  }
  return standing;
}

/** The replica among `bots` that runs host `hostId` now, by its /metrics. */
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
