import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import type { ApprovalRecord } from '../../domain/record.js';
import type { ApprovalStore } from '../../store/approvalStore.js';
import { RIDE_WAIT_MS } from '../../store/coalescedWrites.js';

/**
 * Which cards show every write of their record. Every write marks its card in Redis; the mark is
 * struck off once the newest update handed out for it has landed, so that a card an earlier
 * process left behind its record (it died with an update in flight) is found at the next start
 * (RecordKeeper.recoverCards).
 *
 * Each replica that writes a record updates its card, and Slack shows whichever update landed
 * last: a replica's update held up by a slow or lost answer can land after another replica's
 * newer one. So the record's stored version is read after each landing, in the same write as the
 * strike; a card whose record moved past the version it now shows, with no newer update of this
 * process on its way, is brought up to date again (`behind`). That repair is itself checked once it
 * lands, so the card ends on the newest render; each round renders the record as stored, so only
 * a newer write can start another.
 */
export class SyncMarks {
  /** approvalId → the latest card update handed to the channel, by sequence number. */
  private readonly latestUpdate = new Map<string, number>();
  private updateSeq = 0;
  /**
   * approvalId → the record version whose card update this process gave up on last (Slack refused
   * it for good, or ran out of tries): a check that finds the record at that version has nothing
   * to repair, and sending it again would only be refused again. Bounded: a card whose last update
   * was given up never lands to clear its entry.
   */
  private readonly gaveUpOn = new LRUCache<string, number>({ max: 10_000 });
  /**
   * Cards that landed their latest update (→ when it was handed out, and the record's version it
   * showed), struck off and checked in one write.
   */
  private syncedBatch = new Map<string, { handedAt: number; version: number }>();
  private syncedFlush: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Pick<
      ApprovalStore,
      | 'cardsSynced'
      | 'unsyncedCards'
      | 'claimCardSync'
      | 'syncStamp'
      | 'get'
      | 'rideNextWrite'
      | 'storedVersion'
    >,
    /** Work that outlives the call: the keeper's idle() waits for it. */
    private readonly track: (task: Promise<unknown>) => void,
    private readonly logger: Logger,
    /** A card shows an older version than its record holds: render it again, in the approval's queue. */
    private readonly behind: (approvalId: string) => void,
  ) {}

  /** An update of the card is handed to the channel: what landed() is told once it lands. */
  handOut(approvalId: string): number {
    const seq = ++this.updateSeq;
    this.latestUpdate.set(approvalId, seq);
    return seq;
  }

  /** Whether an update of the card handed out here has yet to land or be given up. */
  updating(approvalId: string): boolean {
    return this.latestUpdate.has(approvalId);
  }

  /**
   * The update `seq`, of the record's `version`, was given up: no update of the card is on its
   * way, if it was the newest.
   */
  givenUp(approvalId: string, seq: number, version: number): void {
    if (this.latestUpdate.get(approvalId) !== seq) return;
    this.latestUpdate.delete(approvalId);
    this.gaveUpOn.set(approvalId, version);
  }

  /**
   * The update `seq` landed; `handedAt`, the store's sync stamp when it was handed out; `version`,
   * the version of the record it shows.
   */
  landed(approvalId: string, seq: number, handedAt: number, version: number): void {
    // Only the newest update handed out says the card shows every write so far.
    if (this.latestUpdate.get(approvalId) !== seq) return;
    this.latestUpdate.delete(approvalId);
    this.gaveUpOn.delete(approvalId);
    this.syncedBatch.set(approvalId, { handedAt, version });
    if (this.syncedFlush) return;
    // One call for a burst, and sent with whatever this process sends next (the next approval's
    // write, a poll), else on its own after RIDE_WAIT_MS: this bookkeeping must not add a round
    // trip to a resolution (docs/performance.md, "A decision in one round trip").
    this.syncedFlush = setTimeout(() => this.flush(), RIDE_WAIT_MS);
    this.syncedFlush.unref();
    this.store.rideNextWrite(() => this.flush());
  }

  /**
   * Brings up to date the cards an earlier process may have left behind their records, each in
   * its approval's queue (`enqueue`) and by one replica only. Resolves with how many were looked at.
   */
  async recover(
    startedAt: Date,
    postLeaseMs: number,
    keeper: {
      enqueue(approvalId: string, task: () => Promise<unknown>): void;
      update(record: ApprovalRecord, ts: string): void;
    },
  ): Promise<number> {
    const { store } = this;
    const ids = await store.unsyncedCards(startedAt);
    for (const approvalId of ids) {
      keeper.enqueue(approvalId, async () => {
        if (!(await store.claimCardSync(approvalId, postLeaseMs))) return;
        const readAt = store.syncStamp();
        const record = await store.get(approvalId);
        if (record?.slack.ts) keeper.update(record, record.slack.ts);
        else await store.cardsSynced(new Map([[approvalId, readAt]]));
      });
    }
    if (ids.length > 0) this.logger.info({ cards: ids.length }, 'bringing cards left behind up to date');
    return ids.length;
  }

  /** Strikes off at once what landed so far, and checks those cards against their records. */
  flush(): void {
    clearTimeout(this.syncedFlush);
    this.syncedFlush = undefined;
    const batch = this.syncedBatch;
    this.syncedBatch = new Map();
    if (batch.size === 0) return;
    const handedAt = new Map([...batch].map(([approvalId, landed]) => [approvalId, landed.handedAt]));
    this.track(
      this.store.cardsSynced(handedAt).catch((err: unknown) => {
        // Left marked: the next start re-renders those cards once more, which is harmless.
        this.logger.warn({ err, cards: handedAt.size }, 'could not mark cards as up to date');
      }),
    );
    // Issued after the strike, in the same write: one Redis runs both back to back, so a write
    // whose mark the strike took off (another replica's, stamped by another clock) is seen here.
    for (const [approvalId, { version }] of batch) this.track(this.check(approvalId, version));
  }

  /** Brings the card up to date again when its record moved past `shown` (another replica's write). */
  private async check(approvalId: string, shown: number): Promise<void> {
    let stored: number | undefined;
    try {
      stored = await this.store.storedVersion(approvalId);
    } catch (err) {
      this.logger.warn({ err, approvalId }, 'could not check a card against its record');
      return;
    }
    // The newer write's own update may still be on its way; after it or before, one more render
    // of the stored record is what makes the card end on it.
    // Not the version this process just gave up on: that update was sent, and refused.
    if (stored !== undefined && stored > shown && stored !== this.gaveUpOn.peek(approvalId))
      this.behind(approvalId);
  }
}
