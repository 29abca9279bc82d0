// The MSP host in a container of its own, as deploy/ runs it: the bot's host command is a socat
// bridge from its stdio to a Unix socket, and socat listening on that socket starts one host per
// connection. These tests run the bot's HostSupervisor through the shipped bridge (the command of
// deploy/kubernetes/base/countersign.yml) to the fake host under the shipped listener (the
// msp-host container's command in deployment.yaml), the socket moved to a scratch directory and
// `muse serve` replaced by the fake host, and check that supervision works through them: the
// handshake, a respawn when the host exits, EOF when the bot stops it or is killed, and a
// listener that comes up after the bot.
//
// Without socat these tests are skipped with a note, unless REQUIRE_SOCAT=1 (.ci/run sets it
// after installing Debian's socat), which makes that a failure.

import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it, test } from 'vitest';
import { parse } from 'yaml';
import type { HostEvent } from '../../../src/msp/events.js';
import { HostSupervisor } from '../../../src/msp/hostSupervisor.js';
import { PROJECT_ROOT } from '../../support/bot.js';
import { FakeHost } from '../../support/fakeHost.js';
import { captureLogger } from '../../support/logCapture.js';
import { isRunning } from '../../support/processes.js';
import { until } from '../../support/until.js';

const INSTALL_SOCAT =
  'Install it with `sudo apt-get install -y socat` (.ci/run installs it and sets REQUIRE_SOCAT=1).';
const socat = spawnSync('socat', ['-V'], { stdio: 'ignore' }).status === 0;

const FAKE_HOST_SCRIPT = fileURLToPath(new URL('../../support/fake-host.mjs', import.meta.url));
const BASE = join(PROJECT_ROOT, 'deploy', 'kubernetes', 'base');
/** Where the shipped bridge and listener put the socket. */
const SHIPPED_SOCKET = '/run/msp/host.sock';

/** The bot's host command as shipped: the first host of the base's configuration file. */
function shippedBridge(): string {
  const config = parse(readFileSync(join(BASE, 'countersign.yml'), 'utf8')) as {
    hosts: Array<{ command: string }>;
  };
  return config.hosts[0]!.command;
}

/** The msp-host container's command as shipped. */
function shippedListener(): string[] {
  const deployment = parse(readFileSync(join(BASE, 'deployment.yaml'), 'utf8')) as {
    spec: { template: { spec: { containers: Array<{ name: string; command?: string[] }> } } };
  };
  const container = deployment.spec.template.spec.containers.find((c) => c.name === 'msp-host');
  return container?.command ?? [];
}

/** A marker only the bot's side has: the host must never see it. */
const BOT_ONLY = { COUNTERSIGN_BRIDGE_TEST_SECRET: 'only-the-bot-knows-this' };

test.runIf(!socat && process.env.REQUIRE_SOCAT === '1')('socat is installed', () => {
  throw new Error(`REQUIRE_SOCAT=1, but socat was not found. ${INSTALL_SOCAT}`);
});
if (!socat && process.env.REQUIRE_SOCAT !== '1')
  process.stderr.write(`socat is not installed, so the MSP socket bridge is not run. ${INSTALL_SOCAT}\n`);

test('the shipped bridge and listener are socat commands on one socket, the host started by EXEC', () => {
  expect(shippedBridge()).toMatch(/^socat\b.*\bSTDIO\b/);
  expect(shippedBridge()).toContain(`UNIX-CONNECT:${SHIPPED_SOCKET}`);
  const listener = shippedListener();
  expect(listener[0]).toBe('socat');
  expect(listener.some((arg) => arg.startsWith(`UNIX-LISTEN:${SHIPPED_SOCKET},`))).toBe(true);
  expect(listener.some((arg) => /^EXEC:[^,]+/.test(arg))).toBe(true);
});

describe.runIf(socat)('the MSP host behind the shipped socat bridge', () => {
  let host: FakeHost;
  let dir: string;
  let socketPath: string;
  let listener: ChildProcess | undefined;
  const supervisors: HostSupervisor[] = [];

  beforeEach(async () => {
    host = await FakeHost.start();
    dir = mkdtempSync(join(tmpdir(), 'msp-bridge-'));
    socketPath = join(dir, 'host.sock');
  });

  afterEach(async () => {
    await Promise.all(supervisors.splice(0).map((supervisor) => supervisor.stop(2_000)));
    if (listener?.exitCode === null) {
      listener.kill('SIGTERM');
      await new Promise((resolve) => listener!.once('exit', resolve));
    }
    listener = undefined;
    await host.close();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The shipped listener on the scratch socket, running the fake host; the host's env only. */
  async function listen(): Promise<void> {
    const args = shippedListener()
      .slice(1)
      .map((arg) =>
        arg
          .replace(SHIPPED_SOCKET, socketPath)
          .replace(/^EXEC:[^,]*/, `EXEC:${process.execPath} ${FAKE_HOST_SCRIPT}`),
      );
    listener = spawn('socat', args, {
      env: { PATH: process.env.PATH, ...host.env },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    await until(() => existsSync(socketPath));
  }

  /** The bot's supervisor, running the shipped bridge to the scratch socket. */
  function supervise() {
    const { logger, lines: logs } = captureLogger();
    const events: HostEvent[] = [];
    const supervisor = new HostSupervisor({
      hostId: 'main',
      command: shippedBridge().replace(SHIPPED_SOCKET, socketPath),
      logger,
      clientVersion: '1.2.3',
      onEvent: (event) => events.push(event),
      backoff: { initialMs: 20, maxMs: 100 },
      env: { PATH: process.env.PATH, ...BOT_ONLY },
    });
    supervisors.push(supervisor);
    return { supervisor, logs, events };
  }

  /** The parent of `pid`, from /proc/<pid>/stat ("pid (comm) state ppid …"). */
  function parentOf(pid: number): number {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
  }

  it('comes up through the bridge, its parent the listener: neither has any of the bot’s environment', async () => {
    await listen();
    const { supervisor } = supervise();
    await supervisor.start();
    expect(supervisor.isUp()).toBe(true);
    const { pid } = await host.waitForIncarnation(1);
    expect(host.framesOf('initialize')).toHaveLength(1);

    const environment = await host.environment();
    expect(environment).toMatchObject(host.env);
    expect(Object.keys(environment)).not.toContain(Object.keys(BOT_ONLY)[0]);
    // What the bot's host could read before: its parent's environment, now socat's, started
    // for this connection by the listener.
    const parent = parentOf(pid);
    expect(parentOf(parent)).toBe(listener!.pid);
    expect(readFileSync(`/proc/${parent}/environ`, 'utf8')).not.toContain(
      BOT_ONLY.COUNTERSIGN_BRIDGE_TEST_SECRET,
    );
  });

  it('a host that exits is started again over a new connection, without waiting out socat’s -t', async () => {
    await listen();
    const { supervisor, events } = supervise();
    await supervisor.start();
    const first = await host.waitForIncarnation(1);
    const crashedAt = Date.now();
    await host.crash(3);
    // The bridge ends the bot's stdout when the host's side ends (shut-down); the bot then
    // ends the bridge (SIGTERM after its 2 s stdout drain) and starts another. Without it the
    // bridge would wait -t (10 s) for the bot to close its stdin first.
    const second = await host.waitForIncarnation(2, 6_000);
    expect(Date.now() - crashedAt).toBeLessThan(6_000);
    expect(second.pid).not.toBe(first.pid);
    await until(() => supervisor.isUp(), 3_000);
    expect(events.map((e) => e.type)).toEqual(['hostUp', 'hostDown', 'hostUp']);
    await until(() => !isRunning(first.pid), 1_000);
  });

  it('stopping the host closes its stdin: it exits on EOF, before the bot would send SIGTERM', async () => {
    await listen();
    const { supervisor, logs } = supervise();
    await supervisor.start();
    const { pid } = await host.waitForIncarnation(1);
    const startedAt = Date.now();
    // SIGTERM would go to the bridge 1.5 s before these 4 s are up, and socat would send the
    // host its own only 10 s after the EOF.
    await supervisor.stop(4_000);
    expect(Date.now() - startedAt).toBeLessThan(2_000);
    await until(() => !isRunning(pid), 1_000);
    expect(logs.find((line) => line.msg === 'host stopped')).toMatchObject({ exitCode: 0, signal: null });
  });

  it('a bridge killed with the bot (SIGKILL) still ends the host: the closed connection is its EOF', async () => {
    await listen();
    const { supervisor } = supervise();
    await supervisor.start();
    const { pid } = await host.waitForIncarnation(1);
    supervisor.killNow();
    await until(() => !isRunning(pid), 2_000);
    // The bot starts a host again, as after any death.
    await host.waitForIncarnation(2, 3_000);
  });

  it('a listener that is not up yet: the bridge fails, and the bot starts it again until it is', async () => {
    const { supervisor, logs } = supervise();
    await supervisor.start();
    expect(supervisor.isUp()).toBe(false);
    await until(() => logs.filter((line) => line.msg === 'respawning host').length >= 2, 3_000);
    await listen();
    await until(() => supervisor.isUp(), 3_000);
    await host.waitForIncarnation(1);
  });
});
