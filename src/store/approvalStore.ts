import { randomUUID } from 'node:crypto';
import type { Result } from 'ioredis';
import { FULL_TEXT_FIELDS, FullText, type FullTextOf } from '../domain/fullText.js';
import { ApprovalRecord, Claim, isTerminal } from '../domain/record.js';
import { keys } from './keys.js';
import { RecentRecords } from './recentRecords.js';
import type { RedisClient } from './redisConnection.js';

// Every write of a record is a compare-and-set on its version field, done by a Lua script so
// that Redis never has to decode the JSON. The scripts also carry the small side effects of a
// write (a lease or claim freed, a claim taken) so that one relayed approval or one click costs
// a fixed, small number of round trips: see bench/ and README "Performance".
//
// Each script touches the keys of one approval only (one hash tag, one Cluster slot). What else an
// operation writes (a host's open sets, a message mapping, the unsynced set) lives in other slots:
// it goes in single-slot commands issued alongside, so the operation still waits for one round
// trip. One Redis runs them in the order issued (the record before its open-set entry); a Cluster
// may not, and readers of the open sets look up the record in the approval's queue, after its
// creation.

/**
 * Creates the record unless it exists; the creator also takes the post lease. ARGV past the fifth
 * are field/value pairs stored with it (the full text of a request intake cut).
 */
const CREATE_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'd', ARGV[2])
if ARGV[5] ~= '' then redis.call('HSET', KEYS[1], 'f', ARGV[5]) end
for i = 6, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end
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
// none. fenceCheck(n) and fenceStamp(n) are spliced into the scripts, n being the fence argument.
const fenceCheck = (n: number) =>
  `ARGV[${n}] ~= '' and tonumber(ARGV[${n}]) < tonumber(redis.call('HGET', KEYS[1], 'f') or '0')`;
const fenceStamp = (n: number) => `if ARGV[${n}] ~= '' then redis.call('HSET', KEYS[1], 'f', ARGV[${n}]) end`;

/**
 * Sets `result` for a write expecting version ARGV[1] of KEYS[1]: -1 gone, 0 moved on, -2 fenced
 * (fence argument n), 1 when the write may go ahead (the `else` branch the caller opens next).
 */
const versionGate = (n: number) => `local cur = redis.call('HGET', KEYS[1], 'v')
local result = 1
if not cur then result = -1
elseif cur ~= ARGV[1] then result = 0
elseif ${fenceCheck(n)} then result = -2`;

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
${versionGate(8)}
else
  local d = redis.call('HGET', KEYS[1], 'd')
  local s, t = last(d, ARGV[3]), last(d, ARGV[5])
  if not s or not t or s > t then result = 0
  else
    d = string.sub(d, 1, s - 1) .. ARGV[4] .. string.sub(d, s + #ARGV[3], t - 1) .. ARGV[6] .. string.sub(d, t + #ARGV[5])
    redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', d)
    ${fenceStamp(8)}
  end
end
do
  ${releaseIfHeld(7)}
end
return result
`;

/** A new owner raises the fence of every open approval of its host before it runs the host. */
const STAMP_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if tonumber(redis.call('HGET', KEYS[1], 'f') or '0') >= tonumber(ARGV[1]) then return 0 end
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
if ${fenceCheck(3)} then return -2 end
if redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[2], 'NX') then return 1 end
return 0
`;

/**
 * KEYS[1] record, KEYS[2] a claim or lease key to free (optional). ARGV: expected version, next
 * version, JSON, TTL ms (0 = none), the token the key to free must hold, '1' to free it even when
 * the write lost, the fence ('' for none). A key is freed only if it still holds our token: a late writer must not free
 * someone else's claim.
 */
const CAS_SCRIPT = `
${versionGate(7)}
else
  redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3])
  ${fenceStamp(7)}
  if ARGV[4] ~= '0' then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
end
if KEYS[2] and (result == 1 or ARGV[6] == '1') then
  ${releaseIfHeld(5)}
end
return result
`;

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
local cur = redis.call('HGET', KEYS[1], 'v')
if not cur then return {-1} end
if cur ~= ARGV[1] then return {0} end
local d = redis.call('HGET', KEYS[1], 'd')
if not string.find(d, ARGV[7], 1, true) then return {0} end
if ${fenceCheck(6)} then return {-2} end
redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[5])
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3])
${fenceStamp(6)}
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

export interface ApprovalStoreOptions {
  /** How long a final record (and its message mapping) is kept. */
  resolvedTtlMs: number;
  /** How long an unanswered claim blocks other clicks on the same stage. */
  claimTtlMs?: number;
  /**
   * The fencing token of the host's lease while this process holds it (hostOwnership.ts): every
   * write for a record of that host carries it. Without it, writes are not fenced.
   */
  fenceOf?: (hostId: string) => number | undefined;
  /** How many of the records last read or written are kept for clicks (RecentRecords); default 512. */
  recentRecords?: number;
}

/** A write for a host was refused: another replica has owned the host since (its token is higher). */
export class FencedError extends Error {
  constructor(readonly hostId: string) {
    super(`host ${hostId} belongs to another replica now; the write was refused`);
    this.name = 'FencedError';
  }
}

export type Mutation = (record: ApprovalRecord) => ApprovalRecord | undefined;

export interface UpdateResult {
  record: ApprovalRecord;
  changed: boolean;
  /** The record the mutation was applied to. */
  previous: ApprovalRecord;
}

export type ClaimOutcome =
  | { kind: 'claimed'; record: ApprovalRecord }
  | { kind: 'held'; holder: Claim | undefined }
  /** The record changed since it was read: read it again and re-check. */
  | { kind: 'stale' }
  | { kind: 'gone' }
  /** Another replica owns the host now. */
  | { kind: 'fenced' };

/** Held while posting a card; the token proves whose lease it is when it is given back. */
export interface PostLease {
  token: string;
  ttlMs: number;
}

const MAX_CAS_ATTEMPTS = 20;

const DEFERRED = { deferred: true } as const;

export class ApprovalStore {
  private readonly claimTtlMs: number;
  private lastStamp = 0;
  private readonly recent: RecentRecords;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: ApprovalStoreOptions,
  ) {
    this.claimTtlMs = options.claimTtlMs ?? 24 * 60 * 60 * 1000;
    this.recent = new RecentRecords(options.recentRecords ?? 512);
    redis.defineCommand('csCreate', { numberOfKeys: 2, lua: CREATE_SCRIPT });
    redis.defineCommand('csSaveFull', { numberOfKeys: 1, lua: SAVE_FULL_SCRIPT });
    // Two fixed key counts rather than one command taking its count first: a Cluster routes a
    // command by its keys, so each is sent on its own, never wrapped in a pipeline to be routed.
    redis.defineCommand('csCas', { numberOfKeys: 1, lua: CAS_SCRIPT });
    redis.defineCommand('csCasReleasing', { numberOfKeys: 2, lua: CAS_SCRIPT });
    redis.defineCommand('csOpen', { numberOfKeys: 3, lua: OPEN_SCRIPT });
    redis.defineCommand('csSavePost', { numberOfKeys: 2, lua: SAVE_POST_SCRIPT });
    redis.defineCommand('csClaim', { numberOfKeys: 2, lua: CLAIM_SCRIPT });
    redis.defineCommand('csRelease', { numberOfKeys: 1, lua: RELEASE_SCRIPT });
    redis.defineCommand('csRenew', { numberOfKeys: 1, lua: RENEW_SCRIPT });
    redis.defineCommand('csStamp', { numberOfKeys: 1, lua: STAMP_SCRIPT });
    redis.defineCommand('csPostLease', { numberOfKeys: 2, lua: POST_LEASE_SCRIPT });
    redis.defineCommand('csSynced', { numberOfKeys: 1, lua: SYNCED_SCRIPT });
  }

  /** The fence argument of a write for a record of this host: '' when not fenced. */
  private fence(hostId: string): string {
    const token = this.options.fenceOf?.(hostId);
    return token === undefined ? '' : String(token);
  }

  /**
   * Raises the fence of every open approval of the host to `token`: from now on a replica with an
   * older lease of this host can change none of them. Resolves with how many were raised.
   */
  async fenceOpen(hostId: string, token: number): Promise<number> {
    const ids = await this.redis.smembers(keys.openApprovals(hostId));
    const raised = await Promise.all(ids.map((id) => this.redis.csStamp(keys.approval(id), String(token))));
    return raised.filter((n) => n === 1).length;
  }

  async get(approvalId: string): Promise<ApprovalRecord | undefined> {
    return this.parsed(approvalId, await this.redis.hget(keys.approval(approvalId), 'd'));
  }

  /**
   * The record of the card at `channel`/`ts`, as this process last read or wrote it, when it is
   * one of the recent ones and the approval named: no read. It may have changed since; a claim
   * made on it is refused if so (claimWith).
   */
  recentCard(channel: string, ts: string, approvalId: string): ApprovalRecord | undefined {
    const record = this.recent.get(approvalId);
    return record?.slack.channel === channel && record.slack.ts === ts ? record : undefined;
  }

  /** A record as read from Redis, remembered as the latest seen. */
  private parsed(approvalId: string, raw: string | null): ApprovalRecord | undefined {
    if (raw === null) {
      this.recent.forget(approvalId);
      return undefined;
    }
    const record = ApprovalRecord.parse(JSON.parse(raw));
    this.recent.seen(record);
    return record;
  }

  /** Replaces the full text kept for one record field; false when the record is gone. */
  async saveFullText(approvalId: string, fields: Record<string, string>): Promise<boolean> {
    const saved = await Promise.all(
      Object.entries(fields).map(([field, json]) =>
        this.redis.csSaveFull(keys.approval(approvalId), field, json),
      ),
    );
    return saved.every((n) => n === 1);
  }

  /**
   * The record a message maps to, with the full text kept for it (FULL_TEXT_FIELDS) read in the
   * same command: what "View full" shows. `hint`, the approval the button names, is read at the
   * same time as the mapping (one round trip) and used only when the mapping agrees.
   */
  async getWithFullText(
    channel: string,
    ts: string,
    hint: string | undefined,
  ): Promise<{ record: ApprovalRecord; full: FullTextOf } | undefined> {
    const read = (approvalId: string) =>
      this.redis.hmget(keys.approval(approvalId), 'd', FULL_TEXT_FIELDS.subject, FULL_TEXT_FIELDS.rawArgs);
    const [mapped, hinted] = await Promise.all([
      this.redis.get(keys.message(channel, ts)),
      hint ? read(hint) : undefined,
    ]);
    if (!mapped) return undefined;
    const [raw, subject, rawArgs] = mapped === hint && hinted ? hinted : await read(mapped);
    if (!raw) return undefined;
    const full: FullTextOf = {};
    if (subject) full.subject = FullText.parse(JSON.parse(subject));
    if (rawArgs) full.rawArgs = FullText.parse(JSON.parse(rawArgs));
    return { record: this.parsed(mapped, raw)!, full };
  }

  /** A fresh post lease to pass to createIfAbsent or acquirePostLease. */
  newPostLease(ttlMs: number): PostLease {
    return { token: randomUUID(), ttlMs };
  }

  /**
   * The dedupe gate: only one of several racing creators wins. Returns false when a record for
   * this approvalId already exists. The winner also holds `lease`, when one is given, so it can
   * post the card at once. `extra` fields are stored in the record's hash with it (FULL_TEXT_FIELDS):
   * they share its key, so they expire with it.
   */
  async createIfAbsent(
    record: ApprovalRecord,
    lease?: PostLease,
    extra?: Record<string, string>,
  ): Promise<boolean> {
    // The open-set insert rides along (the host's slot); it is harmless when the record existed.
    const [created] = await Promise.all([
      this.redis.csCreate(
        keys.approval(record.approvalId),
        keys.postLease(record.approvalId),
        String(record.version),
        JSON.stringify(record),
        lease?.token ?? '',
        String(lease?.ttlMs ?? 0),
        this.fence(record.hostId),
        ...(extra ? Object.entries(extra).flat() : []),
      ),
      this.redis.csOpen(
        keys.openApprovals(record.hostId),
        keys.openInSession(record.hostId, record.sessionId),
        keys.sessions(record.hostId),
        record.approvalId,
        record.sessionId,
      ),
    ]);
    if (created === 1) this.recent.seen(record);
    return created === 1;
  }

  /**
   * Reads the record, applies a pure mutation and writes it back only if nobody else wrote in
   * between; on a conflict it re-reads and tries again. The mutation returns undefined for "no
   * change". Resolves with the stored record and whether it changed, or undefined if there is none.
   * `known`, a record just read, saves the first read.
   */
  async update(
    approvalId: string,
    mutate: Mutation,
    known?: ApprovalRecord,
  ): Promise<UpdateResult | undefined> {
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      // A record the caller has just read is tried first; the compare-and-set says if it moved.
      const current = attempt === 0 && known ? known : await this.get(approvalId);
      if (!current) return undefined;
      const next = mutate(current);
      if (!next) return { record: current, changed: false, previous: current };
      const written = this.nextVersion(current, next);
      const dropped = current.claim && current.claim.commandId !== written.claim?.commandId;
      // Sent with the write, ahead of it: the card is behind its record until cardsSynced() says
      // not, and a process that dies as it writes must leave that mark for the next start.
      const unsynced = written.slack.ts
        ? this.redis.zadd(keys.unsyncedCards(), this.syncStamp(), approvalId)
        : undefined;
      // A dropped claim's key must not outlive it: a host that asks that stage again (a restart
      // recovery under the same id) must find it free.
      const [result] = await Promise.all([
        this.cas(current, written, dropped ? current.claim : undefined),
        unsynced,
        this.whenFinal(current, written),
      ]);
      if (result === 1) {
        this.recent.seen(written);
        return { record: written, changed: true, previous: current };
      }
      this.recent.forget(approvalId);
      if (result === -1) return undefined;
      if (result === -2) throw new FencedError(current.hostId);
    }
    throw new Error(`approval ${approvalId}: too many concurrent updates`);
  }

  /**
   * Stores where the card was posted, maps the message to the approval and gives the lease back,
   * in one round trip when nobody changed the record while it was being posted.
   */
  async savePost(
    record: ApprovalRecord,
    card: { channel: string; ts: string },
    lease: PostLease,
  ): Promise<UpdateResult | undefined> {
    const messageKey = keys.message(card.channel, card.ts);
    const [result] = await Promise.all([
      // Object.assign, not a spread followed by more: see docs/performance.md, "Object shapes".
      this.patchSlack(record, Object.assign({}, record.slack, card), lease),
      // The message's own slot: mapped whether or not the write won, as it always was.
      isTerminal(record)
        ? this.redis.set(messageKey, record.approvalId, 'PX', this.options.resolvedTtlMs)
        : this.redis.set(messageKey, record.approvalId),
    ]);
    if (result !== 'moved') return result;
    // Changed while we posted: write the card's place into whatever it is now.
    const saved = await this.update(record.approvalId, (r) =>
      r.slack.ts ? undefined : { ...r, slack: { ...r.slack, ...card } },
    );
    if (saved && isTerminal(saved.record)) await this.redis.pexpire(messageKey, this.options.resolvedTtlMs);
    return saved;
  }

  /**
   * A card its creator will not post after all (a remembered grant answers the approval): the
   * record says so (slack.deferred) and the lease is given back, in one round trip when nobody
   * changed the record since `record` was written.
   */
  async deferPost(record: ApprovalRecord, lease: PostLease): Promise<UpdateResult | undefined> {
    const result = await this.patchSlack(record, Object.assign({}, record.slack, DEFERRED), lease);
    if (result !== 'moved') return result;
    return this.update(record.approvalId, (r) =>
      r.slack.ts || r.slack.deferred || isTerminal(r)
        ? undefined
        : { ...r, slack: { ...r.slack, deferred: true } },
    );
  }

  /**
   * Writes `slack` into the record it was changed from and gives the post lease back. 'moved' when
   * the record changed meanwhile (the lease is given back all the same).
   */
  private async patchSlack(
    record: ApprovalRecord,
    slack: ApprovalRecord['slack'],
    lease: PostLease,
  ): Promise<UpdateResult | undefined | 'moved'> {
    const written = this.nextVersion(record, { ...record, slack });
    // A record being posted is open: no expiry to set, so a patch says all that changed.
    const result = await (isTerminal(written)
      ? this.redis.csCasReleasing(
          keys.approval(record.approvalId),
          keys.postLease(record.approvalId),
          String(record.version),
          String(written.version),
          JSON.stringify(written),
          String(this.options.resolvedTtlMs),
          lease.token,
          '1',
          this.fence(record.hostId),
        )
      : this.redis.csSavePost(
          keys.approval(record.approvalId),
          keys.postLease(record.approvalId),
          String(record.version),
          String(written.version),
          `"slack":${JSON.stringify(record.slack)}`,
          `"slack":${JSON.stringify(written.slack)}`,
          versionTail(record),
          versionTail(written),
          lease.token,
          this.fence(record.hostId),
        ));
    if (result === 1) {
      this.recent.seen(written);
      return { record: written, changed: true, previous: record };
    }
    this.recent.forget(record.approvalId);
    if (result === -1) return undefined;
    if (result === -2) throw new FencedError(record.hostId);
    return 'moved';
  }

  /**
   * Claims one stage for one click and moves the record it was checked against to `next` (in
   * `deciding`, holding the claim) in one step.
   */
  async claimWith(expected: ApprovalRecord, next: ApprovalRecord & { claim: Claim }): Promise<ClaimOutcome> {
    const written = this.nextVersion(expected, next);
    const [code, holder] = (await this.redis.csClaim(
      keys.approval(expected.approvalId),
      keys.claim(expected.approvalId, next.claim.sourceIndex),
      String(expected.version),
      String(written.version),
      JSON.stringify(written),
      JSON.stringify(next.claim),
      String(this.claimTtlMs),
      this.fence(expected.hostId),
      versionTail(expected),
    )) as [number, string | undefined];
    if (code === 1 || code === 3) {
      this.recent.seen(written);
      return { kind: 'claimed', record: written };
    }
    // Not as expected: whoever checks next reads what it is now.
    this.recent.forget(expected.approvalId);
    if (code === -2) return { kind: 'fenced' };
    if (code === 2) return { kind: 'held', holder: parseClaim(holder) };
    return code === 0 ? { kind: 'stale' } : { kind: 'gone' };
  }

  /**
   * The approval a message maps to and, read at the same time (two slots, one round trip on one
   * Redis), the record of the approval the caller expects there; the record is only meaningful
   * when `mappedTo` is that approval.
   */
  async getForMessage(
    channel: string,
    ts: string,
    expectedApprovalId: string,
  ): Promise<{ mappedTo: string | undefined; record: ApprovalRecord | undefined }> {
    const [mappedTo, raw] = await Promise.all([
      this.redis.get(keys.message(channel, ts)),
      this.redis.hget(keys.approval(expectedApprovalId), 'd'),
    ]);
    return { mappedTo: mappedTo ?? undefined, record: this.parsed(expectedApprovalId, raw) };
  }

  /** Another message (an escalation DM) whose buttons decide this approval, for `ttlMs`. */
  async mapMessage(channel: string, ts: string, approvalId: string, ttlMs: number): Promise<void> {
    await this.redis.set(keys.message(channel, ts), approvalId, 'PX', ttlMs);
  }

  async findByMessage(channel: string, ts: string): Promise<string | undefined> {
    return (await this.redis.get(keys.message(channel, ts))) ?? undefined;
  }

  /** Approvals not yet final, of a host or of one of its sessions. */
  async openApprovalIds(hostId: string, sessionId?: string): Promise<string[]> {
    return this.redis.smembers(
      sessionId === undefined ? keys.openApprovals(hostId) : keys.openInSession(hostId, sessionId),
    );
  }

  /** Drops a final approval from the open sets (createIfAbsent may have re-added it). */
  async forgetOpen(record: Pick<ApprovalRecord, 'hostId' | 'sessionId' | 'approvalId'>): Promise<void> {
    await this.forgetOpenId(record.hostId, record.approvalId, record.sessionId);
  }

  /** Drops an approval whose record is gone from the open sets it is known to be in. */
  async forgetOpenId(hostId: string, approvalId: string, sessionId?: string): Promise<void> {
    const pipe = this.redis.pipeline().srem(keys.openApprovals(hostId), approvalId);
    if (sessionId !== undefined) pipe.srem(keys.openInSession(hostId, sessionId), approvalId);
    firstResult(await pipe.exec());
  }

  /** Resolves with the lease, or undefined when another worker is posting this card right now. */
  async acquirePostLease(
    record: Pick<ApprovalRecord, 'approvalId' | 'hostId'>,
    ttlMs: number,
  ): Promise<PostLease | undefined> {
    const lease = this.newPostLease(ttlMs);
    const code = await this.redis.csPostLease(
      keys.approval(record.approvalId),
      keys.postLease(record.approvalId),
      lease.token,
      String(ttlMs),
      this.fence(record.hostId),
    );
    if (code === -2) throw new FencedError(record.hostId);
    return code === 1 ? lease : undefined;
  }

  /**
   * True for the one caller that may bring this card up to date for the next `ttlMs`: replicas
   * starting or taking a host over together each look at the cards left behind.
   */
  async claimCardSync(approvalId: string, ttlMs: number): Promise<boolean> {
    return (await this.redis.set(keys.cardSync(approvalId), '1', 'PX', ttlMs, 'NX')) === 'OK';
  }

  /**
   * When, for the unsynced set: milliseconds, strictly increasing within this process (a fraction
   * tells apart two writes of one millisecond), so that a card update handed out after a write
   * carries a later stamp than that write's mark.
   */
  syncStamp(): number {
    this.lastStamp = Math.max(Date.now(), this.lastStamp + 0.001);
    return this.lastStamp;
  }

  /**
   * These cards show what their records held when each update was handed out (`approvalId →
   * syncStamp()` taken then): struck off the unsynced set, unless a write marked one again since.
   * A process that dies with that later write's update in flight must leave its mark.
   */
  async cardsSynced(handedAt: ReadonlyMap<string, number>): Promise<void> {
    if (handedAt.size === 0) return;
    await this.redis.csSynced(
      keys.unsyncedCards(),
      ...[...handedAt].flatMap(([approvalId, stamp]) => [approvalId, String(stamp)]),
    );
  }

  /** Approvals whose card may lag their record, written before `before`, oldest first. */
  async unsyncedCards(before: Date, limit = 1_000): Promise<string[]> {
    return this.redis.zrangebyscore(keys.unsyncedCards(), '-inf', before.getTime(), 'LIMIT', 0, limit);
  }

  /** Extends our post lease by its ttl; false when it is no longer ours (it ran out). */
  async renewPostLease(approvalId: string, lease: PostLease): Promise<boolean> {
    return (await this.redis.csRenew(keys.postLease(approvalId), lease.token, String(lease.ttlMs))) === 1;
  }

  async releasePostLease(approvalId: string, lease: PostLease): Promise<void> {
    await this.redis.csRelease(keys.postLease(approvalId), lease.token);
  }

  private nextVersion(current: ApprovalRecord, next: ApprovalRecord): ApprovalRecord {
    return { ...next, version: current.version + 1, updatedAt: new Date().toISOString() };
  }

  private cas(current: ApprovalRecord, written: ApprovalRecord, release: Claim | undefined): Promise<number> {
    const ttl = String(isTerminal(written) ? this.options.resolvedTtlMs : 0);
    const args = [String(current.version), String(written.version), JSON.stringify(written), ttl] as const;
    const approvalKey = keys.approval(current.approvalId);
    const fence = this.fence(current.hostId);
    if (!release) return this.redis.csCas(approvalKey, ...args, '', '0', fence);
    const claimKey = keys.claim(current.approvalId, release.sourceIndex);
    return this.redis.csCasReleasing(approvalKey, claimKey, ...args, release.commandId, '0', fence);
  }

  /**
   * A record that becomes final leaves its host's open sets and its message mapping starts to
   * expire. Sent with the write (the host's slot, the message's slot): a mutation that makes a
   * record final makes it final on every retry too, so doing this even when the write has to be
   * retried is safe.
   */
  private async whenFinal(current: ApprovalRecord, written: ApprovalRecord): Promise<void> {
    if (!isTerminal(written) || isTerminal(current)) return;
    const open = this.redis
      .pipeline()
      .srem(keys.openApprovals(written.hostId), written.approvalId)
      .srem(keys.openInSession(written.hostId, written.sessionId), written.approvalId)
      .exec()
      .then(throwFirstError);
    const mapping = written.slack.ts
      ? this.redis.pexpire(keys.message(written.slack.channel, written.slack.ts), this.options.resolvedTtlMs)
      : undefined;
    await Promise.all([open, mapping]);
  }
}

/** The record's last two fields as JSON.stringify writes them: nextVersion() keeps their place. */
function versionTail(record: ApprovalRecord): string {
  return `"updatedAt":${JSON.stringify(record.updatedAt)},"version":${record.version}`;
}

function firstResult(results: Array<[Error | null, unknown]> | null): unknown {
  const [err, value] = results?.[0] ?? [new Error('no reply from Redis'), undefined];
  if (err) throw err;
  return value;
}

function throwFirstError(results: Array<[Error | null, unknown]> | null): void {
  if (!results) throw new Error('no reply from Redis');
  for (const [err] of results) if (err) throw err;
}

function parseClaim(raw: string | null | undefined): Claim | undefined {
  return raw ? Claim.parse(JSON.parse(raw)) : undefined;
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    csCreate(
      approvalKey: string,
      leaseKey: string,
      version: string,
      json: string,
      leaseToken: string,
      leaseTtlMs: string,
      fence: string,
      ...fullTextFields: string[]
    ): Result<number, Context>;
    /** ARGV as CAS_SCRIPT documents. */
    csCas(
      approvalKey: string,
      expectedVersion: string,
      nextVersion: string,
      json: string,
      ttlMs: string,
      leaseToken: string,
      releaseAlways: string,
      fence: string,
    ): Result<number, Context>;
    /** csCas that also releases KEYS[2] (a claim or the post lease) when it holds ARGV[5]. */
    csCasReleasing(
      approvalKey: string,
      releaseKey: string,
      expectedVersion: string,
      nextVersion: string,
      json: string,
      ttlMs: string,
      token: string,
      releaseAlways: string,
      fence: string,
    ): Result<number, Context>;
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
    csStamp(approvalKey: string, token: string): Result<number, Context>;
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
