import { randomBytes } from 'node:crypto';
import { ApprovalRecord, Claim, isTerminal, type Resolution } from '../domain/record.js';
import { defineApprovalScripts, hostPrefix } from './approvalScripts.js';
import type { DecisionWrite } from './auditStream.js';
import type { CardSync } from './cardSync.js';
import type { HeldByWrite } from './heldByWrite.js';
import { keys } from './keys.js';
import type { HeldNoticeClaims } from './noticeLedger.js';
import { RecentRecords } from './recentRecords.js';
import type { RedisClient } from './redisConnection.js';

// The compare-and-set core of the approval store: reading records, creating them, writing them
// only over the version read (update, claimWith), fencing, and the host's open sets a record
// joins and leaves. The scripts are in approvalScripts.ts; where a card is posted is
// cardPlacement.ts, which cards lag their record is cardSync.ts; approvalStore.ts composes them.

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
  /**
   * The decision's audit entry, written by the write that resolves a record, in the same step.
   * Without it, or where Redis runs no script over two slots (a Cluster), the notices write it
   * after.
   */
  resolutionAudit?: ResolutionAudit;
  /**
   * The notice (the thread line's) claimed by the write that resolves a record whose card is
   * placed (noticeLedger.ts): without it, that notice is claimed on its own.
   */
  resolveNotice?: HeldNoticeClaims;
}

/** What the write that resolves a record needs to write its decision's audit entry too. */
export interface ResolutionAudit {
  /** The entry of the resolution written, as the audit trail writes it (RedisAuditTrail.decisionWrite). */
  writeOf(written: ApprovalRecord & { resolution: Resolution }): DecisionWrite;
  /** Where the approvals whose entry their resolving write wrote are held for the notices. */
  written: HeldByWrite;
  /** Redis refused a script over two slots: the notices write every entry from now on. */
  refused(): void;
}

/** A write for a host was refused: another replica has owned the host since (its token is higher). */
export class FencedError extends Error {
  constructor(readonly hostId: string) {
    super(`host ${hostId} belongs to another replica now; the write was refused`);
    this.name = 'FencedError';
  }
}

export type Mutation = (record: ApprovalRecord) => ApprovalRecord | undefined;

/** How a write is made. */
export interface WriteOptions {
  /**
   * The write acts for the record's host (a host event, a sweep of its open approvals): it is
   * made only while this process holds the host's lease. Without the flag a write that finds no
   * lease goes unfenced: a standby's own note (a vote, an escalation note).
   */
  forHost?: boolean;
  /**
   * What must be in Redis before the write can land, whatever becomes of the process after:
   * called with the record each attempt is made over and the record it writes, and the write is
   * sent once what it returns has settled (undefined: nothing to wait for). Must not reject.
   */
  beforeWrite?: (current: ApprovalRecord, written: ApprovalRecord) => Promise<unknown> | undefined;
}

/** A write for the record's host (WriteOptions.forHost). */
export const FOR_HOST: Readonly<WriteOptions> = Object.freeze({ forHost: true });

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

/** Records read and written by compare-and-set; see the scripts' notes in approvalScripts.ts. */
export class ApprovalRecords {
  private readonly claimTtlMs: number;
  /** The records last read or written here: CardPlacement keeps it up to date too. */
  readonly recent: RecentRecords;
  /**
   * Whether a resolving write writes its decision's audit entry too: not on a Cluster, whose
   * scripts reach one slot, nor once Redis has refused such a script (a proxy before a cluster).
   */
  private auditsResolutions: boolean;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: ApprovalStoreOptions,
    private readonly sync: CardSync,
  ) {
    this.claimTtlMs = options.claimTtlMs ?? 24 * 60 * 60 * 1000;
    this.recent = new RecentRecords(options.recentRecords ?? 512);
    this.auditsResolutions = options.resolutionAudit !== undefined && !redis.isCluster;
    defineApprovalScripts(redis);
  }

  /**
   * Whether a write for the host would have no lease to name although writes are fenced: its lease
   * ran out, or another replica holds it. Such a write must not act for the host: unfenced, it
   * would get past the fence a new owner raised.
   */
  leaseGone(hostId: string): boolean {
    return this.options.fenceOf !== undefined && this.options.fenceOf(hostId) === undefined;
  }

  /** The fence argument of a write for a record of this host: '' when not fenced. */
  fence(hostId: string): string {
    const token = this.options.fenceOf?.(hostId);
    return token === undefined ? '' : String(token);
  }

  /**
   * Raises the fence of every open approval of the host to `token`: from now on a replica with an
   * older lease of this host can change none of them. Resolves with how many were raised.
   */
  async fenceOpen(hostId: string, token: number): Promise<number> {
    const ids = await this.redis.smembers(keys.openApprovals(hostId));
    // A record of another host under an id in this set is left alone (the script checks): its
    // own host's owner fences it.
    const raised = await Promise.all(
      ids.map((id) => this.redis.csStamp(keys.approval(id), String(token), hostPrefix(id, hostId), hostId)),
    );
    return raised.filter((n) => n === 1).length;
  }

  async get(approvalId: string): Promise<ApprovalRecord | undefined> {
    return this.parsed(approvalId, await this.redis.hget(keys.approval(approvalId), 'd'));
  }

  /**
   * The version Redis holds of the record (HGET of one short field, not the JSON); undefined when
   * it is gone. What a card update that just landed is checked against (SyncMarks).
   */
  async storedVersion(approvalId: string): Promise<number | undefined> {
    const version = await this.redis.hget(keys.approval(approvalId), 'v');
    return version === null ? undefined : Number(version);
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
  parsed(approvalId: string, raw: string | null): ApprovalRecord | undefined {
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
   * The dedupe gate: only one of several racing creators wins. Returns false when a record for
   * this approvalId already exists. The winner also holds `lease`, when one is given, so it can
   * post the card at once; a record that holds a claim holds its claim's key too. `extra` fields are stored in the record's hash with it (FULL_TEXT_FIELDS):
   * they share its key, so they expire with it. A record that exists of another host (an
   * approvalId is each host's to choose) leaves nothing in this host's open sets.
   */
  async createIfAbsent(
    record: ApprovalRecord,
    lease?: PostLease,
    extra?: Record<string, string>,
  ): Promise<boolean> {
    if (record.claim && lease)
      throw new Error(`approval ${record.approvalId}: a claimed record has no card to post`);
    // A record is created for its host's event only: never by a replica that no longer runs it.
    if (this.leaseGone(record.hostId)) throw new FencedError(record.hostId);
    // A record created already claimed (GrantAnswerer.claimAtCreate) holds its claim's key from
    // the same write, as a claim made later would (csClaim); any other, the post lease if given.
    const held = record.claim
      ? {
          key: keys.claim(record.approvalId, record.claim.sourceIndex),
          value: JSON.stringify(record.claim),
          ttlMs: this.claimTtlMs,
        }
      : { key: keys.postLease(record.approvalId), value: lease?.token ?? '', ttlMs: lease?.ttlMs ?? 0 };
    // The open-set insert rides along (the host's slot); it is harmless when the record existed
    // and is this host's. One of another host must not stay in this host's open sets, or what is
    // done to them (a host that keeps nothing going down, a listing, a new owner's fence) would
    // reach that host's approval: it is taken back, a round trip on this rare path only.
    const [created] = await Promise.all([
      this.redis.csCreate(
        keys.approval(record.approvalId),
        held.key,
        String(record.version),
        JSON.stringify(record),
        held.value,
        String(held.ttlMs),
        this.fence(record.hostId),
        hostPrefix(record.approvalId, record.hostId),
        record.hostId,
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
    else if (created === 2) await this.forgetOpenId(record.hostId, record.approvalId, record.sessionId);
    return created === 1;
  }

  /**
   * Reads the record, applies a pure mutation and writes it back only if nobody else wrote in
   * between; on a conflict it re-reads and tries again. The mutation returns undefined for "no
   * change". Resolves with the stored record and whether it changed, or undefined if there is none.
   * `known`, a record just read, saves the first read; so does a record this process read or
   * wrote lately (RecentRecords), which the write must find still stored as it was (versionTail).
   */
  async update(
    approvalId: string,
    mutate: Mutation,
    known?: ApprovalRecord,
    { forHost = false, beforeWrite }: WriteOptions = {},
  ): Promise<UpdateResult | undefined> {
    // Whether a write that lost took the record out of its host's open sets (whenFinal).
    let leftOpen = false;
    for (let attempt = 0; attempt < MAX_CAS_ATTEMPTS; attempt++) {
      // A record the caller has just read, or one seen lately, is tried first: the
      // compare-and-set says if it moved, and the retry reads it.
      const remembered = attempt === 0 ? (known ?? this.recent.get(approvalId)) : undefined;
      const current = remembered ?? (await this.get(approvalId));
      if (!current) return undefined;
      if (forHost && this.leaseGone(current.hostId)) throw new FencedError(current.hostId);
      const next = mutate(current);
      if (!next) {
        // "No change" is said only of what Redis holds: a record from memory may be behind it.
        if (remembered && !known) {
          this.recent.forget(approvalId);
          continue;
        }
        if (leftOpen) await this.rejoinOpen(current);
        return { record: current, changed: false, previous: current };
      }
      const written = this.nextVersion(current, next);
      const ahead = beforeWrite?.(current, written);
      if (ahead) await ahead;
      const dropped = current.claim && current.claim.commandId !== written.claim?.commandId;
      // Sent with the write, ahead of it: the card is behind its record until cardsSynced() says
      // not, and a process that dies as it writes must leave that mark for the next start.
      const unsynced = written.slack.ts ? this.sync.markUnsynced(approvalId) : undefined;
      // A dropped claim's key must not outlive it: a host that asks that stage again (a restart
      // recovery under the same id) must find it free.
      const [result] = await Promise.all([
        this.cas(current, written, {
          release: dropped ? current.claim : undefined,
          tail: remembered ? versionTail(current) : '',
        }),
        unsynced,
        this.whenFinal(current, written),
      ]);
      if (result === 1) {
        this.recent.seen(written);
        if (leftOpen) await this.rejoinOpen(written);
        return { record: written, changed: true, previous: current };
      }
      leftOpen ||= isTerminal(written) && !isTerminal(current);
      this.recent.forget(approvalId);
      if (result === -1) return undefined;
      if (result === -2) {
        // The open sets' removal went with the write the fence refused: the approval is still open
        // for the replica that raised the fence, whose reconcile must find it.
        if (leftOpen) await this.rejoinOpen(current);
        throw new FencedError(current.hostId);
      }
    }
    throw new Error(`approval ${approvalId}: too many concurrent updates`);
  }

  /**
   * Claims one stage for one click and moves the record it was checked against to `next` (in
   * `deciding`, holding the claim) in one step.
   */
  async claimWith(expected: ApprovalRecord, next: ApprovalRecord & { claim: Claim }): Promise<ClaimOutcome> {
    // A claim always acts for the host. Without a lease to name (it ran out, or another replica
    // holds it) the write would go unfenced, past the fence a new owner raised: make none.
    if (this.leaseGone(expected.hostId)) return { kind: 'fenced' };
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

  /** Approvals not yet final, of a host or of one of its sessions. */
  async openApprovalIds(hostId: string, sessionId?: string): Promise<string[]> {
    return this.redis.smembers(
      sessionId === undefined ? keys.openApprovals(hostId) : keys.openInSession(hostId, sessionId),
    );
  }

  /**
   * How many approvals of the host are not yet final (its open set's SCARD, O(1)). Read on the
   * same connection as the creates: it counts every create sent before it, and none after.
   */
  openCount(hostId: string): Promise<number> {
    return this.redis.scard(keys.openApprovals(hostId));
  }

  /** Whether the approval has a record, open or final. */
  async exists(approvalId: string): Promise<boolean> {
    return (await this.redis.exists(keys.approval(approvalId))) === 1;
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

  nextVersion(current: ApprovalRecord, next: ApprovalRecord): ApprovalRecord {
    return { ...next, version: current.version + 1, updatedAt: new Date().toISOString() };
  }

  /**
   * The compare-and-set of update(). `tail`: the record was taken from memory, and Redis must
   * still hold that very write. A write that resolves a record does more in the same step, and
   * only if it goes through: it claims the thread line's notice when its card is placed
   * (options.resolveNotice), and writes the decision's audit entry (options.resolutionAudit).
   */
  private async cas(
    current: ApprovalRecord,
    written: ApprovalRecord,
    { release, tail }: { release: Claim | undefined; tail: string },
  ): Promise<number> {
    const ttl = String(isTerminal(written) ? this.options.resolvedTtlMs : 0);
    const args = [String(current.version), String(written.version), JSON.stringify(written), ttl] as const;
    const { approvalId } = current;
    const approvalKey = keys.approval(approvalId);
    const fence = this.fence(current.hostId);
    const claimKey = release ? keys.claim(approvalId, release.sourceIndex) : undefined;
    const token = release?.commandId ?? '';
    const cas = [...args, token, '0', fence, tail, newWriteId()] as const;
    const notice = this.options.resolveNotice;
    const audit = this.auditsResolutions ? this.options.resolutionAudit : undefined;
    if (!resolves(current, written) || (!notice && !audit)) {
      return claimKey
        ? this.redis.csCasReleasing(approvalKey, claimKey, ...cas)
        : this.redis.csCas(approvalKey, ...cas);
    }
    const noticeKey = keys.notice(approvalId, notice?.kind ?? 'thread');
    const noticeTtl = notice && written.slack.ts ? String(notice.ttlMs) : '';
    const noticed = () =>
      claimKey
        ? this.redis.csCasReleasingNoticed(approvalKey, claimKey, noticeKey, ...cas, noticeTtl)
        : this.redis.csCasNoticed(approvalKey, noticeKey, ...cas, noticeTtl);
    let answer: [number, number, number];
    if (!audit) answer = await noticed();
    else {
      const entry = audit.writeOf(written);
      try {
        answer = await (claimKey
          ? this.redis.csCasReleasingAudited(
              approvalKey,
              claimKey,
              noticeKey,
              ...entry.keys,
              ...cas,
              noticeTtl,
              ...entry.args,
            )
          : this.redis.csCasAudited(approvalKey, noticeKey, ...entry.keys, ...cas, noticeTtl, ...entry.args));
      } catch (err) {
        // A proxy in front of a cluster, behind one address, refuses a script over two slots
        // before running it: the write is made without the entry, and from now on always so.
        if (!(err instanceof Error && err.message.startsWith('CROSSSLOT'))) throw err;
        this.auditsResolutions = false;
        audit.refused();
        answer = await noticed();
      }
    }
    const [result, claimed, audited] = answer;
    if (result === 1 && claimed === 1) notice?.hold(approvalId);
    if (result === 1 && audited === 1) audit?.written.hold(approvalId);
    return result;
  }

  /**
   * A write that lost had taken the record out of its host's open sets (whenFinal), and the one
   * that won, made on what Redis held, leaves it open: it joins them again. Rare: the record
   * changed between the first try and the write (a record from memory that was behind).
   */
  private async rejoinOpen(record: ApprovalRecord): Promise<void> {
    if (isTerminal(record)) return;
    await this.redis.csOpen(
      keys.openApprovals(record.hostId),
      keys.openInSession(record.hostId, record.sessionId),
      keys.sessions(record.hostId),
      record.approvalId,
      record.sessionId,
    );
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

/**
 * The write that resolves a record: the one after which its notices are due (DecisionNotices
 * follows records resolved with a resolution).
 */
function resolves(
  current: ApprovalRecord,
  written: ApprovalRecord,
): written is ApprovalRecord & { resolution: Resolution } {
  return written.phase === 'resolved' && written.resolution !== undefined && !isTerminal(current);
}

/** This process's part of a write's id: ids from two processes never meet. */
const WRITER = randomBytes(6).toString('base64url');
let writes = 0;

/**
 * An id for one compare-and-set write of a record (approvalScripts.ts, casScript): the record
 * keeps it, so that the same write sent again by ioredis knows it landed.
 */
export function newWriteId(): string {
  writes += 1;
  return `${WRITER}.${writes.toString(36)}`;
}

/** The record's last two fields as JSON.stringify writes them: nextVersion() keeps their place. */
export function versionTail(record: ApprovalRecord): string {
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
