import type { Result } from 'ioredis';
import { type DecisionArgs, type DecisionKeys, writeDecisionOnce } from './auditStream.js';
import type { RedisClient } from './redisConnection.js';

// The approval store's Lua scripts and their ioredis typings; approvalRecords.ts (the
// compare-and-set core), cardPlacement.ts and cardSync.ts send them.
//
// Every write of a record is a compare-and-set on its version field, done by a Lua script so
// that Redis never has to decode the JSON. The scripts also carry the small side effects of a
// write (a lease or claim freed, a claim taken) so that one relayed approval or one click costs
// a fixed, small number of round trips: see docs/performance.md.
//
// Each script touches the keys of one approval only (one hash tag, one Cluster slot). What else an
// operation writes (a host's open sets, a message mapping, the unsynced set) lives in other slots:
// it goes in single-slot commands issued alongside, so the operation still waits for one round
// trip. One Redis runs them in the order issued (the record before its open-set entry); a Cluster
// may not, and readers of the open sets look up the record in the approval's queue, after its
// creation.

/**
 * Whether the record in KEYS[1] (`d`, its JSON) is of the host ARGV[h], `prefix` (ARGV[p]) being
 * how that host's record of this approval starts (hostPrefix): a string compare, as a record's
 * JSON starts with its approvalId and hostId. Only a record that starts otherwise is decoded, to
 * read its hostId: one of another host, or one written in another key order.
 */
const ofHost = (p: number, h: number) => `local function ofHost(d)
  if not d then return false end
  if string.sub(d, 1, #ARGV[${p}]) == ARGV[${p}] then return true end
  local ok, record = pcall(cjson.decode, d)
  return ok and type(record) == 'table' and record.hostId == ARGV[${h}]
end`;

/**
 * Creates the record unless it exists; the creator also takes the post lease (or holds the claim
 * of a record created claimed). ARGV past the seventh are field/value pairs stored with it (the full
 * text of a request intake cut). A record that exists is ours when the key its create took still
 * holds what that create set (a lease's token, a claim's commandId, each minted for one create):
 * ioredis sends a command again after a reconnect, and a create that ran already must not be
 * told it lost, or its claim is sent by no one but a later replay, its grant's use given back.
 * A record that exists is 0, or 2 when it is another host's (ARGV[6] its prefix, ARGV[7] the
 * host): the open-set insert sent with the create must then be taken back (createIfAbsent). Its
 * JSON is read where EXISTS was asked: the check costs no command.
 */
const CREATE_SCRIPT = `
${ofHost(6, 7)}
local existing = redis.call('HGET', KEYS[1], 'd')
if existing then
  if ARGV[3] ~= '' and redis.call('GET', KEYS[2]) == ARGV[3] then return 1 end
  if not ofHost(existing) then return 2 end
  return 0
end
local fields = {'v', ARGV[1], 'd', ARGV[2]}
if ARGV[5] ~= '' then fields[5] = 'f'; fields[6] = ARGV[5] end
for i = 8, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[1], unpack(fields))
if ARGV[3] ~= '' then redis.call('SET', KEYS[2], ARGV[3], 'PX', ARGV[4]) end
return 1
`;

/** An approval joins its host's and session's open sets; its session is known to the host. */
const OPEN_SCRIPT = `
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('HSETNX', KEYS[3], ARGV[2], '{}')
return 1
`;

/**
 * Replaces one full-text field of an existing record (an update brought a subject intake cut):
 * never creates the hash, so it cannot outlive a record that expired.
 */
const SAVE_FULL_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`;

// Fencing (several replicas): a write made for a host carries the fencing token of the lease its
// writer holds. The record keeps the highest token that wrote it (field `f`) and refuses a lower
// one (-2), so a replica that lost the host's lease and wakes up late cannot change the record,
// post its card or claim a stage. A write that does not act for the host (an escalation note) carries
// none. fencedBy(n, f) and writeRecord(…, n) are spliced into the scripts, n being the fence
// argument. A script reads the fields it needs in one HMGET and writes in one HSET: every call
// inside a script is a command Redis runs (docs/performance.md, "Commands per approval").
const fencedBy = (n: number, stored: string) =>
  `ARGV[${n}] ~= '' and tonumber(ARGV[${n}]) < tonumber(${stored} or '0')`;
const writeRecord = (version: string, json: string, n: number, more = '') => {
  const fields = `'v', ${version}, 'd', ${json}${more ? `, ${more}` : ''}`;
  return `if ARGV[${n}] ~= '' then redis.call('HSET', KEYS[1], ${fields}, 'f', ARGV[${n}])
  else redis.call('HSET', KEYS[1], ${fields}) end`;
};

/**
 * Sets `result` for a write expecting version ARGV[1] of KEYS[1]: -1 gone, 0 moved on, -2 fenced
 * (fence argument n), 1 when the write may go ahead (the `else` branch the caller opens next).
 * `data` (a Lua condition) says whether the script needs the record's JSON too: then it is read
 * in the same HMGET, as `found[3]`.
 */
const versionGate = (
  n: number,
  data: string,
) => `local found = (${data}) and redis.call('HMGET', KEYS[1], 'v', 'f', 'd')
  or redis.call('HMGET', KEYS[1], 'v', 'f')
local cur = found[1]
local result = 1
if not cur then result = -1
elseif cur ~= ARGV[1] then result = 0
elseif ${fencedBy(n, 'found[2]')} then result = -2`;

/** Frees KEYS[2] only while it holds the token ARGV[n]: a late writer must not free someone else's. */
const releaseIfHeld = (n: number) => `local held = redis.call('GET', KEYS[2])
  if held and string.find(held, ARGV[${n}], 1, true) then redis.call('DEL', KEYS[2]) end`;

/**
 * Stores where a card was posted by patching the record's JSON in place: only the slack object
 * and the version (with updatedAt) change, so the record is not sent again. Each is replaced at
 * its last occurrence (the record's own fields follow whatever the agent sent; agent text is
 * inside JSON strings, where a quote is escaped, so it cannot spell them). 0 when the version
 * moved or the JSON is not as expected: the caller then writes the whole record. The post lease
 * (KEYS[2]) is given back whatever the outcome.
 * ARGV: expected version, next version, old slack, new slack, old tail, new tail, lease token, fence.
 */
const SAVE_POST_SCRIPT = `
local function last(text, part)
  local at, from = nil, 1
  while true do
    local found = string.find(text, part, from, true)
    if not found then return at end
    at, from = found, found + 1
  end
end
${versionGate(8, 'true')}
else
  local d = found[3]
  local s, t = last(d, ARGV[3]), last(d, ARGV[5])
  if not s or not t or s > t then result = 0
  else
    d = string.sub(d, 1, s - 1) .. ARGV[4] .. string.sub(d, s + #ARGV[3], t - 1) .. ARGV[6] .. string.sub(d, t + #ARGV[5])
    ${writeRecord('ARGV[2]', 'd', 8)}
  end
end
do
  ${releaseIfHeld(7)}
end
return result
`;

/**
 * A new owner raises the fence of every open approval of its host before it runs the host. ARGV:
 * token, prefix, host (ofHost). A record of another host is left alone (2): its id in this host's
 * open set is a stray (another host asked under its id), and this host's token on it would refuse
 * every write its own host's owner makes.
 */
const STAMP_SCRIPT = `
${ofHost(2, 3)}
local found = redis.call('HMGET', KEYS[1], 'f', 'd')
if not found[2] then return 0 end
if not ofHost(found[2]) then return 2 end
if tonumber(found[1] or '0') >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'f', ARGV[1])
return 1
`;

/**
 * KEYS[1] the unsynced set. ARGV: approvalId, stamp, approvalId, stamp, … Strikes each approval off
 * unless a write marked it again after `stamp` (when its card update was handed out).
 */
const SYNCED_SCRIPT = `
for i = 1, #ARGV, 2 do
  local marked = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if marked and tonumber(marked) <= tonumber(ARGV[i + 1]) then redis.call('ZREM', KEYS[1], ARGV[i]) end
end
return 0
`;

/** KEYS[1] record, KEYS[2] post lease. ARGV: token, TTL ms, fence. -2 when fenced, else 1 or 0. */
const POST_LEASE_SCRIPT = `
if ${fencedBy(3, "redis.call('HGET', KEYS[1], 'f')")} then return -2 end
if redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end
return 0
`;

/**
 * The compare-and-set write of a record. KEYS[1] record, then with `release` a claim or lease key
 * to free. ARGV: expected version, next version, JSON, TTL ms (0 = none), the token the key to
 * free must hold, '1' to free it even when the write lost, the fence ('' for none), the expected
 * tail ('' for none; versionTail(): the record was not read for this write but taken from memory,
 * and must still be that very write), and the write's id (newWriteId). A key is freed only if it
 * still holds our token: a late writer must not free someone else's claim.
 *
 * The record keeps the id of the last such write, with what it did besides (field `w`): ioredis
 * sends a command again after a reconnect, and a write that ran already finds the record moved
 * on. Told it lost, its writer would read the record, find nothing left to change, and run none
 * of what follows a write (the card, the decision's notices): it is told what it did instead,
 * and nothing runs twice.
 *
 * The variants for a write that resolves the record (`resolving`) claim the thread line's
 * notice (noticeLedger.ts) when the write goes through and ARGV[10] (its TTL) is not '', so that
 * the one process that made the resolving write holds it without a round trip of its own: KEYS
 * then hold the notice after the others. `audited` also writes the decision's audit entry
 * (writeDecisionOnce, auditStream.ts) in the same step: KEYS then hold its mark, the stream and
 * the stats generation after the notice, and ARGV the mark's TTL, the stream's cap and the
 * entry's fields after the notice's TTL. Only on one Redis: in a Cluster the stream's slot is not
 * the record's, and a script reaches one slot. They return {result, 1 when the notice was
 * claimed, 1 when the entry was written}.
 */
const casScript = (release: boolean, resolving?: 'noticed' | 'audited') => {
  const notice = release ? 3 : 2;
  // `w`: the write's id, then (resolving) whether it claimed the notice and wrote the entry.
  const landed = resolving ? `{1, tonumber(string.sub(w, -2, -2)), tonumber(string.sub(w, -1))}` : '1';
  return `
${versionGate(7, "ARGV[8] ~= ''")}
elseif ARGV[8] ~= '' and not string.find(found[3], ARGV[8], 1, true) then result = 0
end
if result == 0 and cur ~= ARGV[1] then
  local w = redis.call('HGET', KEYS[1], 'w')
  if w and string.sub(w, 1, #ARGV[9] + 1) == ARGV[9] .. ':' then return ${landed} end
end
local noticed, audited = 0, 0
if result == 1 then
${
  resolving
    ? `  if ARGV[10] ~= '' and redis.call('SET', KEYS[${notice}], 'sending', 'PX', ARGV[10], 'NX') then noticed = 1 end${
        resolving === 'audited' ? writeDecisionOnce(notice + 1, 11) : ''
      }`
    : ''
}
  ${writeRecord('ARGV[2]', 'ARGV[3]', 7, "'w', ARGV[9] .. ':' .. noticed .. audited")}
  if ARGV[4] ~= '0' then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
end
${
  release
    ? `if result == 1 or ARGV[6] == '1' then
  ${releaseIfHeld(5)}
end`
    : ''
}
${resolving ? 'return {result, noticed, audited}' : 'return result'}
`;
};

/**
 * Takes one stage's claim and moves the record to `deciding` in one step. Returns {2, holder}
 * when the stage is already claimed, {0} when the record moved on, {-1} when it is gone, and {3}
 * when the stage already holds this very claim: ioredis sends a command again after a reconnect,
 * and a claim that already ran is ours, not somebody else's; {-2} when fenced (ARGV[6]). The
 * record must still hold the checked one's version and time (ARGV[7], versionTail): a record
 * checked from memory (RecentRecords) could otherwise meet one of the same version written again
 * after Redis lost it.
 */
const CLAIM_SCRIPT = `
local held = redis.call('GET', KEYS[2])
if held then
  if held == ARGV[4] then return {3} end
  return {2, held}
end
local found = redis.call('HMGET', KEYS[1], 'v', 'd', 'f')
local cur = found[1]
if not cur then return {-1} end
if cur ~= ARGV[1] then return {0} end
if not string.find(found[2], ARGV[7], 1, true) then return {0} end
if ${fencedBy(6, 'found[3]')} then return {-2} end
redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[5])
${writeRecord('ARGV[2]', 'ARGV[3]', 6)}
return {1}
`;

/** Frees a post lease only if it still holds our token: a late worker must not free another's. */
const RELEASE_SCRIPT = `
local cur = redis.call('GET', KEYS[1])
if not cur then return 0 end
if string.find(cur, ARGV[1], 1, true) then return redis.call('DEL', KEYS[1]) end
return 0
`;

/** Extends a post lease only while it still holds our token. */
const RENEW_SCRIPT = `
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
`;

/**
 * How the JSON of the host's record of the approval starts (JSON.stringify of an ApprovalRecord:
 * approvalId, then hostId): what ofHost compares a stored record with.
 */
export function hostPrefix(approvalId: string, hostId: string): string {
  return `{"approvalId":${JSON.stringify(approvalId)},"hostId":${JSON.stringify(hostId)},`;
}

/** Registers the scripts on this connection: once, by the store that owns it (ApprovalRecords). */
export function defineApprovalScripts(redis: RedisClient): void {
  redis.defineCommand('csCreate', { numberOfKeys: 2, lua: CREATE_SCRIPT });
  redis.defineCommand('csSaveFull', { numberOfKeys: 1, lua: SAVE_FULL_SCRIPT });
  // Two fixed key counts rather than one command taking its count first: a Cluster routes a
  // command by its keys, so each is sent on its own, never wrapped in a pipeline to be routed.
  redis.defineCommand('csCas', { numberOfKeys: 1, lua: casScript(false) });
  redis.defineCommand('csCasReleasing', { numberOfKeys: 2, lua: casScript(true) });
  redis.defineCommand('csCasNoticed', { numberOfKeys: 2, lua: casScript(false, 'noticed') });
  redis.defineCommand('csCasReleasingNoticed', { numberOfKeys: 3, lua: casScript(true, 'noticed') });
  redis.defineCommand('csCasAudited', { numberOfKeys: 5, lua: casScript(false, 'audited') });
  redis.defineCommand('csCasReleasingAudited', { numberOfKeys: 6, lua: casScript(true, 'audited') });
  redis.defineCommand('csOpen', { numberOfKeys: 3, lua: OPEN_SCRIPT });
  redis.defineCommand('csSavePost', { numberOfKeys: 2, lua: SAVE_POST_SCRIPT });
  redis.defineCommand('csClaim', { numberOfKeys: 2, lua: CLAIM_SCRIPT });
  redis.defineCommand('csRelease', { numberOfKeys: 1, lua: RELEASE_SCRIPT });
  redis.defineCommand('csRenew', { numberOfKeys: 1, lua: RENEW_SCRIPT });
  redis.defineCommand('csStamp', { numberOfKeys: 1, lua: STAMP_SCRIPT });
  redis.defineCommand('csPostLease', { numberOfKeys: 2, lua: POST_LEASE_SCRIPT });
  redis.defineCommand('csSynced', { numberOfKeys: 1, lua: SYNCED_SCRIPT });
}

/** casScript's ARGV, in order. */
type CasArgs = [
  expectedVersion: string,
  nextVersion: string,
  json: string,
  ttlMs: string,
  token: string,
  releaseAlways: string,
  fence: string,
  expectedTail: string,
  writeId: string,
];

/** What a resolving casScript returns: the result, whether it claimed the notice, whether it wrote the entry. */
type Resolving = [result: number, noticed: number, audited: number];

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** `heldKey`: the post lease, or the claim of a record created claimed, set to `heldValue`. */
    csCreate(
      approvalKey: string,
      heldKey: string,
      version: string,
      json: string,
      heldValue: string,
      heldTtlMs: string,
      fence: string,
      /** hostPrefix() of the record created, and its hostId: a record of another host is 2. */
      hostPrefix: string,
      hostId: string,
      ...fullTextFields: string[]
    ): Result<number, Context>;
    /** ARGV as casScript documents. */
    csCas(approvalKey: string, ...args: CasArgs): Result<number, Context>;
    /** csCas that also releases KEYS[2] (a claim or the post lease) when it holds ARGV[5]. */
    csCasReleasing(approvalKey: string, releaseKey: string, ...args: CasArgs): Result<number, Context>;
    /** csCas of a resolving write, claiming the thread line's notice: [result, noticed, audited]. */
    csCasNoticed(
      approvalKey: string,
      noticeKey: string,
      ...args: [...CasArgs, noticeTtlMs: string]
    ): Result<Resolving, Context>;
    /** csCasReleasing of a resolving write, claiming the thread line's notice. */
    csCasReleasingNoticed(
      approvalKey: string,
      releaseKey: string,
      noticeKey: string,
      ...args: [...CasArgs, noticeTtlMs: string]
    ): Result<Resolving, Context>;
    /** csCasNoticed that writes the decision's audit entry too. */
    csCasAudited(
      approvalKey: string,
      noticeKey: string,
      ...args: [...DecisionKeys, ...CasArgs, noticeTtlMs: string, ...DecisionArgs]
    ): Result<Resolving, Context>;
    /** csCasReleasingNoticed that writes the decision's audit entry too. */
    csCasReleasingAudited(
      approvalKey: string,
      releaseKey: string,
      noticeKey: string,
      ...args: [...DecisionKeys, ...CasArgs, noticeTtlMs: string, ...DecisionArgs]
    ): Result<Resolving, Context>;
    csSavePost(
      approvalKey: string,
      leaseKey: string,
      expectedVersion: string,
      nextVersion: string,
      oldSlack: string,
      newSlack: string,
      oldTail: string,
      newTail: string,
      leaseToken: string,
      fence: string,
    ): Result<number, Context>;
    csOpen(
      openKey: string,
      sessionOpenKey: string,
      sessionsKey: string,
      approvalId: string,
      sessionId: string,
    ): Result<number, Context>;
    csClaim(
      approvalKey: string,
      claimKey: string,
      expectedVersion: string,
      nextVersion: string,
      json: string,
      claimJson: string,
      claimTtlMs: string,
      fence: string,
      /** versionTail() of the record checked: its updatedAt and version, as its stored JSON holds them. */
      expectedTail: string,
    ): Result<unknown[], Context>;
    /** 1 raised, 0 not (gone, or raised already), 2 a record of another host than `hostId`. */
    csStamp(approvalKey: string, token: string, hostPrefix: string, hostId: string): Result<number, Context>;
    csSaveFull(approvalKey: string, field: string, json: string): Result<number, Context>;
    csPostLease(
      approvalKey: string,
      leaseKey: string,
      token: string,
      ttlMs: string,
      fence: string,
    ): Result<number, Context>;
    csRelease(key: string, token: string): Result<number, Context>;
    csRenew(key: string, token: string, ttlMs: string): Result<number, Context>;
    csSynced(unsyncedKey: string, ...idsAndStamps: string[]): Result<number, Context>;
  }
}
