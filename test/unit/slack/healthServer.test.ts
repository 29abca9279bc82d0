import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CustomRoute } from '@slack/bolt';
import { afterEach, expect, it } from 'vitest';
import { close, healthServer } from '../../../src/slack/healthServer.js';
import { captureLogger } from '../../support/logCapture.js';

// The health server answers whoever reaches its port: whatever a request or a route does, the
// answer is one status line, never a throw that would end the process.

let server: Server | undefined;
afterEach(async () => {
  if (server) await close(server);
  server = undefined;
});

async function start(routes: CustomRoute[]) {
  const { logger, lines } = captureLogger();
  server = healthServer(routes, logger);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, logs: lines };
}

it('a route that throws, at once or later, is answered 500 and logged once without the request', async () => {
  const secretish = 'Bearer do-not-log-me';
  const { base, logs } = await start([
    {
      path: '/now',
      method: ['GET'],
      handler: (req) => {
        throw new TypeError(`cannot serve ${req.headers.authorization}`);
      },
    },
    {
      path: '/later',
      method: ['GET'],
      handler: async () => {
        await Promise.resolve();
        throw new Error('collected nothing');
      },
    },
  ]);
  expect((await fetch(`${base}/now`, { headers: { authorization: secretish } })).status).toBe(500);
  expect((await fetch(`${base}/later`)).status).toBe(500);
  expect(logs.filter((l) => l.level === 50)).toEqual([
    expect.objectContaining({ msg: 'health request failed', error: 'TypeError' }),
    expect.objectContaining({ msg: 'health request failed', error: 'Error' }),
  ]);
  expect(JSON.stringify(logs)).not.toContain('do-not-log-me');
  expect((await fetch(`${base}/nowhere`)).status).toBe(404);
});
