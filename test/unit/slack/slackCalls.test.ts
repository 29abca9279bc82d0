import { ErrorCode } from '@slack/web-api';
import { describe, expect, it } from 'vitest';
import { classifyRespondError, classifySlackError } from '../../../src/slack/slackFailures.js';
import {
  RETRY_POLICIES,
  type RetryPolicy,
  type RetryTiming,
  retryDelayMs,
  retrySlackCall,
  SlackStoppedError,
} from '../../../src/slack/slackRetry.js';

const rateLimited = (retryAfter: number) =>
  Object.assign(new Error('429'), { code: ErrorCode.RateLimitedError, retryAfter });
const platform = (error: string) =>
  Object.assign(new Error(error), { code: ErrorCode.PlatformError, data: { ok: false, error } });
const http = (statusCode: number) =>
  Object.assign(new Error(`HTTP ${statusCode}`), { code: ErrorCode.HTTPError, statusCode });
const request = (original: unknown) =>
  Object.assign(new Error('request failed'), { code: ErrorCode.RequestError, original });

/** Sleeps recorded, not slept; the dice always land in the middle. */
function recordedTiming(): RetryTiming & { slept: number[] } {
  const slept: number[] = [];
  return {
    slept,
    sleep: async (ms, signal) => {
      if (signal?.aborted) throw signal.reason;
      slept.push(ms);
    },
    random: () => 0.5,
  };
}

describe('classifyRespondError', () => {
  it('names the status a response_url answered, or the wire failure, never the message that may hold the URL', () => {
    const url = 'https://hooks.slack.com/commands/T1/2/secret';
    const refused = Object.assign(new Error(`Failed to respond to ${url}: 404`), { statusCode: 404 });
    expect(classifyRespondError(refused)).toBe('http_404');
    const unreachable = new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } });
    expect(classifyRespondError(unreachable)).toBe('connection_refused');
    expect(classifyRespondError(new TypeError(`Failed to parse URL from ${url}`))).toBe('request_error');
  });
});

describe('classifySlackError', () => {
  it('sorts Slack failures into what the bot does about them', () => {
    expect(classifySlackError(rateLimited(7))).toEqual({ kind: 'rateLimited', retryAfterMs: 7000 });
    expect(classifySlackError(platform('invalid_auth'))).toEqual({ kind: 'fatal', error: 'invalid_auth' });
    expect(classifySlackError(platform('missing_scope'))).toEqual({ kind: 'fatal', error: 'missing_scope' });
    // Slack names the scope a call lacks; the log passes it on (docs/operations.md, "Slack app problems").
    const missing = Object.assign(platform('missing_scope'), {
      data: { ok: false, error: 'missing_scope', needed: 'channels:history', provided: 'chat:write' },
    });
    expect(classifySlackError(missing)).toEqual({
      kind: 'fatal',
      error: 'missing_scope',
      needed: 'channels:history',
    });
    expect(classifySlackError(platform('not_in_channel'))).toEqual({
      kind: 'notInChannel',
      error: 'not_in_channel',
    });
    expect(classifySlackError(platform('message_not_found'))).toEqual({
      kind: 'refused',
      error: 'message_not_found',
    });
    expect(classifySlackError(http(503))).toEqual({ kind: 'retry', error: 'http_503' });
    expect(classifySlackError(http(404))).toEqual({ kind: 'refused', error: 'http_404' });
    expect(classifySlackError(platform('internal_error'))).toEqual({
      kind: 'retry',
      error: 'internal_error',
    });
  });

  it('names a message Slack refuses as too big or malformed, which a smaller one may fix', () => {
    for (const error of ['invalid_blocks', 'msg_too_long', 'msg_blocks_too_long']) {
      expect(classifySlackError(platform(error))).toEqual({ kind: 'badMessage', error });
    }
  });

  it('tells a timeout from a dropped connection: both lose the answer', () => {
    const timeout = Object.assign(new Error('The operation was aborted due to timeout'), {
      name: 'TimeoutError',
    });
    expect(classifySlackError(request(timeout))).toEqual({ kind: 'retry', error: 'timeout' });
    const reset = Object.assign(new Error('other side closed'), { code: 'UND_ERR_SOCKET' });
    expect(classifySlackError(request(reset))).toEqual({ kind: 'retry', error: 'connection_reset' });
    expect(classifySlackError(request(new Error('?')))).toEqual({ kind: 'retry', error: 'request_error' });
  });
});

describe('retryDelayMs', () => {
  const policy: RetryPolicy = {
    maxLost: 4,
    maxRateLimited: 2,
    maxRetryAfterMs: 5_000,
    baseDelayMs: 100,
    maxDelayMs: 400,
  };

  it('waits a 429 out for exactly its Retry-After, within the policy', () => {
    const failure = { kind: 'rateLimited', retryAfterMs: 3_000 } as const;
    expect(retryDelayMs(failure, { lost: 0, rateLimited: 1 }, policy, Math.random)).toBe(3_000);
    expect(retryDelayMs(failure, { lost: 0, rateLimited: 3 }, policy, Math.random)).toBeUndefined();
    const long = { kind: 'rateLimited', retryAfterMs: 6_000 } as const;
    expect(retryDelayMs(long, { lost: 0, rateLimited: 1 }, policy, Math.random)).toBeUndefined();
  });

  it('backs off lost answers exponentially, capped, with jitter between half and all of each step', () => {
    const failure = { kind: 'retry', error: 'http_503' } as const;
    const delays = (random: () => number) =>
      [1, 2, 3].map((lost) => retryDelayMs(failure, { lost, rateLimited: 0 }, policy, random));
    expect(delays(() => 0)).toEqual([50, 100, 200]);
    expect(delays(() => 1)).toEqual([100, 200, 400]);
    expect(retryDelayMs(failure, { lost: 4, rateLimited: 0 }, policy, () => 1)).toBeUndefined();
    const capped = { ...policy, maxLost: 10 };
    expect(retryDelayMs(failure, { lost: 9, rateLimited: 0 }, capped, () => 1)).toBe(400);
  });

  it('never retries a refusal', () => {
    for (const err of [platform('channel_not_found'), platform('invalid_auth'), platform('invalid_blocks')]) {
      expect(retryDelayMs(classifySlackError(err), { lost: 0, rateLimited: 0 }, policy, Math.random)).toBe(
        undefined,
      );
    }
  });
});

describe('retrySlackCall', () => {
  it('waits each Retry-After, then returns the first success', async () => {
    const timing = recordedTiming();
    let calls = 0;
    const result = await retrySlackCall(
      async () => {
        calls++;
        if (calls < 3) throw rateLimited(calls);
        return 'posted';
      },
      RETRY_POLICIES.post,
      { timing },
    );
    expect(result).toBe('posted');
    expect(timing.slept).toEqual([1000, 2000]);
  });

  it('retries lost answers with growing waits, and gives up after the policy allows', async () => {
    const timing = recordedTiming();
    let calls = 0;
    await expect(
      retrySlackCall(
        async () => {
          calls++;
          throw http(502);
        },
        RETRY_POLICIES.post,
        { timing },
      ),
    ).rejects.toThrow('HTTP 502');
    expect(calls).toBe(RETRY_POLICIES.post.maxLost);
    expect(timing.slept).toEqual([375, 750, 1500]);
  });

  it('does not retry refusals, and gives up after too many 429s', async () => {
    let calls = 0;
    await expect(
      retrySlackCall(async () => {
        calls++;
        throw platform('channel_not_found');
      }, RETRY_POLICIES.update),
    ).rejects.toThrow('channel_not_found');
    expect(calls).toBe(1);

    calls = 0;
    await expect(
      retrySlackCall(
        async () => {
          calls++;
          throw rateLimited(1);
        },
        RETRY_POLICIES.interactive,
        { timing: recordedTiming() },
      ),
    ).rejects.toThrow('429');
    expect(calls).toBe(RETRY_POLICIES.interactive.maxRateLimited + 1);
  });

  it('tells each retry to onRetry, and a stop ends the wait with SlackStoppedError', async () => {
    const stop = new AbortController();
    const seen: Array<[string, number, number]> = [];
    const timing = recordedTiming();
    let calls = 0;
    const err = await retrySlackCall(
      async () => {
        calls++;
        if (calls === 2) stop.abort();
        throw http(500);
      },
      RETRY_POLICIES.update,
      {
        signal: stop.signal,
        timing,
        onRetry: (failure, attempt, delayMs) => seen.push([failure.kind, attempt, delayMs]),
      },
    ).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(SlackStoppedError);
    expect((err as SlackStoppedError).cause).toMatchObject({ statusCode: 500 });
    expect(calls).toBe(2);
    expect(seen).toEqual([
      ['retry', 1, 188],
      ['retry', 2, 375],
    ]);
  });
});
