// A test's private Redis starts even when the port it was given is taken before redis-server
// binds it.

import { Redis } from 'ioredis';
import { expect, test } from 'vitest';
import { PrivateRedis } from './privateRedis.js';
import { portsTakenFirst } from './takenPort.js';

test('a server whose port was taken meanwhile is started again on a new port', async () => {
  const ports = await portsTakenFirst();
  let server: PrivateRedis | undefined;
  try {
    server = await PrivateRedis.start({ port: ports.port });
    expect(server.port).not.toBe(ports.takenPort);
    expect(ports.handedOut()).toBe(2);
    const client = new Redis(server.url);
    try {
      expect(await client.ping()).toBe('PONG');
    } finally {
      client.disconnect();
    }
  } finally {
    await server?.remove();
    ports.close();
  }
}, 30_000);
