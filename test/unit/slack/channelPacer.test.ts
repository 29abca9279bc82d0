import { WebAPIRateLimitedError } from '@slack/web-api';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ChannelPacer, type PostKind } from '../../../src/slack/channelPacer.js';
import { SlackStoppedError } from '../../../src/slack/slackRetry.js';

// The pacer on a fake clock: which post goes out when, decided by what Slack answered before.

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

/** A post that records when it went out and answers as `answer` says (429 when it returns a number). */
function recorder(pacer: ChannelPacer) {
  const sent: string[] = [];
  const at: Record<string, number> = {};
  let refuseNext: number | undefined;
  const post = (channel: string, kind: PostKind, name: string) =>
    pacer.post(channel, kind, async () => {
      sent.push(name);
      at[name] = Date.now();
      if (refuseNext !== undefined) {
        const seconds = refuseNext;
        refuseNext = undefined;
        throw new WebAPIRateLimitedError(seconds);
      }
      return name;
    });
  return {
    sent,
    at,
    post,
    /** The next post is answered 429 with this Retry-After. */
    refuseNext: (seconds: number) => {
      refuseNext = seconds;
    },
  };
}

const settled = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (err: unknown) => err,
  );

describe('ChannelPacer', () => {
  it('a line waits while a card for its channel is on its way, and goes once it is done', async () => {
    const pacer = new ChannelPacer({ now: () => Date.now() });
    const { sent, post } = recorder(pacer);
    const done = pacer.cardComing('C1');
    const line = post('C1', 'line', 'line');
    const otherChannel = post('C2', 'line', 'other channel');
    await vi.advanceTimersByTimeAsync(0);
    // The card has not asked to post yet (it is still being rendered, say): the line waits all
    // the same; another channel's line does not.
    expect(sent).toEqual(['other channel']);
    await post('C1', 'card', 'card');
    expect(sent).toEqual(['other channel', 'card']);
    done();
    await line;
    await otherChannel;
    expect(sent).toEqual(['other channel', 'card', 'line']);
  });

  it('a post with nothing ahead of it and nothing to wait out goes in the same turn; one behind another waits', async () => {
    const pacer = new ChannelPacer({ now: () => Date.now() });
    const { sent, post } = recorder(pacer);
    const done = pacer.cardComing('C1');
    const first = post('C1', 'card', 'card 1');
    // Sent before post() returned: no turn of the event loop, no microtask in between.
    expect(sent).toEqual(['card 1']);
    const second = post('C1', 'card', 'card 2');
    // Behind the first, still out: it waits for it.
    expect(sent).toEqual(['card 1']);
    const line = post('C2', 'line', 'line');
    expect(sent).toEqual(['card 1', 'line']);
    await Promise.all([first, second, line]);
    expect(sent).toEqual(['card 1', 'line', 'card 2']);
    done();
  });

  it('cards queued behind a line go before the lines queued with them', async () => {
    const pacer = new ChannelPacer({ now: () => Date.now() });
    const { sent, post } = recorder(pacer);
    const posts = [post('C1', 'line', 'line 1'), post('C1', 'line', 'line 2')];
    // line 1 is out; a card asked for now overtakes line 2.
    const done = pacer.cardComing('C1');
    posts.push(post('C1', 'card', 'card').finally(done));
    await Promise.all(posts);
    expect(sent).toEqual(['line 1', 'card', 'line 2']);
  });

  it("a 429 pauses the whole channel for its Retry-After, from Slack's answer", async () => {
    const pacer = new ChannelPacer({ now: () => Date.now() });
    const { sent, at, post, refuseNext } = recorder(pacer);
    refuseNext(2);
    const refused = settled(post('C1', 'card', 'refused'));
    const queued = post('C1', 'line', 'queued');
    const elsewhere = post('C2', 'card', 'elsewhere');
    expect(await refused).toBeInstanceOf(WebAPIRateLimitedError);
    await elsewhere;
    await vi.advanceTimersByTimeAsync(1_999);
    expect(sent).toEqual(['refused', 'elsewhere']);
    await vi.advanceTimersByTimeAsync(1);
    await queued;
    expect(at.queued! - at.refused!).toBe(2_000);
  });

  it('after a 429, no more posts go out in any second than Slack took in the second before it', async () => {
    const pacer = new ChannelPacer({ now: () => Date.now() });
    const { sent, at, post, refuseNext } = recorder(pacer);
    // Three posts land within the second, the fourth is refused: the budget is three a second.
    for (const name of ['p1', 'p2', 'p3']) {
      await post('C1', 'card', name);
      await vi.advanceTimersByTimeAsync(100);
    }
    refuseNext(1);
    expect(await settled(post('C1', 'card', 'p4'))).toBeInstanceOf(WebAPIRateLimitedError);
    expect(pacer.budgetOf('C1')).toBe(3);
    const after = Promise.all(['r1', 'r2', 'r3', 'r4', 'r5'].map((name) => post('C1', 'card', name)));
    await vi.advanceTimersByTimeAsync(3_000);
    await after;
    // r1 waits out the Retry-After; r1..r3 go at once; r4 goes a second after r1 was answered,
    // not before (it would be refused), and not a whole Retry-After after a 429 it never met.
    expect(at.r1! - at.p4!).toBe(1_000);
    expect(at.r3).toBe(at.r1);
    expect(at.r4! - at.r1!).toBe(1_000);
    expect(at.r5! - at.r2!).toBe(1_000);
    expect(sent).toEqual(['p1', 'p2', 'p3', 'p4', 'r1', 'r2', 'r3', 'r4', 'r5']);
  });

  it('without a 429 a channel is not held back, and a budget is forgotten after a quiet minute', async () => {
    const pacer = new ChannelPacer({ now: () => Date.now() });
    const { at, post, refuseNext } = recorder(pacer);
    for (let i = 0; i < 20; i++) await post('C1', 'card', `burst ${i}`);
    expect(at['burst 19']).toBe(at['burst 0']);
    refuseNext(1);
    await settled(post('C1', 'card', 'refused'));
    expect(pacer.budgetOf('C1')).toBe(20);
    // A minute from the end of the 429's pause.
    await vi.advanceTimersByTimeAsync(60_999);
    expect(pacer.budgetOf('C1')).toBe(20);
    await vi.advanceTimersByTimeAsync(1);
    expect(pacer.budgetOf('C1')).toBeUndefined();
  });

  it('a post that cannot wait out the pause is refused at once, as Slack would, without asking it', async () => {
    const pacer = new ChannelPacer({ now: () => Date.now() });
    const { sent, post, refuseNext } = recorder(pacer);
    refuseNext(90);
    await settled(post('C1', 'line', 'refused'));
    const impatient = pacer.post('C1', 'line', async () => sent.push('impatient'), 60_000);
    await expect(impatient).rejects.toMatchObject({ retryAfter: 90 });
    expect(sent).toEqual(['refused']);
  });

  it('stop() ends every wait for a turn', async () => {
    const pacer = new ChannelPacer({ now: () => Date.now() });
    const { sent, post, refuseNext } = recorder(pacer);
    refuseNext(30);
    await settled(post('C1', 'card', 'refused'));
    const waiting = settled(post('C1', 'card', 'waiting'));
    pacer.stop();
    expect(await waiting).toBeInstanceOf(SlackStoppedError);
    expect(await settled(post('C2', 'card', 'after'))).toBeInstanceOf(SlackStoppedError);
    expect(sent).toEqual(['refused']);
  });
});
