import type { FakeHost, HostState } from '../../test/support/fakeHost.js';

// When each approval appeared in the fake host's state and when it stopped being pending, read
// from the host's state file a few times a second. The host re-asks approvals under new ids on
// its own after a restart, so the harness cannot know those times from what it asked itself.

export interface Sighting {
  /** First seen in the host's state (ms since the epoch). */
  seenAt: number;
  /** First seen resolved or closed. */
  closedAt?: number;
}

export class HostWatch {
  readonly sightings = new Map<string, Sighting>();
  private timer: NodeJS.Timeout | undefined;
  private last: HostState | undefined;

  constructor(
    private readonly host: FakeHost,
    private readonly everyMs = 100,
  ) {}

  start(): void {
    this.poll();
    this.timer = setInterval(() => this.poll(), this.everyMs);
  }

  stop(): void {
    clearInterval(this.timer);
    this.poll();
  }

  /** The host's state as last read. */
  get state(): HostState {
    if (!this.last) this.poll();
    return this.last!;
  }

  /** Reads the state now and notes what changed since the last read. */
  poll(): HostState {
    const now = Date.now();
    let state: HostState;
    try {
      state = this.host.state();
    } catch {
      // Caught between the host's write and rename, or the file is not there yet: next time.
      return this.last ?? this.host.state();
    }
    for (const [approvalId, rec] of Object.entries(state.approvals)) {
      let sighting = this.sightings.get(approvalId);
      if (!sighting) {
        sighting = { seenAt: now };
        this.sightings.set(approvalId, sighting);
      }
      if (rec.resolved && sighting.closedAt === undefined) sighting.closedAt = now;
    }
    this.last = state;
    return state;
  }

  /**
   * How long an approval was pending while a host process was connected: the bot runs the host
   * as its child, so whatever the host asked in that time reached a live bot.
   */
  exposureMs(approvalId: string, now = Date.now()): number {
    const sighting = this.sightings.get(approvalId);
    if (!sighting) return 0;
    const end = sighting.closedAt ?? now;
    let total = 0;
    for (const inc of this.host.incarnations) {
      const from = Math.max(sighting.seenAt, inc.startedAt);
      const to = Math.min(end, inc.closedAt ?? now);
      if (to > from) total += to - from;
    }
    return total;
  }
}
