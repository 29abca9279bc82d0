// Everything `npm run demo` starts, wired together: Redis, the fake Slack, the simulated MSP
// host, the real bot (dist/main.js in HTTP mode, as in production), the scenario that feeds the
// host, and the page. stop() ends them all, in reverse order.

import { fileURLToPath } from 'node:url';
import { APPROVALS_CHANNEL, type RunningBot, startBot } from '../test/support/bot.js';
import { FakeHost } from '../test/support/fakeHost.js';
import { FakeSlack } from '../test/support/fakeSlack.js';
import { checkPortFree, startPageServer } from './pageServer.js';
import { demoRedis } from './redis.js';
import { DEMO_SESSIONS, playScenario } from './scenario.js';
import { DemoWorkspace } from './workspace.js';

/** The demo's risk rules (a force push asks for its branch to be typed before it is approved). */
const DEMO_CONFIG = fileURLToPath(new URL('./countersign.demo.yml', import.meta.url));

export interface DemoOptions {
  /** Port of the page (DEMO_PORT; 0 picks a free one). */
  port: number;
  /** Time between two new approvals (DEMO_INTERVAL_MS). */
  intervalMs: number;
  /** REDIS_URL, if set. */
  redisUrl?: string;
  /** Echo every line the bot logs (DEMO_LOGS=1). */
  botLogs?: boolean;
  /** Told about anything that goes wrong while the demo runs. */
  warn: (line: string) => void;
}

export interface RunningDemo {
  /** The page to open. */
  url: string;
  botUrl: string;
  redisUrl: string;
  privateRedisPid: number | null;
  bot: RunningBot;
  stop(): Promise<void>;
}

export async function startDemo(opts: DemoOptions): Promise<RunningDemo> {
  const cleanups: Array<() => Promise<unknown>> = [];
  const stop = async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => undefined);
  };
  try {
    await checkPortFree(opts.port);
    const redis = await demoRedis(opts.redisUrl ? { url: opts.redisUrl } : {});
    cleanups.push(() => redis.stop());
    const slack = await FakeSlack.start();
    cleanups.push(() => slack.close());
    const host = await FakeHost.start({ sessions: DEMO_SESSIONS });
    cleanups.push(() => host.close());
    // REDIS_URL in env overrides the tests' database that startBot would otherwise pick.
    const bot = await startBot({
      host,
      slack,
      redisDb: 0,
      env: {
        REDIS_URL: redis.url,
        // Its Redis (the private one it started, or the one at REDIS_URL) may have no
        // password: the demo's host is a fake that runs no agent to write itself a grant.
        REDIS_ALLOW_NO_PASSWORD: 'true',
        LOG_LEVEL: 'info',
        COUNTERSIGN_CONFIG: DEMO_CONFIG,
      },
      echo: opts.botLogs ?? false,
    });
    cleanups.push(() => bot.stop(10_000));
    await bot.waitReady(20_000);
    void bot.exited.then((exit) => {
      // Ctrl-C in a terminal reaches the bot too, which then exits 0 on its own: not news.
      if (cleanups.length > 0 && exit.code !== 0) {
        opts.warn(
          `countersign demo: the bot exited (code ${exit.code}, signal ${exit.signal}):\n${bot.tail(20)}`,
        );
      }
    });

    const workspace = new DemoWorkspace(slack, bot.url, { id: APPROVALS_CHANNEL, name: 'approvals' });
    const page = await startPageServer(workspace, opts.port);
    cleanups.push(() => page.close());
    const scenario = playScenario(host, {
      intervalMs: opts.intervalMs,
      onError: (scene, err) =>
        opts.warn(`countersign demo: ${scene}: ${err instanceof Error ? err.message : String(err)}`),
    });
    cleanups.push(async () => scenario.stop());
    return {
      url: page.url,
      botUrl: bot.url,
      redisUrl: redis.url,
      privateRedisPid: redis.privateServer?.pid ?? null,
      bot,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
