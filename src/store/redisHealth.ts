import type { Logger } from 'pino';
import type { RedisClient } from './redisConnection.js';

export interface RedisHealthOptions {
  logger: Logger;
  /** How often Redis is asked whether it answers. */
  intervalMs?: number;
  /** An answer later than this counts as Redis being away. */
  timeoutMs?: number;
}

/**
 * Whether Redis answers right now. A connection that is open says nothing: a paused or
 * overloaded Redis keeps its sockets and just does not answer, and ioredis queues commands
 * while it reconnects. So Redis is asked (PING) every interval; a ping unanswered for longer
 * than the timeout marks it away, and the answer marks it back. Commands on one connection are
 * answered in order, so once the ping is answered, everything sent before it has been too.
 */
export class RedisHealth {
  private up = true;
  private pingSentAt: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly listeners: Array<() => void> = [];
  private readonly intervalMs: number;
  private readonly timeoutMs: number;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: RedisHealthOptions,
  ) {
    this.intervalMs = options.intervalMs ?? 500;
    this.timeoutMs = options.timeoutMs ?? 1_000;
    redis.on('close', () => this.markDown('connection closed'));
    redis.on('ready', () => this.ping());
  }

  start(): void {
    if (this.timer) return;
    this.ping();
    this.timer = setInterval(() => this.check(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  available(): boolean {
    return this.up;
  }

  /** `listener` runs each time Redis answers again after being away. */
  onAvailable(listener: () => void): void {
    this.listeners.push(listener);
  }

  private check(): void {
    if (this.pingSentAt === undefined) {
      this.ping();
    } else if (Date.now() - this.pingSentAt > this.timeoutMs) {
      this.markDown(`no answer to PING within ${this.timeoutMs} ms`);
    }
  }

  private ping(): void {
    // One ping at a time: a Redis that does not answer must not be sent a pile of them.
    if (this.pingSentAt !== undefined) return;
    this.pingSentAt = Date.now();
    this.redis.ping().then(
      () => {
        this.pingSentAt = undefined;
        this.markUp();
      },
      () => {
        this.pingSentAt = undefined;
        this.markDown('PING failed');
      },
    );
  }

  private markDown(why: string): void {
    if (!this.up) return;
    this.up = false;
    this.options.logger.warn({ why }, 'Redis is not answering; host events are held until it does');
  }

  private markUp(): void {
    if (this.up) return;
    this.up = true;
    this.options.logger.info('Redis answers again');
    for (const listener of this.listeners) listener();
  }
}
