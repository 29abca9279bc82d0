import type { Result } from 'ioredis';
import type { RedisClient } from './redisConnection.js';

// The scripts of the hash layout releases before the compact one stored grants in (legacyGrantStore.ts).
// Each touches one hash tag (a grant and its bucket share it, see
// grantIds.ts), so each runs on one Cluster slot. Some build keys of that same slot from a prefix
// instead of receiving them in KEYS (a bucket names its grants by id only); Redis Cluster runs
// that, though it cannot check it. Times are ms; `end` is when a grant stops being live or listed.

// Grants and buckets carry no Redis TTL, or the lookup's latency would grow with the number of
// grants (docs/performance.md, "Auto-decide by grant, in short"). The sweep removes them.

/**
 * The live grants of one bucket. Reads the bucket and its few grants, never anything else.
 * KEYS: bucket. ARGV: grant key prefix, now. Returns {id, d, end, uses, last, left, max} rows
 * ('' for what a grant lacks); a grant by uses with none left is not live.
 */
const CANDIDATES = `
local fields = redis.call('HGETALL', KEYS[1])
local out = {}
for i = 2, #fields, 2 do
  local id = fields[i]
  local g = redis.call('HMGET', ARGV[1] .. id, 'd', 'end', 'uses', 'last', 'revAt', 'left', 'max')
  if g[1] and not g[5] and tonumber(g[2]) > tonumber(ARGV[2]) and (not g[6] or tonumber(g[6]) > 0) then
    out[#out + 1] = {id, g[1], g[2], g[3], g[4] or '', g[6] or '', g[7] or ''}
  end
end
return out
`;

/**
 * Takes one use of a live grant by uses: the check and the decrement are one step, so two
 * requests never both take the last one. KEYS: grant. ARGV: now. Returns the uses left after
 * this one, or -1 when there was none to take.
 */
const RESERVE_USE = `
local f = redis.call('HMGET', KEYS[1], 'end', 'revAt', 'left')
if not f[1] or f[2] or not f[3] or tonumber(f[1]) <= tonumber(ARGV[1]) or tonumber(f[3]) <= 0 then
  return -1
end
return redis.call('HINCRBY', KEYS[1], 'left', -1)
`;

/**
 * Gives a reserved use back, only while one is out (never more than were taken). A grant its
 * last use had taken out of its bucket goes back in, unless another grant took its place.
 * KEYS: grant. ARGV: grant id. Returns the uses left, or -1.
 */
const RETURN_USE = `
local f = redis.call('HMGET', KEYS[1], 'left', 'bk', 'cf', 'revAt', 'uses', 'max')
if not f[1] or tonumber(f[1]) + tonumber(f[5] or '0') >= tonumber(f[6] or '0') then return -1 end
local left = redis.call('HINCRBY', KEYS[1], 'left', 1)
redis.call('HDEL', KEYS[1], 'exh')
if not f[4] and f[2] and not redis.call('HGET', f[2], f[3]) then redis.call('HSET', f[2], f[3], ARGV[1]) end
return left
`;

/**
 * Counts a use. A grant by uses is spent for good, leaving its bucket, once: by the count that
 * counts its last use (as the compact layout's RECORD_USE, grantScripts.ts: not while a use that
 * may come back is out, and not once revoked). KEYS: grant. ARGV: lastUsedAt, grant id. Returns
 * {uses} (or {-1} when the grant is gone), {uses, 1, d} when this count found it newly spent.
 * Every grant hash has `end`, so the one read that the spent check needs also tells a grant that
 * is gone: a count, on every auto-decided approval, is three commands.
 */
const RECORD_USE = `
local f = redis.call('HMGET', KEYS[1], 'end', 'max', 'bk', 'cf', 'd', 'revAt')
if not f[1] then return {-1} end
redis.call('HSET', KEYS[1], 'last', ARGV[1])
local uses = redis.call('HINCRBY', KEYS[1], 'uses', 1)
if f[2] and not f[6] and uses >= tonumber(f[2]) and redis.call('HSETNX', KEYS[1], 'exh', ARGV[1]) == 1 then
  if f[3] and redis.call('HGET', f[3], f[4]) == ARGV[2] then redis.call('HDEL', f[3], f[4]) end
  return {uses, 1, f[5]}
end
return {uses}
`;

/**
 * Revokes a live grant and takes it out of its bucket, so no replica matches it from now on. A
 * grant by uses whose last use is out (taken, not yet counted) is revoked too: that use comes back
 * if its decision does not go through. KEYS: grant. ARGV: now, by, revokedAt, grant id. Returns
 * {1, d}, or {0} when it was not live.
 */
const REVOKE = `
local f = redis.call('HMGET', KEYS[1], 'end', 'revAt', 'bk', 'cf', 'd', 'left', 'uses', 'max')
if not f[1] or f[2] or tonumber(f[1]) <= tonumber(ARGV[1]) then return {0} end
if f[6] and tonumber(f[6]) <= 0 and tonumber(f[7] or '0') >= tonumber(f[8] or '0') then return {0} end
redis.call('HSET', KEYS[1], 'revAt', ARGV[3], 'revBy', ARGV[2])
if f[3] and redis.call('HGET', f[3], f[4]) == ARGV[4] then redis.call('HDEL', f[3], f[4]) end
return {1, f[5]}
`;

/**
 * Claims grants for sweeping: takes each id off the expiry index if it is due. ZREM answers 1 to
 * one sweeper only, so one replica records each `expired`; a score moved since it was read is not
 * due. KEYS: expiry index. ARGV: now, ids. Returns the ids this caller claimed.
 */
const CLAIM_EXPIRED = `
local claimed = {}
for i = 2, #ARGV do
  local score = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if score and tonumber(score) <= tonumber(ARGV[1]) and redis.call('ZREM', KEYS[1], ARGV[i]) == 1 then
    claimed[#claimed + 1] = ARGV[i]
  end
end
return claimed
`;

/**
 * Deletes a claimed grant and its bucket field if it is still due. KEYS: grant. ARGV: now, id.
 * Returns {1, d} deleted, {2, d} deleted but it was revoked, replaced or exhausted (it was
 * recorded as such: no `expired`; one whose last use was out at its end, never counted, was not),
 * {0} already gone, {-1, end} its end moved since the claim (a replica of a release that
 * refreshed grants in place): the caller puts it back on the index.
 */
const REMOVE_EXPIRED = `
local f = redis.call('HMGET', KEYS[1], 'end', 'revAt', 'bk', 'cf', 'd', 'exh')
if not f[1] then return {0} end
if tonumber(f[1]) > tonumber(ARGV[1]) then return {-1, f[1]} end
if f[3] and redis.call('HGET', f[3], f[4]) == ARGV[2] then redis.call('HDEL', f[3], f[4]) end
redis.call('DEL', KEYS[1])
if f[2] or f[6] then return {2, f[5]} end
return {1, f[5]}
`;

export function defineLegacyGrantScripts(redis: RedisClient): void {
  redis.defineCommand('csGrantCandidates', { numberOfKeys: 1, lua: CANDIDATES });
  redis.defineCommand('csGrantUse', { numberOfKeys: 1, lua: RECORD_USE });
  redis.defineCommand('csGrantReserveUse', { numberOfKeys: 1, lua: RESERVE_USE });
  redis.defineCommand('csGrantReturnUse', { numberOfKeys: 1, lua: RETURN_USE });
  redis.defineCommand('csGrantRevoke', { numberOfKeys: 1, lua: REVOKE });
  redis.defineCommand('csGrantClaimExpired', { numberOfKeys: 1, lua: CLAIM_EXPIRED });
  redis.defineCommand('csGrantRemoveExpired', { numberOfKeys: 1, lua: REMOVE_EXPIRED });
}

type Str = string | number;

declare module 'ioredis' {
  interface RedisCommander<Context> {
    csGrantCandidates(bucketKey: string, prefix: string, nowMs: Str): Result<string[][], Context>;
    csGrantUse(grantKey: string, lastUsedAt: string, grantId: string): Result<unknown[], Context>;
    csGrantReserveUse(grantKey: string, nowMs: Str): Result<number, Context>;
    csGrantReturnUse(grantKey: string, grantId: string): Result<number, Context>;
    csGrantRevoke(
      grantKey: string,
      nowMs: Str,
      by: string,
      at: string,
      grantId: string,
    ): Result<unknown[], Context>;
    csGrantClaimExpired(indexKey: string, nowMs: Str, ...grantIds: string[]): Result<string[], Context>;
    csGrantRemoveExpired(grantKey: string, nowMs: Str, grantId: string): Result<unknown[], Context>;
  }
}
