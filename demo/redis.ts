// The demo's Redis: the one at REDIS_URL when it answers, else a private redis-server on a free
// port that lives and dies with the demo.

import { type ChildProcess, spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort } from '../test/support/bot.js';

/** Marks a database the demo made, so that it may empty it again next time. */
const DEMO_MARKER = 'countersign-demo';
/**
 * The demo's database when REDIS_URL names none: far from the 0 that a bot (or anything else)
 * uses unless told otherwise.
 */
export const DEMO_DB = 9;

export const INSTALL_HINT =
  'Install Redis (Debian/Ubuntu: sudo apt-get install -y redis-server; macOS: brew install redis) or set REDIS_URL to a running one.';

export class DemoRedisError extends Error {}

export interface DemoRedis {
  /** What the bot is given as REDIS_URL. */
  url: string;
  /** A private server the demo started, or null when it uses the one at REDIS_URL. */
  privateServer: { port: number; pid: number } | null;
  /** Stops the private server, if any. */
  stop(): Promise<void>;
}

export interface DemoRedisOptions {
  /** REDIS_URL (default redis://127.0.0.1:6379). */
  url?: string;
  /** The redis-server binary to start when nothing answers at `url` (default: from PATH). */
  redisServer?: string;
}

async function answers(url: string): Promise<boolean> {
  const probe = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 1_000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    enableOfflineQueue: false,
  });
  probe.on('error', () => undefined);
  try {
    await probe.connect();
    return (await probe.ping()) === 'PONG';
  } catch {
    return false;
  } finally {
    probe.disconnect();
  }
}

/** REDIS_URL with the demo's database when it names none. */
export function withDemoDb(url: string): string {
  const parsed = new URL(url);
  if (parsed.pathname === '' || parsed.pathname === '/') parsed.pathname = `/${DEMO_DB}`;
  return parsed.toString();
}

/**
 * Empties the demo's database, but only one that is empty already or that an earlier demo run
 * made: the demo must never wipe data it did not write.
 */
async function claimDatabase(url: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  redis.on('error', () => undefined);
  try {
    await redis.connect();
    const size = await redis.dbsize();
    if (size > 0 && (await redis.exists(DEMO_MARKER)) === 0) {
      throw new DemoRedisError(
        `countersign demo: ${url} holds ${size} ${size === 1 ? 'key' : 'keys'} the demo did not write; set REDIS_URL to an empty database (for example redis://127.0.0.1:6379/${DEMO_DB + 1}).`,
      );
    }
    await redis.flushdb();
    await redis.set(DEMO_MARKER, new Date().toISOString());
  } finally {
    redis.disconnect();
  }
}

const privateServers = new Set<ChildProcess>();
// Whatever way the demo ends, its private Redis ends with it.
process.on('exit', () => {
  for (const p of privateServers) p.kill('SIGKILL');
});

async function startPrivateServer(binary: string): Promise<{ proc: ChildProcess; port: number }> {
  const port = await freePort();
  const proc = spawn(
    binary,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  privateServers.add(proc);
  proc.once('exit', () => privateServers.delete(proc));
  const failed = new Promise<never>((_, reject) => {
    proc.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        new DemoRedisError(
          err.code === 'ENOENT'
            ? `countersign demo: no Redis answers and ${binary} is not installed. ${INSTALL_HINT}`
            : `countersign demo: could not start ${binary}: ${err.message}`,
        ),
      ),
    );
    proc.once('exit', (code) =>
      reject(new DemoRedisError(`countersign demo: ${binary} exited (code ${code}) before answering PING`)),
    );
  });
  failed.catch(() => undefined);
  const url = `redis://127.0.0.1:${port}`;
  const deadline = Date.now() + 10_000;
  while (!(await Promise.race([answers(url), failed]))) {
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new DemoRedisError(`countersign demo: ${binary} did not answer PING on port ${port} within 10 s`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { proc, port };
}

function stopProcess(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    proc.once('exit', () => resolve());
    proc.kill('SIGTERM');
  });
}

/** The Redis the demo's bot will use; see DemoRedisOptions. */
export async function demoRedis(opts: DemoRedisOptions = {}): Promise<DemoRedis> {
  const configured = opts.url ?? 'redis://127.0.0.1:6379';
  if (await answers(configured)) {
    const url = withDemoDb(configured);
    await claimDatabase(url);
    return { url, privateServer: null, stop: async () => undefined };
  }
  const { proc, port } = await startPrivateServer(opts.redisServer ?? 'redis-server');
  const url = `redis://127.0.0.1:${port}/0`;
  try {
    await claimDatabase(url);
  } catch (err) {
    await stopProcess(proc);
    throw err;
  }
  return {
    url,
    privateServer: { port, pid: proc.pid ?? -1 },
    stop: () => stopProcess(proc),
  };
}
