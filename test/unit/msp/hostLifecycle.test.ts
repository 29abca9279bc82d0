// The host process's life as an operator sees it: a command that will not run is named in one
// error line (and in the supervisor's down reason), and stopping reaches every process the
// host started, even under a shell that did not exec it and a host that ignores EOF and SIGTERM.

import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { HostSupervisor, type HostSupervisorOptions } from '../../../src/msp/hostSupervisor.js';
import { captureLogger } from '../../support/logCapture.js';
import { isRunning } from '../../support/processes.js';
import { until } from '../../support/until.js';

const STUBBORN_HOST = fileURLToPath(new URL('../../support/stubborn-host.mjs', import.meta.url));
const NODE = process.execPath;

const dirs: string[] = [];
const supervisors: HostSupervisor[] = [];

afterEach(async () => {
  await Promise.all(supervisors.splice(0).map((supervisor) => supervisor.stop(1_000)));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'msp-lifecycle-'));
  dirs.push(dir);
  return dir;
}

function supervise(command: string, options: Partial<HostSupervisorOptions> = {}) {
  const { logger, lines: logs } = captureLogger();
  const supervisor = new HostSupervisor({
    hostId: 'host-a',
    command,
    logger,
    clientVersion: '1.2.3',
    onEvent: () => undefined,
    backoff: { initialMs: 5, maxMs: 20 },
    ...options,
  });
  supervisors.push(supervisor);
  return { supervisor, logs };
}

/** Appends a line per start to `file`, so that tests can count starts. */
const countStart = (file: string) => `echo start >> "${file}"`;
const starts = (file: string): number =>
  existsSync(file) ? readFileSync(file, 'utf8').split('\n').length - 1 : 0;

describe('a host command that will not run', () => {
  it('after three failed starts, one error line names MSP_HOST_COMMAND, the exit code and its stderr', async () => {
    const dir = tempDir();
    const { supervisor, logs } = supervise(
      `${countStart(`${dir}/starts`)}; echo "loading profile" >&2; echo "muse: no such workspace" >&2; exit 1`,
    );
    await supervisor.start();
    await until(() => starts(`${dir}/starts`) >= 5);
    await until(() => logs.filter((line) => line.msg === 'respawning host').length >= 5);

    const errors = logs.filter((line) => (line.level as number) >= 40);
    expect(errors).toEqual([
      expect.objectContaining({
        level: 50,
        msg: 'MSP_HOST_COMMAND exited with code 1 3 times in a row: muse: no such workspace',
        exitCode: 1,
        signal: null,
        failedStarts: 3,
        stderrTail: ['loading profile', 'muse: no such workspace'],
      }),
    ]);
    // No stack traces on the way: a host that is gone at once is not a program error.
    expect(logs.some((line) => JSON.stringify(line).includes('"stack"'))).toBe(false);
    expect(supervisor.isUp()).toBe(false);
    expect(supervisor.downReason()).toMatch(
      /^MSP_HOST_COMMAND exited with code 1 \d+ times in a row: muse: no such workspace$/,
    );
    // What a public port shows: the same sentence without the host's words.
    expect(supervisor.downReason('withheld')).toMatch(
      /^MSP_HOST_COMMAND exited with code 1 \d+ times in a row$/,
    );
  });

  it('a command that is not an MSP host is named with "did not answer initialize"', async () => {
    const dir = tempDir();
    // Reads its input and never answers; leaves at EOF.
    const { supervisor, logs } = supervise(
      `${countStart(`${dir}/starts`)}; while read -r frame; do :; done`,
      {
        handshakeTimeoutMs: 50,
      },
    );
    await supervisor.start();
    await until(() => logs.some((line) => line.level === 50));
    expect(logs.filter((line) => line.level === 50)).toEqual([
      expect.objectContaining({
        msg: 'MSP_HOST_COMMAND did not answer initialize within 50 ms 3 times in a row',
      }),
    ]);
    expect(supervisor.downReason()).toMatch(/^MSP_HOST_COMMAND did not answer initialize within 50 ms/);
  });

  it('a cwd that is gone (removed after start-up) is named, not the shell "spawn /bin/sh ENOENT" blames', async () => {
    const dir = tempDir();
    const cwd = join(dir, 'agents');
    const { supervisor, logs } = supervise(countStart(`${dir}/starts`), {
      cwd,
      commandSetting: 'COUNTERSIGN_CONFIG hosts[0].command',
    });
    await supervisor.start();
    await until(() => logs.some((line) => line.level === 50));
    const reason = `COUNTERSIGN_CONFIG hosts[0].command could not be started in its cwd ${JSON.stringify(cwd)} (not a directory) 3 times in a row`;
    expect(logs.filter((line) => (line.level as number) >= 40)).toEqual([
      expect.objectContaining({ level: 50, msg: reason }),
    ]);
    expect(supervisor.downReason()).toMatch(
      /^COUNTERSIGN_CONFIG hosts\[0\]\.command could not be started in its cwd /,
    );
    // Nothing ran: the shell never started.
    expect(starts(`${dir}/starts`)).toBe(0);
    expect(logs.some((line) => JSON.stringify(line).includes('"stack"'))).toBe(false);
  });

  it('a host that comes up at last clears the reason, and says so', async () => {
    const dir = tempDir();
    const gate = join(dir, 'ready');
    const { supervisor, logs } = supervise(
      `${countStart(`${dir}/starts`)}; if [ ! -f "${gate}" ]; then echo "waiting for the disk" >&2; exit 3; fi; ` +
        `exec "${NODE}" "${STUBBORN_HOST}" "${dir}/pids"`,
      { shutdownGraceMs: 50 },
    );
    await supervisor.start();
    await until(() => supervisor.downReason() !== 'the MSP host is starting');
    expect(supervisor.downReason()).toMatch(
      /^MSP_HOST_COMMAND exited with code 3 \(configError\)( \d+ times in a row)?: waiting for the disk$/,
    );
    await until(() => logs.some((line) => line.level === 50));
    writeFileSync(gate, '');
    await until(() => supervisor.isUp());
    expect(supervisor.downReason()).toBeUndefined();
    expect(logs.find((line) => line.msg === 'MSP host is up after failed starts')).toMatchObject({
      failedStarts: expect.any(Number),
    });
  });
});

describe('stopping the host', () => {
  it('ends the whole process group: a shell that did not exec, a host that ignores EOF and SIGTERM, its child', async () => {
    const dir = tempDir();
    const pidFile = join(dir, 'pids');
    const { supervisor, logs } = supervise(`"${NODE}" "${STUBBORN_HOST}" "${pidFile}"; echo "host left" >&2`);
    await supervisor.start();
    expect(supervisor.isUp()).toBe(true);
    await until(() => existsSync(pidFile));
    const pids = readFileSync(pidFile, 'utf8').trim().split(' ').map(Number);
    expect(pids).toHaveLength(3);
    expect(pids.every(isRunning)).toBe(true);

    const started = Date.now();
    await supervisor.stop(2_500);
    // Within its 2.5 s, give or take timers that fire late on a busy machine.
    expect(Date.now() - started).toBeLessThan(3_500);
    expect(pids.filter(isRunning)).toEqual([]);
    expect(logs.some((line) => line.msg === 'host stopped')).toBe(true);
  });

  it('reaps what a host that died left in its group before it starts the next one', async () => {
    const dir = tempDir();
    // Each start leaves a sleeper behind and fails; the next start records whether the last
    // start's sleeper still runs.
    const { supervisor } = supervise(
      `${countStart(`${dir}/starts`)}; sleep 600 & echo $! >> "${dir}/sleepers"; exit 1`,
    );
    await supervisor.start();
    await until(() => starts(`${dir}/starts`) >= 2);
    const sleepers = readFileSync(`${dir}/sleepers`, 'utf8').trim().split('\n').map(Number);
    // Every sleeper but the newest belongs to a start that has been followed by another.
    expect(sleepers.slice(0, -1).filter(isRunning)).toEqual([]);
  });
});
