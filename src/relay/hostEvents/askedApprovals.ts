import type { ApprovalRecord } from '../../domain/record.js';

/**
 * Approvals remembered, the ones asked longest ago forgotten first. Thousands is a busy bot, and
 * each approval is forgotten once the host resolves it; one forgotten while still open is only
 * left open by a listing that does not name it (see askedBefore).
 */
const MAX_REMEMBERED_ASKS = 50_000;

interface Asked {
  incarnation: string;
  /** performance.now() when its approvalOpened reached this process. */
  at: number;
}

/**
 * When this process last heard each approval asked, per host and on the monotonic clock a
 * session listing's request is dated on (HostEvent sessionReconciled.listRequestedAt). Memory
 * is enough: a host process is this process's own child, so nothing it asked reached another.
 */
export class AskedApprovals {
  private readonly asked = new Map<string, Asked>();

  constructor(
    private readonly max = MAX_REMEMBERED_ASKS,
    private readonly clock: () => number = () => performance.now(),
  ) {}

  /** The host asked (or listed) the approval just now. */
  noteAsked(hostId: string, incarnation: string, approvalId: string): void {
    const key = keyOf(hostId, approvalId);
    // Deleted first, so that the map's order stays the order of the last asks.
    this.asked.delete(key);
    this.asked.set(key, { incarnation, at: this.clock() });
    if (this.asked.size > this.max) this.asked.delete(this.asked.keys().next().value!);
  }

  /** The host resolved it: nothing is left to make up for it. */
  forget(hostId: string, approvalId: string): void {
    this.asked.delete(keyOf(hostId, approvalId));
  }

  /**
   * Whether the record's host process last asked it before `time`. False when this process does
   * not remember it asked by that process: a listing requested at `time` may predate it.
   */
  askedBefore(record: Pick<ApprovalRecord, 'hostId' | 'approvalId' | 'incarnation'>, time: number): boolean {
    const asked = this.asked.get(keyOf(record.hostId, record.approvalId));
    return asked !== undefined && asked.incarnation === record.incarnation && asked.at < time;
  }
}

function keyOf(hostId: string, approvalId: string): string {
  return JSON.stringify([hostId, approvalId]);
}
