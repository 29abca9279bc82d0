import type { Result } from 'ioredis';
import type { RedisClient } from './redisConnection.js';

// The compact layout's scripts (grantStore.ts). A bucket tag's string holds its grants as rows in
// MessagePack (grantRows.ts: the positions, 1-based here), so each script reads one key, changes
// a row, and writes the string back: one slot on a Cluster, one round trip. The string is the
// bucket itself: matching is a GET, with no script. Times are ms; a row's end is its creation
// plus its lifetime (r[12] + r[13]).
//
// cmsgpack packs a Lua number that holds an integer as an integer: ms times and counts come back
// as written. It would pack an empty table as a map: a string left without rows is deleted.

/** The rows of KEYS[1], the row numbered by suffix `s`, and the live test the store also makes. */
const ROWS = `
local function rows_of(key)
  local raw = redis.call('GET', key)
  if not raw then return {} end
  return cmsgpack.unpack(raw)
end
local function find(rows, s)
  for i, r in ipairs(rows) do
    if r[1] == s then return r end
  end
  return nil
end
local function ends(r)
  return r[12] + r[13]
end
-- Every use counted: spent for good (RECORD_USE flags it), though a use given back before its
-- decision was counted after all (a replay) left one in usesLeft.
local function spent(r)
  return r[17] >= 0 and r[14] >= r[17]
end
local function live(r, now)
  return r[18] == 0 and ends(r) > now and r[16] ~= 0 and not spent(r)
end
-- Its last use taken for a decision, not counted: not live, but that use comes back if the
-- decision does not go through, and the grant would answer again.
local function use_out(r, now)
  return r[18] == 0 and ends(r) > now and r[16] == 0 and r[14] < r[17]
end
-- Bot-held grants of one key: caller, tool, sandbox, route and capabilities, and but for a host's
-- grant its host (a session id is the host's own word: another host's session may share it; an
-- owner's paths are those of one host).
local function same_key(r, o)
  return r[7] == 'b' and o[7] == 'b' and r[2] == o[2] and r[3] == o[3] and r[4] == o[4]
    and r[5] == o[5] and r[6] == o[6] and (string.sub(r[2], 1, 5) == 'host:' or r[10] == o[10])
end
local function save(key, rows)
  if #rows == 0 then redis.call('DEL', key) else redis.call('SET', key, cmsgpack.pack(rows)) end
end
`;

/**
 * Stores a new bot-held grant in its tag's string, in place of the live bot-held grant of the
 * same key if there is one: a new "don't ask again" makes the grant the presser's, whatever the
 * old one's scope. The old one ends in the same step, revoked by the presser and naming the new
 * one, so no replica matches it after this; so does one whose last use is out (it answers again
 * if that use comes back, and the give-back would find no live grant of the key once the new one
 * ended); an earlier release's grant of the key (its bucket shares the tag's slot) ends likewise.
 * The same approval recorded again by the same person (two replicas, a retry) finds its own grant
 * and changes nothing. This very call run again (ioredis resends a command whose reply a dropped
 * connection lost) finds the row under its new id, and answers as the first run did, so that its
 * `created` and `replaced` are recorded: the rows it ended name it. (An earlier layout's grant it
 * ended is not named again: its `replaced` is lost then.)
 * KEYS: tag string, the earlier layout's bucket. ARGV: new row (MessagePack), now, the earlier layout's
 * grant key prefix, now as ISO, the new grant's id.
 * Returns {1, replaced rows, earlier grant id, its d} when created; {0, row} when this
 * approval's grant by this granter was there already; {2, earlier grant id, its fields} when it
 * was there in the earlier layout.
 */
const CREATE_BOT = `${ROWS}
local rows = rows_of(KEYS[1])
local new = cmsgpack.unpack(ARGV[1])
local now = tonumber(ARGV[2])
if find(rows, new[1]) then
  local ended = {}
  for _, r in ipairs(rows) do
    if r[20] == new[1] then ended[#ended + 1] = cmsgpack.pack(r) end
  end
  return {1, ended}
end
local replaced = {}
for _, r in ipairs(rows) do
  if same_key(r, new) and (live(r, now) or use_out(r, now)) then
    if r[9] == new[9] and r[8] == new[8] then return {0, cmsgpack.pack(r)} end
    r[18] = now
    r[19] = new[8]
    r[20] = new[1]
    replaced[#replaced + 1] = cmsgpack.pack(r)
  end
end
local out = {1, replaced}
local earlier = redis.call('HGET', KEYS[2], new[6])
if earlier then
  local key = ARGV[3] .. earlier
  local f = redis.call('HMGET', key, 'end', 'revAt', 'left', 'd', 'uses', 'max')
  local current = f[1] and not f[2] and tonumber(f[1]) > now
  local usable = current and (not f[3] or tonumber(f[3]) > 0)
  -- Its last use out on a decision (taken, not counted): not live, but that use may come back, and
  -- the earlier layout's give-back sees only its own bucket, not this grant: it ends here too.
  local use_out = current and f[3] and tonumber(f[3]) <= 0 and tonumber(f[5] or '0') < tonumber(f[6] or '0')
  local held = (usable or use_out) and cjson.decode(f[4])
  -- Another host's grant (a session's of the same id, the owner's) is not of this key: it stays.
  if held and string.sub(new[2], 1, 5) ~= 'host:' and type(held.hostId) == 'string'
    and held.hostId ~= new[10] then held = false end
  if held then
    if usable and held.approvalId == new[9] and held.grantedBy == new[8] then
      return {2, earlier, redis.call('HGETALL', key)}
    end
    redis.call('HSET', key, 'revAt', ARGV[4], 'revBy', new[8], 'rep', ARGV[5])
    redis.call('HDEL', KEYS[2], new[6])
    out[3] = earlier
    out[4] = f[4]
  end
end
rows[#rows + 1] = new
save(KEYS[1], rows)
return out
`;

/**
 * A host-held grant under its deterministic suffix, unless a replica stored it first.
 * KEYS: tag string. ARGV: new row (MessagePack). Returns {1} when created, {0, row} when it existed.
 */
const CREATE_HOST = `${ROWS}
local rows = rows_of(KEYS[1])
local new = cmsgpack.unpack(ARGV[1])
local held = find(rows, new[1])
if held then return {0, cmsgpack.pack(held)} end
rows[#rows + 1] = new
save(KEYS[1], rows)
return {1}
`;

/**
 * Runs `body` (a script's steps, ending in `return`) once per call: its answer is kept in the
 * call's mark (KEYS[2], in the tag's slot, `ARGV[3]` ms), and the same call run again (ioredis
 * resends a command whose reply a dropped connection lost) answers from it and changes nothing. A
 * use taken or given back twice would be a use lost, or one given that was never taken.
 */
function oncePerCall(body: string): string {
  return `${ROWS}
local kept = redis.call('GET', KEYS[2])
if kept then return cjson.decode(kept) end
local function run()
${body}
end
local out = run()
redis.call('SET', KEYS[2], cjson.encode(out), 'PX', ARGV[3])
return out
`;
}

/**
 * Takes one use of a live grant by uses: the check and the decrement are one step, so two
 * requests never both take the last one. Once per call (oncePerCall). KEYS: tag string, the
 * call's mark. ARGV: suffix, now, the mark's TTL. Returns the uses left after this one, -1 when
 * there was none to take, -2 when no such row is here.
 */
const RESERVE_USE = oncePerCall(`
local rows = rows_of(KEYS[1])
local r = find(rows, ARGV[1])
if not r then return -2 end
if not live(r, tonumber(ARGV[2])) or r[16] <= 0 then return -1 end
r[16] = r[16] - 1
save(KEYS[1], rows)
return r[16]
`);

/**
 * Gives a reserved use back. A grant its last use had taken is live again, unless a grant of the
 * same key took its place since (one live grant per key): then the use stays spent. A use is
 * given back only while one is out (taken, not counted): never more than were taken, and once per
 * call (oncePerCall), so a give-back sent again does not return another request's use.
 * KEYS: tag string, the call's mark. ARGV: suffix, now, the mark's TTL. Returns {uses left},
 * {uses left, 1} when a count had found it spent (and unlisted it) and it is live again, {-1}
 * when not given back, {-2} when no such row is here.
 */
const RETURN_USE = oncePerCall(`
local rows = rows_of(KEYS[1])
local r = find(rows, ARGV[1])
if not r then return {-2} end
if r[17] < 0 or r[16] + r[14] >= r[17] then return {-1} end
if r[16] <= 0 then
  for _, o in ipairs(rows) do
    if o ~= r and same_key(o, r) and live(o, tonumber(ARGV[2])) then return {-1} end
  end
end
r[16] = r[16] + 1
-- Only a row an earlier release flagged while a use was still out (it flagged the first count
-- that found none left): that count deleted its listing entries, and it answers again, so it must
-- be listed again, or those who may revoke it would not see it. Its entries are forgotten for that.
local relist = r[21] == 1 and live(r, tonumber(ARGV[2]))
if r[21] == 1 then
  r[23] = ''
  r[24] = ''
end
r[21] = 0
save(KEYS[1], rows)
if relist then return {r[16], 1} end
return {r[16]}
`);

/**
 * Counts a use, once per approval stage: the first count sets the stage's mark (KEYS[2], in the
 * tag's slot), and any other (the old owner's, landing after a partition, once the new owner
 * replayed and counted the decision; a replay's) finds it and changes nothing. The mark is set
 * even when no row is here, so the earlier layout's count that follows is made once too. A grant
 * by uses is spent for good, once, by the count that counts its last use: with none left to take
 * but one still out on a decision it is not (that use comes back if its decision does not go
 * through, and the grant answers again), and a grant revoked meanwhile was recorded as such. So
 * `exhausted` is never followed by a use, and never follows `revoked`.
 * The mark holds the count's token (each call's own) and what it found: this very call run again
 * (ioredis resends a command whose reply a dropped connection lost) answers as the first run did,
 * so a grant's `exhausted` is not lost; any other count of the stage changes nothing.
 * KEYS: tag string, the stage's mark. ARGV: suffix, now, the mark's TTL, token (an integer).
 * Returns {uses}, {uses, row} when this count found it newly spent, {-2} when no such row is
 * here, {-3} when this stage's use was counted already.
 */
const RECORD_USE = `${ROWS}
-- The mark's value: token * 4 + 0 counted, 1 counted and newly spent, 2 no such row.
local token = tonumber(ARGV[4])
local function again(rows)
  local mark = tonumber(redis.call('GET', KEYS[2]) or '-1')
  if mark < 0 or math.floor(mark / 4) ~= token then return {-3} end
  local found = mark % 4
  if found == 2 then return {-2} end
  local r = find(rows, ARGV[1])
  -- Swept since the first run (its end came): nothing more to say of it.
  if not r then return {-3} end
  if found == 1 then return {r[14], cmsgpack.pack(r)} end
  return {r[14]}
end
local rows = rows_of(KEYS[1])
local r = find(rows, ARGV[1])
local spent = r and r[17] >= 0 and r[14] + 1 >= r[17] and r[18] == 0 and r[21] == 0
local found = (not r and 2) or (spent and 1) or 0
local mark = string.format('%.0f', token * 4 + found)
if not redis.call('SET', KEYS[2], mark, 'PX', ARGV[3], 'NX') then return again(rows) end
if not r then return {-2} end
r[14] = r[14] + 1
r[15] = tonumber(ARGV[2])
if spent then r[21] = 1 end
save(KEYS[1], rows)
if spent then return {r[14], cmsgpack.pack(r)} end
return {r[14]}
`;

/**
 * Revokes a live grant, so no replica matches it from now on. A grant by uses whose last use is
 * out (taken for a decision, not yet counted) is revoked too: it is not live, but that use comes
 * back if the decision does not go through, and would then answer again. Only a grant whose every
 * use was counted is spent for good. This very call run again (ioredis resends a command whose
 * reply a dropped connection lost) finds it revoked by the same person at the same ms, not
 * replaced, and answers as the first run did, so that the revocation is recorded and unlisted.
 * KEYS: tag string. ARGV: suffix, now, by. Returns {1, row}, {0} when it was not live, {-2}
 * when no such row is here.
 */
const REVOKE = `${ROWS}
local rows = rows_of(KEYS[1])
local r = find(rows, ARGV[1])
if not r then return {-2} end
if r[18] == tonumber(ARGV[2]) and r[19] == ARGV[3] and r[20] == '' then return {1, cmsgpack.pack(r)} end
if r[18] ~= 0 or ends(r) <= tonumber(ARGV[2]) or spent(r) then return {0} end
r[18] = tonumber(ARGV[2])
r[19] = ARGV[3]
save(KEYS[1], rows)
return {1, cmsgpack.pack(r)}
`;

/**
 * Deletes rows that have ended, at most `most` of them. Of two sweepers, one gets each row: it
 * records `expired`. KEYS: tag string. ARGV: now, most. Returns the rows deleted (each packed).
 */
const REMOVE_ENDED = `${ROWS}
local rows = rows_of(KEYS[1])
local now = tonumber(ARGV[1])
local most = tonumber(ARGV[2])
local kept, gone = {}, {}
for _, r in ipairs(rows) do
  if ends(r) <= now and #gone < most then gone[#gone + 1] = cmsgpack.pack(r) else kept[#kept + 1] = r end
end
if #gone > 0 then save(KEYS[1], kept) end
return gone
`;

/**
 * Keeps a grant's listing entries on its row, unless another replica listed it first.
 * KEYS: tag string. ARGV: suffix, channel entry, granter entry. Returns 1 when kept, 0 when not.
 */
const LISTED = `${ROWS}
local rows = rows_of(KEYS[1])
local r = find(rows, ARGV[1])
if not r or r[23] ~= '' then return 0 end
r[23] = ARGV[2]
r[24] = ARGV[3]
save(KEYS[1], rows)
return 1
`;

/**
 * Notes that a grant of this tag ends in this minute: the tag goes at the end of the minute's
 * string, and the minute on the index of minutes, in one step, so a sweep that finishes the
 * minute at that moment cannot lose it. KEYS: the minute's string, the index. ARGV: minute, tag.
 */
const END_AT = `
redis.call('APPEND', KEYS[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[1])
return 1
`;

/**
 * The sweep has read a minute's string up to `read`: kept in its progress, or, when that is all
 * of it, the minute is done with. KEYS: the minute's string, the index of minutes, the progress.
 * ARGV: minute, read. Returns 1 when the minute is done with.
 */
const ENDS_READ = `
if redis.call('STRLEN', KEYS[1]) > tonumber(ARGV[2]) then
  local at = tonumber(redis.call('HGET', KEYS[3], ARGV[1]) or '0')
  if tonumber(ARGV[2]) > at then redis.call('HSET', KEYS[3], ARGV[1], ARGV[2]) end
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return 1
`;

/**
 * A grant was just listed in a channel's stream: the channel is one "all grants" reads, and its
 * count of listings moves, so a sweep that found the stream empty before this does not forget it.
 * KEYS: the set of channels, the counts. ARGV: channel.
 */
const CHANNEL_LISTED = `
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
return 1
`;

/**
 * Forgets a channel whose stream the sweep found empty, unless a grant was listed there since it
 * read the count (its entry went in before the count moved). KEYS: the set of channels, the
 * counts. ARGV: channel, the count read ('' when there was none). Returns 1 when forgotten.
 */
const FORGET_CHANNEL = `
if (redis.call('HGET', KEYS[2], ARGV[1]) or '') ~= ARGV[2] then return 0 end
redis.call('SREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
return 1
`;

/** Extends a TTL to `ms` unless it is already at least that long: a key's TTL never shrinks. */
const EXTEND = `
local t = redis.call('PTTL', KEYS[1])
if t == -1 or (t >= 0 and t < tonumber(ARGV[1])) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return 1
`;

export function defineGrantScripts(redis: RedisClient): void {
  redis.defineCommand('csGrantCreate', { numberOfKeys: 2, lua: CREATE_BOT });
  redis.defineCommand('csGrantCreateHeld', { numberOfKeys: 1, lua: CREATE_HOST });
  redis.defineCommand('csGrantTakeUse', { numberOfKeys: 2, lua: RESERVE_USE });
  redis.defineCommand('csGrantGiveUse', { numberOfKeys: 2, lua: RETURN_USE });
  redis.defineCommand('csGrantCount', { numberOfKeys: 2, lua: RECORD_USE });
  redis.defineCommand('csGrantEnd', { numberOfKeys: 1, lua: REVOKE });
  redis.defineCommand('csGrantRemoveEnded', { numberOfKeys: 1, lua: REMOVE_ENDED });
  redis.defineCommand('csGrantListed', { numberOfKeys: 1, lua: LISTED });
  redis.defineCommand('csGrantEndAt', { numberOfKeys: 2, lua: END_AT });
  redis.defineCommand('csGrantEndsRead', { numberOfKeys: 3, lua: ENDS_READ });
  redis.defineCommand('csGrantChannelListed', { numberOfKeys: 2, lua: CHANNEL_LISTED });
  redis.defineCommand('csGrantForgetChannel', { numberOfKeys: 2, lua: FORGET_CHANNEL });
  redis.defineCommand('csExtendTtl', { numberOfKeys: 1, lua: EXTEND });
}

type Str = string | number;
type Arg = string | number | Buffer;

// Scripts that hand rows back are called as their Buffer variant (ioredis defines both): a row
// is binary, and would not survive being read as UTF-8.
declare module 'ioredis' {
  interface RedisCommander<Context> {
    csGrantCreateBuffer(tagKey: string, earlierBucket: string, ...args: Arg[]): Result<unknown[], Context>;
    csGrantCreateHeldBuffer(tagKey: string, row: Buffer): Result<unknown[], Context>;
    csGrantTakeUse(
      tagKey: string,
      callKey: string,
      suffix: string,
      nowMs: Str,
      markTtlMs: Str,
    ): Result<number, Context>;
    csGrantGiveUse(
      tagKey: string,
      callKey: string,
      suffix: string,
      nowMs: Str,
      markTtlMs: Str,
    ): Result<number[], Context>;
    csGrantCountBuffer(
      tagKey: string,
      markKey: string,
      suffix: string,
      nowMs: Str,
      markTtlMs: Str,
      token: Str,
    ): Result<unknown[], Context>;
    csGrantEndBuffer(tagKey: string, suffix: string, nowMs: Str, by: string): Result<unknown[], Context>;
    csGrantRemoveEndedBuffer(tagKey: string, nowMs: Str, most: Str): Result<Buffer[], Context>;
    csGrantListed(
      tagKey: string,
      suffix: string,
      channelEntry: string,
      granterEntry: string,
    ): Result<number, Context>;
    csGrantEndAt(minuteKey: string, minutesKey: string, minute: Str, tag: string): Result<number, Context>;
    csGrantEndsRead(
      minuteKey: string,
      minutesKey: string,
      progressKey: string,
      minute: Str,
      read: Str,
    ): Result<number, Context>;
    csGrantChannelListed(channelsKey: string, listingsKey: string, channel: string): Result<number, Context>;
    csGrantForgetChannel(
      channelsKey: string,
      listingsKey: string,
      channel: string,
      listingsRead: string,
    ): Result<number, Context>;
    csExtendTtl(key: string, ttlMs: Str): Result<number, Context>;
  }
}
