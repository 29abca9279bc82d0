import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { createSlackFetch } from '../../../src/slack/slackFetch.js';

// The Web API client's transport: one kept-alive connection even when the server hints a short
// keep-alive (Node 20's fetch opened a new one per call then), and status and headers intact,
// since 429 handling reads Retry-After from them.

let server: http.Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function serve(handler: http.RequestListener): Promise<{ url: string; connections: () => number }> {
  let connections = 0;
  server = http.createServer(handler);
  server.keepAliveTimeout = 1_000; // hints `Keep-Alive: timeout=1`
  server.on('connection', () => {
    connections += 1;
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}/api/chat.postMessage`, connections: () => connections };
}

it('reuses one connection across calls when the server hints a short keep-alive', async () => {
  const { url, connections } = await serve((req, res) => {
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true,"ts":"1.1"}');
    });
  });
  const fetch = createSlackFetch();
  const call = async () => {
    const res = await fetch(url, { method: 'POST', body: 'channel=C1&text=hi' });
    expect(await res.json()).toEqual({ ok: true, ts: '1.1' });
  };
  // The pool may open a second connection while the first is being handed back; after that,
  // calls must ride the open ones (Node 20's fetch opened one per call against this server).
  await call();
  await call();
  const warm = connections();
  for (let i = 0; i < 10; i++) await call();
  expect(connections()).toBe(warm);
  expect(warm).toBeLessThanOrEqual(2);
});

it('passes status, headers and body through, and a body-less status without a body', async () => {
  let calls = 0;
  const { url } = await serve((req, res) => {
    req.resume();
    calls += 1;
    if (calls === 1) {
      res.writeHead(429, { 'retry-after': '7', 'content-type': 'application/json' });
      res.end('{"ok":false,"error":"ratelimited"}');
    } else {
      res.writeHead(204).end();
    }
  });
  const fetch = createSlackFetch();
  const limited = await fetch(url, {
    method: 'POST',
    body: 'x=1',
    headers: { 'content-type': 'text/plain' },
  });
  expect(limited.status).toBe(429);
  expect(limited.headers.get('retry-after')).toBe('7');
  expect(await limited.json()).toEqual({ ok: false, error: 'ratelimited' });
  const empty = await fetch(url, { method: 'POST', body: 'x=2' });
  expect(empty.status).toBe(204);
  expect(await empty.text()).toBe('');
});
