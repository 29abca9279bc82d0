import type { Logger } from 'pino';

/** Where a warning goes: a pino Logger, or a LogBudget in front of one. */
export interface WarnLog {
  warn(fields: object, msg: string): void;
}

export interface LogBudgetOptions {
  /** Lines written one by one per interval; the rest are only counted. */
  perInterval?: number;
  intervalMs?: number;
  /** The message of the line that counts what was not written. */
  summary: string;
  /** The level of every line, the summary's included: a warning unless said otherwise. */
  level?: 'warn' | 'info';
  now?: () => number;
}

const DEFAULT_PER_INTERVAL = 10;
const DEFAULT_INTERVAL_MS = 60_000;

/**
 * Warnings whose number someone else chooses (a line per malformed frame a host sends): the
 * first `perInterval` of each interval are written, the rest counted by message and written as
 * one line when the interval ends (or at flush()), so that a flood costs a few lines a minute
 * and still says how much was skipped.
 */
export class LogBudget implements WarnLog {
  private readonly perInterval: number;
  private readonly intervalMs: number;
  private readonly now: () => number;
  private readonly level: 'warn' | 'info';
  private windowStart = Number.NEGATIVE_INFINITY;
  private written = 0;
  private skipped = new Map<string, number>();
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly options: LogBudgetOptions,
  ) {
    this.perInterval = options.perInterval ?? DEFAULT_PER_INTERVAL;
    this.intervalMs = options.intervalMs ?? DEFAULT_INTERVAL_MS;
    this.now = options.now ?? (() => performance.now());
    this.level = options.level ?? 'warn';
  }

  /** WarnLog's line: the budget's line, whatever its level. */
  warn(fields: object, msg: string): void {
    this.write(fields, msg);
  }

  /** Writes the line at the budget's level, or counts it when this interval's lines are written. */
  write(fields: object, msg: string): void {
    const now = this.now();
    if (now - this.windowStart >= this.intervalMs) {
      this.flush();
      this.windowStart = now;
      this.written = 0;
    }
    if (this.written < this.perInterval) {
      this.written += 1;
      this.logger[this.level](fields, msg);
      return;
    }
    this.skipped.set(msg, (this.skipped.get(msg) ?? 0) + 1);
    if (this.timer === undefined) {
      this.timer = setTimeout(() => this.flush(), Math.max(0, this.windowStart + this.intervalMs - now));
      // Counting is no reason to keep the process alive.
      this.timer.unref?.();
    }
  }

  /** Writes the count of what was skipped since the last one, if anything was. */
  flush(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.skipped.size === 0) return;
    const byKind = Object.fromEntries(this.skipped);
    let skipped = 0;
    for (const count of this.skipped.values()) skipped += count;
    this.skipped = new Map();
    this.logger[this.level](
      { skipped, byKind, perInterval: this.perInterval, intervalMs: this.intervalMs },
      this.options.summary,
    );
  }
}
