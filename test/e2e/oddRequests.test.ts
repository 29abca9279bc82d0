// Requests nobody signs, as anyone who can reach a port can send them: a request line whose path
// is not a URL (`//` reads as a URL with no host) must cost one answer, never the process.

import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BOT_TOKEN, freePort, type RunningBot } from '../support/bot.js';
import { FAKE_SLACK_APP_TOKEN } from '../support/fakeSecrets.js';
import { within } from '../support/rawRequest.js';
import { World } from './world.js';

/** Paths Node's parser takes and `new URL(path, base)` refuses. */
const UNPARSABLE_PATHS = ['//', '///', '/\\'];

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

/**
 * `GET <path>` written on a fresh connection, exactly as given (fetch would tidy the path);
 * resolves with the status line, or with `closed` when the connection ends without one.
 */
async function rawGet(port: number, path: string): Promise<string> {
  const socket = net.connect(port, '127.0.0.1');
  socket.on('error', () => {});
  let received = '';
  const answer = new Promise<string>((resolve) => {
    socket.on('data', (data: Buffer) => {
      received += data.toString('latin1');
      const end = received.indexOf('\r\n');
      if (end >= 0) resolve(received.slice(0, end));
    });
    socket.once('close', () => resolve('closed'));
  });
  socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
  try {
    return await within(answer, 5_000, `the answer to GET ${path}`);
  } finally {
    socket.destroy();
  }
}

async function expectRefusedAndAlive(bot: RunningBot, port: number): Promise<void> {
  for (const path of UNPARSABLE_PATHS) {
    expect({ path, answer: await rawGet(port, path) }).toEqual({ path, answer: 'HTTP/1.1 400 Bad Request' });
  }
  expect((await fetch(`http://127.0.0.1:${port}/healthz`)).status).toBe(200);
  expect(bot.proc.exitCode).toBeNull();
  expect(bot.proc.signalCode).toBeNull();
}

describe('a request whose path is not a URL', () => {
  it('in Socket Mode, on PORT: answered 400, and the bot goes on', async () => {
    world = await World.start(
      {},
      { SLACK_APP_TOKEN: FAKE_SLACK_APP_TOKEN, SLACK_SIGNING_SECRET: '' },
      { slack: { expectedToken: BOT_TOKEN }, appToken: FAKE_SLACK_APP_TOKEN },
    );
    await expectRefusedAndAlive(world.bot, world.bot.port);
  });

  it('in HTTP mode, on METRICS_PORT: answered 400, and the bot goes on', async () => {
    const metricsPort = await freePort();
    world = await World.start({}, { METRICS_PORT: String(metricsPort) });
    await expectRefusedAndAlive(world.bot, metricsPort);
    expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(200);
  });

  it('in HTTP mode, on PORT: answered 400 before Bolt, with no error line', async () => {
    world = await World.start();
    const logged = world.bot.logs.length;
    await expectRefusedAndAlive(world.bot, world.bot.port);
    // Bolt would log each one at error level, as a failure of its own, and answer 500.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(world.bot.logs.slice(logged).filter((l) => (l.level ?? 0) >= 50)).toEqual([]);
  });
});
