// The card's own two calls, sent as JSON over the shared pool: what Slack receives, and each
// failure thrown as the Web API client's error, so the failure table reads them as before.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { WebClient } from '@slack/web-api';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { directCardCalls, readAnswer } from '../../../src/slack/cardCalls.js';
import { classifySlackError } from '../../../src/slack/slackFailures.js';
import { createSlackPool } from '../../../src/slack/slackFetch.js';
import { SlackNoticeSender } from '../../../src/slack/slackNotices.js';
import { FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';

interface Seen {
  url: string;
  headers: http.IncomingHttpHeaders;
  body: unknown;
}

const servers: http.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((r) => s.close(r))));
});

/** A Slack stand-in answering every call with `reply`; resolves with its API URL and what it saw. */
async function slack(reply: (res: http.ServerResponse) => void): Promise<{ apiUrl: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk) => {
      raw += chunk;
    });
    req.on('end', () => {
      seen.push({ url: req.url ?? '', headers: req.headers, body: JSON.parse(raw) });
      reply(res);
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { apiUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`, seen };
}

const json =
  (status: number, body: object, headers: Record<string, string> = {}) =>
  (res: http.ServerResponse) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };

function calls(apiUrl: string, timeoutMs = 2_000) {
  return directCardCalls({ token: FAKE_SLACK_BOT_TOKEN, apiUrl, dispatcher: createSlackPool(), timeoutMs });
}

const CARD = { channel: 'C0CARDS', text: 'Approval needed', blocks: [{ type: 'divider' }] };

describe('chat.postMessage and chat.update as JSON', () => {
  it('posts the card as JSON with the bot token and answers with its place', async () => {
    const { apiUrl, seen } = await slack(json(200, { ok: true, ts: '1.0001', channel: 'C0CARDS' }));
    expect(await calls(apiUrl).postMessage(CARD)).toEqual({ ts: '1.0001', channel: 'C0CARDS' });
    await calls(apiUrl).update({ ...CARD, ts: '1.0001' });
    expect(seen.map((s) => s.url)).toEqual(['/api/chat.postMessage', '/api/chat.update']);
    expect(seen[0]!.headers.authorization).toBe(`Bearer ${FAKE_SLACK_BOT_TOKEN}`);
    expect(seen[0]!.headers['content-type']).toMatch(/^application\/json/);
    // Blocks travel as JSON, not as a JSON string inside a form; a post never unfurls.
    expect(seen[0]!.body).toEqual({ ...CARD, unfurl_links: false, unfurl_media: false });
  });

  it.each([
    [
      'a 429',
      json(429, { ok: false, error: 'ratelimited' }, { 'retry-after': '7' }),
      { kind: 'rateLimited', retryAfterMs: 7_000 },
    ],
    ['a 503', json(503, {}), { kind: 'retry', error: 'http_503' }],
    ['a 400', json(400, {}), { kind: 'refused', error: 'http_400' }],
    [
      'ok: false',
      json(200, { ok: false, error: 'channel_not_found' }),
      { kind: 'notInChannel', error: 'channel_not_found' },
    ],
    [
      'a revoked token',
      json(200, { ok: false, error: 'token_revoked' }),
      { kind: 'fatal', error: 'token_revoked' },
    ],
    [
      'a refused card',
      json(200, { ok: false, error: 'invalid_blocks' }),
      { kind: 'badMessage', error: 'invalid_blocks' },
    ],
  ])('%s is the Web API client’s error, classified as before', async (_what, reply, failure) => {
    const { apiUrl } = await slack(reply);
    const err = await calls(apiUrl)
      .postMessage(CARD)
      .catch((e: unknown) => e);
    expect(classifySlackError(err)).toEqual(failure);
  });

  it('no answer in time, or nobody listening, is a lost answer: retried', async () => {
    const { apiUrl } = await slack(() => {});
    const late = await calls(apiUrl, 200)
      .postMessage(CARD)
      .catch((e: unknown) => e);
    expect(classifySlackError(late)).toEqual({ kind: 'retry', error: 'timeout' });
    const closed = await calls('http://127.0.0.1:1/api/')
      .postMessage(CARD)
      .catch((e: unknown) => e);
    expect(classifySlackError(closed)).toEqual({ kind: 'retry', error: 'connection_refused' });
  });
});

describe('an answer that arrives in pieces', () => {
  it('is read whole once its last piece is in', async () => {
    const answer = JSON.stringify({
      ok: true,
      channel: 'C0CARDS',
      ts: '2.0002',
      message: { text: 'x'.repeat(4000) },
    });
    const { apiUrl } = await slack((res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.write(answer.slice(0, 10));
      setTimeout(() => res.end(answer.slice(10)), 20);
    });
    expect(await calls(apiUrl).postMessage(CARD)).toEqual({ ts: '2.0002', channel: 'C0CARDS' });
  });

  it('cut off before its end is a lost answer: retried', async () => {
    const { apiUrl, seen } = await slack((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
      res.write('{"ok":true,"channel":"C0CARDS","ts":"3.0003"');
      setTimeout(() => res.socket?.destroy(), 20);
    });
    const err = await calls(apiUrl)
      .postMessage(CARD)
      .catch((e: unknown) => e);
    // Slack had the call: what was lost is its answer.
    expect(seen).toHaveLength(1);
    expect(classifySlackError(err)).toMatchObject({ kind: 'retry' });
    expect(String((err as Error & { original?: Error }).original)).toMatch(
      /closed|terminated|aborted|socket/i,
    );
  });
});

describe("reading Slack's answer", () => {
  const answers = [
    // Slack's own order: read from the head, the echoed message left unparsed.
    {
      ok: true,
      channel: 'C0CARDS',
      ts: '1712345678.000200',
      message: { text: 'é ✓', blocks: [{ type: 'divider' }] },
    },
    { ok: true, channel: 'C0CARDS', ts: '1.0001' },
    // Any other shape is parsed whole.
    { ok: true, ts: '1.0001', channel: 'C0CARDS' },
    { ok: true, channel: 'C0CARDS' },
    { ok: true, channel: 'C "quoted"', ts: '1.0001' },
    { ok: true, channel: 'C0CARDS', ts: '1.0001', ok2: false, nested: { ok: false } },
    { ok: false, error: 'channel_not_found' },
  ];
  it.each(answers)('reads $ok, $channel, $ts as a full parse would (%#)', (answer) => {
    const { ok, channel, ts, error } = answer as {
      ok: boolean;
      channel?: string;
      ts?: string;
      error?: string;
    };
    const read = readAnswer(Buffer.from(JSON.stringify(answer)));
    expect({ ok: read.ok, channel: read.channel, ts: read.ts, error: read.error }).toEqual({
      ok,
      channel,
      ts,
      error,
    });
  });

  it('a head that only looks right still needs the rest to be JSON to be parsed whole', () => {
    expect(() => readAnswer(Buffer.from('{"ok":true,"channel":"C1"'))).toThrow(SyntaxError);
  });
});

describe('decision notices over the same calls', () => {
  it("a thread reply and a channel line go as JSON through the cards' calls, never through the client", async () => {
    const { apiUrl, seen } = await slack(json(200, { ok: true, ts: '1.0002', channel: 'C0CARDS' }));
    // A client that must not be used for posts: every method throws.
    const client = new Proxy({} as WebClient, {
      get: () => {
        throw new Error('the Web API client was used');
      },
    });
    const sender = new SlackNoticeSender(client, pino({ level: 'silent' }), calls(apiUrl));
    await sender.threadReply('C0CARDS', '1.0001', 'Approved by Alice');
    await sender.channelLine('C0CARDS', 'A grant answered it');
    expect(seen.map((s) => s.url)).toEqual(['/api/chat.postMessage', '/api/chat.postMessage']);
    expect(seen[0]!.headers['content-type']).toMatch(/^application\/json/);
    expect(seen.map((s) => s.body)).toEqual([
      {
        channel: 'C0CARDS',
        thread_ts: '1.0001',
        text: 'Approved by Alice',
        unfurl_links: false,
        unfurl_media: false,
      },
      { channel: 'C0CARDS', text: 'A grant answered it', unfurl_links: false, unfurl_media: false },
    ]);
  });

  it('a notice Slack refuses is not sent again', async () => {
    const { apiUrl, seen } = await slack(json(200, { ok: false, error: 'channel_not_found' }));
    const sender = new SlackNoticeSender({} as WebClient, pino({ level: 'silent' }), calls(apiUrl));
    await expect(sender.threadReply('C0GONE', '1.0001', 'Approved')).rejects.toMatchObject({
      data: { error: 'channel_not_found' },
    });
    expect(seen).toHaveLength(1);
  });
});
