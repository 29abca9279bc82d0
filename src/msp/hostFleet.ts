import type { HostSupervisor } from './hostSupervisor.js';

/** One host's health, as /readyz and /metrics show it. */
export interface HostStatus {
  hostId: string;
  up: boolean;
  /** Why it is down; absent while it is up. */
  reason?: string;
}

/**
 * The hosts the bot runs, each supervised on its own (its own process, backoff and sessions):
 * one crashing or failing its handshake never waits on or disturbs another.
 */
export class HostFleet {
  private readonly byId = new Map<string, HostSupervisor>();

  constructor(hosts: readonly HostSupervisor[]) {
    for (const host of hosts) this.byId.set(host.hostId, host);
  }

  get(hostId: string): HostSupervisor | undefined {
    return this.byId.get(hostId);
  }

  all(): HostSupervisor[] {
    return [...this.byId.values()];
  }

  /** Starts every host at once; resolves when each first attempt is over (see HostSupervisor.start). */
  async start(): Promise<void> {
    await Promise.all(this.all().map((host) => host.start()));
  }

  /** Ready when at least one host is up: the others' approvals wait for their own host only. */
  anyUp(): boolean {
    return this.all().some((host) => host.isUp());
  }

  /** Each host's health, in the order of the configuration. */
  status(): HostStatus[] {
    return this.all().map((host) => {
      const reason = host.downReason();
      return { hostId: host.hostId, up: reason === undefined, ...(reason === undefined ? {} : { reason }) };
    });
  }

  /** Why each host that is down is down, one clause per host; undefined when all are up. */
  downReason(): string | undefined {
    const down = this.all()
      .map((host) => [host.hostId, host.downReason()] as const)
      .filter((entry): entry is readonly [string, string] => entry[1] !== undefined);
    if (down.length === 0) return undefined;
    if (this.byId.size === 1) return down[0]![1];
    return down.map(([id, why]) => `host ${JSON.stringify(id)}: ${why}`).join('; ');
  }

  stop(withinMs?: number): Promise<void> {
    return Promise.all(this.all().map((host) => host.stop(withinMs))).then(() => undefined);
  }

  killNow(): void {
    for (const host of this.all()) host.killNow();
  }
}
