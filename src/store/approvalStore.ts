import type { FullTextOf } from '../domain/fullText.js';
import type { ApprovalRecord, Claim } from '../domain/record.js';
import {
  ApprovalRecords,
  type ApprovalStoreOptions,
  type ClaimOutcome,
  type Mutation,
  type PostLease,
  type UpdateResult,
  type WriteOptions,
} from './approvalRecords.js';
import { CardPlacement } from './cardPlacement.js';
import { CardSync } from './cardSync.js';
import type { RedisClient } from './redisConnection.js';

export {
  type ApprovalStoreOptions,
  type ClaimOutcome,
  FencedError,
  FOR_HOST,
  type Mutation,
  type PostLease,
  type UpdateResult,
  type WriteOptions,
} from './approvalRecords.js';

// What the relay, the Slack side and the replicas use of the approval store: one object over its
// three parts, the compare-and-set core (approvalRecords.ts), card placement (cardPlacement.ts)
// and card sync (cardSync.ts). Each method is its part's, unchanged: the same commands, scripts
// and round trips (see approvalScripts.ts and docs/performance.md).

export class ApprovalStore {
  private readonly records: ApprovalRecords;
  private readonly placement: CardPlacement;
  private readonly sync: CardSync;

  constructor(redis: RedisClient, options: ApprovalStoreOptions) {
    this.sync = new CardSync(redis);
    this.records = new ApprovalRecords(redis, options, this.sync);
    // A patch that finds the record moved falls back on this store's update, whoever wraps it.
    this.placement = new CardPlacement(redis, this.records, options, (approvalId, mutate, writeOptions) =>
      this.update(approvalId, mutate, undefined, writeOptions),
    );
  }

  // The compare-and-set core (ApprovalRecords).

  fenceOpen(hostId: string, token: number): Promise<number> {
    return this.records.fenceOpen(hostId, token);
  }

  get(approvalId: string): Promise<ApprovalRecord | undefined> {
    return this.records.get(approvalId);
  }

  storedVersion(approvalId: string): Promise<number | undefined> {
    return this.records.storedVersion(approvalId);
  }

  recentCard(channel: string, ts: string, approvalId: string): ApprovalRecord | undefined {
    return this.records.recentCard(channel, ts, approvalId);
  }

  /** Whether this process created, read or wrote the approval's record lately: it exists. */
  knows(approvalId: string): boolean {
    return this.records.recent.get(approvalId) !== undefined;
  }

  /**
   * The record as this process last read or wrote it, if it is one of the recent ones and says
   * where its card is, else as Redis holds it. For what only shows a record (a batch summary),
   * not for what decides on it.
   */
  async recentOrGet(approvalId: string): Promise<ApprovalRecord | undefined> {
    const recent = this.records.recent.get(approvalId);
    return recent?.slack.ts ? recent : await this.records.get(approvalId);
  }

  saveFullText(approvalId: string, fields: Record<string, string>): Promise<boolean> {
    return this.records.saveFullText(approvalId, fields);
  }

  createIfAbsent(
    record: ApprovalRecord,
    lease?: PostLease,
    extra?: Record<string, string>,
  ): Promise<boolean> {
    return this.records.createIfAbsent(record, lease, extra);
  }

  update(
    approvalId: string,
    mutate: Mutation,
    known?: ApprovalRecord,
    options?: WriteOptions,
  ): Promise<UpdateResult | undefined> {
    return this.records.update(approvalId, mutate, known, options);
  }

  claimWith(expected: ApprovalRecord, next: ApprovalRecord & { claim: Claim }): Promise<ClaimOutcome> {
    return this.records.claimWith(expected, next);
  }

  openApprovalIds(hostId: string, sessionId?: string): Promise<string[]> {
    return this.records.openApprovalIds(hostId, sessionId);
  }

  openCount(hostId: string): Promise<number> {
    return this.records.openCount(hostId);
  }

  exists(approvalId: string): Promise<boolean> {
    return this.records.exists(approvalId);
  }

  forgetOpen(record: Pick<ApprovalRecord, 'hostId' | 'sessionId' | 'approvalId'>): Promise<void> {
    return this.records.forgetOpen(record);
  }

  forgetOpenId(hostId: string, approvalId: string, sessionId?: string): Promise<void> {
    return this.records.forgetOpenId(hostId, approvalId, sessionId);
  }

  // Card placement (CardPlacement): the post lease, where the card is, the message map.

  newPostLease(ttlMs: number): PostLease {
    return this.placement.newPostLease(ttlMs);
  }

  acquirePostLease(
    record: Pick<ApprovalRecord, 'approvalId' | 'hostId'>,
    ttlMs: number,
  ): Promise<PostLease | undefined> {
    return this.placement.acquirePostLease(record, ttlMs);
  }

  renewPostLease(approvalId: string, lease: PostLease): Promise<boolean> {
    return this.placement.renewPostLease(approvalId, lease);
  }

  releasePostLease(approvalId: string, lease: PostLease): Promise<void> {
    return this.placement.releasePostLease(approvalId, lease);
  }

  savePost(
    record: ApprovalRecord,
    card: { channel: string; ts: string },
    lease: PostLease,
    options?: WriteOptions,
  ): Promise<UpdateResult | undefined> {
    return this.placement.savePost(record, card, lease, options);
  }

  deferPost(record: ApprovalRecord, lease: PostLease): Promise<UpdateResult | undefined> {
    return this.placement.deferPost(record, lease);
  }

  getWithFullText(
    channel: string,
    ts: string,
    hint: string | undefined,
  ): Promise<{ record: ApprovalRecord; full: FullTextOf } | undefined> {
    return this.placement.getWithFullText(channel, ts, hint);
  }

  getForMessage(
    channel: string,
    ts: string,
    expectedApprovalId: string,
  ): Promise<{ mappedTo: string | undefined; record: ApprovalRecord | undefined }> {
    return this.placement.getForMessage(channel, ts, expectedApprovalId);
  }

  mapMessage(channel: string, ts: string, approvalId: string, ttlMs: number): Promise<void> {
    return this.placement.mapMessage(channel, ts, approvalId, ttlMs);
  }

  findByMessage(channel: string, ts: string): Promise<string | undefined> {
    return this.placement.findByMessage(channel, ts);
  }

  // Card sync (CardSync): which cards lag their record.

  claimCardSync(approvalId: string, ttlMs: number): Promise<boolean> {
    return this.sync.claimCardSync(approvalId, ttlMs);
  }

  syncStamp(): number {
    return this.sync.syncStamp();
  }

  cardsSynced(handedAt: ReadonlyMap<string, number>): Promise<void> {
    return this.sync.cardsSynced(handedAt);
  }

  rideNextWrite(issue: () => void): boolean {
    return this.sync.rideNextWrite(issue);
  }

  unsyncedCards(before: Date, limit?: number): Promise<string[]> {
    return this.sync.unsyncedCards(before, limit);
  }
}
