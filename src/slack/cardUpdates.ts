import type { RenderedMessage } from '../domain/messages.js';
import { HostLostError } from '../relay/ports.js';
import type { CardCalls } from './cardCalls.js';
import { cardMetadata } from './cardMetadata.js';
import type { CallFields, SlackCallLog } from './slackCallLog.js';
import { classifySlackError } from './slackFailures.js';
import {
  countFailure,
  type FailureCounts,
  RETRY_POLICIES,
  type RetryPolicy,
  type RetryTiming,
  realTiming,
  retryDelayMs,
  waitUnlessStopped,
} from './slackRetry.js';
import { smallerCards } from './smallerCards.js';

interface Waiter {
  version: number;
  resolve: () => void;
  reject: (err: unknown) => void;
}

/** One message's pending updates: its newest render and everyone waiting for theirs to land. */
interface PendingUpdates {
  channel: string;
  ts: string;
  latest: RenderedMessage;
  /** Bumped by every update() of this message; the waiters remember the one they asked for. */
  version: number;
  waiters: Waiter[];
  /** Whether this process may still act for the card's host (the latest update's check). */
  mayAct?: (() => boolean) | undefined;
}

export interface CardUpdatesOptions {
  policy?: RetryPolicy;
  timing?: RetryTiming;
}

/**
 * chat.update until it lands. One message is updated by one loop at a time, and the loop always
 * sends the newest render it has been given: a newer render replaces one still waiting to be
 * retried, and a caller's promise resolves once its render or a newer one has landed. So a slow
 * retry never overtakes a newer render nor brings an older one back, and a resolved card's final
 * render is the last one sent.
 *
 * 429s wait their Retry-After; lost answers (5xx, timeouts, resets) back off; both are retried
 * until the update lands or `signal` is aborted (then waiters get SlackStoppedError). A card
 * refused as too big or malformed is sent again smaller (smallerCards.ts); any other refusal is
 * logged once and rejects its waiters.
 */
export class CardUpdates {
  private readonly pending = new Map<string, PendingUpdates>();
  private readonly policy: RetryPolicy;
  private readonly timing: RetryTiming;

  constructor(
    private readonly calls: CardCalls,
    private readonly log: SlackCallLog,
    private readonly signal: AbortSignal,
    options: CardUpdatesOptions = {},
  ) {
    this.policy = options.policy ?? RETRY_POLICIES.update;
    this.timing = options.timing ?? realTiming;
  }

  update(channel: string, ts: string, message: RenderedMessage, mayAct?: () => boolean): Promise<void> {
    const key = `${channel}/${ts}`;
    const running = this.pending.get(key);
    const entry: PendingUpdates = running ?? { channel, ts, latest: message, version: 0, waiters: [] };
    entry.version += 1;
    entry.latest = message;
    entry.mayAct = mayAct;
    const landed = new Promise<void>((resolve, reject) => {
      entry.waiters.push({ version: entry.version, resolve, reject });
    });
    if (!running) {
      this.pending.set(key, entry);
      void this.deliver(key, entry);
    }
    return landed;
  }

  /**
   * The loop of one message. It leaves the map in the same synchronous step in which it finds no
   * one waiting, so an update() made by a waiter's continuation always finds a loop or starts one.
   */
  private async deliver(key: string, entry: PendingUpdates): Promise<void> {
    const fields: CallFields = { method: 'chat.update', channel: entry.channel, ts: entry.ts };
    let counts: FailureCounts = { lost: 0, rateLimited: 0 };
    let attempts = 0;
    // How far the current version has been shrunk after Slack refused it (0: as rendered).
    let shrunkVersion = 0;
    let fallbacks: RenderedMessage[] = [];
    let fallback = 0;
    const finished = (version: number, error?: unknown) => {
      settle(entry, version, error);
      counts = { lost: 0, rateLimited: 0 };
      attempts = 0;
    };
    try {
      while (entry.waiters.length > 0) {
        const version = entry.version;
        if (version !== shrunkVersion) {
          shrunkVersion = version;
          fallbacks = [];
          fallback = 0;
        }
        const message = fallback === 0 ? entry.latest : fallbacks[fallback - 1]!;
        // A replica that lost the card's host (its lease) sends nothing more for it.
        if (entry.mayAct && !entry.mayAct()) {
          finished(entry.version, new HostLostError());
          continue;
        }
        attempts += 1;
        try {
          await this.calls.update({
            channel: entry.channel,
            ts: entry.ts,
            text: message.text,
            blocks: message.blocks as never,
            // The newest render's facts, whichever smaller fallback of it is sent: without
            // metadata an update would keep the post's, and other apps would read a stale state.
            ...(entry.latest.facts
              ? { metadata: cardMetadata(entry.latest.facts.approvalId, entry.latest.facts) }
              : {}),
          });
          this.log.landed(fields, attempts);
          finished(version);
        } catch (err) {
          const failure = classifySlackError(err);
          // A newer render is waiting: it replaces this one, refused or not (after any wait).
          const superseded = entry.version !== version;
          if (failure.kind === 'badMessage') {
            if (superseded) continue;
            if (fallback === 0) fallbacks = smallerCards(entry.latest);
            if (fallback < fallbacks.length) {
              fallback += 1;
              const smaller = fallbacks[fallback - 1]!;
              this.log.gaveUp(
                fields,
                failure,
                smaller.blocks.length > 0
                  ? 'slack refused the card; sending it without its buttons'
                  : 'slack refused the card; sending its text alone',
              );
              continue;
            }
            this.log.gaveUp(fields, failure, 'slack refused every version of the card; it stays as it was');
            finished(version, err);
            continue;
          }
          countFailure(counts, failure);
          const wait = retryDelayMs(failure, counts, this.policy, this.timing.random);
          if (wait === undefined) {
            if (superseded && failure.kind !== 'fatal') continue;
            this.log.gaveUp(fields, failure, 'card update failed');
            finished(entry.version, err);
            continue;
          }
          this.log.retrying(fields, failure, attempts, wait);
          await waitUnlessStopped(wait, this.signal, this.timing, err);
        }
      }
    } catch (stopped) {
      settle(entry, entry.version, stopped);
    }
    this.pending.delete(key);
  }
}

/** Resolves (or rejects with `error`) every waiter that asked for `version` or an older one. */
function settle(entry: PendingUpdates, version: number, error?: unknown): void {
  const done = entry.waiters.filter((w) => w.version <= version);
  entry.waiters = entry.waiters.filter((w) => w.version > version);
  for (const waiter of done) {
    if (error === undefined) waiter.resolve();
    else waiter.reject(error);
  }
}
