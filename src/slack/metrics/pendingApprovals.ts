import { type ApprovalRecord, isTerminal } from '../../domain/record.js';
import { settlesWithin } from '../../util/settlesWithin.js';
import type { PendingCounter } from './promMetrics.js';

// countersign_pending_approvals{route}, read at scrape time. Only the replica that runs a host
// counts its approvals, so summing over replicas counts each approval once; a standby reports 0.
// The open set of each host it runs (one SMEMBERS per host) says which approvals are pending; the
// route of each is remembered from the records this process stores (a Map write on the hot path),
// and read once for an approval it never stored (another replica opened it before a takeover).

export interface PendingSources {
  /** The hosts this replica runs now. */
  ownedHosts(): string[];
  /** The approvals not yet final on a host (its open set). */
  openIds(hostId: string): Promise<string[]>;
  /** The stored record, for the route of an approval this process never stored. */
  record(approvalId: string): Promise<Pick<ApprovalRecord, 'route'> | undefined>;
}

/** A scrape waits this long for Redis; then the gauge keeps its last values. */
const READ_WITHIN_MS = 2_000;
/**
 * Routes remembered at most: a record whose end this process never stores (its host went to
 * another replica) is dropped from the map at the next scrape, and this bounds the map when
 * nothing scrapes. Past it the map starts again; a scrape reads what it then lacks.
 */
const MAX_REMEMBERED = 100_000;

export class PendingApprovals implements PendingCounter {
  /** approvalId → its route, for approvals not final; pruned to the open sets at each scrape. */
  private readonly routes = new Map<string, string | undefined>();

  constructor(private readonly sources: PendingSources) {}

  /** RecordKeeper follower: remembers the route of each open approval stored here. */
  follow(record: ApprovalRecord): void {
    if (isTerminal(record)) {
      this.routes.delete(record.approvalId);
      return;
    }
    if (this.routes.size >= MAX_REMEMBERED && !this.routes.has(record.approvalId)) this.routes.clear();
    this.routes.set(record.approvalId, record.route);
  }

  async byRoute(): Promise<Map<string | undefined, number> | undefined> {
    const counting = this.count();
    if (!(await settlesWithin(counting, READ_WITHIN_MS))) return undefined;
    return counting.catch(() => undefined);
  }

  private async count(): Promise<Map<string | undefined, number>> {
    const { sources } = this;
    const ids = (await Promise.all(sources.ownedHosts().map((hostId) => sources.openIds(hostId)))).flat();
    const open = new Set(ids);
    for (const id of this.routes.keys()) if (!open.has(id)) this.routes.delete(id);
    // Each read fills the map on its own: a scrape that times out still spares the next its reads.
    await Promise.all(
      ids
        .filter((id) => !this.routes.has(id))
        .map(async (id) => {
          const record = await sources.record(id);
          if (record) this.routes.set(id, record.route);
        }),
    );
    const counts = new Map<string | undefined, number>();
    for (const id of ids) {
      if (!this.routes.has(id)) continue;
      const route = this.routes.get(id);
      counts.set(route, (counts.get(route) ?? 0) + 1);
    }
    return counts;
  }
}
