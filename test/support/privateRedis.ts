// A redis-server of a test's own, to pause (SIGSTOP), resume and stop without disturbing any
// other test: the shared Redis is never the one a fault test breaks.

import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { freePort } from './bot.js';

/** A redis-server that exited before it answered (its port was taken meanwhile). */
export class ServerExited extends Error {}

export class PrivateRedis {
  private constructor(
    private proc: ChildProcess,
    readonly port: number,
    /** Where a persistent server keeps its append-only file; none keeps nothing. */
    private readonly dir?: string,
    /** What the server asks of every client (requirepass); none asks nothing. */
    private readonly password?: string,
  ) {}

  /** redis://127.0.0.1:PORT (no database), with the password when the server asks for one. */
  get url(): string {
    const auth = this.password === undefined ? '' : `:${encodeURIComponent(this.password)}@`;
    return `redis://${auth}127.0.0.1:${this.port}`;
  }

  /**
   * `persist`: an append-only file, fsynced on every write, so a restart keeps everything.
   * `password`: every client must give it (AUTH), as a production Redis asks.
   * `port`: where the port comes from (default freePort). A port found free may be taken before
   * redis-server binds it; a server that exits before it answers is started again on a new port,
   * up to three times.
   */
  static async start(
    options: { persist?: boolean; password?: string; port?: () => Promise<number> } = {},
  ): Promise<PrivateRedis> {
    for (let attempt = 1; ; attempt++) {
      const port = await (options.port ?? freePort)();
      const dir = options.persist ? mkdtempSync(join(tmpdir(), 'cs-redis-')) : undefined;
      const redis = new PrivateRedis(
        PrivateRedis.spawn(port, dir, options.password),
        port,
        dir,
        options.password,
      );
      try {
        await redis.waitUp();
        return redis;
      } catch (err) {
        if (dir) rmSync(dir, { recursive: true, force: true });
        if (!(err instanceof ServerExited) || attempt === 3) throw err;
      }
    }
  }

  private static spawn(port: number, dir: string | undefined, password: string | undefined): ChildProcess {
    // A server that keeps nothing still writes a file now and then (a replica the RDB of its full
    // sync): into a directory of its own, gone with the process, never the tests' working one.
    const scratch = dir ? undefined : mkdtempSync(join(tmpdir(), 'cs-redis-scratch-'));
    const persistence = dir
      ? ['--dir', dir, '--appendonly', 'yes', '--appendfsync', 'always', '--save', '']
      : ['--dir', scratch!, '--save', '', '--appendonly', 'no'];
    const auth = password === undefined ? [] : ['--requirepass', password];
    const proc = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', ...persistence, ...auth],
      {
        stdio: 'ignore',
      },
    );
    if (scratch) proc.once('exit', () => rmSync(scratch, { recursive: true, force: true }));
    return proc;
  }

  private async waitUp(): Promise<void> {
    const probe = new Redis(this.url, {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      // Whatever else listens there (the port was taken meanwhile) may never answer.
      commandTimeout: 2_000,
    });
    // Refused connections while the server starts are expected; connect() reports them.
    probe.on('error', () => {});
    try {
      const deadline = Date.now() + 10_000;
      for (;;) {
        try {
          await probe.connect();
          await probe.ping();
          return;
        } catch (err) {
          if (this.proc.exitCode !== null) {
            throw new ServerExited(
              `redis-server on ${this.port} exited (${this.proc.exitCode}) before it answered`,
            );
          }
          if (Date.now() > deadline) {
            this.proc.kill('SIGKILL');
            throw new Error(`redis-server on ${this.port} did not start: ${(err as Error).message}`);
          }
          // A connection that did not answer in time is dropped; the next try opens a new one.
          probe.disconnect();
          await new Promise((r) => setTimeout(r, 50));
        }
      }
    } finally {
      probe.disconnect();
    }
  }

  /**
   * Stops the server (SIGKILL: only what is fsynced survives), runs `whileDown`, and starts it
   * again on the same port and files.
   */
  async restart(whileDown: () => Promise<void> = async () => {}): Promise<void> {
    await this.stop();
    await whileDown();
    this.proc = PrivateRedis.spawn(this.port, this.dir, this.password);
    await this.waitUp();
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

  /** Stops the server and removes its files. */
  async remove(): Promise<void> {
    await this.stop();
    if (this.dir) rmSync(this.dir, { recursive: true, force: true });
  }
}
