import { setTimeout as sleep } from 'node:timers/promises';
import { classifySlackError, type SlackFailure } from './slackFailures.js';

/**
 * How hard one kind of Slack call tries. The Web API client itself never retries (see
 * webClient.ts): every retry is decided here, per call, from the one failure table.
 */
export interface RetryPolicy {
  /** Tries allowed when answers are lost (5xx, timeouts, resets); Infinity: until it lands. */
  maxLost: number;
  /** 429s waited out before giving up. */
  maxRateLimited: number;
  /** A longer Retry-After is not waited out: whoever waits on this call cannot wait that long. */
  maxRetryAfterMs: number;
  /** Backoff after the first lost answer; it doubles with each one, up to maxDelayMs, jittered. */
  baseDelayMs: number;
  maxDelayMs: number;
}

export const RETRY_POLICIES = {
  /** A person is waiting (a modal, an ephemeral note): a few quick tries. A trigger_id lives 3 s. */
  interactive: {
    maxLost: 3,
    maxRateLimited: 2,
    maxRetryAfterMs: 3_000,
    baseDelayMs: 200,
    maxDelayMs: 1_000,
  },
  /**
   * A card post holds its channel's queue and the approval's post lease (a minute): bounded, and
   * the relay posts again later. A 429 costs nothing, so Slack's pace is waited out.
   */
  post: {
    maxLost: 4,
    maxRateLimited: 8,
    maxRetryAfterMs: 60_000,
    baseDelayMs: 500,
    maxDelayMs: 8_000,
  },
  /**
   * A notice (thread line, DM, grant line, escalation step) is sent at most once: a post whose
   * answer was lost may have reached Slack, so only 429s, which post nothing, are waited out.
   */
  atMostOnce: {
    maxLost: 0,
    maxRateLimited: 8,
    maxRetryAfterMs: 60_000,
    baseDelayMs: 500,
    maxDelayMs: 8_000,
  },
  /** A card update must land: it is tried until it does, or the channel is stopped. */
  update: {
    maxLost: Number.POSITIVE_INFINITY,
    maxRateLimited: Number.POSITIVE_INFINITY,
    maxRetryAfterMs: Number.POSITIVE_INFINITY,
    baseDelayMs: 250,
    maxDelayMs: 30_000,
  },
} as const satisfies Record<string, RetryPolicy>;

/** Clock and dice of the retries; tests pass their own. */
export interface RetryTiming {
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  random(): number;
}

export const realTiming: RetryTiming = {
  sleep: (ms, signal) => sleep(ms, undefined, signal ? { signal } : {}),
  random: Math.random,
};

/** Failures of one call so far, by kind: what the policy's limits count. */
export interface FailureCounts {
  lost: number;
  rateLimited: number;
}

export function countFailure(counts: FailureCounts, failure: SlackFailure): void {
  if (failure.kind === 'rateLimited') counts.rateLimited += 1;
  else if (failure.kind === 'retry') counts.lost += 1;
}

/**
 * How long to wait before trying again after `failure` (already counted in `counts`), or
 * undefined when it is not to be tried again. A 429 waits exactly its Retry-After; a lost answer
 * waits a capped, jittered exponential backoff (half the step plus up to half again at random),
 * so many callers failing at once do not come back in step.
 */
export function retryDelayMs(
  failure: SlackFailure,
  counts: FailureCounts,
  policy: RetryPolicy,
  random: () => number,
): number | undefined {
  if (failure.kind === 'rateLimited') {
    return counts.rateLimited <= policy.maxRateLimited && failure.retryAfterMs <= policy.maxRetryAfterMs
      ? failure.retryAfterMs
      : undefined;
  }
  if (failure.kind !== 'retry' || counts.lost >= policy.maxLost) return undefined;
  const step = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (counts.lost - 1));
  return Math.round(step / 2 + (random() * step) / 2);
}

/** A retry that was waiting when its channel was stopped; `cause` is the last Slack failure. */
export class SlackStoppedError extends Error {
  constructor(cause: unknown) {
    super('slack calls stopped before this one landed', { cause });
    this.name = 'SlackStoppedError';
  }
}

/** Waits `ms`, or throws SlackStoppedError at once when `signal` is (or becomes) aborted. */
export async function waitUnlessStopped(
  ms: number,
  signal: AbortSignal | undefined,
  timing: RetryTiming,
  lastError: unknown,
): Promise<void> {
  if (signal?.aborted) throw new SlackStoppedError(lastError);
  try {
    await timing.sleep(ms, signal);
  } catch (err) {
    if (signal?.aborted) throw new SlackStoppedError(lastError);
    throw err;
  }
}

export interface RetryHooks {
  /** Aborted: no more waiting, the call fails with SlackStoppedError instead. */
  signal?: AbortSignal;
  timing?: RetryTiming;
  /** Told before each wait: what failed, which try it was (1 = the first), how long it waits. */
  onRetry?: (failure: SlackFailure, attempt: number, delayMs: number) => void;
}

/**
 * Runs one Slack call, trying again after 429s (their Retry-After) and lost answers (backoff)
 * as `policy` allows. Any other failure, or one past the policy's limits, is thrown as it came.
 */
export async function retrySlackCall<T>(
  run: () => Promise<T>,
  policy: RetryPolicy,
  hooks: RetryHooks = {},
): Promise<T> {
  const timing = hooks.timing ?? realTiming;
  const counts: FailureCounts = { lost: 0, rateLimited: 0 };
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (err) {
      const failure = classifySlackError(err);
      countFailure(counts, failure);
      const wait = retryDelayMs(failure, counts, policy, timing.random);
      if (wait === undefined) throw err;
      hooks.onRetry?.(failure, attempt, wait);
      await waitUnlessStopped(wait, hooks.signal, timing, err);
    }
  }
}
