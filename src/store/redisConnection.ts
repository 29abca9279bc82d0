import { Cluster, Redis } from 'ioredis';
import { coalesceWrites } from './coalescedWrites.js';
import type { RedisTarget } from './redisTarget.js';

/**
 * What every store module talks to: one Redis (directly or found through Sentinel) or a Redis
 * Cluster. Cluster has the same commands, defineCommand and pipelines, but a script or pipeline
 * may only touch keys of one slot (one hash tag, see keys.ts).
 */
export type RedisClient = Redis | Cluster;

export interface ConnectionOptions {
  /** null: a command waits while Redis is away instead of failing (the bot's default). */
  maxRetriesPerRequest?: number | null;
  /** Delay before reconnecting (ms), or null to give up. */
  retryStrategy?: (times: number) => number | null;
  lazyConnect?: boolean;
  /**
   * Commands issued in the same tick go out in one write per node. On by default on a Cluster
   * only, where the single-slot steps of one operation (issued together, see approvalScripts.ts)
   * go to several nodes anyway. On one Redis (direct or through Sentinel) it stays off: ioredis
   * defers an auto-pipelined command to the next turn of the event loop, and holds it while an
   * earlier batch awaits its replies, whereas a pipeline is written at once. Commands would then
   * leave in another order than they were issued (a record's open-set entry ahead of the record),
   * and one slow reply would hold back every command after it. Without it, commands issued
   * together still leave at once, in order, in one socket write (coalescedWrites.ts), and cost
   * one round trip of waiting.
   */
  enableAutoPipelining?: boolean;
}

const DEFAULTS: Required<Omit<ConnectionOptions, 'enableAutoPipelining'>> = {
  maxRetriesPerRequest: null,
  retryStrategy: (times) => Math.min(times * 200, 5_000),
  lazyConnect: false,
};

export function createRedisClient(target: RedisTarget, options: ConnectionOptions = {}): RedisClient {
  const { maxRetriesPerRequest, retryStrategy, lazyConnect, enableAutoPipelining } = {
    ...DEFAULTS,
    enableAutoPipelining: target.kind === 'cluster',
    ...options,
  };
  switch (target.kind) {
    case 'single':
      return coalesced(
        new Redis(target.url, {
          maxRetriesPerRequest,
          retryStrategy,
          lazyConnect,
          enableAutoPipelining,
        }),
      );
    case 'sentinel':
      return coalesced(
        new Redis({
          sentinels: target.sentinels,
          name: target.name,
          db: target.db,
          ...(target.username ? { username: target.username } : {}),
          ...(target.password ? { password: target.password } : {}),
          ...(target.sentinelPassword ? { sentinelPassword: target.sentinelPassword } : {}),
          maxRetriesPerRequest,
          retryStrategy,
          // Sentinel itself unreachable: keep asking at the same pace as for Redis.
          sentinelRetryStrategy: retryStrategy,
          // Follow +switch-master at once. Without it the connection stays on the old master
          // until Sentinel demotes it, seconds later: writes it acknowledges meanwhile are lost,
          // and host leases read there let two replicas own one host (docs/replicas.md).
          failoverDetector: true,
          lazyConnect,
          enableAutoPipelining,
        }),
      );
    case 'cluster':
      return new Cluster(target.nodes, {
        clusterRetryStrategy: retryStrategy,
        lazyConnect,
        enableAutoPipelining,
        redisOptions: {
          maxRetriesPerRequest,
          ...(target.password ? { password: target.password } : {}),
        },
      });
  }
}

/** Auto-pipelining already writes a turn's commands together; otherwise the socket is corked. */
function coalesced(redis: Redis): Redis {
  return redis.options.enableAutoPipelining ? redis : coalesceWrites(redis);
}
