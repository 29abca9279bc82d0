import type { Logger } from 'pino';
import { canonicalCapabilities } from '../domain/grants/capabilities.js';
import type { Grant, GrantBucketKey, GrantStore } from '../domain/grants/grant.js';
import { GrantAuditTrail } from './grantAudit.js';
import {
  bucketOf,
  grantIdIn,
  grantKeyOf,
  grantKeyPrefix,
  hostGrantSuffix,
  randomGrantSuffix,
} from './grantIds.js';
import { type ListFilter, listGrants } from './grantListing.js';
import { fromFields, type GrantData, pairs, parseGrantData, type StoredGrant } from './grantRecord.js';
import { defineGrantScripts } from './grantScripts.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

// Key layout: keys.ts (grant, grantBucket, grantsBy*, grantsExpiring, grantAudit). Matching reads
// one bucket; listing reads small indexes; sweeping reads the expiry index. Grants and buckets
// have no Redis TTL (see grantScripts.ts): the sweep, which every running bot does each minute,
// removes what has ended, so nothing grows without bound. The few listing indexes carry a TTL up
// to the end of the latest grant they list (plus KEEP_AFTER_END_MS). The scripts each touch one slot; the index
// writes are one pipeline per slot (the `{grants}` indexes, a channel's, a granter's), issued at
// once. An index entry may outlive its grant: listing drops such entries as it meets them.

export const DEFAULT_LISTED_HOST_GRANT_MS = 7 * 24 * 60 * 60 * 1000;

/** How long a listing index outlives the end of the latest grant it lists. */
export const KEEP_AFTER_END_MS = 60 * 60 * 1000;
const SWEEP_BATCH = 500;
/**
 * The most due grants one sweep call takes on. A wave of grants ending at once (a million made
 * the same hour) is removed over several calls, a bounded slice each minute, rather than in one
 * call that keeps this process and Redis busy for as long as the wave is large; what is left
 * is already neither matched nor listed (both check `end`), only not yet deleted.
 */
export const DEFAULT_SWEEP_LIMIT = 5_000;

export interface GrantStoreOptions {
  logger: Logger;
  /** The grant audit stream keeps at least this many entries (XADD MAXLEN ~). */
  auditMaxLen: number;
  now?: () => Date;
  /** The random part of a new bot-held grant's id (after its bucket tag, grantIds.ts). */
  newGrantId?: () => string;
  /** How long a host-held grant is listed: the host keeps it, and MSP can neither list nor revoke. */
  listedHostGrantMs?: number;
  /** The most due grants one sweep() call takes on (DEFAULT_SWEEP_LIMIT). */
  sweepLimit?: number;
}

type CreateInput = Parameters<GrantStore['create']>[0];

export class RedisGrantStore implements GrantStore {
  private readonly audit: GrantAuditTrail;
  private readonly now: () => Date;
  private readonly newGrantId: () => string;
  private readonly listedHostGrantMs: number;
  private readonly sweepLimit: number;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: GrantStoreOptions,
  ) {
    defineGrantScripts(redis);
    this.audit = new GrantAuditTrail(redis, { maxLen: options.auditMaxLen, logger: options.logger });
    this.now = options.now ?? (() => new Date());
    this.newGrantId = options.newGrantId ?? randomGrantSuffix;
    this.listedHostGrantMs = options.listedHostGrantMs ?? DEFAULT_LISTED_HOST_GRANT_MS;
    this.sweepLimit = options.sweepLimit ?? DEFAULT_SWEEP_LIMIT;
  }

  async create(input: CreateInput): Promise<Grant> {
    const now = this.now();
    const data: GrantData = {
      caller: input.caller,
      tool: input.tool,
      capabilities: canonicalCapabilities(input.capabilities),
      sandboxMode: input.sandboxMode,
      holder: input.holder,
      grantedBy: input.grantedBy,
      approvalId: input.approvalId,
      hostId: input.hostId,
      route: input.route,
      channel: input.channel,
      createdAt: now.toISOString(),
      ...(input.rulePreview === undefined ? {} : { rulePreview: input.rulePreview }),
      ...(input.scope === undefined ? {} : { scope: input.scope }),
      ...(input.lasts === undefined ? {} : { lasts: input.lasts }),
    };
    return input.holder === 'bot'
      ? this.createBotHeld(data, input.ttlMs, input.maxUses, now)
      : this.createHostHeld(data, now);
  }

  private async createBotHeld(
    data: GrantData,
    ttlMs: number | undefined,
    maxUses: number | undefined,
    now: Date,
  ): Promise<Grant> {
    if (ttlMs === undefined || !(ttlMs > 0)) throw new Error('a bot-held grant needs a positive ttlMs');
    if (maxUses !== undefined && !(Number.isSafeInteger(maxUses) && maxUses >= 1)) {
      throw new Error('a grant by uses needs at least one use');
    }
    const bucket = bucketOf(data);
    const grantId = grantIdIn(bucket, this.newGrantId());
    const nowMs = now.getTime();
    const end = nowMs + ttlMs;
    const [id, created, third, fourth] = (await this.redis.csGrantCreateBot(
      keys.grant(bucket.tag, grantId),
      bucket.key,
      grantKeyPrefix(bucket),
      JSON.stringify(data.capabilities),
      grantId,
      JSON.stringify(data),
      end,
      nowMs,
      maxUses ?? '',
      data.approvalId,
      data.grantedBy,
      data.createdAt,
    )) as [string, number, unknown?, unknown?];
    if (created !== 1) {
      // This approval's grant by this person, recorded again (two replicas, a retry): one grant.
      const existing = this.stored(id, third);
      // Indexed again so that a create retried after a failed indexing leaves the grant listed.
      await this.index(existing, nowMs);
      return existing.grant;
    }
    const grant: Grant = {
      ...data,
      grantId,
      uses: 0,
      expiresAt: new Date(end).toISOString(),
      ...(maxUses === undefined ? {} : { maxUses, usesLeft: maxUses }),
    };
    await this.index({ grant, end }, nowMs);
    const replaced =
      typeof third === 'string' ? { grantId: third, data: parseGrantData(String(fourth)) } : undefined;
    if (!replaced) {
      await this.audit.record({ kind: 'created', grant, at: data.createdAt });
      return grant;
    }
    // It ended in the script; it leaves the listings now, and the sweep deletes it at its end.
    await this.unindex(replaced.grantId, replaced.data).catch((err: unknown) => {
      this.options.logger.warn({ err, grantId: replaced.grantId }, 'replaced grant left in its indexes');
    });
    const replaces = { grantId: replaced.grantId, grantedBy: replaced.data.grantedBy };
    await this.audit.record({ kind: 'created', grant, at: data.createdAt, replaces });
    await this.audit.record({
      kind: 'replaced',
      grantId: replaced.grantId,
      by: data.grantedBy,
      replacedBy: grantId,
      approvalId: data.approvalId,
      at: data.createdAt,
    });
    return grant;
  }

  private async createHostHeld(data: GrantData, now: Date): Promise<Grant> {
    const bucket = bucketOf(data);
    const grantId = grantIdIn(bucket, hostGrantSuffix(data.approvalId));
    const nowMs = now.getTime();
    const end = nowMs + this.listedHostGrantMs;
    const [created, fields] = (await this.redis.csGrantCreateHost(
      keys.grant(bucket.tag, grantId),
      JSON.stringify(data),
      end,
    )) as [number, unknown];
    if (created === 1) {
      const grant: Grant = { ...data, grantId, uses: 0 };
      await this.index({ grant, end }, nowMs);
      await this.audit.record({ kind: 'created', grant, at: data.createdAt });
      return grant;
    }
    const existing = this.stored(grantId, fields);
    if (existing.grant.revokedAt === undefined) await this.index(existing, nowMs);
    return existing.grant;
  }

  /** One round trip (one script) whatever else is stored: see CANDIDATES in grantScripts.ts. */
  async candidates(key: GrantBucketKey, now: Date): Promise<Grant[]> {
    const bucket = bucketOf(key);
    const rows = await this.redis.csGrantCandidates(bucket.key, grantKeyPrefix(bucket), now.getTime());
    return rows.flatMap(([grantId, d, end, uses, last, left, max]) => {
      const stored = fromFields(grantId!, {
        d: d!,
        end: end!,
        uses: uses!,
        last: last!,
        left: left ?? '',
        max: max ?? '',
      });
      // The bucket's key is a hash of its four names: this check only guards against collisions.
      const g = stored?.grant;
      return g && sameBucket(g, key) ? [g] : [];
    });
  }

  async reserveUse(grant: Grant, now: Date): Promise<number | undefined> {
    const key = grantKeyOf(grant.grantId);
    if (key === undefined) return undefined;
    const left = await this.redis.csGrantReserveUse(key, now.getTime());
    return left < 0 ? undefined : left;
  }

  async returnUse(grant: Grant): Promise<void> {
    const key = grantKeyOf(grant.grantId);
    if (key === undefined) return;
    if ((await this.redis.csGrantReturnUse(key, grant.grantId)) < 0) {
      this.options.logger.warn({ grantId: grant.grantId }, 'a reserved use could not be given back');
    }
  }

  async recordUse(grant: Grant, approvalId: string, sourceIndex: number, now: Date): Promise<void> {
    const key = grantKeyOf(grant.grantId);
    const at = now.toISOString();
    // The `used` entry does not depend on the count (a use of a grant gone since is recorded all
    // the same), so both go out at once: one round trip, not two. It still precedes `exhausted`,
    // which waits for the count.
    const [[uses, spent, d]] = await Promise.all([
      key === undefined
        ? [-1]
        : (this.redis.csGrantUse(key, at, grant.grantId) as Promise<[number, number?, string?]>),
      this.audit.record({ kind: 'used', grantId: grant.grantId, approvalId, sourceIndex, at }),
    ]);
    if (uses === -1) {
      this.options.logger.warn({ grantId: grant.grantId, approvalId }, 'grant used after it was removed');
    }
    if (spent !== 1 || d === undefined) return;
    // Its bucket no longer holds it; the listings would skip it, and now no longer list it.
    await this.unindex(grant.grantId, parseGrantData(d)).catch((err: unknown) => {
      this.options.logger.warn({ err, grantId: grant.grantId }, 'spent grant left in its indexes');
    });
    await this.audit.record({ kind: 'exhausted', grantId: grant.grantId, at });
  }

  async get(grantId: string): Promise<Grant | undefined> {
    const key = grantKeyOf(grantId);
    if (key === undefined) return undefined;
    return fromFields(grantId, await this.redis.hgetall(key))?.grant;
  }

  list(filter: ListFilter, now: Date): Promise<Grant[]> {
    return listGrants(this.redis, filter, now.getTime());
  }

  async revoke(grantId: string, by: string, now: Date): Promise<boolean> {
    const key = grantKeyOf(grantId);
    if (key === undefined) return false;
    const at = now.toISOString();
    const [revoked, d] = (await this.redis.csGrantRevoke(key, now.getTime(), by, at, grantId)) as [
      number,
      string | undefined,
    ];
    if (revoked !== 1 || d === undefined) return false;
    // Done once the script ran: the indexes only decide what is listed, and listing skips it. It
    // stays on the expiry index: the sweep deletes it at its end, as it does every grant.
    await this.unindex(grantId, parseGrantData(d)).catch((err: unknown) => {
      this.options.logger.warn({ err, grantId }, 'revoked grant left in its indexes');
    });
    await this.audit.record({ kind: 'revoked', grantId, by, at });
    return true;
  }

  /** Removes due grants, at most sweepLimit of them (the next call goes on where this one stopped). */
  async sweep(now: Date): Promise<number> {
    const nowMs = now.getTime();
    const at = now.toISOString();
    let removed = 0;
    for (let left = this.sweepLimit; left > 0; ) {
      const batch = Math.min(SWEEP_BATCH, left);
      const due = await this.redis.zrangebyscore(keys.grantsExpiring(), '-inf', nowMs, 'LIMIT', 0, batch);
      if (due.length === 0) return removed;
      left -= due.length;
      const claimed = await this.redis.csGrantClaimExpired(keys.grantsExpiring(), nowMs, ...due);
      for (const grantId of claimed) {
        if (await this.removeClaimed(grantId, nowMs, at)) removed++;
      }
      if (due.length < batch) return removed;
    }
    return removed;
  }

  /** Deletes one grant this sweep claimed; true when it was removed. */
  private async removeClaimed(grantId: string, nowMs: number, at: string): Promise<boolean> {
    const key = grantKeyOf(grantId);
    if (key === undefined) return false;
    const [code, value] = (await this.redis.csGrantRemoveExpired(key, nowMs, grantId)) as [number, unknown];
    if (code === -1) {
      // Refreshed since the claim: it goes back on the expiry index at its new end.
      await this.redis.zadd(keys.grantsExpiring(), 'GT', Number(value), grantId);
      return false;
    }
    if (code === 0) {
      // Its keys ran out first: its channel and granter are unknown, listing drops those entries.
      await this.redis.zrem(keys.grantsAll(), grantId);
    } else {
      await this.unindex(grantId, parseGrantData(String(value)));
    }
    // A revoked grant was recorded as such; it is only deleted here.
    if (code !== 2) await this.audit.record({ kind: 'expired', grantId, at });
    return true;
  }

  private stored(grantId: string, fields: unknown): StoredGrant {
    const stored = fromFields(grantId, pairs(fields));
    if (!stored) throw new Error(`grant ${grantId}: stored without its data`);
    return stored;
  }

  /**
   * Lists the grant and puts it on the expiry index. Each listing index lives as long as its
   * grants; the expiry index has no TTL: it is what the sweep reads to remove every grant.
   */
  private async index({ grant, end }: StoredGrant, nowMs: number): Promise<void> {
    const created = Date.parse(grant.createdAt);
    const ttl = end - nowMs + KEEP_AFTER_END_MS;
    const listed = (index: string) =>
      this.redis.pipeline().zadd(index, created, grant.grantId).csExtendTtl(index, ttl);
    await Promise.all(
      [
        listed(keys.grantsAll()).zadd(keys.grantsExpiring(), 'GT', end, grant.grantId),
        listed(keys.grantsByChannel(grant.channel)),
        listed(keys.grantsByGranter(grant.grantedBy)),
      ].map(async (pipe) => throwFirstError(await pipe.exec())),
    );
  }

  /** Takes the grant out of the listings; the expiry index is the sweep's, which removes it there. */
  private async unindex(grantId: string, data: GrantData): Promise<void> {
    await Promise.all([
      this.redis.zrem(keys.grantsAll(), grantId),
      this.redis.zrem(keys.grantsByChannel(data.channel), grantId),
      this.redis.zrem(keys.grantsByGranter(data.grantedBy), grantId),
    ]);
  }
}

function sameBucket(a: GrantBucketKey, b: GrantBucketKey): boolean {
  return a.caller === b.caller && a.tool === b.tool && a.sandboxMode === b.sandboxMode && a.route === b.route;
}

function throwFirstError(results: Array<[Error | null, unknown]> | null): void {
  if (!results) throw new Error('no reply from Redis');
  for (const [err] of results) if (err) throw err;
}
