import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import type { Redis } from 'ioredis';

// The machine side of the bench: CPU pinning, a process's memory, Redis's own counters.

const canPin = (() => {
  // The smoke test runs beside other tests and must not take a core for itself.
  if (process.env.BENCH_NO_PIN || availableParallelism() < 2) return false;
  try {
    execFileSync('taskset', ['-p', String(process.pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

/** The core the measured process (bot or floor) gets to itself; everything else runs on the rest. */
export const MEASURED_CORE = 0;

/** Pins every thread of `pid` to `cores` (taskset -a -p); false when the machine cannot. */
export function pin(pid: number, cores: string): boolean {
  if (!canPin) return false;
  try {
    execFileSync('taskset', ['-a', '-p', '-c', cores, String(pid)], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

const otherCores = () =>
  Array.from({ length: availableParallelism() }, (_, i) => i)
    .filter((i) => i !== MEASURED_CORE)
    .join(',');

/** The bench itself, and every child it starts, run off the measured core. */
export function pinBenchOffMeasuredCore(): boolean {
  return pin(process.pid, otherCores());
}

/** The cores a process may run on now, as taskset prints them (e.g. "0-1"). */
function coresOf(pid: number): string | undefined {
  try {
    return /list:\s*(\S+)/.exec(
      execFileSync('taskset', ['-c', '-p', String(pid)], { encoding: 'utf8' }),
    )?.[1];
  } catch {
    return undefined;
  }
}

/**
 * Moves Redis off the measured core for the run; the returned function puts it back. Sharing a
 * core with the process measured, every round trip would wait for the scheduler.
 */
export async function pinRedisOffMeasuredCore(redis: Redis): Promise<() => void> {
  const pid = Number(/process_id:(\d+)/.exec(await redis.info('server'))?.[1]);
  const before = pid ? coresOf(pid) : undefined;
  if (!before || !pin(pid, otherCores())) return () => {};
  return () => {
    pin(pid, before);
  };
}

/** Resident set size of a process, in MB, from /proc. */
export function rssMB(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1]);
  return kb / 1024;
}

/** Clock ticks per second, the unit of /proc/<pid>/stat's CPU times (almost always 100). */
const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * CPU time (user + system) a process has used, in ms, from /proc: its own threads only, not its
 * children's (the host a bot or floor spawns is not counted). One tick is 10 ms: a figure meant to
 * be read per approval needs a batch of thousands.
 */
export function cpuMs(pid: number): number {
  // The command name (field 2) may hold spaces: count from the field after its closing bracket.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of stat; index 0 here is the state field (field 3).
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / CLOCK_TICKS;
}

export interface RedisCounters {
  /** Read events on client sockets: one per round trip a client makes. */
  reads: number;
  /** Commands executed, scripts' inner calls included (INFO commandstats). */
  commands: number;
}

/**
 * Redis's own counters. total_reads_processed counts one read per request a client sends (a
 * pipeline written at once is one read), which is the round-trip count we are after.
 */
export async function redisCounters(redis: Redis): Promise<RedisCounters> {
  const stats = await redis.info('stats');
  const commandstats = await redis.info('commandstats');
  const reads = Number(/total_reads_processed:(\d+)/.exec(stats)?.[1]);
  let commands = 0;
  for (const m of commandstats.matchAll(/^cmdstat_(\w+(?:\|\w+)?):calls=(\d+)/gm)) {
    if (m[1] !== 'info') commands += Number(m[2]);
  }
  return { reads, commands };
}

/** What reading the counters itself costs, so it can be taken off a measured difference. */
export async function counterOverhead(redis: Redis): Promise<RedisCounters> {
  const a = await redisCounters(redis);
  const b = await redisCounters(redis);
  return { reads: b.reads - a.reads, commands: b.commands - a.commands };
}

/** Redis traffic per millisecond. */
export interface TrafficRate {
  readsPerMs: number;
  commandsPerMs: number;
}

/**
 * What the bot sends Redis at rest (its timers: escalations due, its lease, health), measured over
 * `ms` with nothing asked of it. It is no approval's, click's or resolution's: the scenarios take
 * it off their windows by their length.
 */
export async function trafficAtRest(redis: Redis, ms: number): Promise<TrafficRate> {
  const overhead = await counterOverhead(redis);
  const before = await redisCounters(redis);
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, ms));
  const after = await redisCounters(redis);
  const elapsed = performance.now() - started;
  return {
    readsPerMs: (after.reads - before.reads - overhead.reads) / elapsed,
    commandsPerMs: (after.commands - before.commands - overhead.commands) / elapsed,
  };
}

/**
 * Resolves once `pid` has used no CPU for `quietMs` (what it had in flight is done), or after
 * `maxMs` at the latest: a CPU reading taken then leaves nothing of a batch out.
 */
export async function untilIdle(pid: number, quietMs = 200, maxMs = 5_000): Promise<void> {
  const deadline = Date.now() + maxMs;
  let last = cpuMs(pid);
  while (Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, quietMs));
    const now = cpuMs(pid);
    if (now === last) return;
    last = now;
  }
}

/** Bytes Redis holds for data and its own structures (INFO memory used_memory), every database. */
export async function redisUsedBytes(redis: Redis): Promise<number> {
  return Number(/used_memory:(\d+)/.exec(await redis.info('memory'))?.[1]);
}
