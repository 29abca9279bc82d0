// The tests' MONITOR reader parses Redis's lines itself: what it reports must be what was sent.

import { once } from 'node:events';
import { createServer } from 'node:net';
import { Redis } from 'ioredis';
import { expect, test } from 'vitest';
import { PrivateRedis } from './privateRedis.js';
import { startMonitor } from './redisMonitor.js';

test('reports each command with its arguments as sent, its database and its source', async () => {
  // A server of its own: traffic from other files would come between the lines.
  const server = await PrivateRedis.start();
  const client = new Redis(`${server.url}/3`);
  const monitor = await startMonitor(server.url);
  try {
    const seen: Array<[string[], string, string]> = [];
    monitor.on('monitor', (_time, args, source, database) => seen.push([args, source, database]));
    const odd = 'a "quoted" \\ back\nline\u0001é';
    await client.set('cs:{x}', odd);
    await client.eval("return redis.call('GET', KEYS[1])", 1, 'cs:{x}');
    await client.echo('end');
    await until(() => seen.some(([args]) => args[0] === 'echo'));
    const set = seen.find(([args]) => args[0] === 'set')!;
    // é goes as UTF-8 bytes; the reader gives bytes as latin1 characters, as the tests compare.
    expect(set[0]).toEqual(['set', 'cs:{x}', Buffer.from(odd).toString('latin1')]);
    expect(set[2]).toBe('3');
    expect(seen.find(([, source]) => source === 'lua')?.[0]).toEqual(['GET', 'cs:{x}']);
  } finally {
    monitor.disconnect();
    client.disconnect();
    await server.remove();
  }
}, 30_000);

test('starts when a monitored line comes in the same read as MONITOR’s +OK', async () => {
  // ioredis's monitor() threw "Command queue state error" from its socket handler here, an
  // uncaught exception that failed a whole run while other files' traffic was monitored.
  const server = createServer((socket) => {
    socket.once('data', () => socket.write('+OK\r\n+1796657838.046323 [13 lua] "GET" "cs:lease:{h1}"\r\n'));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  const seen: Array<[string[], string, string]> = [];
  const monitor = await startMonitor(`redis://127.0.0.1:${port}`);
  try {
    monitor.on('monitor', (_time, args, source, database) => seen.push([args, source, database]));
    await until(() => seen.length > 0);
    expect(seen).toEqual([[['GET', 'cs:lease:{h1}'], 'lua', '13']]);
  } finally {
    monitor.disconnect();
    server.close();
  }
});

async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
}
