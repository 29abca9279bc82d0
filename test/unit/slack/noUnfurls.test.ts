// No message the bot posts unfurls, whichever way it leaves: the card calls sent as JSON, or the
// Web API client every other post goes through (thread lines, DMs, batch summaries).

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { directCardCalls } from '../../../src/slack/cardCalls.js';
import { createSlackPool } from '../../../src/slack/slackFetch.js';
import { createWebClient } from '../../../src/slack/webClient.js';
import { FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A Slack stand-in answering ok; each request's body, read as JSON or as a form. */
async function slack(): Promise<{ apiUrl: string; bodies: Array<Record<string, unknown>> }> {
  const bodies: Array<Record<string, unknown>> = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => {
      raw += chunk;
    });
    req.on('end', () => {
      bodies.push(
        req.headers['content-type']?.startsWith('application/json')
          ? JSON.parse(raw)
          : Object.fromEntries(new URLSearchParams(raw)),
      );
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ ok: true, ts: '1.0001', channel: 'C0LINES' }));
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { apiUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`, bodies };
}

const unfurls = (body: Record<string, unknown>) => [String(body.unfurl_links), String(body.unfurl_media)];

it('a post through the Web API client goes with link and media previews off, whoever forgot them', async () => {
  const { apiUrl, bodies } = await slack();
  const client = createWebClient({ token: FAKE_SLACK_BOT_TOKEN, apiUrl });
  await client.chat.postMessage({ channel: 'C0LINES', text: 'see https://example.com/x' });
  await client.chat.postMessage({ channel: 'C0LINES', text: 'asked for it', unfurl_links: true });
  expect(bodies.map(unfurls)).toEqual([
    ['false', 'false'],
    ['false', 'false'],
  ]);
});

it('a post through the card calls goes with link and media previews off (a batch summary sets none)', async () => {
  const { apiUrl, bodies } = await slack();
  const calls = directCardCalls({ token: FAKE_SLACK_BOT_TOKEN, apiUrl, dispatcher: createSlackPool() });
  await calls.postMessage({ channel: 'C0LINES', text: 'a summary', blocks: [{ type: 'divider' }] });
  expect(bodies.map(unfurls)).toEqual([['false', 'false']]);
});
