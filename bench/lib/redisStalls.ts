import type { Redis } from 'ioredis';

// Redis's own account of its stalls during a measured window: LATENCY MONITOR (events such as
// `command`, `fast-command`, `expire-cycle`, `eviction-del` that took at least the threshold) and
// SLOWLOG (each command that ran at least the threshold, with its name). A PING tail from the
// bench says that Redis was late; these say what it was doing.

/** The thresholds the bench sets for its window: low enough to catch a stall a PING would feel. */
const THRESHOLD_MS = 2;

export interface RedisStalls {
  /** LATENCY LATEST: each event's worst (ms) over the window. */
  events: Array<{ event: string; maxMs: number }>;
  /**
   * SLOWLOG: the slowest commands of the window, slowest first, at most 10: the command and its
   * first key (a script's too), and when it ran (unix seconds), so that several commands slow at
   * the same second (Redis held up as a whole) tell apart from one slow command.
   */
  slowest: Array<{ command: string; ms: number; at: number }>;
  /** How many commands the slowlog kept (at most its length, 128 by default). */
  slowCommands: number;
}

/** Starts a window: sets both thresholds and clears both logs. stop() reads them and restores the settings. */
export async function watchRedisStalls(redis: Redis): Promise<{ stop(): Promise<RedisStalls> }> {
  const before = (await redis.config(
    'GET',
    'latency-monitor-threshold',
    'slowlog-log-slower-than',
  )) as string[];
  const saved = new Map<string, string>();
  for (let i = 0; i + 1 < before.length; i += 2) saved.set(before[i]!, before[i + 1]!);
  await redis.config('SET', 'latency-monitor-threshold', String(THRESHOLD_MS));
  await redis.config('SET', 'slowlog-log-slower-than', String(THRESHOLD_MS * 1000));
  await redis.call('LATENCY', 'RESET');
  await redis.call('SLOWLOG', 'RESET');
  return {
    async stop() {
      const latest = (await redis.call('LATENCY', 'LATEST')) as Array<[string, number, number, number]>;
      const log = (await redis.call('SLOWLOG', 'GET', '128')) as Array<[number, number, number, string[]]>;
      for (const [name, value] of saved) await redis.config('SET', name, value);
      const slow = log
        .map(([, at, micros, args]) => ({ command: commandOf(args), ms: micros / 1000, at: Number(at) }))
        .sort((a, b) => b.ms - a.ms);
      return {
        events: latest.map(([event, , , max]) => ({ event, maxMs: Number(max) })),
        slowest: slow.slice(0, 10),
        slowCommands: slow.length,
      };
    },
  };
}

/** `evalsha KEY` for a script (its first key), `name KEY` otherwise. */
function commandOf(args: string[]): string {
  const name = String(args[0] ?? '?').toLowerCase();
  const key = name.startsWith('eval') ? args[3] : args[1];
  return key === undefined ? name : `${name} ${key}`;
}
