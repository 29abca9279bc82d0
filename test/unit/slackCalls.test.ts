import { ErrorCode } from '@slack/web-api';
import { describe, expect, it } from 'vitest';
import { classifySlackError } from '../../src/slack/slackFailures.js';
import { withRateLimitRetry } from '../../src/slack/withRateLimitRetry.js';

const rateLimited = (retryAfter: number) =>
  Object.assign(new Error('429'), { code: ErrorCode.RateLimitedError, retryAfter });
const platform = (error: string) =>
  Object.assign(new Error(error), { code: ErrorCode.PlatformError, data: { ok: false, error } });

describe('classifySlackError', () => {
  it('sorts Slack failures into what the bot does about them', () => {
    expect(classifySlackError(rateLimited(7))).toEqual({ kind: 'rateLimited', retryAfterMs: 7000 });
    expect(classifySlackError(platform('invalid_auth'))).toEqual({ kind: 'fatal', error: 'invalid_auth' });
    expect(classifySlackError(platform('missing_scope'))).toEqual({ kind: 'fatal', error: 'missing_scope' });
    expect(classifySlackError(platform('not_in_channel'))).toEqual({
      kind: 'notInChannel',
      error: 'not_in_channel',
    });
    expect(classifySlackError(platform('msg_too_long'))).toEqual({ kind: 'refused', error: 'msg_too_long' });
    expect(
      classifySlackError(Object.assign(new Error('x'), { code: ErrorCode.HTTPError, statusCode: 503 })),
    ).toEqual({
      kind: 'retry',
      error: 'http_503',
    });
    expect(classifySlackError(Object.assign(new Error('x'), { code: ErrorCode.RequestError }))).toEqual({
      kind: 'retry',
      error: 'request_error',
    });
  });
});

describe('withRateLimitRetry', () => {
  it('waits each Retry-After, then returns the first success', async () => {
    const slept: number[] = [];
    let calls = 0;
    const result = await withRateLimitRetry(
      async () => {
        calls++;
        if (calls < 3) throw rateLimited(calls);
        return 'posted';
      },
      { sleep: async (ms) => void slept.push(ms) },
    );
    expect(result).toBe('posted');
    expect(slept).toEqual([1000, 2000]);
  });

  it('does not retry other failures, and gives up after maxAttempts 429s', async () => {
    let calls = 0;
    await expect(
      withRateLimitRetry(async () => {
        calls++;
        throw platform('channel_not_found');
      }),
    ).rejects.toThrow('channel_not_found');
    expect(calls).toBe(1);

    calls = 0;
    await expect(
      withRateLimitRetry(
        async () => {
          calls++;
          throw rateLimited(1);
        },
        { maxAttempts: 3, sleep: async () => undefined },
      ),
    ).rejects.toThrow('429');
    expect(calls).toBe(3);
  });
});
