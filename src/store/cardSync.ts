import { rideNextWrite } from './coalescedWrites.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

/**
 * Which cards may lag their records (the unsynced set), and who brings one up to date. A write
 * of a posted record marks its card (markUnsynced, sent by ApprovalRecords.update with the write);
 * the card updater strikes it off once the update it handed out has been shown (cardsSynced).
 */
export class CardSync {
  private lastStamp = 0;

  constructor(private readonly redis: RedisClient) {}

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

  /** Marks the card of this approval as behind its record, stamped now (syncStamp). */
  markUnsynced(approvalId: string): Promise<number> {
    return this.redis.zadd(keys.unsyncedCards(), this.syncStamp(), approvalId);
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

  /**
   * Runs `issue` with this process's next Redis command, in its write (coalescedWrites.ts); false
   * when that cannot be (a Cluster).
   */
  rideNextWrite(issue: () => void): boolean {
    return rideNextWrite(this.redis, issue);
  }

  /** Approvals whose card may lag their record, written before `before`, oldest first. */
  async unsyncedCards(before: Date, limit = 1_000): Promise<string[]> {
    return this.redis.zrangebyscore(keys.unsyncedCards(), '-inf', before.getTime(), 'LIMIT', 0, limit);
  }
}
