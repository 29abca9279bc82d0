import { WebAPIRateLimitedError } from '@slack/web-api';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { HomeTab, type HomeTabOptions } from '../../../src/slack/homeTab.js';

// A Home publish Slack refused for now (a 429 longer than a quick retry waits, a lost answer) is
// asked again once Slack allows, a few times in a row at most; one it refused outright is not.
// On a fake clock; views.publish is a stub of the Web API (after its own quick retries).

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A Home with nothing to show, whose publishes answer as `answer` says, each time. */
function homeWith(answer: (n: number) => unknown) {
  const publishedAt: number[] = [];
  const options = {
    views: {
      publish: async () => {
        publishedAt.push(Date.now());
        const failure = answer(publishedAt.length);
        if (failure) throw failure;
      },
    },
    waiting: { for: async () => [] },
    recent: { list: async () => [], add: async () => {} },
    viewers: { opened: async () => {}, current: async () => [] },
    permalinks: { of: async () => undefined },
    stranger: async () => undefined,
    channel: 'C0APPROVALS',
    status: () => ({ host: true, redis: true }),
    logger: pino({ level: 'silent' }),
  } as unknown as HomeTabOptions;
  const home = new HomeTab(options);
  /** When each publish was made, counted from the first, to the 100 ms (each throttle run waits 1 ms more). */
  const gaps = () => publishedAt.map((at) => Math.floor((at - publishedAt[0]!) / 100) * 100);
  return { home, gaps };
}

describe('HomeTab publishes Slack refused for now', () => {
  it('asks again after the Retry-After, then stops once one lands', async () => {
    const { home, gaps } = homeWith((n) => (n === 1 ? new WebAPIRateLimitedError(5) : undefined));
    await home.opened('U1');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(gaps()).toEqual([0, 5_000]);
    home.stop();
  });

  it('a lost answer is asked again an interval later', async () => {
    const lost = Object.assign(new Error('timeout'), { code: 'slack_webapi_request_error' });
    const { home, gaps } = homeWith((n) => (n === 1 ? lost : undefined));
    await home.opened('U1');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(gaps()).toEqual([0, 3_000]);
    home.stop();
  });

  it('a Slack that keeps answering 429 is asked five times more, not forever', async () => {
    const { home, gaps } = homeWith(() => new WebAPIRateLimitedError(5));
    await home.opened('U1');
    await vi.advanceTimersByTimeAsync(10 * 60_000);
    expect(gaps()).toEqual([0, 5_000, 10_000, 15_000, 20_000, 25_000]);
    home.stop();
  });

  it('a publish refused outright is not asked again', async () => {
    const refused = Object.assign(new Error('An API error occurred: invalid_blocks'), {
      code: 'slack_webapi_platform_error',
      data: { ok: false, error: 'invalid_blocks' },
    });
    const { home, gaps } = homeWith(() => refused);
    await home.opened('U1');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(gaps()).toEqual([0]);
    home.stop();
  });
});

describe('HomeTab notes of what the user did on their Home', () => {
  /** A Home whose publishes answer as `answer` says, keeping the text of each view published. */
  function noting(answer: (n: number) => unknown) {
    const published: string[] = [];
    let waitForPublish: (() => void) | undefined;
    const options = {
      views: {
        publish: async (_userId: string, view: unknown) => {
          published.push(JSON.stringify(view));
          const failure = answer(published.length);
          waitForPublish?.();
          if (failure) throw failure;
        },
      },
      waiting: { for: async () => [] },
      recent: { list: async () => [], add: async () => {} },
      viewers: { opened: async () => {}, current: async () => [] },
      permalinks: { of: async () => undefined },
      stranger: async () => undefined,
      channel: 'C0APPROVALS',
      status: () => ({ host: true, redis: true }),
      logger: pino({ level: 'silent' }),
    } as unknown as HomeTabOptions;
    const home = new HomeTab(options);
    const carried = (note: string) => published.map((view) => view.includes(note));
    const onPublish = (then: () => void) => {
      waitForPublish = then;
    };
    return { home, carried, onPublish };
  }

  it('a note whose publish Slack refused for now is shown by the publish asked again, then no more', async () => {
    const { home, carried } = noting((n) => (n === 1 ? new WebAPIRateLimitedError(5) : undefined));
    home.changed('U1', 'Grant g1 may still be in force.');
    await vi.advanceTimersByTimeAsync(60_000);
    await home.opened('U1');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(carried('Grant g1 may still be in force.')).toEqual([true, true, false]);
    home.stop();
  });

  it('a newer note made while a publish is on its way is kept for the next', async () => {
    const { home, carried, onPublish } = noting(() => undefined);
    onPublish(() => {
      onPublish(() => {});
      home.changed('U1', 'Revoked g2.');
    });
    home.changed('U1', 'Revoked g1.');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(carried('Revoked g1.')).toEqual([true, false]);
    expect(carried('Revoked g2.')).toEqual([false, true]);
    home.stop();
  });
});
