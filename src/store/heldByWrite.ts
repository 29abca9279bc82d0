/**
 * Approvals for which the write that resolved them did something more in the same step (claimed
 * a notice, wrote the audit entry), held in this process until what follows the write asks: it
 * then has nothing to send for it. The resolving write is made once, by compare-and-set, and the
 * process that made it is told of it at once (RecordKeeper's onChange), so it asks a few
 * microtasks later.
 */
export class HeldByWrite {
  private readonly held = new Set<string>();

  constructor(
    /**
     * Bounds what a process that never asks (nothing wired to) could gather; a process that does
     * asks within microtasks of the write, so this many are never waiting at once.
     */
    private readonly max = 10_000,
  ) {}

  /** The write that resolved `approvalId` did it. */
  hold(approvalId: string): void {
    this.held.add(approvalId);
    if (this.held.size > this.max) this.held.delete(this.held.values().next().value!);
  }

  /** True once, when this process's resolving write did it for `approvalId`. */
  take(approvalId: string): boolean {
    return this.held.delete(approvalId);
  }
}
