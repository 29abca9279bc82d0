import type { World } from '../../test/e2e/world.js';
import type { FakeSlack, SlackFault } from '../../test/support/fakeSlack.js';
import type { PrivateRedis } from '../../test/support/privateRedis.js';

// The faults a chaos run injects in the middle of its burst, one per run. Each is what the e2e
// fault tests do to one approval, done to the bot while it is busy with many.

export interface FaultContext {
  world: World;
  redis: PrivateRedis;
  /** The bot's environment, to start it again with. */
  env: Record<string, string>;
  /** How long a Slack storm lasts. */
  windowMs: number;
  /** How long Redis is frozen. */
  redisPauseMs: number;
}

export interface Fault {
  name: FaultName;
  /** One sentence on what the fault does (docs/reliability.md says the same). */
  what: string;
  /** Bot settings the fault needs. */
  env?: Record<string, string>;
  inject(ctx: FaultContext): Promise<void>;
}

export const FAULT_NAMES = [
  'hostCrash',
  'botKill',
  'redisPause',
  'slack5xx',
  'slack429',
  'lostPostAnswers',
] as const;
export type FaultName = (typeof FAULT_NAMES)[number];

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const CARD_CALLS = ['chat.postMessage', 'chat.update'] as const;

/**
 * Gives `method`'s calls the faults of `cycle` in turn, call by call (null: answered as usual),
 * until heal(). A call is counted once even though each fault entry looks at it.
 */
function cycleFaults(slack: FakeSlack, method: string, cycle: Array<SlackFault | null>): void {
  const turnOf = new WeakMap<object, number>();
  let calls = 0;
  const turn = (args: Record<string, unknown>) => {
    let t = turnOf.get(args);
    if (t === undefined) {
      t = calls++ % cycle.length;
      turnOf.set(args, t);
    }
    return t;
  };
  cycle.forEach((fault, k) => {
    if (fault)
      slack.fault(method, fault, { times: Number.POSITIVE_INFINITY, match: (args) => turn(args) === k });
  });
}

export const FAULTS: Record<FaultName, Fault> = {
  hostCrash: {
    name: 'hostCrash',
    what: 'the MSP host exits with code 1; the bot respawns it, and the durable host closes what it had pending and asks it again under new ids',
    async inject({ world }) {
      const next = (world.host.incarnation ?? 1) + 1;
      await world.host.crash(1);
      await world.host.waitForIncarnation(next, 30_000);
    },
  },
  botKill: {
    name: 'botKill',
    what: 'the bot is SIGKILLed (its host goes with it) and started again on the same Redis, Slack and host state',
    async inject({ world, env }) {
      await world.bot.kill();
      await world.restartBot(env);
    },
  },
  redisPause: {
    name: 'redisPause',
    what: "the bot's redis-server is frozen with SIGSTOP, then continued",
    async inject({ redis, redisPauseMs }) {
      redis.pause();
      await sleep(redisPauseMs);
      redis.resume();
    },
  },
  slack5xx: {
    name: 'slack5xx',
    what: 'every chat.postMessage and chat.update answers HTTP 5xx for a while, half of them after Slack carried the call out, then Slack heals',
    async inject({ world, windowMs }) {
      for (const method of CARD_CALLS)
        cycleFaults(world.slack, method, [{ status: 503 }, { status: 500, applied: true }]);
      await sleep(windowMs);
      for (const method of CARD_CALLS) world.slack.heal(method);
    },
  },
  slack429: {
    name: 'slack429',
    what: 'every chat.postMessage and chat.update answers HTTP 429 with a Retry-After of 1 to 3 s for a while',
    async inject({ world, windowMs }) {
      const storm = Array.from({ length: 100_000 }, (_, i) => 1 + (i % 3));
      for (const method of CARD_CALLS) world.slack.rateLimit(method, { retryAfterSec: storm });
      await sleep(windowMs);
      for (const method of CARD_CALLS) world.slack.rateLimit(method, { retryAfterSec: [] });
    },
  },
  lostPostAnswers: {
    name: 'lostPostAnswers',
    what: 'for a while every other chat.postMessage is carried out but its answer is lost: an HTTP 500, a dropped connection, or an answer later than the bot waits (SLACK_API_TIMEOUT=1s)',
    env: { SLACK_API_TIMEOUT: '1s' },
    async inject({ world, windowMs }) {
      cycleFaults(world.slack, 'chat.postMessage', [
        { status: 500, applied: true },
        null,
        { reset: true },
        null,
        { delayMs: 2_500 },
        null,
      ]);
      await sleep(windowMs);
      world.slack.heal('chat.postMessage');
    },
  },
};
