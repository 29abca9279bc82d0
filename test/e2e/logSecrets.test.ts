// Issue 26, hole 10: no secret the bot is given reaches its log, at debug, wherever it was
// given. The real bot runs with every secret it accepts set to a value of its own (the Slack
// tokens and signing secret, PagerDuty's routing key and API token, a route step's routing key,
// Redis passwords in REDIS_URL and in their own variables, a password in a URL, a host's
// environment and a token in a host command line); it starts, pages, decides and stops, and the
// whole of its output, stdout and stderr, is searched for each value as written, as JSON spells
// it and as a URL does. So is a value Slack gives that no configuration knows: the trigger_id of a
// press that opens a modal.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  BOT_TOKEN,
  freePort,
  freshRedisDb,
  type RunningBot,
  SIGNING_SECRET,
  startBot,
} from '../support/bot.js';
import { FakeHost, shellApproval } from '../support/fakeHost.js';
import { FakePagerDuty } from '../support/fakePagerDuty.js';
import { FakeSlack } from '../support/fakeSlack.js';
import { PrivateRedis } from '../support/privateRedis.js';
import { configFile, ladder, mainHost, route } from './fixtures/config.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

const STEP_ROUTING_KEY = 'STEPKEYlogsecret0000000000000001';
const ROUTING_KEY = 'ENVKEYlogsecret00000000000000002';
const PD_API_TOKEN = 'u+PDAPIlogsecret0003';
const PD_URL_PASSWORD = 'pd/URL+logsecret@0004';
// Characters a URL must encode, so the encoded form differs from the password itself.
const REDIS_PASSWORD = 'redis/URL+logsecret@0005';
// The token-shaped values are assembled, so that none is committed (test/support/fakeSecrets.ts).
const AGENT_API_KEY = ['sk', 'agent', 'logsecret', '0006', 'abcdefghij'].join('-');
// No shape the masker knows: only the logger's list of the configuration's secrets catches it.
const AGENT_LICENSE = 'museLicense-logsecret-0011';
const HOST_COMMAND_TOKEN = 'hostcmd-logsecret-0007';
const APP_TOKEN = ['xapp', '1', 'A_LOGSECRET', '0008', 'abc'].join('-');
const SENTINEL_MASTER_PASSWORD = 'sentinel-master-logsecret-0009';
const SENTINEL_PASSWORD = 'sentinel-own-logsecret-0010';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

/** Every way a value may be written into a log line. */
function spellings(secret: string): string[] {
  return [...new Set([secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)])];
}

/** Each secret, each spelling, searched in every line the bot wrote, stdout and stderr alike. */
function expectNoneIn(bot: RunningBot, secrets: readonly string[]): void {
  const output = bot.logs.map((l) => l.raw).join('\n');
  const found = secrets.flatMap(spellings).filter((spelling) => output.includes(spelling));
  expect(
    found,
    bot.logs
      .filter((l) => found.some((f) => l.raw.includes(f)))
      .map((l) => l.raw)
      .join('\n'),
  ).toEqual([]);
}

describe('secrets of the configuration never reach the log', () => {
  it('HTTP mode at debug: start-up, an approval that pages with its step’s key, presses, a stop', async () => {
    const redis = await PrivateRedis.start({ password: REDIS_PASSWORD });
    cleanups.push(() => redis.stop());
    const pd = await FakePagerDuty.start();
    cleanups.push(() => pd.close());
    const host = await FakeHost.start({ sessions: [{ sessionId: SESSION, title: 'Bump the version' }] });
    const file = configFile({
      hosts: [
        mainHost(`FOO_TOKEN=${HOST_COMMAND_TOKEN} ${host.command}`, {
          env: { AGENT_API_KEY, MUSE_LICENSE: AGENT_LICENSE },
        }),
      ],
      routes: [
        route('everything', {
          escalation: ladder(['1s', 'page', undefined, { routingKey: STEP_ROUTING_KEY }]),
        }),
      ],
    });
    cleanups.push(file.remove);
    const world = await World.start(
      {},
      {
        COUNTERSIGN_CONFIG: file.path,
        MSP_HOST_COMMAND: '',
        ...pd.env(ROUTING_KEY),
        PAGERDUTY_API_TOKEN: PD_API_TOKEN,
        // Read only for on-call look-ups, which no route here makes: it is shown at start-up.
        PAGERDUTY_API_URL: `http://pd-proxy:${encodeURIComponent(PD_URL_PASSWORD)}@127.0.0.1:${pd.port}/`,
      },
      { host, redisUrl: redis.url },
    );
    cleanups.push(() => world.close());
    // A host that tells its own environment on stderr (logged at debug): a line nobody foresaw.
    await world.host.stderr(`muse: licensed with ${AGENT_LICENSE}`);
    const told = await world.bot.waitForLog((l) => l.msg === 'host stderr' && /licensed/.test(l.raw));
    expect(told.json?.line).toBe('muse: licensed with [redacted]');
    // The secrets are in use: the bot talks to a Redis that asks for its password, the host
    // runs, and the page goes out with the step's own routing key.
    await world.host.open(
      shellApproval({ approvalId: 'logsecret-01', sessionId: SESSION, stages: [['make', 'deploy']] }),
    );
    const page = await pd.waitForEvent('trigger', 'logsecret-01', 8_000);
    expect(page.routing_key).toBe(STEP_ROUTING_KEY);
    const card = await world.waitForCard('logsecret-01', (m) => textOf(m).includes('paged'));
    expect(buttonsOf(card).map((b) => b.text)).toContain('Allow once');
    // Reject opens a modal: views.open carries the press's trigger_id, which the Web API client
    // logs at debug with the call's body. No configuration knows that value.
    await world.press('logsecret-01', 'Reject', 'U0ALICE', card);
    const modal = await world.slack.waitFor('views.open', () => true, 5_000);
    const triggerId = String(modal.args.trigger_id);
    await world.press('logsecret-01', 'Allow once', 'U0ALICE', card);
    expect((await world.host.waitForDecide()).frame.params).toMatchObject({ choiceId: 'allow_once' });
    expect((await pd.waitForEvent('resolve', 'logsecret-01', 8_000)).routing_key).toBe(STEP_ROUTING_KEY);
    await world.waitForCard('logsecret-01', (m) => textOf(m).includes('Approved'));
    expect(await world.bot.stop()).toEqual({ code: 0, signal: null });

    expect(world.bot.logs.filter((l) => l.level === 20).length).toBeGreaterThan(10);
    expectNoneIn(world.bot, [
      BOT_TOKEN,
      SIGNING_SECRET,
      ROUTING_KEY,
      STEP_ROUTING_KEY,
      PD_API_TOKEN,
      PD_URL_PASSWORD,
      REDIS_PASSWORD,
      AGENT_API_KEY,
      AGENT_LICENSE,
      HOST_COMMAND_TOKEN,
    ]);
    expectNoneIn(world.bot, [triggerId]);
    // Hidden by what they are: a secret set shows as [set], a host's environment as [redacted].
    expect(world.bot.logs.find((l) => l.msg === 'countersign listening')?.json?.config).toMatchObject({
      routes: [{ escalation: [{ action: 'page', routingKey: '[set]' }] }],
      msp: { hosts: [{ id: 'main', env: { AGENT_API_KEY: '[redacted]', MUSE_LICENSE: '[redacted]' } }] },
      redisUrl: expect.stringContaining(':[redacted]@127.0.0.1:'),
    });
  });

  it.each([
    [
      'REDIS_SENTINELS with REDIS_PASSWORD and REDIS_SENTINEL_PASSWORD',
      (sentinel: string) => ({
        REDIS_URL: '',
        REDIS_SENTINELS: sentinel,
        REDIS_SENTINEL_NAME: 'mymaster',
        REDIS_PASSWORD: SENTINEL_MASTER_PASSWORD,
        REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD,
      }),
    ],
    [
      'a redis+sentinel:// REDIS_URL with a password, and REDIS_SENTINEL_PASSWORD',
      (sentinel: string) => ({
        REDIS_URL: `redis+sentinel://cs:${encodeURIComponent(SENTINEL_MASTER_PASSWORD)}@${sentinel}/mymaster`,
        REDIS_SENTINEL_PASSWORD: SENTINEL_PASSWORD,
      }),
    ],
  ])('Socket Mode, signing secret set, %s (out of reach): start-up and retries', async (_what, redisEnv) => {
    const slack = await FakeSlack.start();
    slack.expectedAppToken = APP_TOKEN;
    const host = await FakeHost.start();
    cleanups.push(
      () => slack.close(),
      () => host.close(),
    );
    const sentinel = `127.0.0.1:${await freePort()}`;
    const bot = await startBot({
      host,
      slack,
      redisDb: await freshRedisDb(),
      env: { SLACK_APP_TOKEN: APP_TOKEN, ...redisEnv(sentinel) },
    });
    cleanups.push(() => bot.kill());
    const listening = await bot.waitForLog((l) => l.msg === 'countersign listening', 10_000);
    expect(listening.json?.config).toMatchObject({
      slack: { mode: 'socket', appToken: '[set]', signingSecret: '[set]' },
      redis: { kind: 'sentinel', password: '[set]', sentinelPassword: '[set]' },
    });
    await bot.waitForLog((l) => l.msg === 'redis unreachable; retrying', 10_000);
    // The app token opened the socket (apps.connections.open, debug lines of the Web API client).
    await slack.waitForSocket(10_000);
    await bot.stop(2_000);

    expectNoneIn(bot, [BOT_TOKEN, SIGNING_SECRET, APP_TOKEN, SENTINEL_MASTER_PASSWORD, SENTINEL_PASSWORD]);
  });
});

describe('a host that cannot be spawned', () => {
  /** The bot with the fake Slack and one host from a config file, which never comes up. */
  async function botWithHost(hostEntry: ReturnType<typeof mainHost>): Promise<RunningBot> {
    const slack = await FakeSlack.start();
    const host = await FakeHost.start();
    const file = configFile({ hosts: [hostEntry] });
    cleanups.push(
      () => slack.close(),
      () => host.close(),
      file.remove,
    );
    const bot = await startBot({
      host,
      slack,
      redisDb: await freshRedisDb(),
      // METRICS_PORT: where /readyz gives the host's reason (PORT's says ready or not alone).
      env: { COUNTERSIGN_CONFIG: file.path, MSP_HOST_COMMAND: '', METRICS_PORT: String(await freePort()) },
    });
    cleanups.push(() => bot.kill());
    return bot;
  }

  it('a value Node refuses to pass (a NUL in the command) is not quoted in the log', async () => {
    // spawn() throws at once and its message quotes the value, escaped ("\x00"): not the
    // value as written, so the logger's list of the configuration's secrets misses it. (A NUL
    // in an env value, the other such value, stops start-up: see startup.test.ts.)
    const secret = 'spawnArgSecret-logsecret-0013';
    const bot = await botWithHost(mainHost(`MUSE_TOKEN=${secret}\0 muse serve`));
    const failed = await bot.waitForLog((l) => l.msg === 'host could not be spawned', 10_000);
    // METRICS_PORT's /readyz gives Node's message as the host's reason: the argument, not its value.
    const readyz = await (await fetch(`${bot.metricsUrl}/readyz`)).text();
    expect(readyz).toContain("The argument 'args[1]'");
    expect(readyz).not.toContain(secret);
    await bot.stop(2_000);
    expectNoneIn(bot, [secret]);
    // What the operator needs is kept: which argument, and why.
    expect(failed.json).toMatchObject({
      code: 'ERR_INVALID_ARG_VALUE',
      message: "The argument 'args[1]' must be a string without null bytes",
    });
  });

  it('a cwd gone before a start: neither the command line nor the env reaches the log', async () => {
    // Node's error for it carries the command line unmasked (spawnargs).
    const token = 'spawnArgSecret-logsecret-0014';
    const license = 'spawnEnvSecret-logsecret-0015';
    const cwd = mkdtempSync(join(tmpdir(), 'countersign-spawn-'));
    cleanups.push(() => rmSync(cwd, { recursive: true, force: true }));
    // The first start removes its own cwd, so that the next ones cannot start the shell.
    const command = `FOO_TOKEN=${token} rmdir "$PWD"; exit 1`;
    const bot = await botWithHost(mainHost(command, { cwd, env: { MUSE_LICENSE: license } }));
    await bot.waitForLog((l) => l.msg === 'host could not be spawned', 10_000);
    await bot.stop(2_000);
    expectNoneIn(bot, [token, license]);
  });
});
