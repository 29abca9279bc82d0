// A real Redis Cluster of three masters on loopback, for one test file: three redis-server
// processes in cluster mode in a temp dir, joined with `redis-cli --cluster create`. Every port
// (client and cluster bus) comes free from the OS, so clusters of files running in parallel, and
// the tests' Redis on 6379, never meet.

import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Cluster, Redis } from 'ioredis';
import type { HostPort } from '../../src/store/redisTarget.js';
import { freePort } from './bot.js';

const run = promisify(execFile);
const MASTERS = 3;

export class RedisCluster {
  private constructor(
    private readonly procs: ChildProcess[],
    readonly nodes: HostPort[],
    private readonly dir: string,
  ) {}

  /** REDIS_CLUSTER_NODES for a bot on this cluster. */
  get nodesVar(): string {
    return this.nodes.map((n) => `${n.host}:${n.port}`).join(',');
  }

  /** Has every node ask for `password` (requirepass) from now on. */
  async requirePassword(password: string): Promise<void> {
    await Promise.all(
      this.nodes.map(async ({ host, port }) => {
        const node = new Redis({ host, port });
        try {
          await node.config('SET', 'requirepass', password);
        } finally {
          node.disconnect();
        }
      }),
    );
  }

  /**
   * `port`: where each node's ports come from (default freePort). A port found free may be taken
   * before redis-server binds it: any outgoing connection of the tests running beside this file
   * can get it as its local port. A node that exits before it answers is no cluster: the whole
   * cluster is started again on new ports, up to three times.
   */
  static async start(options: { port?: () => Promise<number> } = {}): Promise<RedisCluster> {
    const port = options.port ?? freePort;
    for (let attempt = 1; ; attempt++) {
      try {
        return await RedisCluster.startOnce(port);
      } catch (err) {
        if (!(err instanceof NodeExited) || attempt === 3) throw err;
      }
    }
  }

  private static async startOnce(freePort: () => Promise<number>): Promise<RedisCluster> {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-cluster-'));
    const procs: ChildProcess[] = [];
    const nodes: HostPort[] = [];
    const cluster = new RedisCluster(procs, nodes, dir);
    try {
      for (let i = 0; i < MASTERS; i++) {
        const [port, busPort] = [await freePort(), await freePort()];
        nodes.push({ host: '127.0.0.1', port });
        procs.push(
          spawn(
            'redis-server',
            [
              ...['--port', String(port), '--cluster-port', String(busPort), '--bind', '127.0.0.1'],
              ...['--cluster-enabled', 'yes', '--cluster-config-file', join(dir, `nodes-${port}.conf`)],
              ...['--dir', dir, '--save', '', '--appendonly', 'no', '--cluster-node-timeout', '5000'],
            ],
            { stdio: 'ignore' },
          ),
        );
      }
      await Promise.all(nodes.map((n, i) => untilAnswers(n.port, procs[i]!)));
      await run('redis-cli', [
        '--cluster',
        'create',
        ...nodes.map((n) => `${n.host}:${n.port}`),
        '--cluster-replicas',
        '0',
        '--cluster-yes',
      ]);
      await cluster.untilOk();
      return cluster;
    } catch (err) {
      await cluster.stop();
      throw err;
    }
  }

  /** A client of the whole cluster (tests' own; the store's come from createRedisClient). */
  client(): Cluster {
    return new Cluster(this.nodes);
  }

  /** Empties every master: FLUSHDB through a Cluster client reaches one node only. */
  async flush(): Promise<void> {
    await Promise.all(this.nodes.map((n) => onNode(n.port, (r) => r.flushall())));
  }

  async stop(): Promise<void> {
    await Promise.all(
      this.procs.map(async (proc) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return;
        const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
        proc.kill('SIGKILL');
        await exited;
      }),
    );
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Every node knows every slot is served: what clients need before the first command. */
  private async untilOk(): Promise<void> {
    const deadline = Date.now() + 20_000;
    for (;;) {
      const infos = await Promise.all(this.nodes.map((n) => onNode(n.port, (r) => r.cluster('INFO'))));
      if (infos.every((info) => /cluster_state:ok/.test(String(info)))) return;
      if (Date.now() > deadline) throw new Error(`cluster not ok within 20 s: ${infos.join(' | ')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** `timeoutMs`: how long a command may wait for its answer (default: as long as it takes). */
async function onNode<T>(port: number, use: (redis: Redis) => Promise<T>, timeoutMs?: number): Promise<T> {
  const redis = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    retryStrategy: () => null,
    ...(timeoutMs === undefined ? {} : { commandTimeout: timeoutMs }),
  });
  // A node still starting refuses connections: connect() reports that, the event need not.
  redis.on('error', () => {});
  try {
    await redis.connect();
    return await use(redis);
  } finally {
    redis.disconnect();
  }
}

/** A redis-server that exited before it answered (its port was taken meanwhile). */
export class NodeExited extends Error {}

async function untilAnswers(port: number, proc: ChildProcess): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      // Whatever else listens there (the port was taken meanwhile) may never answer.
      await onNode(port, (r) => r.ping(), 2_000);
      return;
    } catch (err) {
      if (proc.exitCode !== null || proc.signalCode !== null)
        throw new NodeExited(
          `redis-server on ${port} exited (${proc.exitCode ?? proc.signalCode}) before it answered`,
        );
      if (Date.now() > deadline)
        throw new Error(`redis-server on ${port} did not start: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
