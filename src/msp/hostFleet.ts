import type { HostOutput } from './hostFailure.js';
import type { HostSupervisor } from './hostSupervisor.js';

/** One host's health, as /readyz and /metrics show it. */
export interface HostStatus {
  hostId: string;
  up: boolean;
  /** Why it is down; absent while it is up. */
  reason?: string;
  /** `standby`: another replica runs it (or will); this one only forwards decisions to it. */
  role?: 'owner' | 'standby';
  /** The replica that runs it, when known. */
  ownerReplica?: string;
}

export interface HostFleetOptions {
  /** The configured hosts, in the configuration's order. */
  hostIds: readonly string[];
  /** A new supervisor for one term of ownership of the host. */
  create: (hostId: string) => HostSupervisor;
  /** Whether this process may act for the host right now (its lease); default always. */
  mayAct?: (hostId: string) => boolean;
}

/**
 * The hosts this process runs, each supervised on its own (its own process, backoff and sessions):
 * one crashing or failing its handshake never waits on or disturbs another. With several replicas
 * a host runs only where its lease is held: run() when the lease is taken, kill() when it is lost.
 */
export class HostFleet {
  private readonly running = new Map<string, HostSupervisor>();
  private readonly mayAct: (hostId: string) => boolean;

  constructor(private readonly options: HostFleetOptions) {
    this.mayAct = options.mayAct ?? (() => true);
  }

  /** The host to act through, only while this process may act for it. */
  get(hostId: string): HostSupervisor | undefined {
    return this.mayAct(hostId) ? this.running.get(hostId) : undefined;
  }

  all(): HostSupervisor[] {
    return [...this.running.values()];
  }

  /** Starts the host; resolves when its first attempt is over (see HostSupervisor.start). */
  async run(hostId: string): Promise<void> {
    if (this.running.has(hostId)) return;
    const host = this.options.create(hostId);
    this.running.set(hostId, host);
    await host.start();
  }

  /** Kills the host's process group at once and forgets it: another process owns it now. */
  kill(hostId: string): void {
    const host = this.running.get(hostId);
    if (!host) return;
    this.running.delete(hostId);
    // stop() first: it ends respawns and fails waiting decides; then the group dies at once.
    void host.stop(0).catch(() => {});
    host.killNow();
  }

  /** Ready when at least one host is up: the others' approvals wait for their own host only. */
  anyUp(): boolean {
    return this.all().some((host) => this.mayAct(host.hostId) && host.isUp());
  }

  /** Each running host's health, in the order of the configuration. */
  status(output: HostOutput): HostStatus[] {
    return this.options.hostIds.flatMap((hostId): HostStatus[] => {
      const host = this.running.get(hostId);
      if (!host) return [];
      const reason = host.downReason(output);
      return [{ hostId, up: reason === undefined, ...(reason === undefined ? {} : { reason }) }];
    });
  }

  /** Why each running host that is down is down, one clause per host; undefined when all are up. */
  downReason(output: HostOutput): string | undefined {
    const down = this.status(output).filter(
      (s): s is HostStatus & { reason: string } => s.reason !== undefined,
    );
    if (down.length === 0) return undefined;
    if (this.options.hostIds.length === 1) return down[0]!.reason;
    return down.map(({ hostId, reason }) => `host ${JSON.stringify(hostId)}: ${reason}`).join('; ');
  }

  stop(withinMs?: number): Promise<void> {
    return Promise.all(this.all().map((host) => host.stop(withinMs))).then(() => undefined);
  }

  killNow(): void {
    for (const host of this.all()) host.killNow();
  }
}
