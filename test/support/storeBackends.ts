// The Redis deployments the store integration tests run on: one Redis (the file's own database
// or server) and a real three-master Cluster. Clients come from createRedisClient, as the bot's
// do, and refuse cross-slot scripts and pipelines on both (slotCheck.ts): on one Redis nothing
// else would, and on the Cluster ioredis lets two slots of one node through.

import { createRedisClient, type RedisClient } from '../../src/store/redisConnection.js';
import { RedisCluster } from './redisCluster.js';
import { refuseCrossSlot } from './slotCheck.js';

export type BackendKind = 'single' | 'cluster';
export const BACKENDS: BackendKind[] = ['single', 'cluster'];

export interface StoreBackend {
  kind: BackendKind;
  /** A new client; the caller quits it (or close() disconnects every client made here). */
  connect(options?: { slotCheck?: boolean }): RedisClient;
  /** Empties what this backend's tests use. */
  flush(): Promise<void>;
  close(): Promise<void>;
}

/**
 * `single` gives the one-Redis URL (with its database, if any) and how to give it back; it is
 * only called for that kind.
 */
export async function openBackend(
  kind: BackendKind,
  single: () => Promise<{ url: string; stop?: () => Promise<void> }>,
): Promise<StoreBackend> {
  const clients: RedisClient[] = [];
  const made = (client: RedisClient, slotCheck: boolean) => {
    clients.push(client);
    // A failed command rejects for its caller; the event only repeats it, or reports a write that
    // raced QUIT as a file's clients close.
    client.on('error', () => {});
    return slotCheck ? refuseCrossSlot(client) : client;
  };
  const closeClients = async () => {
    await Promise.all(clients.splice(0).map((c) => c.quit().catch(() => c.disconnect())));
  };
  // The tests' own commands fail rather than wait for ever on a server that went away. Otherwise
  // as the bot's: auto-pipelined on a Cluster, where ioredis routes each batch by its first key.
  const options = { maxRetriesPerRequest: 3 } as const;
  if (kind === 'cluster') {
    const cluster = await RedisCluster.start();
    const target = { kind: 'cluster', nodes: cluster.nodes } as const;
    return {
      kind,
      connect: ({ slotCheck = true } = {}) => made(createRedisClient(target, options), slotCheck),
      flush: () => cluster.flush(),
      close: async () => {
        await closeClients();
        await cluster.stop();
      },
    };
  }
  const { url, stop } = await single();
  const target = { kind: 'single', url } as const;
  return {
    kind,
    connect: ({ slotCheck = true } = {}) => made(createRedisClient(target, options), slotCheck),
    flush: async () => {
      const redis = createRedisClient(target, { ...options, lazyConnect: true });
      try {
        await redis.flushdb();
      } finally {
        redis.disconnect();
      }
    },
    close: async () => {
      await closeClients();
      await stop?.();
    },
  };
}
