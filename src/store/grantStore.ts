import { randomInt, randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { canonicalCapabilities } from '../domain/grants/capabilities.js';
import type { Grant, GrantBucketKey, GrantStore } from '../domain/grants/grant.js';
import { newestListed } from '../domain/grants/listing.js';
import { rideOrSend } from './coalescedWrites.js';
import { DEFAULT_USE_MARK_TTL_MS, GrantAuditTrail } from './grantAudit.js';
import { GrantChannels } from './grantChannels.js';
import { bucketOf, grantKeyPrefix, hostGrantSuffix, randomGrantSuffix } from './grantIds.js';
import { type ListFilter, listGrants } from './grantListing.js';
import {
  endOf,
  type GrantRow,
  grantOf,
  listingIdOf,
  newRow,
  packRow,
  parseRow,
  parseRows,
  ROW,
  rowIsLive,
  type StoredRow,
  streamIdOf,
} from './grantRows.js';
import { defineGrantScripts } from './grantScripts.js';
import { keys } from './keys.js';
import { fromFields, pairs, parseGrantData } from './legacyGrantRecord.js';
import { LegacyGrantStore } from './legacyGrantStore.js';
import type { RedisClient } from './redisConnection.js';

// Key layout (keys.ts: grantTag, grantEnds, grantEndMinutes, grantsListedIn/By, grantChannels),
// about 400 bytes a grant at a million (docs/performance.md, "Grants at a million"):
// - a grant is a row (grantRows.ts) in its bucket tag's string: matching is one GET of it, and
//   every change of a grant is one script on that key;
// - the sweep finds what ended through one string per minute of ends, to which a grant's tag is
//   appended (10 bytes), read a slice at a time behind a cursor;
// - listing reads a stream per channel and per granter (a tag per entry); a grant's entries are
//   kept on its row and deleted (XDEL) when it ends, so a listing reads only what is live;
// - "all grants" reads the stream of each channel in a set (grantChannels.ts), which the sweep
//   rids of channels whose streams list nothing any more.
// Strings, minutes and streams carry no TTL per grant (many keys with a TTL stall Redis's active
// expiry); the streams carry one to the end of the latest grant they list (plus KEEP_AFTER_END_MS).
// A counted use leaves a mark with a TTL (keys.grantUseCounted, grantUseRecorded): one per
// approval a grant decides, as its record is, so that it is counted and recorded once.
// Grants an earlier release stored as hashes are read, used, listed, revoked and swept through
// LegacyGrantStore until the last of them ends; nothing new is stored that way.

export const DEFAULT_LISTED_HOST_GRANT_MS = 7 * 24 * 60 * 60 * 1000;

/** How long a listing stream outlives the end of the latest grant it lists. */
export const KEEP_AFTER_END_MS = 60 * 60 * 1000;
/**
 * The most due grants one sweep call takes on. A wave of grants ending at once (a million made
 * the same hour) is removed over several calls, a bounded slice each minute, rather than in one
 * call that keeps this process and Redis busy for as long as the wave is large; what is left
 * is already neither matched nor listed (both check `end`), only not yet deleted.
 */
export const DEFAULT_SWEEP_LIMIT = 5_000;
/** Tags read from a minute's string at a time (GETRANGE), their scripts sent together. */
const SWEEP_SLICE = 500;
/** The most slices and minutes one sweep call goes through. */
const MAX_SWEEP_TURNS = 1_000;
const TAG_LENGTH = 10;
const MINUTE_MS = 60_000;
/** How often a process asks again whether grants of the earlier layout are left. */
const LEGACY_RECHECK_MS = MINUTE_MS;
/** Waits between tries of a write a stored grant needs (its end noted, its listing): ~1.5 s in all. */
const RETRY_DELAYS_MS = [100, 400, 1_000];
/**
 * A live grant found unlisted this long after its creation was not listed by its creator (its
 * listing writes kept failing): whoever finds it answering lists it.
 */
const UNLISTED_GRACE_MS = MINUTE_MS;
/**
 * How long a reserve's or give-back's answer is kept for the same call sent again: ioredis resends
 * a command whose reply was lost once its connection is back, which takes seconds, or minutes of
 * an outage; an hour of ~100-byte marks, for grants by uses only.
 */
const USE_CALL_TTL_MS = 60 * MINUTE_MS;
/**
 * A count's token is below this (RECORD_USE keeps it, times 4, in the stage's mark): an integer
 * Redis keeps as one, and two counts of one stage share it once in 2^31.
 */
const COUNT_TOKENS = 2 ** 31;

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
  /**
   * How long a use counted for an approval's stage is remembered, so it is not counted or
   * recorded again (recordUse): as long as a resolved record is kept (DEFAULT_USE_MARK_TTL_MS).
   */
  useMarkTtlMs?: number;
}

type CreateInput = Parameters<GrantStore['create']>[0];

/** A grant id's tag and suffix, or undefined for an id this store never made. */
function partsOf(grantId: string): { tag: string; suffix: string } | undefined {
  const m = /^([0-9a-f]{10})-(\S+)$/.exec(grantId);
  return m ? { tag: m[1]!, suffix: m[2]! } : undefined;
}

export class RedisGrantStore implements GrantStore {
  private readonly audit: GrantAuditTrail;
  private readonly legacy: LegacyGrantStore;
  private readonly channels: GrantChannels;
  private readonly now: () => Date;
  private readonly newGrantId: () => string;
  private readonly listedHostGrantMs: number;
  private readonly sweepLimit: number;
  private readonly useMarkTtlMs: number;
  /** Whether grants of the earlier layout may be left, and when that was last asked. */
  private legacyLeft: { left: Promise<boolean>; askedAt: number } | undefined;
  /** Grants this process is listing, found unlisted as they answered: listed once at a time. */
  private readonly relisting = new Set<string>();

  constructor(
    private readonly redis: RedisClient,
    private readonly options: GrantStoreOptions,
  ) {
    defineGrantScripts(redis);
    this.useMarkTtlMs = options.useMarkTtlMs ?? DEFAULT_USE_MARK_TTL_MS;
    this.audit = new GrantAuditTrail(redis, {
      maxLen: options.auditMaxLen,
      logger: options.logger,
      useMarkTtlMs: this.useMarkTtlMs,
    });
    this.legacy = new LegacyGrantStore(redis, { logger: options.logger, audit: this.audit });
    this.channels = new GrantChannels(redis);
    this.now = options.now ?? (() => new Date());
    this.newGrantId = options.newGrantId ?? randomGrantSuffix;
    this.listedHostGrantMs = options.listedHostGrantMs ?? DEFAULT_LISTED_HOST_GRANT_MS;
    this.sweepLimit = options.sweepLimit ?? DEFAULT_SWEEP_LIMIT;
  }

  async create(input: CreateInput): Promise<Grant> {
    const now = this.now();
    const nowMs = now.getTime();
    const bot = input.holder === 'bot';
    if (bot) {
      if (input.ttlMs === undefined || !(input.ttlMs > 0))
        throw new Error('a bot-held grant needs a positive ttlMs');
      const { maxUses } = input;
      if (maxUses !== undefined && !(Number.isSafeInteger(maxUses) && maxUses >= 1)) {
        throw new Error('a grant by uses needs at least one use');
      }
    }
    const bucket = bucketOf(input);
    const row = newRow({
      suffix: bot ? this.newGrantId() : hostGrantSuffix(input.approvalId),
      caller: input.caller,
      tool: input.tool,
      sandboxMode: input.sandboxMode,
      route: input.route,
      capabilities: canonicalCapabilities(input.capabilities),
      holder: input.holder,
      grantedBy: input.grantedBy,
      approvalId: input.approvalId,
      hostId: input.hostId,
      channel: input.channel,
      createdMs: nowMs,
      endMs: nowMs + (bot ? input.ttlMs! : this.listedHostGrantMs),
      ...(bot && input.maxUses !== undefined ? { maxUses: input.maxUses } : {}),
      ...(input.lasts === undefined ? {} : { lasts: input.lasts }),
      ...(input.rulePreview === undefined ? {} : { rulePreview: input.rulePreview }),
      ...(input.scope === undefined ? {} : { scope: input.scope }),
    });
    return bot ? this.createBotHeld(bucket, row) : this.createHostHeld(bucket.tag, row);
  }

  private async createBotHeld(bucket: { tag: string; key: string }, row: GrantRow): Promise<Grant> {
    const { tag } = bucket;
    const grantId = `${tag}-${row[ROW.suffix]}`;
    const createdAt = new Date(row[ROW.createdMs]).toISOString();
    // Its end is noted before it is stored: a stored grant is always one the sweep finds.
    await this.noteEnd(tag, row);
    const reply = (await this.redis.csGrantCreateBuffer(
      keys.grantTag(tag),
      bucket.key,
      packRow(row),
      row[ROW.createdMs],
      grantKeyPrefix(bucket),
      createdAt,
      grantId,
    )) as unknown[];
    if (reply[0] === 0) {
      // This approval's grant by this person, recorded again (two replicas, a retry): one grant.
      const existing = grantOf(tag, parseRow(reply[1] as Buffer));
      // Listed now if the first create could not list it (its end noted too: a release before
      // this one noted it as it listed).
      await this.listSurely(tag, existing.row, { endToo: true });
      return existing.grant;
    }
    if (reply[0] === 2) {
      const earlier = fromFields(String(reply[1]), pairs(reply[2]));
      if (!earlier) throw new Error(`grant ${String(reply[1])}: stored without its data`);
      return earlier.grant;
    }
    // It answers requests from now on: `created` is recorded before anything else, so that no
    // `used` can come before it.
    const grant = grantOf(tag, row).grant;
    const { ended: replaced, unlisting } = this.endedInPlace(tag, reply);
    const replaces = replaced[0];
    await this.audit.record({ kind: 'created', grant, at: createdAt, ...(replaces ? { replaces } : {}) });
    for (const old of replaced) {
      await this.audit.record({
        kind: 'replaced',
        grantId: old.grantId,
        by: grant.grantedBy,
        replacedBy: grantId,
        approvalId: grant.approvalId,
        at: createdAt,
      });
    }
    // Stored, it answers: whatever the listing writes do now, the grant is the one returned.
    await Promise.all([unlisting, this.listSurely(tag, row)]);
    return grant;
  }

  /**
   * The grants a create ended in the new one's place (of this layout, of the earlier one), and
   * their leaving the listings, under way; the sweep deletes them at their end.
   */
  private endedInPlace(
    tag: string,
    reply: unknown[],
  ): { ended: Array<{ grantId: string; grantedBy: string }>; unlisting: Promise<unknown> } {
    const ended: Array<{ grantId: string; grantedBy: string }> = [];
    const unlisting: Array<Promise<unknown>> = [];
    // Of this layout, the live grant of the key and any whose last use was out: one, as a rule.
    for (const packed of Array.isArray(reply[1]) ? (reply[1] as Buffer[]) : []) {
      const old = grantOf(tag, parseRow(packed));
      unlisting.push(this.unlistQuietly(old, 'replaced grant left in its listings'));
      ended.push({ grantId: old.grant.grantId, grantedBy: old.grant.grantedBy });
    }
    if (reply[2] !== undefined && reply[3] !== undefined) {
      const grantId = String(reply[2]);
      const data = parseGrantData(String(reply[3]));
      unlisting.push(
        this.legacy.unindex(grantId, data).catch((err: unknown) => {
          this.options.logger.warn({ err, grantId }, 'replaced grant left in its indexes');
        }),
      );
      ended.push({ grantId, grantedBy: data.grantedBy });
    }
    return { ended, unlisting: Promise.all(unlisting) };
  }

  private async createHostHeld(tag: string, row: GrantRow): Promise<Grant> {
    await this.noteEnd(tag, row);
    const [created, held] = (await this.redis.csGrantCreateHeldBuffer(keys.grantTag(tag), packRow(row))) as [
      number,
      Buffer?,
    ];
    if (created === 1) {
      const grant = grantOf(tag, row).grant;
      await this.audit.record({ kind: 'created', grant, at: grant.createdAt });
      await this.listSurely(tag, row);
      return grant;
    }
    const existing = grantOf(tag, parseRow(held!));
    if (existing.grant.revokedAt === undefined) await this.listSurely(tag, existing.row, { endToo: true });
    return existing.grant;
  }

  /** One GET, whatever else is stored: the bucket's tag string holds the bucket. */
  async candidates(key: GrantBucketKey, now: Date): Promise<Grant[]> {
    const nowMs = now.getTime();
    const bucket = bucketOf(key);
    const [raw, earlier] = await Promise.all([
      this.redis.getBuffer(keys.grantTag(bucket.tag)),
      this.legacyMayBeLeft().then((left) => (left ? this.legacy.candidates(key, now) : [])),
    ]);
    const found = this.rowsOf(bucket.tag, raw).flatMap((row) => {
      if (row[ROW.holder] !== 'b' || !rowIsLive(row, nowMs)) return [];
      // The tag is a part of a hash of the bucket's four names: rows of other buckets may share it.
      const sameBucket =
        row[ROW.caller] === key.caller &&
        row[ROW.tool] === key.tool &&
        row[ROW.sandboxMode] === key.sandboxMode &&
        row[ROW.route] === key.route;
      if (!sameBucket) return [];
      this.listIfLeftOut(bucket.tag, row, nowMs);
      return [grantOf(bucket.tag, row).grant];
    });
    return earlier.length === 0 ? found : [...found, ...earlier];
  }

  async reserveUse(grant: Grant, now: Date): Promise<number | undefined> {
    const parts = partsOf(grant.grantId);
    if (!parts) return undefined;
    const left = await this.redis.csGrantTakeUse(
      keys.grantTag(parts.tag),
      keys.grantUseCall(parts.tag, randomUUID()),
      parts.suffix,
      now.getTime(),
      USE_CALL_TTL_MS,
    );
    if (left === -2) return this.legacy.reserveUse(grant, now);
    return left < 0 ? undefined : left;
  }

  async returnUse(grant: Pick<Grant, 'grantId'>): Promise<void> {
    const parts = partsOf(grant.grantId);
    if (!parts) return;
    const [left, relist] = await this.redis.csGrantGiveUse(
      keys.grantTag(parts.tag),
      keys.grantUseCall(parts.tag, randomUUID()),
      parts.suffix,
      this.now().getTime(),
      USE_CALL_TTL_MS,
    );
    if (left === -2) return this.legacy.returnUse(grant);
    if (left === undefined || left < 0) {
      this.options.logger.warn({ grantId: grant.grantId }, 'a reserved use could not be given back');
      return;
    }
    if (relist !== 1) return;
    // Unlisted by a count of an earlier release while this use was out (RETURN_USE), it answers
    // again: listed again, where it can be seen and revoked.
    const found = await this.stored(grant.grantId);
    if (found && found !== 'elsewhere') {
      await this.listOnce(parts.tag, found.row).catch((err: unknown) => {
        this.options.logger.warn(
          { err, grantId: grant.grantId },
          'grant live again left out of its listings',
        );
      });
    }
  }

  async recordUse(
    grant: Pick<Grant, 'grantId'>,
    approvalId: string,
    sourceIndex: number,
    now: Date,
    how: { ride?: boolean } = {},
  ): Promise<void> {
    const parts = partsOf(grant.grantId);
    const at = now.toISOString();
    // This call's own: a resend of its count (a reply lost) is told from another's count by it.
    // From 1: an earlier release's mark is '1', which no token's reads as.
    const token = randomInt(1, COUNT_TOKENS);
    // Both once per approval stage, each by a mark in its own slot (RECORD_USE, USED_ONCE): the
    // old owner of a host and the new one may both finish the same decision. The `used` entry
    // does not depend on the count (a use of a grant gone since is recorded all the same), so both
    // go out at once. It still precedes `exhausted`, which waits for the count.
    const write = () =>
      Promise.all([
        parts === undefined
          ? ([-1] as unknown[])
          : (this.redis.csGrantCountBuffer(
              keys.grantTag(parts.tag),
              keys.grantUseCounted(parts.tag, approvalId, sourceIndex),
              parts.suffix,
              now.getTime(),
              this.useMarkTtlMs,
              token,
            ) as Promise<unknown[]>),
        this.audit.record({ kind: 'used', grantId: grant.grantId, approvalId, sourceIndex, at }),
      ]);
    // `ride`: both wait for the next write of this process (the decision's resolution, a moment
    // after the host's acknowledgement), so they cost no round trip of their own
    // (docs/performance.md, "Commands per approval"); alone after RIDE_WAIT_MS if nothing is written.
    const [[uses, spentRow]] = await (how.ride ? rideOrSend(this.redis, write) : write());
    if (uses === -3) {
      this.options.logger.info(
        { grantId: grant.grantId, approvalId, sourceIndex },
        'grant use counted already; not counted again',
      );
      return;
    }
    const counted = uses === -2 ? await this.legacy.countUse(grant, at) : uses === -1 ? 'gone' : 'counted';
    if (counted === 'gone') {
      this.options.logger.warn({ grantId: grant.grantId, approvalId }, 'grant used after it was removed');
    }
    if (!Buffer.isBuffer(spentRow) || !parts) return;
    // Spent: no longer matched (candidates skip it), and now no longer listed.
    await this.unlistQuietly(grantOf(parts.tag, parseRow(spentRow)), 'spent grant left in its listings');
    await this.audit.record({ kind: 'exhausted', grantId: grant.grantId, at });
  }

  async get(grantId: string): Promise<Grant | undefined> {
    const found = await this.stored(grantId);
    return found === 'elsewhere' ? this.legacy.get(grantId) : found?.grant;
  }

  async list(filter: ListFilter, now: Date): Promise<Grant[]> {
    const [found, earlier] = await Promise.all([
      listGrants(this.redis, filter, now.getTime(), (tag, raw) => this.rowsOf(tag, raw)),
      this.legacyMayBeLeft().then((left) => (left ? this.legacy.list(filter, now) : [])),
    ]);
    if (earlier.length === 0) return found;
    return newestListed([...found, ...earlier]);
  }

  async revoke(grantId: string, by: string, now: Date, reason?: string): Promise<boolean> {
    const parts = partsOf(grantId);
    if (!parts) return false;
    const [revoked, row] = (await this.redis.csGrantEndBuffer(
      keys.grantTag(parts.tag),
      parts.suffix,
      now.getTime(),
      by,
    )) as [number, Buffer?];
    if (revoked === -2) return this.legacy.revoke(grantId, by, now, reason);
    if (revoked !== 1 || row === undefined) return false;
    // Done once the script ran: listings only decide what is listed, and listing skips it. Its
    // row stays until its end, when the sweep deletes it, as it does every grant.
    await this.unlistQuietly(grantOf(parts.tag, parseRow(row)), 'revoked grant left in its listings');
    await this.audit.record({
      kind: 'revoked',
      grantId,
      by,
      at: now.toISOString(),
      ...(reason === undefined ? {} : { reason }),
    });
    return true;
  }

  /**
   * Removes grants that have ended, at most sweepLimit of them (the next call goes on where this
   * one stopped). A minute's grants are removed once the minute is over: until then what has
   * ended is neither matched nor listed, only not yet deleted.
   */
  async sweep(now: Date): Promise<number> {
    const nowMs = now.getTime();
    let removed = 0;
    let left = this.sweepLimit;
    /** The channels of the grants removed: those whose streams may have emptied. */
    const channels = new Set<string>();
    const lastOver = Math.floor(nowMs / MINUTE_MS) - 1;
    // Each turn reads a slice or finishes a minute: bounded however the minutes are left.
    for (let turn = 0; left > 0 && turn < MAX_SWEEP_TURNS; turn++) {
      const [minute] = await this.redis.zrangebyscore(
        keys.grantEndMinutes(),
        '-inf',
        lastOver,
        'LIMIT',
        0,
        1,
      );
      if (minute === undefined) break;
      const ends = keys.grantEnds(Number(minute));
      const read = Number((await this.redis.hget(keys.grantEndsRead(), minute)) ?? 0);
      const slice = await this.redis.getrange(
        ends,
        read,
        read + Math.min(SWEEP_SLICE, left) * TAG_LENGTH - 1,
      );
      // Each time a tag is named, one of its grants ends in this minute: that many are removed.
      const named = new Map<string, number>();
      for (let i = 0; i + TAG_LENGTH <= slice.length; i += TAG_LENGTH) {
        const tag = slice.slice(i, i + TAG_LENGTH);
        named.set(tag, (named.get(tag) ?? 0) + 1);
      }
      const counts = await Promise.all(
        [...named].map(([tag, most]) => this.removeEnded(tag, now, most, channels)),
      );
      for (const n of counts) removed += n;
      left -= slice.length / TAG_LENGTH;
      await this.redis.csGrantEndsRead(
        ends,
        keys.grantEndMinutes(),
        keys.grantEndsRead(),
        minute,
        read + slice.length,
      );
    }
    if (left > 0 && (await this.legacyMayBeLeft(true))) removed += await this.legacy.sweep(now, left);
    await this.channels.forgetEmpty(channels).catch((err: unknown) => {
      // Only "all grants" reads the set, and reads an empty stream as nothing: the next sweep tries again.
      this.options.logger.warn({ err }, 'could not forget channels without grants');
    });
    return removed;
  }

  /**
   * Deletes ended rows of one tag; the one sweeper that deleted a row records it and unlists it.
   * Adds the channels they were listed in to `channels`.
   */
  private async removeEnded(tag: string, now: Date, most: number, channels: Set<string>): Promise<number> {
    const gone = await this.redis.csGrantRemoveEndedBuffer(keys.grantTag(tag), now.getTime(), most);
    const at = now.toISOString();
    // Nothing below throws: the rows are deleted, so no later sweep finds them again, and a row
    // left unrecorded here would never get its closing event.
    for (const packed of gone) {
      const ended = grantOf(tag, parseRow(packed));
      channels.add(ended.row[ROW.channel]);
      // A revoked, replaced or exhausted grant was recorded as such; it is only deleted here. One
      // whose last use was still out at its end (taken, never counted) was not: it expired.
      const { grant } = ended;
      if (grant.revokedAt === undefined && ended.row[ROW.exhausted] !== 1) {
        await this.audit.record({ kind: 'expired', grantId: grant.grantId, at });
      }
      await this.unlistQuietly(ended, 'ended grant left in its listings');
    }
    return gone.length;
  }

  /**
   * The grant of this id as its tag's string holds it; 'elsewhere' when the string has no such
   * row (an earlier layout's grant, or none).
   */
  private async stored(grantId: string): Promise<StoredRow | undefined | 'elsewhere'> {
    const parts = partsOf(grantId);
    if (!parts) return undefined;
    const rows = this.rowsOf(parts.tag, await this.redis.getBuffer(keys.grantTag(parts.tag)));
    const row = rows.find((r) => r[ROW.suffix] === parts.suffix);
    return row ? grantOf(parts.tag, row) : 'elsewhere';
  }

  private rowsOf(tag: string, raw: Uint8Array | null): GrantRow[] {
    const { rows, unreadable } = parseRows(raw);
    if (unreadable > 0) this.options.logger.warn({ tag, unreadable }, 'grant rows this release cannot read');
    return rows;
  }

  /**
   * Notes the minute a grant ends in, for the sweep, before the grant is stored (tried again
   * after a failure; throws when it never lands, and nothing is stored then). A grant whose
   * create fails after this leaves its tag named once too often: the sweep finds nothing more
   * ended there. The minutes of ends have no TTL: they are what the sweep reads to remove every grant.
   */
  private async noteEnd(tag: string, row: GrantRow): Promise<void> {
    await this.tried('could not note when a grant ends; trying again', () => this.endAt(tag, row));
  }

  private async endAt(tag: string, row: GrantRow): Promise<void> {
    const minute = Math.floor(endOf(row) / MINUTE_MS);
    await this.redis.csGrantEndAt(keys.grantEnds(minute), keys.grantEndMinutes(), minute, tag);
  }

  /**
   * Lists a stored grant (listOnce), tried again after a failure. Never throws: the grant is
   * stored and answers whatever its listing does; one never listed here is listed by the first
   * lookup that finds it answering (listIfLeftOut), and revocable by its id meanwhile. `endToo`:
   * its end noted as well, for a grant a release before this one may have stored without it (it
   * noted the end as it listed); only for one not listed yet, so an extra 10 bytes at most.
   */
  private async listSurely(tag: string, row: GrantRow, how: { endToo?: boolean } = {}): Promise<void> {
    if (row[ROW.channelEntry] !== '') return;
    await this.tried('could not list a stored grant; trying again', () =>
      Promise.all([this.listOnce(tag, row), how.endToo && this.endAt(tag, row)]),
    ).catch((err: unknown) => {
      this.options.logger.error(
        { err, grantId: `${tag}-${row[ROW.suffix]}` },
        'grant stored and answering, not listed yet',
      );
    });
  }

  /**
   * A live grant its creator could not list (its listing writes failed while it was made) is
   * listed by whoever finds it answering, in the background: the lookup waits for nothing.
   */
  private listIfLeftOut(tag: string, row: GrantRow, nowMs: number): void {
    if (row[ROW.channelEntry] !== '' || nowMs - row[ROW.createdMs] < UNLISTED_GRACE_MS) return;
    const grantId = `${tag}-${row[ROW.suffix]}`;
    if (this.relisting.has(grantId)) return;
    this.relisting.add(grantId);
    this.options.logger.warn({ grantId }, 'grant answering without its listing; listing it');
    void this.listSurely(tag, row, { endToo: true }).finally(() => this.relisting.delete(grantId));
  }

  /** `write`, tried again after RETRY_DELAYS_MS each while it fails; the last failure is thrown. */
  private async tried<T>(failure: string, write: () => Promise<T>): Promise<T> {
    for (const delay of RETRY_DELAYS_MS) {
      try {
        return await write();
      } catch (err) {
        this.options.logger.warn({ err, inMs: delay }, failure);
        await new Promise((resolve) => setTimeout(resolve, delay));
      }
    }
    return write();
  }

  /**
   * Lists a grant in its channel's and its granter's stream, unless it is listed already (a
   * create recorded again). Each stream lives as long as its grants.
   */
  private async listOnce(tag: string, row: GrantRow): Promise<void> {
    if (row[ROW.channelEntry] !== '') return;
    const createdMs = row[ROW.createdMs];
    const end = endOf(row);
    const ttl = end - createdMs + KEEP_AFTER_END_MS;
    const listed = (stream: string) =>
      this.redis
        .pipeline()
        .xadd(stream, '*', 't', tag)
        .csExtendTtl(stream, ttl)
        .exec()
        .then((replies) => {
          const failed = replies?.find(([err]) => err)?.[0];
          if (failed || !replies) throw failed ?? new Error('no reply from Redis');
          return String(replies[0]![1]);
        });
    const inChannel = keys.grantsListedIn(row[ROW.channel]);
    const byGranter = keys.grantsListedBy(row[ROW.grantedBy]);
    const [channelEntry, granterEntry] = await Promise.all([listed(inChannel), listed(byGranter)]);
    // The channel's count moves after its entry is in: a sweep that found the stream empty sees it moved.
    const [kept] = await Promise.all([
      this.redis.csGrantListed(
        keys.grantTag(tag),
        row[ROW.suffix],
        listingIdOf(channelEntry, createdMs),
        listingIdOf(granterEntry, createdMs),
      ),
      this.channels.listed(row[ROW.channel]),
    ]);
    // Another replica listed it first, or it is gone: these entries are not its own.
    if (kept !== 1)
      await Promise.all([this.redis.xdel(inChannel, channelEntry), this.redis.xdel(byGranter, granterEntry)]);
  }

  /** Deletes a grant's listing entries: a listing never reads what has ended. */
  private async unlist({ row }: StoredRow): Promise<void> {
    const createdMs = row[ROW.createdMs];
    const channelEntry = streamIdOf(row[ROW.channelEntry], createdMs);
    const granterEntry = streamIdOf(row[ROW.granterEntry], createdMs);
    await Promise.all([
      channelEntry && this.redis.xdel(keys.grantsListedIn(row[ROW.channel]), channelEntry),
      granterEntry && this.redis.xdel(keys.grantsListedBy(row[ROW.grantedBy]), granterEntry),
    ]);
  }

  /** Unlists an ended grant; a failure is logged, not thrown: listing skips what is not live. */
  private async unlistQuietly(ended: StoredRow, failure: string): Promise<void> {
    await this.unlist(ended).catch((err: unknown) => {
      this.options.logger.warn({ err, grantId: ended.grant.grantId }, failure);
    });
  }

  /**
   * Whether grants of the earlier layout may be left: asked once a minute (`now`: at once, as
   * the sweep does). A grant an older replica stores meanwhile is matched within the minute,
   * and used, revoked and read by id at once (those fall back to the earlier layout by id).
   */
  private legacyMayBeLeft(now = false): Promise<boolean> {
    const at = Date.now();
    if (now || !this.legacyLeft || at - this.legacyLeft.askedAt > LEGACY_RECHECK_MS) {
      const left = this.legacy.anyStored().catch((err: unknown) => {
        this.options.logger.warn({ err }, 'could not ask whether grants of the earlier layout are left');
        this.legacyLeft = undefined;
        return true;
      });
      this.legacyLeft = { left, askedAt: at };
    }
    return this.legacyLeft!.left;
  }
}
