import { classifySlackError } from './slackFailures.js';

export interface RateLimitRetryOptions {
  /** Give up once this many 429s in a row were answered for one call. */
  maxAttempts?: number;
  sleep?: (ms: number) => Promise<void>;
  onRateLimited?: (retryAfterMs: number, attempt: number) => void;
}

const defaultSleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Runs one Slack call, and when Slack answers 429 waits the Retry-After it gave and tries again.
 * A 429 means the call did nothing, so a retried post never makes a second message.
 */
export async function withRateLimitRetry<T>(
  call: () => Promise<T>,
  options: RateLimitRetryOptions = {},
): Promise<T> {
  const maxAttempts = options.maxAttempts ?? 8;
  const sleep = options.sleep ?? defaultSleep;
  for (let attempt = 1; ; attempt++) {
    try {
      return await call();
    } catch (err) {
      const failure = classifySlackError(err);
      if (failure.kind !== 'rateLimited' || attempt >= maxAttempts) throw err;
      options.onRateLimited?.(failure.retryAfterMs, attempt);
      await sleep(failure.retryAfterMs);
    }
  }
}
