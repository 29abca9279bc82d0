import { ErrorCode, type WebClient } from '@slack/web-api';
import { describe, expect, it } from 'vitest';
import type { RenderedMessage } from '../../../src/domain/messages.js';
import { HostLostError } from '../../../src/relay/ports.js';
import { webClientCardCalls } from '../../../src/slack/cardCalls.js';
import { CardUpdates } from '../../../src/slack/cardUpdates.js';
import { SlackCallLog } from '../../../src/slack/slackCallLog.js';
import { type RetryTiming, SlackStoppedError } from '../../../src/slack/slackRetry.js';
import { captureLogger } from '../../support/logCapture.js';

// The update loop against a scripted chat.update: the test answers each call and releases each
// retry wait itself, so every interleaving below is exact, not a matter of timing.

const http = (statusCode: number) =>
  Object.assign(new Error(`HTTP ${statusCode}`), { code: ErrorCode.HTTPError, statusCode });
const platform = (error: string) =>
  Object.assign(new Error(error), { code: ErrorCode.PlatformError, data: { ok: false, error } });
const rateLimited = (retryAfter: number) =>
  Object.assign(new Error('429'), { code: ErrorCode.RateLimitedError, retryAfter });

interface Sent {
  args: { channel: string; ts: string; text: string; blocks: unknown[] };
  answer(error?: Error): void;
}

/** A chat.update whose every call waits for the test to answer it. */
class ScriptedSlack {
  readonly sent: Sent[] = [];
  private next: Array<() => void> = [];
  readonly client = {
    chat: {
      update: (args: Sent['args']) =>
        new Promise((resolve, reject) => {
          const sent: Sent = { args, answer: (error) => (error ? reject(error) : resolve({ ok: true })) };
          this.sent.push(sent);
          for (const waiter of this.next.splice(0)) waiter();
        }),
    },
  } as unknown as WebClient;

  /** The call number `n` (1 = first), once it has been made. */
  call(n: number): Promise<Sent> {
    const made = this.sent[n - 1];
    if (made) return Promise.resolve(made);
    return new Promise((resolve) => {
      const wait = () => (this.sent.length >= n ? resolve(this.sent[n - 1]!) : this.next.push(wait));
      this.next.push(wait);
    });
  }
}

/** Retry waits that last until the test releases them. */
class ManualTiming implements RetryTiming {
  readonly waits: number[] = [];
  private pending: Array<{ release: () => void }> = [];
  private onWait: Array<() => void> = [];

  random = () => 0.5;

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.waits.push(ms);
    return new Promise((resolve, reject) => {
      const entry = { release: resolve };
      this.pending.push(entry);
      signal?.addEventListener('abort', () => reject(signal.reason), { once: true });
      for (const notify of this.onWait.splice(0)) notify();
    });
  }

  /** Resolves once `n` waits have begun in all. */
  async waitStarted(n: number): Promise<void> {
    while (this.waits.length < n) await new Promise<void>((resolve) => this.onWait.push(resolve));
  }

  release(): void {
    for (const entry of this.pending.splice(0)) entry.release();
  }
}

const card = (text: string, buttons = true): RenderedMessage => ({
  text,
  blocks: [
    { type: 'section', text: { type: 'mrkdwn', text } },
    ...(buttons ? [{ type: 'actions', elements: [{ type: 'button', action_id: 'cs_choice_0' }] }] : []),
  ],
});

function setup() {
  const slack = new ScriptedSlack();
  const timing = new ManualTiming();
  const { logger, lines } = captureLogger();
  const stop = new AbortController();
  const updates = new CardUpdates(webClientCardCalls(slack.client), new SlackCallLog(logger), stop.signal, {
    timing,
  });
  return { slack, timing, lines, stop, updates };
}

/** Whether a promise has settled, without waiting for it. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  await new Promise((resolve) => setImmediate(resolve));
  return done;
}

describe('CardUpdates', () => {
  it('sends nothing more once this process lost the card’s host: a retry waiting then is dropped', async () => {
    const { slack, timing, updates } = setup();
    let owner = true;
    const first = updates.update('C1', '1.1', card('v1'), () => owner);
    (await slack.call(1)).answer(http(503));
    await timing.waitStarted(1);
    owner = false;
    timing.release();
    await expect(first).rejects.toBeInstanceOf(HostLostError);
    expect(slack.sent.map((s) => s.args.text)).toEqual(['v1']);
    // An update that does not act for a host (no check) is sent as always.
    const plain = updates.update('C1', '1.1', card('v2'));
    (await slack.call(2)).answer();
    await plain;
  });

  it('a newer render replaces one waiting to be retried; every caller settles when the newest lands', async () => {
    const { slack, timing, updates } = setup();
    const first = updates.update('C1', '1.1', card('v1'));
    (await slack.call(1)).answer(http(503));
    await timing.waitStarted(1);
    const second = updates.update('C1', '1.1', card('v2'));
    const third = updates.update('C1', '1.1', card('v3'));
    timing.release();
    const retry = await slack.call(2);
    expect(retry.args.text).toBe('v3');
    expect(await settled(first)).toBe(false);
    retry.answer();
    await Promise.all([first, second, third]);
    expect(slack.sent.map((s) => s.args.text)).toEqual(['v1', 'v3']);
  });

  it('never overtakes an update in flight: the newer one leaves after it has been answered', async () => {
    const { slack, updates } = setup();
    const first = updates.update('C1', '1.1', card('v1'));
    const inFlight = await slack.call(1);
    const second = updates.update('C1', '1.1', card('v2'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(slack.sent).toHaveLength(1);
    inFlight.answer();
    await first;
    expect(await settled(second)).toBe(false);
    const next = await slack.call(2);
    expect(next.args.text).toBe('v2');
    next.answer();
    await second;
    // Another message is a loop of its own, not held back by this one.
    const other = updates.update('C1', '2.2', card('w1'));
    (await slack.call(3)).answer();
    await other;
  });

  it('keeps trying through 429s (each for its Retry-After) and lost answers until it lands', async () => {
    const { slack, timing, updates, lines } = setup();
    const done = updates.update('C1', '1.1', card('final', false));
    (await slack.call(1)).answer(rateLimited(3));
    await timing.waitStarted(1);
    timing.release();
    for (let n = 2; n <= 6; n++) {
      (await slack.call(n)).answer(http(500));
      await timing.waitStarted(n);
      timing.release();
    }
    (await slack.call(7)).answer();
    await done;
    expect(timing.waits).toEqual([3000, 188, 375, 750, 1500, 3000]);
    // Each retry at debug; the call landed, so nothing reached warn.
    const retries = lines.filter((l) => l.msg === 'slack call failed; trying again');
    expect(retries.map((l) => [l.level, l.attempt])).toEqual([1, 2, 3, 4, 5, 6].map((n) => [20, n]));
    expect(lines.filter((l) => (l.level as number) >= 40)).toEqual([]);
    expect(lines.find((l) => l.msg === 'slack call landed after retries')).toMatchObject({
      method: 'chat.update',
      channel: 'C1',
      ts: '1.1',
      attempts: 7,
    });
  });

  it('a refusal is logged once at warn and rejects its callers; the message can be updated again later', async () => {
    const { slack, updates, lines } = setup();
    const refused = updates.update('C1', '1.1', card('v1'));
    (await slack.call(1)).answer(platform('message_not_found'));
    await expect(refused).rejects.toThrow('message_not_found');
    const said = lines.filter((l) => (l.level as number) >= 40);
    expect(said).toHaveLength(1);
    expect(said[0]).toMatchObject({ level: 40, failure: { kind: 'refused', error: 'message_not_found' } });
    const again = updates.update('C1', '1.1', card('v2'));
    (await slack.call(2)).answer();
    await again;
  });

  it('a card refused as too big is sent without its buttons, then as its text alone', async () => {
    const { slack, updates } = setup();
    const done = updates.update('C1', '1.1', card('resolved'));
    (await slack.call(1)).answer(platform('invalid_blocks'));
    const withoutButtons = await slack.call(2);
    expect(withoutButtons.args.blocks).toEqual([card('resolved', false).blocks[0]]);
    withoutButtons.answer(platform('msg_blocks_too_long'));
    const textOnly = await slack.call(3);
    expect(textOnly.args).toMatchObject({ text: 'resolved', blocks: [] });
    textOnly.answer();
    await done;
  });

  it('stop ends a retry wait with SlackStoppedError; later updates get one try each', async () => {
    const { slack, timing, updates, stop } = setup();
    const waiting = updates.update('C1', '1.1', card('v1'));
    (await slack.call(1)).answer(http(502));
    await timing.waitStarted(1);
    stop.abort();
    await expect(waiting).rejects.toBeInstanceOf(SlackStoppedError);

    const late = updates.update('C1', '1.1', card('v2'));
    (await slack.call(2)).answer(http(502));
    await expect(late).rejects.toBeInstanceOf(SlackStoppedError);
    const fine = updates.update('C1', '1.1', card('v3'));
    (await slack.call(3)).answer();
    await fine;
  });
});
