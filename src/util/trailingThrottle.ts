import { KeyedQueue } from './keyedQueue.js';

export interface TrailingThrottleOptions {
  /** A request waits at least this long, so that a burst of requests becomes one run. */
  settleMs: number;
  /** Two runs for one key start at least this far apart. */
  intervalMs: number;
  now?: () => number;
}

/**
 * Runs `task(key)` at most once per interval for each key, on the trailing edge: requests that
 * come while a run is due are folded into it, and it runs after the last of them has been
 * asked for, so it sees everything they were about. Runs for one key never overlap, so an
 * older run cannot finish after a newer one.
 */
export class TrailingThrottle {
  private readonly due = new Map<string, NodeJS.Timeout>();
  private readonly lastRun = new Map<string, number>();
  private readonly runs = new KeyedQueue();
  private readonly now: () => number;

  /** `task` reports its own failures: a rejection is dropped here. */
  constructor(
    private readonly task: (key: string) => Promise<void>,
    private readonly options: TrailingThrottleOptions,
  ) {
    this.now = options.now ?? Date.now;
  }

  /** `promptly`: no settling wait (a person just asked), though still at most once per interval. */
  request(key: string, promptly = false): void {
    if (this.due.has(key)) return;
    const { settleMs, intervalMs } = this.options;
    this.forgetOldRuns();
    const last = this.lastRun.get(key);
    const wait = Math.max(promptly ? 0 : settleMs, last === undefined ? 0 : last + intervalMs - this.now());
    const timer = setTimeout(() => {
      this.due.delete(key);
      this.lastRun.set(key, this.now());
      this.runs.run(key, () => this.task(key)).catch(() => undefined);
    }, wait);
    timer.unref();
    this.due.set(key, timer);
  }

  /** A key run longer than an interval ago runs again without waiting: its time is not needed. */
  private forgetOldRuns(): void {
    if (this.lastRun.size < 1_000) return;
    const before = this.now() - this.options.intervalMs;
    for (const [key, at] of this.lastRun) if (at < before) this.lastRun.delete(key);
  }

  /** Drops every run not started yet. */
  stop(): void {
    for (const timer of this.due.values()) clearTimeout(timer);
    this.due.clear();
  }
}
