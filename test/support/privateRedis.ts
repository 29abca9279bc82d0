// A redis-server of a test's own, to pause (SIGSTOP), resume and stop without disturbing any
// other test: the shared Redis is never the one a fault test breaks.

import { type ChildProcess, spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort } from './bot.js';

export class PrivateRedis {
  private constructor(
    private readonly proc: ChildProcess,
    readonly port: number,
  ) {}

  /** redis://127.0.0.1:PORT (no database). */
  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  static async start(): Promise<PrivateRedis> {
    const port = await freePort();
    const proc = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      { stdio: 'ignore' },
    );
    const redis = new PrivateRedis(proc, port);
    const probe = new Redis(redis.url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    // Refused connections while the server starts are expected; connect() reports them.
    probe.on('error', () => {});
    try {
      const deadline = Date.now() + 10_000;
      for (;;) {
        try {
          await probe.connect();
          await probe.ping();
          return redis;
        } catch (err) {
          if (Date.now() > deadline || proc.exitCode !== null) {
            proc.kill('SIGKILL');
            throw new Error(`redis-server on ${port} did not start: ${(err as Error).message}`);
          }
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    } finally {
      probe.disconnect();
    }
  }

  /** Freezes the server: connections stay open, nothing is answered. */
  pause(): void {
    this.proc.kill('SIGSTOP');
  }

  resume(): void {
    this.proc.kill('SIGCONT');
  }

  async stop(): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => this.proc.once('exit', () => resolve()));
    this.proc.kill('SIGCONT');
    this.proc.kill('SIGKILL');
    await exited;
  }
}
