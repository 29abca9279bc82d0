// Runs the real bot (node dist/main.js, HTTP mode) against the fake host and fake Slack.

import { type ChildProcess, spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import type { FakeHost } from './fakeHost.js';
import { FAKE_SLACK_BOT_TOKEN } from './fakeSecrets.js';
import type { FakeSlack } from './fakeSlack.js';
import { NO_REDIS_PASSWORD, testRedisUrl } from './testRedis.js';

export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The Node flags of `npm start` (package.json), so tests and bench/ run the bot as production does. */
export const PRODUCTION_NODE_ARGS: string[] = (() => {
  const pkg = JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as {
    scripts: { start: string };
  };
  const words = pkg.scripts.start.split(/\s+/);
  return words.slice(words.indexOf('node') + 1, words.indexOf('dist/main.js'));
})();
export const BOT_TOKEN = FAKE_SLACK_BOT_TOKEN;
export const SIGNING_SECRET = 'test-signing-secret';
export const APPROVALS_CHANNEL = 'C0APPROVALS';

export interface BotLogLine {
  index: number;
  stream: 'stdout' | 'stderr';
  raw: string;
  /** The parsed pino object, or null when the line is not JSON. */
  json: Record<string, unknown> | null;
  /** Shorthands read from `json`. */
  level?: number;
  msg?: string;
  at: number;
}

export interface BotExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface RunningBot {
  /** http://127.0.0.1:PORT (post interactions to `${url}/slack/events`). */
  url: string;
  /**
   * Where /metrics is: METRICS_PORT, which startBot sets unless the test removes it (PORT never
   * serves /metrics); /readyz there gives the parts and their reasons, PORT's says
   * `{"ready": …}` alone (docs/operations.md#health-and-metrics). Undefined without METRICS_PORT.
   */
  metricsUrl: string | undefined;
  port: number;
  proc: ChildProcess;
  /** Every stdout/stderr line, in order. */
  logs: BotLogLine[];
  /** First log line matching `predicate`, already written or still to come. */
  waitForLog(predicate: (l: BotLogLine) => boolean, timeoutMs?: number): Promise<BotLogLine>;
  /**
   * Polls GET /readyz until it answers 200, and /metrics until it says a host is up
   * (`countersign_up{part="host"} 1`): ready alone does not wait for the host
   * (docs/operations.md#readiness), and most tests need it. Without METRICS_PORT, /readyz alone.
   */
  waitReady(timeoutMs?: number): Promise<void>;
  /** SIGTERM; SIGKILL after `graceMs`. Resolves with how it exited. */
  stop(graceMs?: number): Promise<BotExit>;
  /** SIGKILL. */
  kill(): Promise<BotExit>;
  exited: Promise<BotExit>;
  /** The last `n` log lines as text, for failure messages. */
  tail(n?: number): string;
}

export interface StartBotOptions {
  host: FakeHost;
  slack: FakeSlack;
  redisDb: number;
  /** The bot's REDIS_URL base (no database), when not the tests' Redis: a private one, a proxy. */
  redisUrl?: string;
  /**
   * Extra or overriding environment variables. A value of '' removes the variable
   * (`METRICS_PORT: ''`: a bot without METRICS_PORT, and so without /metrics).
   */
  env?: Record<string, string>;
  /** Fixed port (default: a free one). */
  port?: number;
  /** Echo the bot's output to this process's stderr (also on when BOT_LOGS=1). */
  echo?: boolean;
  /** Script to run instead of dist/main.js (relative to the project root). */
  entry?: string;
  /** Node options before the script, e.g. ['--cpu-prof'] (NODE_OPTIONS refuses some). */
  nodeArgs?: string[];
}

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const p of running) p.kill('SIGKILL');
});

/**
 * Ports freePort() hands out: drawn at random below Linux's ephemeral range (which starts at
 * 32768), where no outgoing connection is given one between the check and the bind. The test
 * files run two or more at a time, and they and the processes they start (the demo, the bench)
 * each draw on their own: at random, two draw the same port about once in 20,000 draws, where a
 * port the kernel picked (listen on 0) was soon picked again, or taken by a connection.
 */
// From 10100: the fetch standard's (and Chromium's) "bad ports", which fetch() and the browser
// refuse to reach, end at 10080.
const FIRST_PORT = 10_100;
const PORT_COUNT = 22_000;
/** Not handed out twice by one process: a server given one may not have bound it yet. */
const handedOut = new Set<number>();

/** A TCP port that was free a moment ago, and not handed out before by this process. */
export async function freePort(): Promise<number> {
  for (let tried = 0; tried < 100; tried++) {
    const port = FIRST_PORT + randomInt(PORT_COUNT);
    if (handedOut.has(port)) continue;
    // Taken before the check, so that a call made meanwhile draws another.
    handedOut.add(port);
    if (await canListen(port)) return port;
    handedOut.delete(port);
  }
  throw new Error(`freePort: no free port found from ${FIRST_PORT} to ${FIRST_PORT + PORT_COUNT - 1}`);
}

function canListen(port: number): Promise<boolean> {
  const server = net.createServer();
  return new Promise((resolve) => {
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Variables the test environment must not leak into the bot. */
const SCRUB = /^(SLACK_|COUNTERSIGN_|MSP_|PAGERDUTY_|FAKE_HOST_|REDIS_)|^(PORT|LOG_LEVEL)$/;

export async function startBot(opts: StartBotOptions): Promise<RunningBot> {
  const port = opts.port ?? (await freePort());
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !SCRUB.test(k)) env[k] = v;
  }
  Object.assign(env, {
    SLACK_BOT_TOKEN: BOT_TOKEN,
    SLACK_SIGNING_SECRET: SIGNING_SECRET,
    SLACK_API_URL: opts.slack.apiUrl,
    SLACK_CHANNEL: APPROVALS_CHANNEL,
    PORT: String(port),
    REDIS_URL: opts.redisUrl ? `${opts.redisUrl}/${opts.redisDb}` : testRedisUrl(opts.redisDb),
    // The tests' Redis, and the private ones and proxies tests start, have no password; a test of
    // that refusal sets REDIS_ALLOW_NO_PASSWORD to ''.
    ...NO_REDIS_PASSWORD,
    MSP_HOST_COMMAND: opts.host.command,
    LOG_LEVEL: 'debug',
    // As every shipped deployment sets it: /metrics is served there alone.
    METRICS_PORT: opts.env?.METRICS_PORT ?? String(await freePort()),
    ...opts.host.env,
    ...(opts.env ?? {}),
  });
  for (const [k, v] of Object.entries(env)) if (v === '') delete env[k];

  const nodeArgs = [...PRODUCTION_NODE_ARGS, ...(opts.nodeArgs ?? [])];
  const proc = spawn(process.execPath, [...nodeArgs, opts.entry ?? 'dist/main.js'], {
    cwd: PROJECT_ROOT,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  running.add(proc);
  const echo = opts.echo ?? process.env.BOT_LOGS === '1';

  const logs: BotLogLine[] = [];
  const logWaiters: Array<{ test: (l: BotLogLine) => boolean; resolve: (l: BotLogLine) => void }> = [];
  const addLine = (stream: 'stdout' | 'stderr', raw: string) => {
    if (!raw.trim()) return;
    let json: Record<string, unknown> | null = null;
    if (raw.startsWith('{')) {
      try {
        json = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        json = null;
      }
    }
    const line: BotLogLine = { index: logs.length, stream, raw, json, at: Date.now() };
    if (json && typeof json.level === 'number') line.level = json.level;
    if (json && typeof json.msg === 'string') line.msg = json.msg;
    logs.push(line);
    if (echo) process.stderr.write(`[bot:${port} ${stream}] ${raw}\n`);
    for (const w of [...logWaiters]) {
      if (w.test(line)) {
        logWaiters.splice(logWaiters.indexOf(w), 1);
        w.resolve(line);
      }
    }
  };
  const pipeLines = (stream: 'stdout' | 'stderr', readable: NodeJS.ReadableStream | null) => {
    if (!readable) return;
    let buf = '';
    readable.setEncoding('utf8');
    readable.on('data', (chunk: string) => {
      buf += chunk;
      let nl = buf.indexOf('\n');
      while (nl >= 0) {
        addLine(stream, buf.slice(0, nl).replace(/\r$/, ''));
        buf = buf.slice(nl + 1);
        nl = buf.indexOf('\n');
      }
    });
    readable.on('end', () => {
      if (buf) addLine(stream, buf);
      buf = '';
    });
  };
  pipeLines('stdout', proc.stdout);
  pipeLines('stderr', proc.stderr);

  let exitInfo: BotExit | null = null;
  const exited = new Promise<BotExit>((resolve) => {
    proc.once('exit', (code, signal) => {
      running.delete(proc);
      exitInfo = { code, signal };
      resolve(exitInfo);
    });
    proc.once('error', (err) => {
      running.delete(proc);
      addLine('stderr', `spawn error: ${err.message}`);
      exitInfo = { code: null, signal: null };
      resolve(exitInfo);
    });
  });

  const url = `http://127.0.0.1:${port}`;
  const metricsUrl = env.METRICS_PORT === undefined ? undefined : `http://127.0.0.1:${env.METRICS_PORT}`;
  const tail = (n = 40) =>
    logs
      .slice(-n)
      .map((l) => l.raw)
      .join('\n');

  const waitForLog = (predicate: (l: BotLogLine) => boolean, timeoutMs = 5000): Promise<BotLogLine> => {
    const found = logs.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter = {
        test: predicate,
        resolve: (l: BotLogLine) => {
          clearTimeout(timer);
          resolve(l);
        },
      };
      const timer = setTimeout(() => {
        const i = logWaiters.indexOf(waiter);
        if (i >= 0) logWaiters.splice(i, 1);
        reject(new Error(`bot: no matching log line within ${timeoutMs} ms. Last lines:\n${tail()}`));
      }, timeoutMs);
      logWaiters.push(waiter);
    });
  };

  const waitReady = async (timeoutMs = 15_000): Promise<void> => {
    const deadline = Date.now() + timeoutMs;
    let last = 'no answer';
    while (Date.now() < deadline) {
      if (exitInfo) {
        throw new Error(
          `bot exited (code ${exitInfo.code}, signal ${exitInfo.signal}) before /readyz was 200. Last lines:\n${tail()}`,
        );
      }
      try {
        const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(1000) });
        last = `HTTP ${res.status} ${(await res.text()).slice(0, 200)}`;
        if (res.status === 200) {
          if (metricsUrl === undefined) return;
          const metrics = await fetch(`${metricsUrl}/metrics`, { signal: AbortSignal.timeout(1000) });
          const hostUp = /^countersign_up\{part="host"\} 1$/m.test(await metrics.text());
          if (hostUp) return;
          last += ', no host up yet';
        }
      } catch (err) {
        last = err instanceof Error ? err.message : String(err);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`bot not ready within ${timeoutMs} ms (last /readyz: ${last}). Last lines:\n${tail()}`);
  };

  const stop = async (graceMs = 10_000): Promise<BotExit> => {
    if (exitInfo) return exitInfo;
    proc.kill('SIGTERM');
    const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
    const result = await exited;
    clearTimeout(timer);
    return result;
  };

  const kill = async (): Promise<BotExit> => {
    if (exitInfo) return exitInfo;
    proc.kill('SIGKILL');
    return exited;
  };

  return { url, metricsUrl, port, proc, logs, waitForLog, waitReady, stop, kill, exited, tail };
}

/**
 * A Redis database for this vitest worker (1..15, from VITEST_POOL_ID), flushed. Files in the
 * same worker run one after another, so one database per worker keeps parallel files apart.
 */
export async function freshRedisDb(baseUrl?: string): Promise<number> {
  const poolId = Number(process.env.VITEST_POOL_ID ?? process.env.VITEST_WORKER_ID ?? 1) || 1;
  const db = 1 + ((poolId - 1) % 15);
  const url = baseUrl ? `${baseUrl}/${db}` : testRedisUrl(db);
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    await redis.flushdb();
  } finally {
    redis.disconnect();
  }
  return db;
}
