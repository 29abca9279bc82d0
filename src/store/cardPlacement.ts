import { randomUUID } from 'node:crypto';
import { FULL_TEXT_FIELDS, FullText, type FullTextOf } from '../domain/fullText.js';
import { type ApprovalRecord, isTerminal } from '../domain/record.js';
import {
  type ApprovalRecords,
  type ApprovalStoreOptions,
  FencedError,
  FOR_HOST,
  type Mutation,
  newWriteId,
  type PostLease,
  type UpdateResult,
  versionTail,
  type WriteOptions,
} from './approvalRecords.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

// Card placement: the post lease (one worker posts an approval's card), where the card was
// posted (written into the record, patched in place when nobody wrote meanwhile), and the message
// map from a Slack message to the approval its buttons decide.

const DEFERRED = { deferred: true } as const;

export class CardPlacement {
  constructor(
    private readonly redis: RedisClient,
    private readonly records: ApprovalRecords,
    private readonly options: Pick<ApprovalStoreOptions, 'resolvedTtlMs'>,
    /** The whole-record write a patch falls back on (ApprovalStore passes its own update). */
    private readonly update: (
      approvalId: string,
      mutate: Mutation,
      options?: WriteOptions,
    ) => Promise<UpdateResult | undefined> = (approvalId, mutate, options) =>
      records.update(approvalId, mutate, undefined, options),
  ) {}

  /** A fresh post lease to pass to createIfAbsent or acquirePostLease. */
  newPostLease(ttlMs: number): PostLease {
    return { token: randomUUID(), ttlMs };
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
      this.records.fence(record.hostId),
    );
    if (code === -2) throw new FencedError(record.hostId);
    return code === 1 ? lease : undefined;
  }

  /** Extends our post lease by its ttl; false when it is no longer ours (it ran out). */
  async renewPostLease(approvalId: string, lease: PostLease): Promise<boolean> {
    return (await this.redis.csRenew(keys.postLease(approvalId), lease.token, String(lease.ttlMs))) === 1;
  }

  async releasePostLease(approvalId: string, lease: PostLease): Promise<void> {
    await this.redis.csRelease(keys.postLease(approvalId), lease.token);
  }

  /**
   * Stores where the card was posted, maps the message to the approval and gives the lease back,
   * in one round trip when nobody changed the record while it was being posted. A post made for
   * the host (`forHost`: its owner's card, not a standby's) is placed only while this process
   * still holds the host's lease: once it ran out, or Redis refuses the token, neither the record
   * nor the message key says where it went (FencedError), and the host's new owner has the card.
   */
  async savePost(
    record: ApprovalRecord,
    card: { channel: string; ts: string },
    lease: PostLease,
    { forHost = false }: WriteOptions = {},
  ): Promise<UpdateResult | undefined> {
    // Sent with no token, the write would get past the fence the new owner raised.
    if (forHost && this.records.leaseGone(record.hostId)) throw new FencedError(record.hostId);
    const messageKey = keys.message(card.channel, card.ts);
    const [placed, mapped] = await Promise.allSettled([
      this.placeInRecord(record, card, lease, forHost),
      // The message's own slot, in the same round trip: mapped whether or not the write won, as
      // it always was, unless the write was refused for the host's lease (below).
      isTerminal(record)
        ? this.redis.set(messageKey, record.approvalId, 'PX', this.options.resolvedTtlMs)
        : this.redis.set(messageKey, record.approvalId),
    ]);
    if (placed.status === 'rejected') {
      // A card of a host another replica owns now: its buttons must not decide the approval. The
      // key is this message's alone, so it is taken back whole.
      if (placed.reason instanceof FencedError) await this.redis.del(messageKey);
      throw placed.reason;
    }
    if (mapped.status === 'rejected') throw mapped.reason;
    return placed.value;
  }

  /** The record half of savePost: the patch, or the whole-record write when the record moved. */
  private async placeInRecord(
    record: ApprovalRecord,
    card: { channel: string; ts: string },
    lease: PostLease,
    forHost: boolean,
  ): Promise<UpdateResult | undefined> {
    const result = await this.patchSlack(record, Object.assign({}, record.slack, card), lease);
    if (result !== 'moved') return result;
    // Changed while we posted: write the card's place into whatever it is now.
    const saved = await this.update(
      record.approvalId,
      (r) => (r.slack.ts ? undefined : { ...r, slack: { ...r.slack, ...card } }),
      forHost ? FOR_HOST : undefined,
    );
    if (saved && isTerminal(saved.record))
      await this.redis.pexpire(keys.message(card.channel, card.ts), this.options.resolvedTtlMs);
    return saved;
  }

  /**
   * A card its creator will not post after all (a remembered grant answers the approval): the
   * record says so (slack.deferred) and the lease is given back, in one round trip when nobody
   * changed the record since `record` was written. Only its creator defers, for the host: once
   * the host's lease is gone it is refused (FencedError), as the create would have been, or the
   * new owner would find a card held back for a grant decision this process can no longer send.
   */
  async deferPost(record: ApprovalRecord, lease: PostLease): Promise<UpdateResult | undefined> {
    // Sent with no token, the patch would get past the fence the new owner raised.
    if (this.records.leaseGone(record.hostId)) throw new FencedError(record.hostId);
    const result = await this.patchSlack(record, Object.assign({}, record.slack, DEFERRED), lease);
    if (result !== 'moved') return result;
    return this.update(
      record.approvalId,
      (r) =>
        r.slack.ts || r.slack.deferred || isTerminal(r)
          ? undefined
          : { ...r, slack: { ...r.slack, deferred: true } },
      FOR_HOST,
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
    const written = this.records.nextVersion(record, { ...record, slack });
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
          this.records.fence(record.hostId),
          '',
          newWriteId(),
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
          this.records.fence(record.hostId),
        ));
    if (result === 1) {
      this.records.recent.seen(written);
      return { record: written, changed: true, previous: record };
    }
    this.records.recent.forget(record.approvalId);
    if (result === -1) return undefined;
    if (result === -2) throw new FencedError(record.hostId);
    return 'moved';
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
    const [stored, hinted] = await Promise.all([
      this.redis.get(keys.message(channel, ts)),
      hint ? read(hint) : undefined,
    ]);
    // The hinted record is parsed here only when the key is gone: otherwise once, below.
    const mapped =
      stored ??
      (await this.mappedByRecord(
        channel,
        ts,
        hint && hinted ? this.records.parsed(hint, hinted[0] ?? null) : undefined,
      ));
    if (!mapped) return undefined;
    const [raw, subject, rawArgs] = mapped === hint && hinted ? hinted : await read(mapped);
    if (!raw) return undefined;
    const full: FullTextOf = {};
    if (subject) full.subject = FullText.parse(JSON.parse(subject));
    if (rawArgs) full.rawArgs = FullText.parse(JSON.parse(rawArgs));
    return { record: this.records.parsed(mapped, raw)!, full };
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
    const [stored, raw] = await Promise.all([
      this.redis.get(keys.message(channel, ts)),
      this.redis.hget(keys.approval(expectedApprovalId), 'd'),
    ]);
    const record = this.records.parsed(expectedApprovalId, raw);
    const mappedTo = stored ?? (await this.mappedByRecord(channel, ts, record));
    return { mappedTo, record };
  }

  /**
   * A message whose key is gone but whose approval's record names it as its card: the card's place
   * is written to the record and, beside it, to the message's key (placeCard), two slots and so on
   * a Cluster two masters, and a process killed between the two leaves the record alone. The
   * record naming this very message is as good as the key, which is written back. Only ever for
   * the approval the button names, checked against the record: never the button alone.
   */
  private async mappedByRecord(
    channel: string,
    ts: string,
    record: ApprovalRecord | undefined,
  ): Promise<string | undefined> {
    if (!record || record.slack.channel !== channel || record.slack.ts !== ts) return undefined;
    const messageKey = keys.message(channel, ts);
    await (isTerminal(record)
      ? this.redis.set(messageKey, record.approvalId, 'PX', this.options.resolvedTtlMs, 'NX')
      : this.redis.set(messageKey, record.approvalId, 'NX'));
    return record.approvalId;
  }

  /** Another message (an escalation DM) whose buttons decide this approval, for `ttlMs`. */
  async mapMessage(channel: string, ts: string, approvalId: string, ttlMs: number): Promise<void> {
    await this.redis.set(keys.message(channel, ts), approvalId, 'PX', ttlMs);
  }

  async findByMessage(channel: string, ts: string): Promise<string | undefined> {
    return (await this.redis.get(keys.message(channel, ts))) ?? undefined;
  }
}
