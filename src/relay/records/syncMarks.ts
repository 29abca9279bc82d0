import type { Logger } from 'pino';
import type { ApprovalRecord } from '../../domain/record.js';
import type { ApprovalStore } from '../../store/approvalStore.js';
import { RIDE_WAIT_MS } from '../../store/coalescedWrites.js';

/**
 * Which cards show every write of their record. Every write marks its card in Redis; the mark is
 * struck off once the newest update handed out for it has landed, so that a card an earlier
 * process left behind its record (it died with an update in flight) is found at the next start
 * (RecordKeeper.recoverCards).
 */
export class SyncMarks {
  /** approvalId → the latest card update handed to the channel, by sequence number. */
  private readonly latestUpdate = new Map<string, number>();
  private updateSeq = 0;
  /** Cards that landed their latest update (→ when it was handed out), struck off in one call. */
  private syncedBatch = new Map<string, number>();
  private syncedFlush: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Pick<
      ApprovalStore,
      'cardsSynced' | 'unsyncedCards' | 'claimCardSync' | 'syncStamp' | 'get' | 'rideNextWrite'
    >,
    /** Work that outlives the call: the keeper's idle() waits for it. */
    private readonly track: (task: Promise<unknown>) => void,
    private readonly logger: Logger,
  ) {}

  /** An update of the card is handed to the channel: what landed() is told once it lands. */
  handOut(approvalId: string): number {
    const seq = ++this.updateSeq;
    this.latestUpdate.set(approvalId, seq);
    return seq;
  }

  /** The update `seq` landed; `handedAt`, the store's sync stamp when it was handed out. */
  landed(approvalId: string, seq: number, handedAt: number): void {
    // Only the newest update handed out says the card shows every write so far.
    if (this.latestUpdate.get(approvalId) !== seq) return;
    this.latestUpdate.delete(approvalId);
    this.syncedBatch.set(approvalId, handedAt);
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

  /** Strikes off at once what landed so far. */
  flush(): void {
    clearTimeout(this.syncedFlush);
    this.syncedFlush = undefined;
    const handedAt = this.syncedBatch;
    this.syncedBatch = new Map();
    if (handedAt.size === 0) return;
    this.track(
      this.store.cardsSynced(handedAt).catch((err: unknown) => {
        // Left marked: the next start re-renders those cards once more, which is harmless.
        this.logger.warn({ err, cards: handedAt.size }, 'could not mark cards as up to date');
      }),
    );
  }
}
