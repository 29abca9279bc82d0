import type { ApprovalRecord } from '../domain/record.js';

/**
 * The records this process read or wrote last, at most `limit` of them (the least recently seen
 * goes first). A click on a card held here is checked against it without a read: the claim's
 * compare-and-set (version and updatedAt, approvalRecords.ts) says whether Redis still holds it.
 * A record here may be out of date, never wrong about what it was: records are never changed in
 * place, and a newer one replaces it whenever this process reads or writes one.
 */
export class RecentRecords {
  private readonly byId = new Map<string, ApprovalRecord>();

  constructor(private readonly limit: number) {}

  seen(record: ApprovalRecord): void {
    // Deleted first, so that it moves to the newest end of the Map's order.
    this.byId.delete(record.approvalId);
    this.byId.set(record.approvalId, record);
    if (this.byId.size > this.limit) this.byId.delete(this.byId.keys().next().value!);
  }

  forget(approvalId: string): void {
    this.byId.delete(approvalId);
  }

  get(approvalId: string): ApprovalRecord | undefined {
    return this.byId.get(approvalId);
  }
}
