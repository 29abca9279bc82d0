import { WebAPIRateLimitedError } from '@slack/web-api';
import { classifySlackError } from './slackFailures.js';
import { SlackStoppedError } from './slackRetry.js';

// Slack takes about one message per second per channel, with short bursts allowed, and answers
// a post over the limit with a 429 and a Retry-After in whole seconds (docs/slack.md). Every
// chat.postMessage to a channel counts, a card's or a line's (a decision's thread line, a grant's
// line in the channel), so they are paced together here:
//
// - A channel's posts go out one at a time, cards before lines: a line waits while any card for
//   the channel is on its way (announced with cardComing()), so a burst's lines never take a
//   card's place in Slack's budget. Cards keep the order they were asked in. A channel kept at
//   its limit by cards posts its lines once the cards let up: a card is what someone must act
//   on, a line the record of what is already decided.
// - A 429 pauses the whole channel for its Retry-After, counted from the answer: a line or a card
//   queued behind the refused post does not go out only to be refused too.
// - The posts Slack took in the second before a 429 are the channel's budget from then on: no
//   more than that many posts are answered in any second, so the next post waits for the second
//   to pass instead of going out to a 429 whose whole-second Retry-After would hold the channel
//   past the moment Slack would take it. Without a 429 there is no limit: Slack's bursts are used.
//   The budget is forgotten after a quiet minute, when Slack's burst allowance is back.

const WINDOW_MS = 1_000;
/** A channel with nothing posted for this long has its burst allowance back. */
const FORGET_MS = 60_000;

/** Which of a channel's posts goes first: its cards, then its lines. */
export type PostKind = 'card' | 'line';

interface Waiting {
  kind: PostKind;
  go: () => void;
  stop: (err: Error) => void;
}

interface Pace {
  /** Cards announced and not yet posted or given up: lines wait while there are any. */
  cardsComing: number;
  waiting: Waiting[];
  /** A post is out: the next waits for its answer. */
  sending: boolean;
  /** No post goes out before this (a 429's Retry-After, from its answer). */
  pausedUntil: number;
  /** Posts Slack took in the second before its last 429; undefined before any. */
  budget: number | undefined;
  /** When each post of the last second was answered, oldest first. */
  landed: number[];
  lastAnswerAt: number;
  /** Set while the channel waits for its pace. */
  timer: NodeJS.Timeout | undefined;
  /** Set while an idle channel keeps its budget. */
  forgetTimer: NodeJS.Timeout | undefined;
}

export interface ChannelPacerOptions {
  now?: () => number;
}

export class ChannelPacer {
  private readonly channels = new Map<string, Pace>();
  private readonly now: () => number;
  private stopped = false;

  constructor(options: ChannelPacerOptions = {}) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Says a card for `channel` is on its way (queued, being posted, or waiting out a retry): the
   * channel's lines wait until it is done. Returns the call that says so, once posted or given up.
   */
  cardComing(channel: string): () => void {
    const pace = this.pace(channel);
    pace.cardsComing += 1;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      pace.cardsComing -= 1;
      this.pump(channel, pace);
    };
  }

  /**
   * Makes one chat.postMessage to `channel` (`send`) at the channel's pace; a 429 is thrown on.
   * While the channel is paused for longer than `maxPauseMs` (what the caller would wait out),
   * it is refused at once as Slack would refuse it, with the pause left as its Retry-After.
   */
  async post<T>(
    channel: string,
    kind: PostKind,
    send: () => Promise<T>,
    maxPauseMs = Number.POSITIVE_INFINITY,
  ): Promise<T> {
    if (this.stopped) throw new SlackStoppedError(undefined);
    const pace = this.pace(channel);
    const paused = pace.pausedUntil - this.now();
    if (paused > maxPauseMs) throw new WebAPIRateLimitedError(Math.ceil(paused / 1000));
    // pump() lets a post go at once when nothing is ahead of it and nothing is to be waited out:
    // then it goes in this same turn, as it would with no pacer, rather than a microtask later,
    // apart from the writes of the turn that asked for it (docs/performance.md, "Fourth round:
    // where the throughput went"). Otherwise its turn is awaited.
    let goneNow = false;
    const turn = new Promise<void>((go, stop) => {
      pace.waiting.push({
        kind,
        go: () => {
          goneNow = true;
          go();
        },
        stop,
      });
      this.pump(channel, pace);
    });
    if (!goneNow) await turn;
    try {
      const answer = await send();
      this.answered(pace);
      return answer;
    } catch (err) {
      const failure = classifySlackError(err);
      if (failure.kind === 'rateLimited') this.refused(pace, failure.retryAfterMs);
      throw err;
    } finally {
      pace.sending = false;
      this.pump(channel, pace);
    }
  }

  /** Ends every wait: waiting posts reject with SlackStoppedError, and so does any asked later. */
  stop(): void {
    this.stopped = true;
    for (const pace of this.channels.values()) {
      clearTimeout(pace.timer);
      clearTimeout(pace.forgetTimer);
      for (const waiting of pace.waiting.splice(0)) waiting.stop(new SlackStoppedError(undefined));
    }
    this.channels.clear();
  }

  /** The channel's budget, if a 429 has set one (for tests and the log). */
  budgetOf(channel: string): number | undefined {
    return this.channels.get(channel)?.budget;
  }

  private pace(channel: string): Pace {
    let pace = this.channels.get(channel);
    if (!pace) {
      pace = {
        cardsComing: 0,
        waiting: [],
        sending: false,
        pausedUntil: 0,
        budget: undefined,
        landed: [],
        lastAnswerAt: 0,
        timer: undefined,
        forgetTimer: undefined,
      };
      this.channels.set(channel, pace);
    }
    return pace;
  }

  private answered(pace: Pace): void {
    const now = this.now();
    pace.lastAnswerAt = now;
    pace.landed.push(now);
    // Only the last second counts, and never more posts than the budget lets out in one.
    while (pace.landed.length > 0 && pace.landed[0]! <= now - WINDOW_MS) pace.landed.shift();
    if (pace.budget !== undefined && pace.landed.length > pace.budget) pace.landed.shift();
  }

  private refused(pace: Pace, retryAfterMs: number): void {
    const now = this.now();
    pace.lastAnswerAt = now;
    pace.pausedUntil = Math.max(pace.pausedUntil, now + retryAfterMs);
    // A Retry-After is a second or more: every post counted here came after the last pause.
    pace.budget = Math.max(1, pace.landed.filter((t) => t > now - WINDOW_MS).length);
    pace.landed = [];
  }

  /** Lets the next post out when the channel may take it; else waits for when it may. */
  private pump(channel: string, pace: Pace): void {
    if (pace.sending) return;
    const card = pace.waiting.findIndex((w) => w.kind === 'card');
    const next = card >= 0 ? card : pace.cardsComing === 0 && pace.waiting.length > 0 ? 0 : -1;
    if (next < 0) {
      this.forgetIfIdle(channel, pace);
      return;
    }
    clearTimeout(pace.forgetTimer);
    pace.forgetTimer = undefined;
    const wait = this.waitMs(pace);
    if (wait > 0) {
      pace.timer ??= setTimeout(() => {
        pace.timer = undefined;
        this.pump(channel, pace);
      }, wait);
      return;
    }
    pace.sending = true;
    const [going] = pace.waiting.splice(next, 1);
    going!.go();
  }

  private waitMs(pace: Pace): number {
    let until = pace.pausedUntil;
    if (pace.budget !== undefined && pace.landed.length >= pace.budget)
      until = Math.max(until, pace.landed[pace.landed.length - pace.budget]! + WINDOW_MS);
    return until - this.now();
  }

  /**
   * Drops the state of a channel nothing is waiting for, once what it knows no longer matters:
   * the answers of the last second (a 429 now would count them), or a budget after a quiet minute.
   */
  private forgetIfIdle(channel: string, pace: Pace): void {
    if (pace.cardsComing > 0 || pace.waiting.length > 0 || pace.timer || pace.forgetTimer) return;
    const keepFor = pace.budget === undefined ? WINDOW_MS : FORGET_MS;
    const quietFor = this.now() - Math.max(pace.lastAnswerAt, pace.pausedUntil);
    if (quietFor >= keepFor) {
      // Only this state: after stop() a post still answering holds one the map no longer has.
      if (this.channels.get(channel) === pace) this.channels.delete(channel);
      return;
    }
    pace.forgetTimer = setTimeout(() => {
      pace.forgetTimer = undefined;
      this.pump(channel, pace);
    }, keepFor - quietFor);
    pace.forgetTimer.unref();
  }
}
