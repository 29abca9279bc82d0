// Start-up as an operator meets it, with the real bot: a mistake only the operator can fix
// stops the process with one line and exit code 1; trouble that may pass keeps the bot running,
// says what is wrong in one log line, and /readyz says why the bot is not ready (METRICS_PORT's:
// PORT's says ready or not alone).

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { type BotLogLine, freePort, freshRedisDb, type RunningBot, startBot } from '../support/bot.js';
import { FakeHost } from '../support/fakeHost.js';
import { FAKE_SLACK_APP_TOKEN, OTHER_FAKE_SLACK_APP_TOKEN } from '../support/fakeSecrets.js';
import { FakeSlack } from '../support/fakeSlack.js';
import { TEST_REDIS_URL } from '../support/testRedis.js';
import { configFile, mainHost } from './fixtures/config.js';

const APP_TOKEN = FAKE_SLACK_APP_TOKEN;
const SOCKET_MODE = { SLACK_APP_TOKEN: APP_TOKEN, SLACK_SIGNING_SECRET: '' };

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

async function peers() {
  const slack = await FakeSlack.start();
  slack.expectedAppToken = APP_TOKEN;
  const host = await FakeHost.start();
  cleanups.push(
    () => slack.close(),
    () => host.close(),
  );
  return { slack, host };
}

async function bot(env: Record<string, string>, port?: number): Promise<RunningBot & { host: FakeHost }> {
  const { slack, host } = await peers();
  const running = await startBot({ host, slack, redisDb: await freshRedisDb(), env, port });
  cleanups.push(() => running.kill());
  return Object.assign(running, { host });
}

/** The bot stopped at start-up: exit 1, `line` its only output, and no host started. */
async function stoppedWith(running: RunningBot & { host: FakeHost }, line: string): Promise<void> {
  expect(await running.exited).toEqual({ code: 1, signal: null });
  expect(running.logs.map((l) => l.raw)).toEqual([line]);
  expect(running.host.incarnations).toHaveLength(0);
}

const stderrLines = (running: RunningBot) =>
  running.logs.filter((l) => l.stream === 'stderr').map((l) => l.raw);
const atLeastError = (l: BotLogLine) => (l.level ?? 0) >= 50;

/** GET /readyz on PORT, or at `at` (running.metricsUrl with METRICS_PORT set: the parts and the reasons). */
async function readyz(
  running: RunningBot,
  at = running.url,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${at}/readyz`);
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** Polls /readyz (what an operator or an orchestrator does) until `test` accepts an answer. */
async function readyzUntil(
  running: RunningBot,
  test: (answer: { status: number; body: Record<string, unknown> }) => boolean,
  timeoutMs = 10_000,
  at = running.url,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const deadline = Date.now() + timeoutMs;
  let last: { status: number; body: Record<string, unknown> } | undefined;
  while (Date.now() < deadline) {
    last = await readyz(running, at);
    if (test(last)) return last;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error(`/readyz never matched; last: ${JSON.stringify(last)}\n${running.tail()}`);
}

describe('mistakes only the operator can fix stop start-up with one line', () => {
  it.each([
    ['SLACK_BOT_TOKEN', { SLACK_BOT_TOKEN: 'xoxb-…' }],
    ['SLACK_APP_TOKEN', { SLACK_APP_TOKEN: 'xapp-…', SLACK_SIGNING_SECRET: '' }],
    ['SLACK_SIGNING_SECRET', { SLACK_SIGNING_SECRET: 'paste the signing secret here' }],
  ])('%s pasted from the quick start as it is', async (variable, env) => {
    const running = await bot(env);
    expect(await running.exited).toEqual({ code: 1, signal: null });
    expect(stderrLines(running)).toEqual([
      expect.stringMatching(
        new RegExp(`^countersign: ${variable} still holds a placeholder \\(.*\\): paste `),
      ),
    ]);
    expect(running.host.incarnations).toHaveLength(0);
  });

  it('REDIS_URL naming a database that is not a number: one line, not SELECT NaN', async () => {
    const running = await bot({ REDIS_URL: `${TEST_REDIS_URL}/abc` });
    await stoppedWith(
      running,
      'countersign: REDIS_URL names database "abc", which is not a number (0 to 15 on a default Redis): write it as redis://[[user]:password@]host[:port][/db], or fix or unset it',
    );
  });

  it('REDIS_URL with a bare "%" in its password: one line that does not show it, not a URIError', async () => {
    const password = 'p%ssS3cretRedisPw';
    const running = await bot({ REDIS_URL: TEST_REDIS_URL.replace('redis://', `redis://:${password}@`) });
    await stoppedWith(
      running,
      'countersign: REDIS_URL has a "%" not followed by two hex digits in its user or password: write it as %25',
    );
  });

  it('a host cwd that does not exist: one line naming hosts[0].cwd, not a host that never starts', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-cwd-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const cwd = join(dir, 'agents-typo');
    const path = join(dir, 'countersign.yml');
    writeFileSync(path, `hosts:\n  - id: main\n    command: muse serve\n    cwd: ${cwd}\n`);
    const running = await bot({ COUNTERSIGN_CONFIG: path, MSP_HOST_COMMAND: '' });
    expect(await running.exited).toEqual({ code: 1, signal: null });
    expect(running.logs.map((l) => l.raw)).toEqual([
      `countersign: COUNTERSIGN_CONFIG (${path}): hosts[0].cwd ${JSON.stringify(cwd)} does not exist: create the directory or fix the path`,
    ]);
  });

  it('a host env value with a NUL byte: one line naming hosts[0].env.<name>, not its value', async () => {
    const secret = 'nulEnvSecret-startup-0021';
    const file = configFile({ hosts: [mainHost('muse serve', { env: { MUSE_LICENSE: `${secret}\0` } })] });
    cleanups.push(async () => file.remove());
    const running = await bot({ COUNTERSIGN_CONFIG: file.path, MSP_HOST_COMMAND: '' });
    await stoppedWith(
      running,
      `countersign: COUNTERSIGN_CONFIG (${file.path}): hosts[0].env.MUSE_LICENSE contains a NUL byte, which an environment variable cannot hold: remove it`,
    );
  });

  it('REDIS_CLUSTER_NODES written as URLs with a password: one line that does not show it', async () => {
    const running = await bot({
      REDIS_URL: '',
      REDIS_CLUSTER_NODES: 'redis://:S3cretClusterPw@node1:6379,redis://:S3cretClusterPw@node2:6379',
    });
    await stoppedWith(
      running,
      'countersign: REDIS_CLUSTER_NODES must list seed nodes of the Cluster as host:port,host:port (got a value with "@" or "?", not shown: it may carry a password): fix or unset it',
    );
  });

  it('a config file value starting with "*" unquoted (a YAML alias): one line without it, exit 1', async () => {
    const dir = join(tmpdir(), `countersign-startup-${process.pid}-${Date.now()}`);
    const path = `${dir}.yml`;
    writeFileSync(path, 'routes:\n  - channel: C0ALL\n    quickReasons: [ok, *Xk9q-S3cret-Pw]\n');
    cleanups.push(async () => rmSync(path, { force: true }));
    const running = await bot({ COUNTERSIGN_CONFIG: path });
    await stoppedWith(
      running,
      `countersign: COUNTERSIGN_CONFIG (${path}): invalid YAML: routes[0].quickReasons[1] (line 3, column 24) is an alias (a value starting with "*") that names no anchor set before it: quote the value if it is not meant as an alias`,
    );
  });

  it('several settings wrong: one line for each, all at once, exit 1', async () => {
    const running = await bot({ SLACK_CHANNEL: 'general', PORT: 'http', LOG_LEVEL: 'loud' });
    expect(await running.exited).toEqual({ code: 1, signal: null });
    expect(running.logs.map((l) => l.raw)).toEqual([
      expect.stringMatching(/^countersign: SLACK_CHANNEL /),
      'countersign: PORT must be an integer from 1 to 65535 (got "http"): fix or unset it (default 3000)',
      'countersign: LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "loud"): fix or unset it (default info)',
    ]);
    expect(running.logs.every((l) => l.stream === 'stderr')).toBe(true);
  });

  it.each([
    ['HTTP mode', {}],
    ['Socket Mode', SOCKET_MODE],
  ])('PORT already in use (%s): names PORT and the port, starts nothing', async (_mode, env) => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '0.0.0.0', () => resolve()));
    cleanups.push(() => new Promise((resolve) => taken.close(resolve)));
    const port = (taken.address() as net.AddressInfo).port;

    const running = await bot(env, port);
    expect(await running.exited).toEqual({ code: 1, signal: null });
    expect(stderrLines(running)).toEqual([
      `countersign: PORT ${port} is already in use by another process: stop that process, or set PORT to a free port`,
    ]);
    expect(running.logs.some((l) => /"stack"| {4}at /.test(l.raw))).toBe(false);
    // The host is started only once the port is ours, and the Socket Mode connection too.
    expect(running.host.incarnations).toHaveLength(0);
  });
});

describe('a Redis without a password', () => {
  // Refused before any connection: the tests' Redis, without the user or password it may have.
  const bare = new URL(TEST_REDIS_URL);
  bare.username = '';
  bare.password = '';

  // REDIS_URL unset is left to the unit tests: a bot that took its default would use the Redis
  // on 127.0.0.1:6379, which may not be the tests'.
  it('stops start-up with one line naming REDIS_URL, and starts nothing', async () => {
    const running = await bot({
      REDIS_URL: `${bare.href.replace(/\/$/, '')}/${await freshRedisDb()}`,
      REDIS_ALLOW_NO_PASSWORD: '',
    });
    await stoppedWith(
      running,
      'countersign: REDIS_URL has no password: an agent that can reach this Redis could write itself a grant; set a password (redis://:PASSWORD@host:6379, requirepass) or set REDIS_ALLOW_NO_PASSWORD=true where nothing else can reach Redis',
    );
  });

  it('with REDIS_ALLOW_NO_PASSWORD=true: starts, and says so in one warning', async () => {
    // The tests' Redis has none: startBot sets REDIS_ALLOW_NO_PASSWORD=true for it.
    const running = await bot({});
    await running.waitReady();
    const said = running.logs.filter((l) => String(l.msg).startsWith('Redis has no password'));
    expect(said.map((l) => [l.level, l.msg])).toEqual([
      [
        40,
        'Redis has no password (REDIS_ALLOW_NO_PASSWORD=true): anything that can reach it, an agent included, could write itself a grant',
      ],
    ]);
  });
});

describe('mistakes found once connected stop the bot with one line', () => {
  it('a wrong app token (Socket Mode): one fatal line naming SLACK_APP_TOKEN, exit 1', async () => {
    // The fake insists on APP_TOKEN, as Slack insists on the app's own token.
    const running = await bot({ ...SOCKET_MODE, SLACK_APP_TOKEN: OTHER_FAKE_SLACK_APP_TOKEN });
    expect(await running.exited).toEqual({ code: 1, signal: null });
    expect(running.logs.filter(atLeastError).map((l) => l.msg)).toEqual([
      'Slack refused the Socket Mode connection (Slack answered invalid_auth): check SLACK_APP_TOKEN, an app-level token (xapp-…) with the connections:write scope',
    ]);
    expect(running.logs.filter((l) => /"stack"| {4}at /.test(l.raw))).toEqual([]);
    expect(stderrLines(running)).toEqual([]);
  });
});

describe('trouble that may pass keeps the bot running and says what is wrong in one line', () => {
  it('Slack unreachable (auth.test): the URL and the cause, once; /readyz says the same', async () => {
    const closed = await freePort();
    const running = await bot({
      SLACK_API_URL: `http://127.0.0.1:${closed}/api/`,
      METRICS_PORT: String(await freePort()),
    });
    const url = `http://127.0.0.1:${closed}/api/auth.test`;
    const cause = `ECONNREFUSED 127.0.0.1:${closed}`;
    // The second failed attempt is told at debug only.
    await running.waitForLog((l) => l.msg === 'Slack still unreachable; retrying', 15_000);
    expect(running.logs.filter(atLeastError).map((l) => l.json)).toEqual([
      expect.objectContaining({ url, cause, msg: `cannot reach Slack at ${url}: ${cause}; retrying` }),
    ]);
    const { status, body } = await readyz(running, running.metricsUrl);
    expect(status).toBe(503);
    expect(body).toMatchObject({
      slack: false,
      reasons: { slack: `cannot reach Slack at ${url}: ${cause}` },
    });
    expect(await readyz(running)).toEqual({ status: 503, body: { ready: false } });
    expect(running.proc.exitCode).toBeNull();
  });

  it('Slack unreachable (Socket Mode): names apps.connections.open and the cause; the host runs meanwhile', async () => {
    const closed = await freePort();
    const running = await bot({ ...SOCKET_MODE, SLACK_API_URL: `http://127.0.0.1:${closed}/api/` });
    const url = `http://127.0.0.1:${closed}/api/apps.connections.open`;
    const line = await running.waitForLog((l) => l.json?.url === url && atLeastError(l), 10_000);
    expect(line.msg).toBe(`cannot reach Slack at ${url}: ECONNREFUSED 127.0.0.1:${closed}; retrying`);
    await running.host.waitForIncarnation(1);
    expect((await fetch(`${running.url}/healthz`)).status).toBe(200);
    expect(running.proc.exitCode).toBeNull();
  });

  it('a host command that exits at once: one error line with MSP_HOST_COMMAND, its exit code and stderr', async () => {
    const running = await bot({
      MSP_HOST_COMMAND: 'echo "starting muse" >&2; echo "muse: unknown flag --frobnicate" >&2; exit 1',
    });
    const expected =
      /^MSP_HOST_COMMAND exited with code 1 3 times in a row: muse: unknown flag --frobnicate$/;
    const line = await running.waitForLog((l) => expected.test(l.msg ?? ''), 10_000);
    expect(line.json).toMatchObject({
      level: 50,
      exitCode: 1,
      stderrTail: ['starting muse', 'muse: unknown flag --frobnicate'],
    });
    // It keeps trying, without saying the same thing again at error, and without stack traces.
    await running.waitForLog((l) => l.index > line.index && l.msg === 'respawning host', 10_000);
    expect(running.logs.filter((l) => l.json?.hostId !== undefined && atLeastError(l))).toEqual([line]);
    expect(running.logs.some((l) => l.raw.includes('"stack"'))).toBe(false);
    // A host that is down does not make the replica unready: the bot still answers its clicks.
    // PORT's /readyz says ready and nothing of the host: the log has why (and METRICS_PORT).
    const { status, body } = await readyz(running);
    expect({ status, body }).toEqual({ status: 200, body: { ready: true } });
    expect(JSON.stringify(body)).not.toContain('unknown flag');
  });
});

it("hosts whose stderr quotes their env: METRICS_PORT's /readyz hides each value as the log does", async () => {
  // No shape the masker knows: only the list of the configuration's secrets catches them.
  const license = 'museLicense-readyz-0011';
  const password = 'ciPassword-readyz-0012';
  const file = configFile({
    hosts: [
      {
        id: 'main',
        command: 'echo "muse: licence $MUSE_LICENSE refused" >&2; exit 3',
        env: { MUSE_LICENSE: license },
      },
      {
        id: 'ci',
        command: 'echo "login failed for $CI_PASSWORD" >&2; exit 3',
        env: { CI_PASSWORD: password },
      },
    ],
    routes: [{ channel: 'C0APPROVALS' }],
  });
  cleanups.push(async () => file.remove());
  // The stderr lines are on METRICS_PORT's /readyz only.
  const running = await bot({
    COUNTERSIGN_CONFIG: file.path,
    MSP_HOST_COMMAND: '',
    METRICS_PORT: String(await freePort()),
  });
  await running.waitForLog((l) => l.msg === 'countersign listening', 15_000);
  // Both the joined reason (reasons.host) and each host's own (hosts.<id>.reason).
  const { body } = await readyzUntil(
    running,
    ({ body }) => {
      const hosts = body.hosts as Record<string, { reason?: string }> | undefined;
      return /refused/.test(hosts?.main?.reason ?? '') && /login failed/.test(hosts?.ci?.reason ?? '');
    },
    15_000,
    running.metricsUrl,
  );
  expect(body).toMatchObject({
    host: false,
    reasons: { host: expect.stringMatching(/licence \[redacted\] refused.*login failed for \[redacted\]$/) },
    hosts: {
      main: { up: false, reason: expect.stringMatching(/: muse: licence \[redacted\] refused$/) },
      ci: { up: false, reason: expect.stringMatching(/: login failed for \[redacted\]$/) },
    },
  });
  const shown = JSON.stringify(body);
  expect(shown).not.toContain(license);
  expect(shown).not.toContain(password);
});

describe('a host command that is not found', () => {
  it("one line per backoff step, one error line, and METRICS_PORT's /readyz names the command", async () => {
    const running = await bot({
      MSP_HOST_COMMAND: 'muse-not-installed serve',
      METRICS_PORT: String(await freePort()),
    });
    const notFound =
      /^MSP_HOST_COMMAND exited with code 127 \(command not found\)( \d+ times in a row)?: .*muse-not-installed: not found$/;
    // Five steps of the backoff (about 2 s at the start of it).
    await running.waitForLog((l) => l.msg === 'respawning host' && l.json?.failures === 5, 15_000);
    const hostLines = running.logs.filter((l) => l.json?.hostId !== undefined && (l.level ?? 0) >= 30);
    // Each failed start is one line, the next start's; the error line comes once, at the third.
    const steps = hostLines.filter((l) => l.msg === 'respawning host');
    expect(steps.map((l) => l.json?.failures)).toEqual([1, 2, 3, 4, 5]);
    for (const step of steps) expect(step.json?.reason).toMatch(notFound);
    const errors = hostLines.filter(atLeastError);
    expect(errors.map((l) => l.msg)).toEqual([expect.stringMatching(notFound)]);
    // Besides them only the lease and the first start are said; the later starts, the exits and the shell's
    // stderr are at debug.
    const others = hostLines.filter((l) => !steps.includes(l) && !errors.includes(l));
    expect(others.map((l) => l.msg)).toEqual(['took host default', 'host spawned']);
    expect(running.logs.some((l) => l.raw.includes('"stack"'))).toBe(false);

    // METRICS_PORT's /readyz: the same sentence; PORT's says ready alone.
    const { status, body } = await readyz(running, running.metricsUrl);
    expect(status).toBe(200);
    expect(body).toMatchObject({ host: false, reasons: { host: expect.stringMatching(notFound) } });
    expect(await readyz(running)).toEqual({ status: 200, body: { ready: true } });
  });
});

describe('a host that cannot be spawned', () => {
  it('is not said to have spawned: one line per start says it could not be, and why', async () => {
    // Its first start removes its own cwd (after the start-up check), so the next ones cannot
    // even start the shell: spawn fails with ENOENT and there is no process.
    const dir = mkdtempSync(join(tmpdir(), 'countersign-spawn-'));
    cleanups.push(async () => rmSync(dir, { recursive: true, force: true }));
    const cwd = join(dir, 'agents');
    mkdirSync(cwd);
    const file = configFile({ hosts: [mainHost('rmdir "$PWD"; exit 1', { cwd })] });
    cleanups.push(async () => file.remove());
    const running = await bot({ COUNTERSIGN_CONFIG: file.path, MSP_HOST_COMMAND: '' });
    await running.waitForLog((l) => l.msg === 'respawning host' && l.json?.failures === 3, 15_000);

    const lines = running.logs.filter((l) => l.json?.hostId === 'main');
    const spawned = lines.filter((l) => l.msg === 'host spawned');
    expect(spawned.map((l) => typeof l.json?.hostPid)).toEqual(['number']);
    const notSpawned = lines.filter((l) => l.msg === 'host could not be spawned');
    expect(notSpawned.length).toBeGreaterThanOrEqual(2);
    for (const line of notSpawned) {
      expect(line.json).toMatchObject({
        code: 'ENOENT',
        reason: `could not be started in its cwd ${JSON.stringify(cwd)} (not a directory)`,
      });
    }
    // Each start is said once: "host spawned" or "host could not be spawned", never both.
    const starts = new Set(lines.map((l) => l.json?.incarnation).filter((id) => id !== undefined));
    expect(spawned.length + notSpawned.length).toBe(starts.size);
  });

  // spawn() throws these at once instead of emitting 'error': a start that failed all the same.
  it.each([
    ['an environment too big to pass (E2BIG)', 'muse serve', { MUSE_LICENSE: 'x'.repeat(200_000) }, /E2BIG/],
    ['a NUL byte in the command', 'muse serve\0--verbose', {}, /must be a string without null bytes/],
  ])('%s: counted, backed off and named as a host that exits at once is', async (_, command, env, why) => {
    const file = configFile({ hosts: [mainHost(command, { env })] });
    cleanups.push(async () => file.remove());
    const running = await bot({
      COUNTERSIGN_CONFIG: file.path,
      MSP_HOST_COMMAND: '',
      METRICS_PORT: String(await freePort()),
    });
    const failed = (reason: unknown) =>
      typeof reason === 'string' &&
      /^COUNTERSIGN_CONFIG hosts\[0\]\.command could not be started \(.+\)( \d+ times in a row)?$/.test(
        reason,
      ) &&
      why.test(reason);
    await running.waitForLog((l) => l.msg === 'respawning host' && l.json?.failures === 5, 15_000);

    const hostLines = running.logs.filter((l) => l.json?.hostId === 'main' && (l.level ?? 0) >= 30);
    const steps = hostLines.filter((l) => l.msg === 'respawning host');
    expect(steps.map((l) => l.json?.failures)).toEqual([1, 2, 3, 4, 5]);
    // The backoff grows (never sooner than half the nominal 200 ms doubling), not a tight loop.
    steps.forEach((step, i) => {
      expect(failed(step.json?.reason)).toBe(true);
      expect(step.json?.delayMs).toBeGreaterThanOrEqual(100 * 2 ** i);
    });
    const errors = hostLines.filter(atLeastError);
    expect(errors.map((l) => l.msg)).toEqual([expect.stringMatching(/ 3 times in a row$/)]);
    expect(failed(errors[0]?.msg)).toBe(true);
    expect(errors[0]?.json).toMatchObject({ failedStarts: 3, exitCode: null, signal: null });
    // The first start is said once, as one that could not be spawned; the later ones at debug.
    const others = hostLines.filter((l) => !steps.includes(l) && !errors.includes(l));
    expect(others.map((l) => l.msg)).toEqual(['took host main', 'host could not be spawned']);
    const starts = running.logs.filter((l) => l.msg === 'host could not be spawned');
    expect(starts.length).toBeLessThanOrEqual(steps.length + 1);
    expect(running.logs.some((l) => l.raw.includes('"stack"'))).toBe(false);

    const { status, body } = await readyz(running, running.metricsUrl);
    expect(status).toBe(200);
    expect(body).toMatchObject({ host: false });
    expect(failed((body.reasons as Record<string, unknown>).host)).toBe(true);
  });
});

describe('/readyz', () => {
  it("with METRICS_PORT: PORT's says ready alone, with the same status; METRICS_PORT's says why, the host's stderr too", async () => {
    const metricsPort = await freePort();
    const stderr = 'muse: cannot open /srv/agents/build-7.internal/run.sock';
    const running = await bot({
      MSP_HOST_COMMAND: `echo "${stderr}" >&2; exit 1`,
      METRICS_PORT: String(metricsPort),
    });
    await running.waitForLog((l) => l.msg === 'countersign listening', 15_000);
    const full = await readyzUntil(
      running,
      ({ body }) => String((body.reasons as { host?: string }).host).endsWith(stderr),
      10_000,
      `http://127.0.0.1:${metricsPort}`,
    );
    expect(full).toEqual({
      status: 200,
      body: {
        ready: true,
        redis: true,
        slack: true,
        host: false,
        replica: { id: expect.stringMatching(/#/), owns: ['default'], standby: [] },
        reasons: {
          host: expect.stringMatching(
            /^MSP_HOST_COMMAND exited with code 1( \d+ times in a row)?: muse: cannot open \/srv\/agents\/build-7\.internal\/run\.sock$/,
          ),
        },
      },
    });
    const onPort = await fetch(`${running.url}/readyz`);
    const text = await onPort.text();
    expect({ status: onPort.status, body: JSON.parse(text) }).toEqual({ status: 200, body: { ready: true } });
    expect(text).not.toContain('/srv/agents');
  });

  it('stays 200 while the host is down, with host false and its reason, and says when it is back', async () => {
    const dir = join(tmpdir(), `readyz-gate-${process.pid}-${Date.now()}`);
    const gate = `${dir}.locked`;
    cleanups.push(async () => rmSync(gate, { force: true }));
    const { slack, host } = await peers();
    // While the gate file exists the host cannot start, as a host whose workspace is locked.
    const command = `if [ -f "${gate}" ]; then echo "muse: workspace is locked" >&2; exit 4; fi; ${host.command}`;
    const running = await startBot({
      host,
      slack,
      redisDb: await freshRedisDb(),
      env: { MSP_HOST_COMMAND: command, METRICS_PORT: String(await freePort()) },
    });
    cleanups.push(() => running.kill());
    const full = running.metricsUrl;
    await running.waitReady();
    // The one replica runs the one host, whether it is up or not.
    const replica = { id: expect.stringMatching(/#/), owns: ['default'], standby: [] };
    expect(await readyz(running, full)).toEqual({
      status: 200,
      body: { ready: true, redis: true, slack: true, host: true, replica, reasons: {} },
    });

    writeFileSync(gate, '');
    await host.crash(1);
    const down = await readyzUntil(
      running,
      ({ body }) =>
        /^MSP_HOST_COMMAND exited with code 4/.test(String((body.reasons as { host?: string }).host)),
      10_000,
      full,
    );
    expect(down).toEqual({
      status: 200,
      body: {
        ready: true,
        redis: true,
        slack: true,
        host: false,
        replica,
        reasons: {
          host: expect.stringMatching(
            /^MSP_HOST_COMMAND exited with code 4 \(leaseUnavailable\)( \d+ times in a row)?: muse: workspace is locked$/,
          ),
        },
      },
    });
    // PORT (public in HTTP mode) says ready, and nothing of the host.
    expect(await readyz(running)).toEqual({ status: 200, body: { ready: true } });

    rmSync(gate);
    await host.waitForIncarnation(2);
    await running.waitReady();
    expect((await readyz(running, full)).body).toEqual({
      ready: true,
      redis: true,
      slack: true,
      host: true,
      replica,
      reasons: {},
    });
  });
});
