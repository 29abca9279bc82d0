import type { Logger } from 'pino';
import { settlesWithin } from '../util/settlesWithin.js';

// The orderly stop on SIGTERM, inside Docker's 10 s stop grace. Every step gets its share of one
// deadline instead of a timeout of its own, so a slow step eats into the steps after it and the
// whole stays inside the budget: stop taking Slack requests and let decisions in flight finish,
// then EOF/SIGTERM/SIGKILL the host, then let the last card updates out and quit Redis.

export interface ShutdownBudget {
  /** From the signal to exit. */
  totalMs: number;
  /** Kept for the host at least: EOF, then SIGTERM and SIGKILL to its group. */
  hostMs: number;
  /** Kept for what follows the host: card updates its death causes, and Redis. */
  lastWordsMs: number;
}

/** Docker sends SIGKILL 10 s after SIGTERM; 2 s are left for a machine under load. */
export const SHUTDOWN_BUDGET: ShutdownBudget = { totalMs: 8_000, hostMs: 3_000, lastWordsMs: 1_000 };

export interface ShutdownSteps {
  logger: Logger;
  /** Stops taking Slack requests (Bolt's app.stop()). */
  stopSlack(): Promise<void>;
  /** Resolves when the decisions in flight are done. */
  drainDecisions(): Promise<unknown>;
  /** Resolves when the relay has no work queued. */
  relayIdle(): Promise<void>;
  stopRelay(): void;
  /** Ends the host within `withinMs`. */
  stopHost(withinMs: number): Promise<void>;
  quitRedis(): Promise<unknown>;
  /** Drops the Redis connection at once, when quit takes too long. */
  disconnectRedis(): void;
  exit(code: number): void;
  budget?: ShutdownBudget;
}

/** Returns `shutdown(code, reason)`; calls after the first are ignored. */
export function createShutdown(steps: ShutdownSteps): (code: number, reason: string) => Promise<void> {
  const budget = steps.budget ?? SHUTDOWN_BUDGET;
  const { logger } = steps;
  let started = false;
  return async (code, reason) => {
    if (started) return;
    started = true;
    const end = Date.now() + budget.totalMs;
    const drainEnd = end - budget.hostMs - budget.lastWordsMs;
    const hostEnd = end - budget.lastWordsMs;
    let failed = false;
    /** Runs a step until `until` at the latest; true if it finished. A failure is logged, not thrown. */
    const step = (name: string, run: () => Promise<unknown>, until: number): Promise<boolean> => {
      const done = Promise.resolve()
        .then(run)
        .catch((err: unknown) => {
          failed = true;
          logger.error({ err, step: name }, 'error while shutting down');
        });
      return settlesWithin(done, until - Date.now());
    };

    logger.info({ reason, budgetMs: budget.totalMs }, 'shutting down');
    if (!(await step('slack', steps.stopSlack, drainEnd)))
      logger.warn('slack receiver still closing; going on');
    // A decision that does not finish in time is still safe: its claim and commandId are in
    // Redis and the next start replays it.
    if (!(await step('decisions', steps.drainDecisions, drainEnd))) {
      logger.warn('decisions still in flight; leaving them to replay');
    }
    await step('relay', steps.relayIdle, drainEnd);
    steps.stopRelay();
    if (!(await step('host', () => steps.stopHost(hostEnd - Date.now()), hostEnd))) {
      logger.warn('host still stopping; going on');
    }
    // Stopping a non-durable host orphans its cards; let that reach Slack before Redis goes.
    await step('relay', steps.relayIdle, end - budget.lastWordsMs / 2);
    if (!(await step('redis', steps.quitRedis, end))) steps.disconnectRedis();
    logger.flush();
    steps.exit(failed ? code || 1 : code);
  };
}
