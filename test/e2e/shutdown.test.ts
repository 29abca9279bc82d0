// Stopping like a good citizen, with the real bot: after SIGTERM it exits 0 within Docker's
// 10 s stop grace, and no process of its host outlives it, even when `/bin/sh -c` did not hand
// over to the host and the host ignores end of input and SIGTERM.

import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { freshRedisDb, startBot } from '../support/bot.js';
import { FakeHost } from '../support/fakeHost.js';
import { FakeSlack } from '../support/fakeSlack.js';
import { isRunning } from '../support/processes.js';
import { within } from '../support/rawRequest.js';

const STUBBORN_HOST = fileURLToPath(new URL('../support/stubborn-host.mjs', import.meta.url));

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

/** Resolves once `path` exists (the host writes it when all its processes run). */
async function fileAppears(path: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!existsSync(path)) {
    if (Date.now() > deadline) throw new Error(`${path} did not appear within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe('SIGTERM', () => {
  it('exits 0 within 10 s and leaves no process of a host that ignores EOF and SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'stubborn-'));
    const slack = await FakeSlack.start();
    const host = await FakeHost.start();
    cleanups.push(
      async () => rmSync(dir, { recursive: true, force: true }),
      () => slack.close(),
      () => host.close(),
    );
    const pidFile = join(dir, 'pids');
    // `; echo` keeps the shell from exec'ing the host: the shell stays between bot and host.
    const command = `"${process.execPath}" "${STUBBORN_HOST}" "${pidFile}"; echo "host left" >&2`;
    const bot = await startBot({
      host,
      slack,
      redisDb: await freshRedisDb(),
      env: { MSP_HOST_COMMAND: command },
    });
    cleanups.push(() => bot.kill());
    await bot.waitReady();
    await fileAppears(pidFile);
    const [shell, stubborn, child] = readFileSync(pidFile, 'utf8').trim().split(' ').map(Number);
    expect([shell, stubborn, child].every((pid) => pid !== undefined && isRunning(pid))).toBe(true);

    const signalled = Date.now();
    // SIGKILL only after 20 s: the bot must leave on its own.
    const exit = await bot.stop(20_000);
    const tookMs = Date.now() - signalled;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(tookMs).toBeLessThan(10_000);
    expect([shell, stubborn, child].filter((pid) => isRunning(pid!))).toEqual([]);

    const messages = bot.logs.map((l) => l.msg);
    expect(messages).toContain('stopping host');
    expect(bot.logs.find((l) => l.msg === 'host stopped')?.json).toMatchObject({ signal: 'SIGTERM' });
    // The host was given EOF first, and SIGTERM only later.
    const stderr = bot.logs.filter((l) => l.json?.stream === 'stderr').map((l) => l.json?.line);
    expect(stderr.indexOf('stubborn host: ignoring end of input')).toBeLessThan(
      stderr.indexOf('stubborn host: ignoring SIGTERM'),
    );
    expect(stderr.indexOf('stubborn host: ignoring end of input')).toBeGreaterThanOrEqual(0);
  }, 30_000);
});

describe('an exception nothing catches', () => {
  it('is logged as one fatal line, then the bot shuts down as on SIGTERM and exits 1', async () => {
    const slack = await FakeSlack.start();
    const host = await FakeHost.start();
    cleanups.push(
      () => slack.close(),
      () => host.close(),
    );
    const bot = await startBot({
      host,
      slack,
      redisDb: await freshRedisDb(),
      entry: 'test/support/throwing-bot.mjs',
    });
    cleanups.push(() => bot.kill());
    await bot.waitReady();

    bot.proc.kill('SIGUSR2');
    const exit = await within(bot.exited, 10_000, 'the bot exiting');
    expect(exit).toEqual({ code: 1, signal: null });
    const fatal = bot.logs.filter((l) => l.level === 60);
    expect(fatal.map((l) => l.msg)).toEqual(['uncaught exception']);
    expect(fatal[0]!.json).toMatchObject({ err: { message: 'a stray throw' } });
    // The normal drain ran: the host was stopped, not left behind.
    expect(bot.logs.find((l) => l.msg === 'shutting down')?.json).toMatchObject({
      reason: 'uncaught exception',
    });
    expect(bot.logs.map((l) => l.msg)).toContain('stopping host');
  }, 30_000);
});
