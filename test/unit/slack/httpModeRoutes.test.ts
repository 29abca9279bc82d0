import { afterEach, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import type { Authorizer } from '../../../src/relay/deciding/authorizer.js';
import type { ClickHandler } from '../../../src/relay/deciding/clickHandler.js';
import type { GrantLists } from '../../../src/relay/grants/grantLists.js';
import type { GrantRevoker } from '../../../src/relay/grants/grantRevoker.js';
import type { Router } from '../../../src/routing/router.js';
import { createSlackApp, type SlackService } from '../../../src/slack/createSlackApp.js';
import type { HealthProbe } from '../../../src/slack/healthRoutes.js';
import type { HomeTab } from '../../../src/slack/homeTab.js';
import { createSlackFetch } from '../../../src/slack/slackFetch.js';
import { SlackReachability } from '../../../src/slack/slackReachability.js';
import type { WaitingApprovals } from '../../../src/slack/waitingApprovals.js';
import { createWebClient } from '../../../src/slack/webClient.js';
import { freePort } from '../../support/bot.js';
import { FAKE_SLACK_APP_TOKEN, FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';
import { captureLogger } from '../../support/logCapture.js';
import { NO_REDIS_PASSWORD } from '../../support/testRedis.js';

// In HTTP mode /healthz and /readyz share PORT with Slack's requests: they are matched as exactly
// there as on the health server (Socket Mode's PORT, METRICS_PORT), by path and method. /metrics
// is on METRICS_PORT alone: PORT, which Slack reaches and so the internet, answers it 404.

let app: SlackService | undefined;
/** What the app started last has logged. */
let logged: Record<string, unknown>[] = [];
afterEach(async () => {
  await app?.stop();
  app = undefined;
});

const ALL_UP: HealthProbe = {
  redis: () => true,
  slack: () => true,
  hosts: () => true,
  whyDown: () => undefined,
};

async function startHttpMode(env: Record<string, string> = {}, health = ALL_UP): Promise<string> {
  return startApp({ SLACK_SIGNING_SECRET: 'test-signing-secret', ...env }, health);
}

/** Socket Mode, against a Slack nobody answers: only PORT's health server matters here. */
async function startSocketMode(env: Record<string, string> = {}): Promise<string> {
  return startApp({ SLACK_APP_TOKEN: FAKE_SLACK_APP_TOKEN, ...env }, ALL_UP);
}

async function startApp(env: Record<string, string>, health: HealthProbe): Promise<string> {
  const config = loadConfig({
    SLACK_BOT_TOKEN: FAKE_SLACK_BOT_TOKEN,
    SLACK_API_URL: 'http://127.0.0.1:1/api/',
    SLACK_CHANNEL: 'C0APPROVALS',
    MSP_HOST_COMMAND: 'true',
    PORT: String(await freePort()),
    ...NO_REDIS_PASSWORD,
    ...env,
  });
  const { logger, lines } = captureLogger();
  logged = lines;
  const transport = createSlackFetch();
  app = createSlackApp({
    config,
    logger,
    clicks: {} as ClickHandler,
    fullText: { getWithFullText: async () => undefined },
    health,
    metrics: { path: '/metrics', method: ['GET'], handler: (_req, res) => res.end('metrics\n') },
    identity: () => ({ botId: 'B_BOT', botUserId: 'U_BOT' }),
    web: createWebClient({ token: FAKE_SLACK_BOT_TOKEN, apiUrl: config.slack.apiUrl, fetch: transport }),
    transport,
    reachability: new SlackReachability(logger),
    team: {
      authorizer: {} as Authorizer,
      router: {} as Router,
      waiting: {} as WaitingApprovals,
      home: {} as HomeTab,
      grants: {} as GrantLists,
      revoker: {} as GrantRevoker,
    },
  });
  const { connected } = await app.start();
  // Socket Mode's connection fails in the background (nothing at SLACK_API_URL): no matter here.
  connected.catch(() => {});
  return `http://127.0.0.1:${config.port}`;
}

/** What each path answers a GET with. */
async function statuses(base: string, paths: string[]): Promise<Record<string, number>> {
  const answers: Record<string, number> = {};
  for (const path of paths) answers[path] = (await fetch(`${base}${path}`)).status;
  return answers;
}

const LOOKALIKES = ['/HEALTHZ', '/healthz/', '/Readyz', '/readyz/', '/METRICS', '/metrics/'];

it('answers the health paths on PORT spelled exactly, and 404 to any other spelling', async () => {
  const base = await startHttpMode();
  expect(await statuses(base, ['/healthz', '/readyz'])).toEqual({ '/healthz': 200, '/readyz': 200 });
  expect(await statuses(base, LOOKALIKES)).toEqual(Object.fromEntries(LOOKALIKES.map((p) => [p, 404])));
  expect((await fetch(`${base}/healthz`, { method: 'POST' })).status).toBe(404);
});

it('with METRICS_PORT, PORT and METRICS_PORT answer every spelling alike, but /metrics', async () => {
  const metricsPort = await freePort();
  const base = await startHttpMode({ METRICS_PORT: String(metricsPort) });
  const paths = ['/healthz', '/readyz', ...LOOKALIKES];
  const onMetricsPort = await statuses(`http://127.0.0.1:${metricsPort}`, paths);
  expect(await statuses(base, paths)).toEqual(onMetricsPort);
  expect(onMetricsPort['/HEALTHZ']).toBe(404);
  expect((await fetch(`${base}/metrics`)).status).toBe(404);
  expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(200);
});

/** Status, headers that tell servers apart, and body: what a stranger can compare. */
async function answer(url: string): Promise<unknown> {
  const res = await fetch(url);
  return {
    status: res.status,
    type: res.headers.get('content-type'),
    length: res.headers.get('content-length'),
    body: await res.text(),
  };
}

// /metrics names the routes and the hosts, says which hosts this replica runs, and counts cards,
// decisions and refusals: nothing for whoever reaches PORT, which in HTTP mode is public.
it.each([
  ['without METRICS_PORT', false],
  ['with METRICS_PORT', true],
])('%s, /metrics on PORT is answered as a path nobody serves', async (_name, withMetricsPort) => {
  const metricsPort = await freePort();
  const base = await startHttpMode(withMetricsPort ? { METRICS_PORT: String(metricsPort) } : {});
  const unknown = await answer(`${base}/no-such-path`);
  expect(unknown).toMatchObject({ status: 404, body: '' });
  expect(await answer(`${base}/metrics`)).toEqual(unknown);
  expect((await fetch(`${base}/metrics`, { method: 'HEAD' })).status).toBe(404);
  if (withMetricsPort)
    expect(await answer(`http://127.0.0.1:${metricsPort}/metrics`)).toMatchObject({
      status: 200,
      body: 'metrics\n',
    });
});

// In Socket Mode Slack never reaches PORT, but the health check has it published (the image, a
// Service, Compose): the same there, so that a port exposed by mistake says no more.
it.each([
  ['without METRICS_PORT', false],
  ['with METRICS_PORT', true],
])(
  'in Socket Mode too, %s, /metrics on PORT is answered as a path nobody serves',
  async (_name, withMetricsPort) => {
    const metricsPort = await freePort();
    const base = await startSocketMode(withMetricsPort ? { METRICS_PORT: String(metricsPort) } : {});
    expect(await statuses(base, ['/healthz', '/readyz'])).toEqual({ '/healthz': 200, '/readyz': 200 });
    const unknown = await answer(`${base}/no-such-path`);
    expect(unknown).toMatchObject({ status: 404, body: '' });
    expect(await answer(`${base}/metrics`)).toEqual(unknown);
    if (withMetricsPort)
      expect(await answer(`http://127.0.0.1:${metricsPort}/metrics`)).toMatchObject({
        status: 200,
        body: 'metrics\n',
      });
  },
);

// PORT is public in HTTP mode: whoever reaches it chooses how many requests to paths it does not
// serve there are (scanners, a scraper still pointed at the old /metrics). Each is answered 404;
// the log says so for the first ten a minute, with the path but never the query string.
it('logs requests to paths PORT does not serve within a budget, without their query strings', async () => {
  const base = await startHttpMode();
  for (let i = 0; i < 30; i++) {
    expect((await fetch(`${base}/scan-${i}?token=query-secret-${i}`)).status).toBe(404);
  }
  const lines = logged.filter((l) => String(l.msg).includes('PORT does not serve'));
  expect(lines).toHaveLength(10);
  expect(lines[0]).toMatchObject({ level: 30, method: 'GET', path: '/scan-0' });
  expect(JSON.stringify(logged)).not.toContain('query-secret');
  expect(logged.filter((l) => String(l.msg).includes('Unhandled HTTP request'))).toEqual([]);
});

it('without METRICS_PORT, says once at start-up that /metrics is off and how to turn it on', async () => {
  await startHttpMode();
  const said = logged.filter((l) => String(l.msg).includes('/metrics'));
  const line = expect.objectContaining({
    level: 30,
    msg: '/metrics is off: set METRICS_PORT (e.g. 9464) to serve it on a port of its own; PORT never serves it',
  });
  expect(said).toEqual([line]);
  await app?.stop();
  await startSocketMode();
  expect(logged.filter((l) => String(l.msg).includes('/metrics'))).toEqual([line]);
  await app?.stop();
  await startHttpMode({ METRICS_PORT: String(await freePort()) });
  expect(logged.filter((l) => String(l.msg).includes('/metrics'))).toEqual([]);
});

// /readyz on PORT, which in HTTP mode the internet reaches: whether the replica is ready, and
// nothing of why (the parts, the reasons, the Redis and Slack addresses, the replica and host ids),
// with or without METRICS_PORT. The reasons are on METRICS_PORT, and in the log (readinessLog.ts).

/** Redis and two hosts down, one of them with its stderr line at hand (`output` says if it may be quoted). */
const DOWN: HealthProbe = {
  redis: () => false,
  slack: () => true,
  hosts: () => false,
  whyDown: (part) =>
    part === 'redis'
      ? 'cannot reach Redis at redis://redis.internal:6379: connect ECONNREFUSED'
      : 'MSP_HOST_COMMAND exited with code 1: muse: cannot open /srv/agents/run.sock',
  hostStatus: (output) => [
    {
      hostId: 'main',
      up: false,
      role: 'owner',
      reason: `exited${output === 'withheld' ? '' : ': muse: /srv/agents'}`,
    },
    { hostId: 'ci', up: false, role: 'standby', reason: 'run by replica bot-1#b2' },
  ],
  replica: () => 'bot-0#a1',
};

const FULL_READYZ = {
  ready: false,
  redis: false,
  slack: true,
  host: false,
  hosts: {
    main: { up: false, role: 'owner', reason: 'exited: muse: /srv/agents' },
    ci: { up: false, role: 'standby', reason: 'run by replica bot-1#b2' },
  },
  replica: { id: 'bot-0#a1', owns: ['main'], standby: ['ci'] },
  reasons: {
    redis: 'cannot reach Redis at redis://redis.internal:6379: connect ECONNREFUSED',
    host: 'MSP_HOST_COMMAND exited with code 1: muse: cannot open /srv/agents/run.sock',
  },
};

async function readyz(base: string): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${base}/readyz`);
  return { status: res.status, body: await res.json() };
}

it("with METRICS_PORT, PORT's /readyz says ready or not alone, with the same status; METRICS_PORT's says why", async () => {
  const metricsPort = await freePort();
  const base = await startHttpMode({ METRICS_PORT: String(metricsPort) }, DOWN);
  expect(await readyz(base)).toEqual({ status: 503, body: { ready: false } });
  expect(await readyz(`http://127.0.0.1:${metricsPort}`)).toEqual({ status: 503, body: FULL_READYZ });
});

it("without METRICS_PORT, PORT's /readyz says ready or not alone too, with the same status", async () => {
  const down = await startHttpMode({}, DOWN);
  const answer = await fetch(`${down}/readyz`);
  const text = await answer.text();
  expect({ status: answer.status, body: JSON.parse(text) }).toEqual({ status: 503, body: { ready: false } });
  for (const leak of ['redis.internal', 'exited', 'bot-0', 'main']) expect(text).not.toContain(leak);
  await app?.stop();
  const up = await startHttpMode({}, { ...DOWN, redis: () => true, hosts: () => true });
  expect(await readyz(up)).toEqual({ status: 200, body: { ready: true } });
});
