import type { Result } from 'ioredis';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

// A host's lease: one key per host, taken only when absent (SET NX PX) and renewed by its holder,
// carrying a fencing token from the host's own counter. Lease and counter share the host's hash
// tag, so taking one is a single script on a single slot, also on Redis Cluster.

/**
 * Takes the lease when nobody holds it, or when it still holds exactly ARGV[3] (an earlier process
 * of this replica that died); returns the new fencing token, or 0.
 */
const ACQUIRE_SCRIPT = `
local held = redis.call('GET', KEYS[1])
if held and held ~= ARGV[3] then return 0 end
local token = redis.call('INCR', KEYS[2])
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. token, 'PX', ARGV[2])
return token
`;

/** Extends the lease only while it is still ours (same replica, same token). */
const RENEW_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;

/** Gives the lease up only while it is still ours. */
const RELEASE_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
`;

export interface LeaseHolder {
  /** The holding process: `<replica name>#<nonce>` (processIdentity). */
  replicaId: string;
  token: number;
}

/**
 * A process's identity in leases: its replica's name, which survives restarts, then its pid and a
 * nonce (`<replica>#<pid>.<nonce>`).
 */
export function processIdentity(replica: string, pid: number, nonce: string): string {
  return `${replica}#${pid}.${nonce}`;
}

/** The pid in a process identity, when it has one. */
export function pidOf(process: string): number | undefined {
  const match = /#(\d+)\.[^#]*$/.exec(process);
  return match ? Number(match[1]) : undefined;
}

/** The replica a process identity belongs to. */
export function replicaOf(process: string): string {
  const at = process.lastIndexOf('#');
  return at < 0 ? process : process.slice(0, at);
}

export class HostLeases {
  constructor(private readonly redis: RedisClient) {
    redis.defineCommand('csLeaseAcquire', { numberOfKeys: 2, lua: ACQUIRE_SCRIPT });
    redis.defineCommand('csLeaseRenew', { numberOfKeys: 1, lua: RENEW_SCRIPT });
    redis.defineCommand('csLeaseRelease', { numberOfKeys: 1, lua: RELEASE_SCRIPT });
  }

  /**
   * The new fencing token when this process now holds the lease; undefined when another does.
   * `replacing`: the holder this process may take it from (a dead earlier process of its replica).
   */
  async acquire(
    hostId: string,
    replicaId: string,
    ttlMs: number,
    replacing?: LeaseHolder,
  ): Promise<number | undefined> {
    const token = await this.redis.csLeaseAcquire(
      keys.hostLease(hostId),
      keys.hostFence(hostId),
      replicaId,
      String(ttlMs),
      replacing ? leaseValue(replacing) : '',
    );
    return token > 0 ? token : undefined;
  }

  /** False when the lease ran out or went to another replica. */
  async renew(hostId: string, holder: LeaseHolder, ttlMs: number): Promise<boolean> {
    return (await this.redis.csLeaseRenew(keys.hostLease(hostId), leaseValue(holder), String(ttlMs))) === 1;
  }

  async release(hostId: string, holder: LeaseHolder): Promise<void> {
    await this.redis.csLeaseRelease(keys.hostLease(hostId), leaseValue(holder));
  }

  /** Who holds each host's lease now (one round trip). */
  async holders(hostIds: readonly string[]): Promise<Map<string, LeaseHolder>> {
    const values = await Promise.all(hostIds.map((id) => this.redis.get(keys.hostLease(id))));
    const out = new Map<string, LeaseHolder>();
    hostIds.forEach((id, i) => {
      const holder = parseLease(values[i] ?? null);
      if (holder) out.set(id, holder);
    });
    return out;
  }

  /**
   * Says this process is alive now; resolves with the processes that said so within `liveMs`
   * (this one included). Entries silent for `forgetMs` are removed.
   */
  async heartbeat(process: string, nowMs: number, liveMs: number, forgetMs: number): Promise<string[]> {
    const key = keys.replicas();
    const results = await this.redis
      .multi()
      .zadd(key, nowMs, process)
      .zremrangebyscore(key, '-inf', nowMs - forgetMs)
      .zrangebyscore(key, nowMs - liveMs, '+inf')
      .exec();
    const [err, live] = results?.[2] ?? [new Error('no reply from Redis'), []];
    if (err) throw err;
    return live as string[];
  }

  /** This replica is leaving: the others' fair share grows at once. */
  async leave(replicaId: string): Promise<void> {
    await this.redis.zrem(keys.replicas(), replicaId);
  }
}

function leaseValue(holder: LeaseHolder): string {
  return `${holder.replicaId} ${holder.token}`;
}

function parseLease(raw: string | null): LeaseHolder | undefined {
  if (!raw) return undefined;
  const at = raw.lastIndexOf(' ');
  const token = Number(raw.slice(at + 1));
  return at > 0 && Number.isSafeInteger(token) ? { replicaId: raw.slice(0, at), token } : undefined;
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    csLeaseAcquire(
      leaseKey: string,
      fenceKey: string,
      replicaId: string,
      ttlMs: string,
      replacing: string,
    ): Result<number, Context>;
    csLeaseRenew(leaseKey: string, value: string, ttlMs: string): Result<number, Context>;
    csLeaseRelease(leaseKey: string, value: string): Result<number, Context>;
  }
}
