import type { Logger } from 'pino';
import { type ApprovalRecord, isTerminal } from '../../domain/record.js';
import { LogBudget } from '../../util/logBudget.js';
import { TrailingThrottle } from '../../util/trailingThrottle.js';
import type { RecordFollower } from '../records/recordFollowers.js';

// How many approvals one host may have open at once (COUNTERSIGN_MAX_OPEN_APPROVALS_PER_HOST). A
// host that asks without end (an agent looping fresh approval ids) would otherwise make a record
// and a card of each: Redis fills, and the channel's posts (about one a second) go to junk while
// the team's real approvals queue behind it. A new approval past the cap gets neither, and nothing
// is decided for it: it stays pending at the host, whose sessions are read again once the host is
// under the cap again (docs/security.md#a-host-that-asks-without-end).
//
// How the owner knows the count without a round trip per approval: the host's open set in Redis
// (keys.openApprovals) is the truth, and only the replica holding the host's lease adds to it.
// So the owner reads it (SCARD, O(1)) once under each lease, then counts every new approval it
// lets in: that estimate is never below the truth, as closes are not subtracted, only found by the
// next read. It is read again when the estimate reaches the cap, so far from the cap an approval
// costs a counter, and at the cap it costs a read per approvals let in since the last one. A
// restart or a takeover starts without a count (a new lease token) and reads it first. Memory of
// which approvals are open (askedApprovals.ts, RecentRecords) would not do: both are bounded and
// forget, and neither hears of approvals another process opened.

/** Below this share of the cap a host held back is let in again, so it does not flap at the cap. */
const RESUME_SHARE = 0.9;

export interface OpenApprovalCapOptions {
  /** The most approvals one host may have open. */
  max: number;
  /** The host's open approvals as Redis holds them (ApprovalStore.openCount). */
  countOpen(hostId: string): Promise<number>;
  /** Whether the approval has a record (ApprovalStore.exists): asked only while over the cap. */
  exists(approvalId: string): Promise<boolean>;
  /** Whether this process stored or read the approval's record lately (ApprovalStore.knows). */
  knows(approvalId: string): boolean;
  /** The lease token this replica runs the host under: another one means counting afresh. */
  epochOf(hostId: string): number | undefined;
  /** Reads the host's sessions again (ApprovalHost.refreshAll): what is pending gets its card. */
  reread(hostId: string): void;
  /** Says in `channel` that the host reached the cap, and below how many it is let in again. */
  tell(hostId: string, channel: string, cap: { max: number; resumeBelow: number }): Promise<void>;
  logger: Logger;
  /** How soon after a close a host over the cap is counted again; for tests. */
  recheck?: { settleMs: number; intervalMs: number };
}

interface HostCount {
  /** The lease token it was counted under. */
  epoch: number | undefined;
  /** Open approvals as last read plus those let in since; undefined until read under this lease. */
  open: number | undefined;
  /** Let in, their create not sent to Redis yet: a read counts them on top of what Redis holds. */
  unsent: Set<string>;
  /** The read under way: resolves false if it failed. The host's new approvals wait for it. */
  reading: Promise<boolean> | undefined;
  /** At the cap: new approvals are held back until fewer than resumeBelow are open. */
  over: boolean;
  /** Whether this time at the cap was said (one log line, one channel line). */
  told: boolean;
}

const CAPPED_MESSAGE =
  'the host has as many approvals open as it may; new ones get no card until some are decided';

export class OpenApprovalCap implements RecordFollower {
  private readonly hosts = new Map<string, HostCount>();
  private readonly resumeBelow: number;
  /** A host over the cap is counted again after its approvals close, at most once a second. */
  private readonly rechecks: TrailingThrottle;
  /** One line per time a host reaches the cap; this keeps a host flapping at it to a few a minute. */
  private readonly warnings: LogBudget;

  constructor(private readonly options: OpenApprovalCapOptions) {
    this.resumeBelow = Math.max(1, Math.floor(options.max * RESUME_SHARE));
    this.rechecks = new TrailingThrottle(
      (hostId) => this.recheck(hostId),
      options.recheck ?? { settleMs: 100, intervalMs: 1_000 },
    );
    this.warnings = new LogBudget(options.logger, {
      summary: 'hosts reached their cap of open approvals again; lines skipped',
    });
  }

  /**
   * Whether a new approval may be stored and get its card: true at once far from the cap, else
   * after a read of the host's open set. `channel` is where its card would go, and where the
   * host's reaching the cap is said.
   */
  admit(hostId: string, approvalId: string, channel: string): boolean | Promise<boolean> {
    // Not a new approval: a host describes one twice (request, requested) and lists it again.
    if (this.options.knows(approvalId)) return true;
    const count = this.countOf(hostId);
    if (count.unsent.has(approvalId)) return true;
    if (count.reading) return this.afterRead(count, hostId, approvalId, channel);
    if (count.over) return this.admitOver(count, hostId, approvalId, channel);
    if (count.open !== undefined && count.open < this.options.max) {
      count.open += 1;
      count.unsent.add(approvalId);
      return true;
    }
    // Not counted under this lease yet, or the estimate reached the cap: read what is open.
    this.read(count, hostId);
    return this.afterRead(count, hostId, approvalId, channel);
  }

  /** The approval let in has its create sent (or never will): Redis counts it from now on. */
  sent(hostId: string, approvalId: string): void {
    this.hosts.get(hostId)?.unsent.delete(approvalId);
  }

  /** RecordKeeper follower: a close may bring a host over the cap back under it. */
  follow(record: ApprovalRecord): void {
    if (!isTerminal(record)) return;
    const count = this.hosts.get(record.hostId);
    if (count && (count.over || count.reading)) this.rechecks.request(record.hostId);
  }

  stop(): void {
    this.rechecks.stop();
  }

  private countOf(hostId: string): HostCount {
    const epoch = this.options.epochOf(hostId);
    let count = this.hosts.get(hostId);
    if (!count || count.epoch !== epoch) {
      count = { epoch, open: undefined, unsent: new Set(), reading: undefined, over: false, told: false };
      this.hosts.set(hostId, count);
    }
    return count;
  }

  /**
   * Waits for the read under way, then decides as if it came now: approvals wait in the order
   * they came. A failed read lets them in (the cap is a safeguard; its read failing is no reason
   * to leave an approval without its card), and the next new approval reads again.
   */
  private async afterRead(
    count: HostCount,
    hostId: string,
    approvalId: string,
    channel: string,
  ): Promise<boolean> {
    const read = await count.reading;
    return read === false ? true : this.admit(hostId, approvalId, channel);
  }

  /**
   * Over the cap, only a new approval is held back: one with a record (asked again, listed after
   * a restart) goes on as ever, so a decision left in flight is still replayed. This read is made
   * only while over the cap.
   */
  private async admitOver(
    count: HostCount,
    hostId: string,
    approvalId: string,
    channel: string,
  ): Promise<boolean> {
    let recorded: boolean;
    try {
      recorded = await this.options.exists(approvalId);
    } catch {
      recorded = true;
    }
    if (recorded) return true;
    if (!count.told) {
      count.told = true;
      const { max } = this.options;
      this.warnings.warn({ hostId, max, resumeBelow: this.resumeBelow }, CAPPED_MESSAGE);
      this.options.tell(hostId, channel, { max, resumeBelow: this.resumeBelow }).catch((err: unknown) => {
        this.options.logger.warn(
          { err, hostId, channel },
          'could not say in the channel that the host is at its cap',
        );
      });
    }
    return false;
  }

  /** Reads the host's open set; the approvals let in and not sent yet are counted on top. */
  private read(count: HostCount, hostId: string): void {
    const unsent = count.unsent.size;
    count.reading = this.options.countOpen(hostId).then(
      (open) => {
        count.reading = undefined;
        this.counted(count, hostId, open + unsent);
        return true;
      },
      (err: unknown) => {
        count.reading = undefined;
        this.options.logger.warn(
          { err, hostId },
          "could not count the host's open approvals; letting them in",
        );
        return false;
      },
    );
  }

  private counted(count: HostCount, hostId: string, open: number): void {
    count.open = open;
    if (!count.over && open >= this.options.max) {
      count.over = true;
      count.told = false;
      return;
    }
    if (count.over && open < this.resumeBelow) {
      count.over = false;
      this.options.logger.info(
        { hostId, open, max: this.options.max },
        'the host is under its cap of open approvals again; reading it again',
      );
      this.options.reread(hostId);
    }
  }

  /** Counts a host over the cap again after some of its approvals closed. */
  private async recheck(hostId: string): Promise<void> {
    const count = this.hosts.get(hostId);
    if (!count || count.epoch !== this.options.epochOf(hostId)) return;
    if (count.reading) await count.reading;
    if (!count.over || count.reading) return;
    this.read(count, hostId);
    await count.reading;
  }
}
