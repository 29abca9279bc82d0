import type { Redis, Result } from 'ioredis';
import { keys } from './keys.js';
import { ApprovalRecord, Claim, isTerminal } from './record.js';

// Compare-and-set on the record's version. Only the version field is compared, so Redis never
// has to decode the JSON.
const CREATE_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'd', ARGV[2])
return 1
`;

const CAS_SCRIPT = `
local cur = redis.call('HGET', KEYS[1], 'v')
if not cur then return -1 end
if cur ~= ARGV[1] then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3])
if ARGV[4] ~= '0' then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return 1
`;

// Delete a claim only if it is still ours: a late failure must not free someone else's claim.
const RELEASE_SCRIPT = `
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
if string.find(cur, ARGV[1], 1, true) then return redis.call('DEL', KEYS[1]) end
return 0
`;

export interface ApprovalStoreOptions {
  /** How long a final record (and its message mapping) is kept. */
  resolvedTtlMs: number;
  /** How long an unanswered claim blocks other clicks on the same stage. */
  claimTtlMs?: number;
}

export type Mutation = (record: ApprovalRecord) => ApprovalRecord | undefined;

export interface UpdateResult {
  record: ApprovalRecord;
  changed: boolean;
  /** The record the mutation was applied to. */
  previous: ApprovalRecord;
}

export type ClaimResult = { ok: true } | { ok: false; holder: Claim | undefined };

const MAX_CAS_ATTEMPTS = 20;

export class ApprovalStore {
  private readonly claimTtlMs: number;

  constructor(
    private readonly redis: Redis,
    private readonly options: ApprovalStoreOptions,
  ) {
    this.claimTtlMs = options.claimTtlMs ?? 24 * 60 * 60 * 1000;
    redis.defineCommand('csCreate', { numberOfKeys: 1, lua: CREATE_SCRIPT });
    redis.defineCommand('csCas', { numberOfKeys: 1, lua: CAS_SCRIPT });
    redis.defineCommand('csRelease', { numberOfKeys: 1, lua: RELEASE_SCRIPT });
  }

  async get(approvalId: string): Promise<ApprovalRecord | undefined> {
    const raw = await this.redis.hget(keys.approval(approvalId), 'd');
    return raw === null ? undefined : ApprovalRecord.parse(JSON.parse(raw));
  }

  /**
   * The dedupe gate: only one of several racing creators wins. Returns false when a record for
   * this approvalId already exists.
   */
  async createIfAbsent(record: ApprovalRecord): Promise<boolean> {
    // The open-set insert rides in the same round trip; it is harmless when the record existed.
    const results = await this.redis
      .pipeline()
      .csCreate(keys.approval(record.approvalId), String(record.version), JSON.stringify(record))
      .sadd(keys.openApprovals(record.hostId), record.approvalId)
      .exec();
    const [err, created] = results?.[0] ?? [new Error('no reply'), 0];
    if (err) throw err;
    return created === 1;
  }

  /**
   * Reads the record, applies a pure mutation and writes it back only if nobody else wrote in
   * between; on a conflict it re-reads and tries again. The mutation returns undefined for "no
   * change". Resolves with the stored record and whether it changed, or undefined if there is none.
   */
  async update(approvalId: string, mutate: Mutation): Promise<UpdateResult | undefined> {
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      const current = await this.get(approvalId);
      if (!current) return undefined;
      const next = mutate(current);
      if (!next) return { record: current, changed: false, previous: current };
      const written: ApprovalRecord = {
        ...next,
        version: current.version + 1,
        updatedAt: new Date().toISOString(),
      };
      const terminal = isTerminal(written);
      const ttl = terminal ? this.options.resolvedTtlMs : 0;
      const result = await this.redis.csCas(
        keys.approval(approvalId),
        String(current.version),
        String(written.version),
        JSON.stringify(written),
        String(ttl),
      );
      if (result === 1) {
        if (terminal && !isTerminal(current)) await this.onFinal(written);
        return { record: written, changed: true, previous: current };
      }
      if (result === -1) return undefined;
    }
    throw new Error(`approval ${approvalId}: too many concurrent updates`);
  }

  private async onFinal(record: ApprovalRecord): Promise<void> {
    const pipe = this.redis.pipeline().srem(keys.openApprovals(record.hostId), record.approvalId);
    if (record.slack.ts)
      pipe.pexpire(keys.message(record.slack.channel, record.slack.ts), this.options.resolvedTtlMs);
    await pipe.exec();
  }

  async mapMessage(approvalId: string, channel: string, ts: string): Promise<void> {
    await this.redis.set(keys.message(channel, ts), approvalId);
  }

  async findByMessage(channel: string, ts: string): Promise<string | undefined> {
    return (await this.redis.get(keys.message(channel, ts))) ?? undefined;
  }

  async openApprovalIds(hostId: string): Promise<string[]> {
    return this.redis.smembers(keys.openApprovals(hostId));
  }

  /** Drops a final approval from its host's open set (createIfAbsent may have re-added it). */
  async forgetOpen(hostId: string, approvalId: string): Promise<void> {
    await this.redis.srem(keys.openApprovals(hostId), approvalId);
  }

  /** Atomically claims one stage for one click; a second click gets the holder back. */
  async claimStage(approvalId: string, claim: Claim): Promise<ClaimResult> {
    const key = keys.claim(approvalId, claim.sourceIndex);
    const ok = await this.redis.set(key, JSON.stringify(claim), 'PX', this.claimTtlMs, 'NX');
    if (ok === 'OK') return { ok: true };
    const raw = await this.redis.get(key);
    return { ok: false, holder: raw ? Claim.parse(JSON.parse(raw)) : undefined };
  }

  async releaseClaim(approvalId: string, sourceIndex: number, commandId: string): Promise<void> {
    await this.redis.csRelease(keys.claim(approvalId, sourceIndex), commandId);
  }

  /** Held while posting a card; false means another worker is posting it right now. */
  async acquirePostLease(approvalId: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(keys.postLease(approvalId), '1', 'PX', ttlMs, 'NX')) === 'OK';
  }

  async releasePostLease(approvalId: string): Promise<void> {
    await this.redis.del(keys.postLease(approvalId));
  }
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    csCas(
      key: string,
      expectedVersion: string,
      nextVersion: string,
      json: string,
      ttlMs: string,
    ): Result<number, Context>;
    csRelease(key: string, commandId: string): Result<number, Context>;
    csCreate(key: string, version: string, json: string): Result<number, Context>;
  }
}
