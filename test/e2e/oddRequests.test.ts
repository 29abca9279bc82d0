// Requests nobody signs, as anyone who can reach a port can send them: a request line whose path
// is not a URL (`//` reads as a URL with no host) must cost one answer, never the process, and a
// request sent slowly must not hold its connection for minutes.

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

interface RawConnection {
  socket: net.Socket;
  /** The answer's status line, or `closed` when the connection ends without one. */
  answer: Promise<string>;
  closed: Promise<void>;
}

/** A fresh connection with `text` written on it exactly as given (fetch would tidy a path). */
function rawConnection(port: number, text: string): RawConnection {
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
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  socket.write(text);
  return { socket, answer, closed };
}

/** `GET <path>`, exactly as given; resolves with the answer's status line. */
async function rawGet(port: number, path: string): Promise<string> {
  const { socket, answer } = rawConnection(
    port,
    `GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
  );
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

/** Writes a byte every `everyMs` while the connection lasts: a request that never quite arrives. */
function trickle({ socket, closed }: RawConnection, byte: string, everyMs: number): void {
  const timer = setInterval(() => socket.write(byte), everyMs);
  void closed.then(() => clearInterval(timer));
}

describe('a request that arrives too slowly', () => {
  // Node's own defaults held it for 300 s (60 s for headers); Slack sends a request whole.
  it('is answered 408 and its connection closed: a body within 3 s of its headers, headers within 10 s', async () => {
    const metricsPort = await freePort();
    world = await World.start({}, { METRICS_PORT: String(metricsPort) });
    const { port } = world.bot;
    const started = Date.now();
    const slow = {
      // A body that trickles in, never whole, to the port Slack reaches, under headers that pass
      // for Slack's (as an attacker's can: the signature is checked only once the body is read).
      body: rawConnection(
        port,
        `POST /slack/events HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nX-Slack-Request-Timestamp: ${Math.floor(Date.now() / 1000)}\r\nX-Slack-Signature: v0=${'0'.repeat(64)}\r\nContent-Length: 100000\r\n\r\n`,
      ),
      // Headers that never end, on each port.
      headers: rawConnection(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: '),
      metricsHeaders: rawConnection(metricsPort, 'GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: '),
    };
    for (const connection of Object.values(slow)) trickle(connection, 'x', 200);

    const ended = async ({ answer, closed }: RawConnection) => {
      const status = await answer;
      await closed;
      return { status, afterS: Math.round((Date.now() - started) / 1000) };
    };
    const [body, headers, metricsHeaders] = await within(
      Promise.all(Object.values(slow).map(ended)),
      25_000,
      'the slow requests being closed',
    );
    const timedOut = 'HTTP/1.1 408 Request Timeout';
    // Slack sends a body at once, and waits 3 s for the answer: a slower one is answered 408
    // (BODY_DEADLINE_MS), well within the 15 s request deadline.
    expect(body).toEqual({ status: timedOut, afterS: expect.toSatisfy((s: number) => s >= 2 && s <= 5) });
    for (const answer of [headers, metricsHeaders]) {
      expect(answer).toEqual({
        status: timedOut,
        afterS: expect.toSatisfy((s: number) => s >= 9 && s <= 13),
      });
    }
    expect((await fetch(`${world.bot.url}/healthz`)).status).toBe(200);
  }, 40_000);
});
