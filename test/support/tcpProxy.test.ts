// Self-tests of TcpProxy in front of the tests' real Redis, spoken to with inline commands over
// a raw socket so that what the proxy holds or drops is seen byte for byte.

import net from 'node:net';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, test } from 'vitest';
import { TcpProxy } from './tcpProxy.js';
import { TEST_REDIS_URL } from './testRedis.js';

const target = new URL(TEST_REDIS_URL);
const KEY = `tcpproxy:selftest:${process.pid}`;

/** A raw client: writes lines, collects everything the other end sends. */
class RawClient {
  received = '';
  private waiters: Array<() => void> = [];

  private constructor(readonly socket: net.Socket) {
    socket.setEncoding('latin1');
    socket.on('data', (chunk: string) => {
      this.received += chunk;
      for (const w of this.waiters.splice(0)) w();
    });
  }

  static async connect(port: number): Promise<RawClient> {
    const socket = net.connect({ port, host: '127.0.0.1' });
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new RawClient(socket);
  }

  send(text: string): void {
    this.socket.write(text);
  }

  /** Resolves once `count` lines (CRLF-terminated) have arrived in total. */
  async lines(count: number): Promise<string[]> {
    for (;;) {
      const lines = this.received.split('\r\n').slice(0, -1);
      if (lines.length >= count) return lines;
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }
}

let proxy: TcpProxy | undefined;
let direct: Redis | undefined;
const clients: RawClient[] = [];

async function setup(): Promise<{ proxy: TcpProxy; client: RawClient; direct: Redis }> {
  proxy = await TcpProxy.start(Number(target.port || 6379), target.hostname);
  const client = await RawClient.connect(proxy.port);
  clients.push(client);
  direct = new Redis(TEST_REDIS_URL);
  await direct.del(KEY);
  return { proxy, client, direct };
}

afterEach(async () => {
  for (const c of clients.splice(0)) c.socket.destroy();
  await direct?.del(KEY);
  direct?.disconnect();
  await proxy?.stop();
  proxy = undefined;
  direct = undefined;
});

describe('TcpProxy', () => {
  test('passes commands and replies through unchanged', async () => {
    const { client } = await setup();
    client.send(`SET ${KEY} one\r\nGET ${KEY}\r\n`);
    expect(await client.lines(3)).toEqual(['+OK', '$3', 'one']);
  });

  test('holds replies after the marker until release; the command itself ran at once', async () => {
    const { proxy, client, direct } = await setup();
    const cue = proxy.holdRepliesAfter(KEY);
    client.send(`INCR ${KEY}\r\n`);
    await cue.fired;
    client.send('PING\r\n');
    await cue.answered;
    expect(await direct.get(KEY)).toBe('1');
    // One round trip later, whatever the proxy had let through would be here.
    await direct.ping();
    expect(client.received).toBe('');
    cue.release();
    expect(await client.lines(2)).toEqual([':1', '+PONG']);
  });

  test('drops replies after the marker until release', async () => {
    const { proxy, client, direct } = await setup();
    const cue = proxy.dropRepliesAfter(KEY);
    client.send(`SET ${KEY} dropped\r\n`);
    await cue.answered;
    // The write happened even though its reply is lost.
    expect(await direct.get(KEY)).toBe('dropped');
    cue.release();
    client.send('PING\r\n');
    expect(await client.lines(1)).toEqual(['+PONG']);
  });

  test('cuts the connection instead of delivering the reply after the marker; the command ran', async () => {
    const { proxy, client, direct } = await setup();
    const cue = proxy.cutAfter(KEY);
    const closed = new Promise<void>((resolve) => client.socket.once('close', () => resolve()));
    client.send(`INCR ${KEY}\r\n`);
    await cue.answered;
    await closed;
    expect(client.received).toBe('');
    expect(await direct.get(KEY)).toBe('1');
    // New connections pass through as before.
    const again = await RawClient.connect(proxy.port);
    clients.push(again);
    again.send('PING\r\n');
    expect(await again.lines(1)).toEqual(['+PONG']);
  });

  test('holds what the client sends from the marker on until release, then passes it on in order', async () => {
    const { proxy, client, direct } = await setup();
    client.send(`SET ${KEY} before\r\n`);
    expect(await client.lines(1)).toEqual(['+OK']);
    const cue = proxy.holdRequestsFrom(KEY);
    client.send(`SET ${KEY} held\r\n`);
    await cue.fired;
    client.send(`APPEND ${KEY} -after\r\n`);
    // One round trip later, whatever the proxy had let through would have run.
    await direct.ping();
    expect(await direct.get(KEY)).toBe('before');
    expect(client.received).toBe('+OK\r\n');
    cue.release();
    await cue.answered;
    expect(await client.lines(3)).toEqual(['+OK', '+OK', ':10']);
    expect(await direct.get(KEY)).toBe('held-after');
  });

  test('sent() sees a marker split across writes and leaves the traffic alone', async () => {
    const { proxy, client } = await setup();
    const whole = proxy.sent(`ECHO ${KEY}`);
    let fired = false;
    void whole.then(() => {
      fired = true;
    });
    const head = `ECHO ${KEY.slice(0, 5)}`;
    const headSeen = proxy.sent(head);
    client.send(head);
    await headSeen;
    expect(fired).toBe(false);
    client.send(`${KEY.slice(5)}\r\n`);
    await whole;
    expect(await client.lines(2)).toEqual([`$${KEY.length}`, KEY]);
  });
});
