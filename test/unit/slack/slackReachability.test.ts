import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type FetchFunction, LogLevel, WebClient } from '@slack/web-api';
import { afterEach, describe, expect, it } from 'vitest';
import { createSlackFetch } from '../../../src/slack/slackFetch.js';
import {
  describeSlackFailure,
  observedFetch,
  SlackReachability,
} from '../../../src/slack/slackReachability.js';
import { freePort } from '../../support/bot.js';
import { FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';
import { captureLogger } from '../../support/logCapture.js';

type Json = Record<string, unknown>;

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A local "Slack" that answers every call with `status` and `body`. */
async function slackAnswering(status: number, body: Json): Promise<string> {
  const server = createServer((_req, res) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`;
}

/** The error a real Web API client throws for auth.test against `apiUrl`. */
async function authTestError(apiUrl: string, fetch?: FetchFunction): Promise<unknown> {
  const client = new WebClient(FAKE_SLACK_BOT_TOKEN, {
    slackApiUrl: apiUrl,
    retryConfig: { retries: 0 },
    logLevel: LogLevel.ERROR,
    ...(fetch ? { fetch } : {}),
  });
  return client.auth.test().then(
    () => {
      throw new Error('auth.test succeeded');
    },
    (err: unknown) => err,
  );
}

describe('describeSlackFailure', () => {
  it('names the refused address, through the client transport and through plain fetch', async () => {
    const port = await freePort();
    const apiUrl = `http://127.0.0.1:${port}/api/`;
    expect(describeSlackFailure(await authTestError(apiUrl, createSlackFetch()))).toBe(
      `ECONNREFUSED 127.0.0.1:${port}`,
    );
    // Node's fetch says only "fetch failed"; the reason is in its cause.
    expect(describeSlackFailure(await authTestError(apiUrl))).toBe(`ECONNREFUSED 127.0.0.1:${port}`);
  });

  it('names a host name that does not resolve', async () => {
    const err = await authTestError('http://slack.invalid/api/', createSlackFetch());
    expect(describeSlackFailure(err)).toMatch(/^(ENOTFOUND|EAI_AGAIN) slack\.invalid$/);
  });

  it('gives the HTTP status, or the error Slack answered', async () => {
    expect(describeSlackFailure(await authTestError(await slackAnswering(503, {}), createSlackFetch()))).toBe(
      'HTTP 503',
    );
    const refused = await authTestError(await slackAnswering(200, { ok: false, error: 'invalid_auth' }));
    expect(describeSlackFailure(refused)).toBe('Slack answered invalid_auth');
  });
});

describe('SlackReachability', () => {
  it('says a failure once per URL and cause, repeats at debug, and says when Slack is back', () => {
    const { lines, logger } = captureLogger();
    const reachability = new SlackReachability(logger);
    const auth = 'http://127.0.0.1:9/api/auth.test';
    const open = 'http://127.0.0.1:9/api/apps.connections.open';
    reachability.failed(auth, 'ECONNREFUSED 127.0.0.1:9');
    reachability.failed(open, 'ECONNREFUSED 127.0.0.1:9');
    reachability.failed(auth, 'ECONNREFUSED 127.0.0.1:9');
    reachability.failed(open, 'ECONNREFUSED 127.0.0.1:9');
    expect(reachability.problem()).toBe(`cannot reach Slack at ${auth}: ECONNREFUSED 127.0.0.1:9`);
    reachability.failed(auth, 'HTTP 503');
    reachability.reached(auth);
    reachability.reached(auth);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [50, `cannot reach Slack at ${auth}: ECONNREFUSED 127.0.0.1:9; retrying`],
      [50, `cannot reach Slack at ${open}: ECONNREFUSED 127.0.0.1:9; retrying`],
      [20, 'Slack still unreachable; retrying'],
      [20, 'Slack still unreachable; retrying'],
      [50, `cannot reach Slack at ${auth}: HTTP 503; retrying`],
      [30, 'Slack reachable again'],
    ]);
    expect(reachability.problem()).toBe(`cannot reach Slack at ${open}: ECONNREFUSED 127.0.0.1:9`);
  });

  it('observedFetch reports network failures and 5xx, and passes every answer through', async () => {
    const { lines, logger } = captureLogger();
    const reachability = new SlackReachability(logger);
    const fetch = observedFetch(createSlackFetch(), reachability);
    const port = await freePort();
    await expect(
      fetch(`http://127.0.0.1:${port}/api/apps.connections.open`, { method: 'POST' }),
    ).rejects.toThrow();
    const failing = await slackAnswering(502, { ok: false });
    expect((await fetch(`${failing}apps.connections.open`, { method: 'POST' })).status).toBe(502);
    const working = await slackAnswering(200, { ok: true });
    expect((await fetch(`${working}apps.connections.open`, { method: 'POST' })).status).toBe(200);
    expect(lines.map((l) => l.msg)).toEqual([
      `cannot reach Slack at http://127.0.0.1:${port}/api/apps.connections.open: ECONNREFUSED 127.0.0.1:${port}; retrying`,
      `cannot reach Slack at ${failing}apps.connections.open: HTTP 502; retrying`,
    ]);
  });
});
