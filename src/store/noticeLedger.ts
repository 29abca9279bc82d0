import { rideOrSend } from './coalescedWrites.js';
import { HeldByWrite } from './heldByWrite.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

/**
 * Which notices of an approval were sent, shared by every replica and kept across restarts.
 * claim() is a SET NX: of all processes that see an approval resolved, one sends each notice.
 */
export class RedisNoticeLedger {
  constructor(
    private readonly redis: RedisClient,
    /** As long as the resolved record itself: a notice can only be due while the record is. */
    private readonly options: { ttlMs: number; held?: HeldNoticeClaims },
  ) {}

  /**
   * True for the one caller that may send this notice; false once anyone has claimed it.
   * `ride`: the claim may wait, up to RIDE_WAIT_MS, for another write of this process to
   * leave with (a grant's line, sent as its decision is resolved).
   */
  async claim(approvalId: string, kind: string, how: { ride?: boolean } = {}): Promise<boolean> {
    if (this.options.held?.take(approvalId, kind)) return true;
    const write = () =>
      this.redis.set(keys.notice(approvalId, kind), 'sending', 'PX', this.options.ttlMs, 'NX');
    const set = await (how.ride ? rideOrSend(this.redis, write) : write());
    return set === 'OK';
  }

  /**
   * Records how the claimed notice ended: `sent`, or why it was not. It rides whatever this
   * process sends next (coalescedWrites.ts), else goes on its own after RIDE_WAIT_MS: a notice's
   * outcome must not cost a resolution a round trip of its own (docs/performance.md, "A decision
   * in one round trip"). Until it lands the notice reads `sending`, as it would had this process
   * died after sending it: it is never sent twice either way.
   */
  async settle(approvalId: string, kind: string, outcome: string): Promise<void> {
    const write = () => this.redis.set(keys.notice(approvalId, kind), outcome, 'KEEPTTL', 'XX');
    await rideOrSend(this.redis, write);
  }

  /** What became of a notice: undefined (never claimed), `sending`, `sent`, or a failure. */
  async state(approvalId: string, kind: string): Promise<string | undefined> {
    return (await this.redis.get(keys.notice(approvalId, kind))) ?? undefined;
  }
}

/**
 * One notice kind (the thread line's) claimed by the very write that resolves a record
 * (ApprovalRecords.update), and held in this process until the ledger is asked for it: the claim
 * costs no round trip of its own.
 */
export class HeldNoticeClaims {
  private readonly claims = new HeldByWrite();

  constructor(
    /** The notice claimed with the resolving write. */
    readonly kind: string,
    /** As the ledger's: how long the claim is kept. */
    readonly ttlMs: number,
  ) {}

  /** The write that resolved `approvalId` claimed its notice. */
  hold(approvalId: string): void {
    this.claims.hold(approvalId);
  }

  /** True once, when this process's write claimed the notice `kind` of `approvalId`. */
  take(approvalId: string, kind: string): boolean {
    return kind === this.kind && this.claims.take(approvalId);
  }
}
