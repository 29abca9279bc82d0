import type { Logger } from 'pino';
import { lazyChild } from '../util/lazyChild.js';
import { type BackoffPolicy, backoffDelay, sleep as realSleep } from './backoff.js';
import { MspError } from './errors.js';
import { type DecideParams, DecideResult } from './protocol.js';

// approval/decide with the retry rules of docs/msp-approvals.md §7: the SAME commandId on every
// try (the host dedupes by it), back off only on retryable kinds, and on sessionNotLoaded resume
// the session and replay once. Everything else goes back to the caller unchanged.

export const DEFAULT_DECIDE_BACKOFF: BackoffPolicy = { initialMs: 100, maxMs: 5_000 };
export const DEFAULT_DECIDE_MAX_ATTEMPTS = 6;

/** Sends one approval/decide and returns the raw result. */
export type DecideSender = (params: DecideParams) => Promise<unknown>;

export interface DecideRetryOptions {
  /** session/resume for the session, so that the replay is accepted. */
  resume: (sessionId: string) => Promise<void>;
  sleep?: (ms: number) => Promise<void>;
  random?: () => number;
  /** Sends in total for retryable errors (the replay after a resume does not count). */
  maxAttempts?: number;
  backoff?: BackoffPolicy;
  logger?: Logger;
}

export async function decideWithRetry(
  send: DecideSender,
  params: DecideParams,
  options: DecideRetryOptions,
): Promise<DecideResult> {
  const sleep = options.sleep ?? realSleep;
  const random = options.random ?? Math.random;
  const maxAttempts = options.maxAttempts ?? DEFAULT_DECIDE_MAX_ATTEMPTS;
  const backoff = options.backoff ?? DEFAULT_DECIDE_BACKOFF;
  // Only retries and failures log.
  const bindings = {
    approvalId: params.approvalId,
    sessionId: params.sessionId,
    commandId: params.commandId,
  };
  const child = options.logger ? lazyChild(options.logger, bindings) : undefined;
  const log = () => child?.();

  let failedAttempts = 0;
  let resumed = false;
  for (;;) {
    try {
      return toDecideResult(await send(params), params.commandId);
    } catch (error) {
      if (!(error instanceof MspError)) throw error;
      if (error.kind === 'sessionNotLoaded' && !resumed) {
        resumed = true;
        log()?.info('session not loaded on the host: resuming, then replaying the decision');
        await options.resume(params.sessionId);
        continue;
      }
      failedAttempts += 1;
      if (!error.retryable || failedAttempts >= maxAttempts) throw error;
      const delayMs = backoffDelay(failedAttempts - 1, backoff, random);
      log()?.warn(
        { kind: error.kind, attempt: failedAttempts, delayMs },
        'approval/decide refused for now: retrying',
      );
      await sleep(delayMs);
    }
  }
}

/**
 * The ack only says the decision was admitted; the outcome comes as approval/resolved. A
 * success with an odd shape is still a success, so fill in the commandId we sent.
 */
function toDecideResult(result: unknown, commandId: string): DecideResult {
  const base = typeof result === 'object' && result !== null && !Array.isArray(result) ? result : {};
  const parsed = DecideResult.safeParse({ commandId, ...base });
  return parsed.success ? parsed.data : { commandId };
}
