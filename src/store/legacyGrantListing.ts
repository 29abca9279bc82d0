import type { Grant, GrantListFilter } from '../domain/grants/grant.js';
import { GRANT_LIST_LIMIT, newestListed } from '../domain/grants/listing.js';
import { grantKeyOf } from './grantIds.js';
import { keys } from './keys.js';
import { fromFields, isLive, type StoredGrant } from './legacyGrantRecord.js';
import type { RedisClient } from './redisConnection.js';

const PAGE = 200;

export type ListFilter = GrantListFilter;

/**
 * Live grants, newest first, at most GRANT_LIST_LIMIT, read from the smallest index that answers
 * the filter (a granter's, each channel's, or the index of all grants) rather than every grant.
 */
export async function listGrants(redis: RedisClient, filter: ListFilter, nowMs: number): Promise<Grant[]> {
  const { channels, grantedBy } = filter;
  if (channels?.length === 0) return [];
  const inChannels = channels ? new Set(channels) : undefined;
  let found: StoredGrant[];
  if (grantedBy !== undefined) {
    // One user's grants are few: filtering them by channel is cheaper than reading each channel.
    found = await liveFromIndex(redis, keys.grantsByGranter(grantedBy), nowMs, (g) =>
      inChannels ? inChannels.has(g.channel) : true,
    );
  } else if (channels) {
    const perChannel = await Promise.all(
      [...new Set(channels)].map((c) => liveFromIndex(redis, keys.grantsByChannel(c), nowMs, () => true)),
    );
    found = perChannel.flat();
  } else {
    found = await liveFromIndex(redis, keys.grantsAll(), nowMs, () => true);
  }
  const grants = found.map((s) => s.grant);
  // An earlier release's grants, few and going: those not shown are left out of all of them.
  const keep = filter.shown ? await filter.shown(grants) : undefined;
  return newestListed(keep ? grants.filter((_, i) => keep[i]) : grants);
}

/**
 * The newest live grants of one index that `accept` takes, up to the limit: enough for the merged
 * newest of several indexes. Entries of grants that are gone leave the index on the way.
 */
async function liveFromIndex(
  redis: RedisClient,
  indexKey: string,
  nowMs: number,
  accept: (grant: Grant) => boolean,
): Promise<StoredGrant[]> {
  const out: StoredGrant[] = [];
  const gone: string[] = [];
  for (let offset = 0; out.length < GRANT_LIST_LIMIT; offset += PAGE) {
    const ids = await redis.zrevrange(indexKey, offset, offset + PAGE - 1);
    const read: string[] = [];
    const keysToRead: string[] = [];
    for (const id of ids) {
      const key = grantKeyOf(id);
      if (key === undefined) gone.push(id);
      else {
        read.push(id);
        keysToRead.push(key);
      }
    }
    // Grants of different buckets are in different slots: one read each, all issued at once.
    const results = await Promise.all(keysToRead.map((key) => redis.hgetall(key)));
    results.forEach((fields, i) => {
      const stored = fromFields(read[i]!, fields);
      if (!stored) gone.push(read[i]!);
      else if (isLive(stored, nowMs) && accept(stored.grant)) out.push(stored);
    });
    if (ids.length < PAGE) break;
  }
  // Removed after paging, so that the offsets above stay where they were.
  if (gone.length > 0) await redis.zrem(indexKey, ...gone);
  return out;
}
