import { performance } from 'node:perf_hooks';

// Which hosts this replica may act for right now, and with which fencing token. HostOwnership
// writes it as it takes, renews and loses leases; the store, the keeper, the hosts and the
// deciders read it. It is built before all of them, so none needs the lease owner itself.

interface Fence {
  token: number;
  /** Monotonic ms after which this replica may no longer act for the host. */
  validUntil: number;
}

export class FenceBook {
  private readonly fences = new Map<string, Fence>();

  /** Monotonic milliseconds: the clock leases are counted on (HostOwnership uses this one). */
  constructor(readonly clock: () => number = () => performance.now()) {}

  /** This replica holds the host's lease with `token` until `validUntil` (monotonic ms). */
  hold(hostId: string, token: number, validUntil: number): void {
    this.fences.set(hostId, { token, validUntil });
  }

  /** The lease is gone: this replica no longer acts for the host. */
  drop(hostId: string): void {
    this.fences.delete(hostId);
  }

  /** Whether this replica may act for the host right now. */
  holds(hostId: string): boolean {
    const fence = this.fences.get(hostId);
    return fence !== undefined && this.clock() < fence.validUntil;
  }

  /** The fencing token every write for the host carries, while this replica holds its lease. */
  fenceOf(hostId: string): number | undefined {
    return this.holds(hostId) ? this.fences.get(hostId)?.token : undefined;
  }
}
