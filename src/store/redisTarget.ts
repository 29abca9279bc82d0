// Where Redis is: one server, a Sentinel set or a Cluster. config/redisConfig.ts reads it from the
// environment; redisConnection.ts builds the client.

export interface HostPort {
  host: string;
  port: number;
}

export type RedisTarget =
  | { kind: 'single'; url: string }
  | {
      kind: 'sentinel';
      sentinels: HostPort[];
      /** The master's name, as the sentinels monitor it. */
      name: string;
      db: number;
      /** For the master and its replicas. */
      username?: string;
      password?: string;
      /** For the sentinels themselves. */
      sentinelPassword?: string;
    }
  | { kind: 'cluster'; nodes: HostPort[]; password?: string };
