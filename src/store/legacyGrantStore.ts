import type { Logger } from 'pino';
import type { Grant, GrantBucketKey } from '../domain/grants/grant.js';
import type { GrantAuditTrail } from './grantAudit.js';
import { bucketOf, grantKeyOf, grantKeyPrefix } from './grantIds.js';
import { keys } from './keys.js';
import { type ListFilter, listGrants } from './legacyGrantListing.js';
import { fromFields, type GrantData, parseGrantData } from './legacyGrantRecord.js';
import { defineLegacyGrantScripts } from './legacyGrantScripts.js';
import type { RedisClient } from './redisConnection.js';

// Grants as releases before the compact layout stored them (grantStore.ts reads them through this
// until the last of them ends): a hash per grant, a hash per bucket, and sorted sets to list and
// sweep them (keys.ts: grant, grantBucket, grantsBy*, grantsAll, grantsExpiring). Nothing new is
// stored here; what is stored is matched, used, listed, revoked and swept as before.

const SWEEP_BATCH = 500;

export interface LegacyGrantStoreOptions {
  logger: Logger;
  audit: GrantAuditTrail;
}

/** What a count of a use found: the grant gone, counted, or counted and now spent. */
export type LegacyUse = 'gone' | 'counted' | 'spent';

export class LegacyGrantStore {
  private readonly audit: GrantAuditTrail;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: LegacyGrantStoreOptions,
  ) {
    defineLegacyGrantScripts(redis);
    this.audit = options.audit;
  }

  /** Whether any grant of this layout may still be stored: its expiry index names every one. */
  async anyStored(): Promise<boolean> {
    return (await this.redis.exists(keys.grantsExpiring())) === 1;
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

  async returnUse(grant: Pick<Grant, 'grantId'>): Promise<void> {
    const key = grantKeyOf(grant.grantId);
    if (key === undefined) return;
    if ((await this.redis.csGrantReturnUse(key, grant.grantId)) < 0) {
      this.options.logger.warn({ grantId: grant.grantId }, 'a reserved use could not be given back');
    }
  }

  /** Counts a use (its `used` entry is the caller's); a grant whose last use this was is unlisted. */
  async countUse(grant: Pick<Grant, 'grantId'>, at: string): Promise<LegacyUse> {
    const key = grantKeyOf(grant.grantId);
    if (key === undefined) return 'gone';
    const [uses, spent, d] = (await this.redis.csGrantUse(key, at, grant.grantId)) as [
      number,
      number?,
      string?,
    ];
    if (uses === -1) return 'gone';
    if (spent !== 1 || d === undefined) return 'counted';
    // Its bucket no longer holds it; the listings would skip it, and now no longer list it.
    await this.unindex(grant.grantId, parseGrantData(d)).catch((err: unknown) => {
      this.options.logger.warn({ err, grantId: grant.grantId }, 'spent grant left in its indexes');
    });
    await this.audit.record({ kind: 'exhausted', grantId: grant.grantId, at });
    return 'spent';
  }

  async get(grantId: string): Promise<Grant | undefined> {
    const key = grantKeyOf(grantId);
    if (key === undefined) return undefined;
    return fromFields(grantId, await this.redis.hgetall(key))?.grant;
  }

  list(filter: ListFilter, now: Date): Promise<Grant[]> {
    return listGrants(this.redis, filter, now.getTime());
  }

  async revoke(grantId: string, by: string, now: Date, reason?: string): Promise<boolean> {
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
    await this.audit.record({
      kind: 'revoked',
      grantId,
      by,
      at,
      ...(reason === undefined ? {} : { reason }),
    });
    return true;
  }

  /** Removes due grants, at most `limit` of them (the next call goes on where this one stopped). */
  async sweep(now: Date, limit: number): Promise<number> {
    const nowMs = now.getTime();
    const at = now.toISOString();
    let removed = 0;
    for (let left = limit; left > 0; ) {
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

  /** Takes the grant out of the listings; the expiry index is the sweep's, which removes it there. */
  async unindex(grantId: string, data: GrantData): Promise<void> {
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
