// The tests' cluster starts even when a port it was given is taken before redis-server binds it,
// as someone else's server can take a port found free (CI saw a node not start once).

import { expect, test } from 'vitest';
import { RedisCluster } from './redisCluster.js';
import { portsTakenFirst } from './takenPort.js';

test('a node whose port was taken meanwhile is started again, with the rest, on new ports', async () => {
  const ports = await portsTakenFirst();
  let cluster: RedisCluster | undefined;
  try {
    // The first node cannot bind the first port handed out.
    cluster = await RedisCluster.start({ port: ports.port });
    expect(cluster.nodes.map((n) => n.port)).not.toContain(ports.takenPort);
    // Six ports for the try that failed, six for the one that started.
    expect(ports.handedOut()).toBe(12);
    const client = cluster.client();
    try {
      await client.set('cs:test:{a}', '1');
      expect(await client.get('cs:test:{a}')).toBe('1');
    } finally {
      client.disconnect();
    }
  } finally {
    await cluster?.stop();
    ports.close();
  }
}, 30_000);
