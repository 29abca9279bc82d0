import type { RedisClient } from '../store/redisConnection.js';

/**
 * Connections for the askers of forwarded decisions to block on (BLPOP): a blocking read holds
 * its connection, so each waiting asker has one of its own, taken here and given back. Idle ones
 * are kept for the next asker (opening one costs a connect and a round trip or two); at most
 * `max` are open, and an asker that finds none left polls instead.
 */
export class BlockingReaders {
  private readonly idle: RedisClient[] = [];
  private open = 0;
  private stopped = false;

  constructor(
    /** Opens one more (ioredis's duplicate() of the main connection). */
    private readonly connect: () => RedisClient,
    private readonly max = 16,
  ) {}

  /** A connection for this asker alone, or undefined when `max` are taken. */
  take(): RedisClient | undefined {
    if (this.stopped) return undefined;
    const reader = this.idle.pop();
    if (reader) return reader;
    if (this.open >= this.max) return undefined;
    this.open += 1;
    return this.connect();
  }

  /**
   * Gives a connection back; `broken` when a read on it failed or was abandoned (its reply could
   * still come, for whoever reads it next): it is closed then, never handed out again.
   */
  giveBack(reader: RedisClient, broken = false): void {
    if (broken || this.stopped) {
      this.open -= 1;
      reader.disconnect();
      return;
    }
    this.idle.push(reader);
  }

  /** Closes the idle ones; the ones taken are closed as they come back. */
  stop(): void {
    this.stopped = true;
    for (const reader of this.idle.splice(0)) {
      this.open -= 1;
      reader.disconnect();
    }
  }
}
