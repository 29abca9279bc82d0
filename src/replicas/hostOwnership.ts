import type { Logger } from 'pino';
import { type HostLeases, type LeaseHolder, pidOf, replicaOf } from '../store/hostLeases.js';
import { FenceBook } from './fenceBook.js';

// Which hosts this replica runs. Each host has one owner at a time, through its lease in Redis;
// the owner renews it well before it runs out and, should it fail to renew in time, stops the
// host at once and acts for it no more. Standbys poll and take a lease that ran out. Validity is
// counted on this process's monotonic clock from when a renewal was *sent*, so a process that was
// paused (SIGSTOP, a long GC, a VM freeze) sees on waking that its lease is over before it acts.

export interface HostOwnershipOptions {
  leases: HostLeases;
  /**
   * This process in leases (processIdentity): its replica's stable name and a nonce. A lease left
   * by a dead earlier process of the same replica is taken back at once, not after it runs out.
   */
  replicaId: string;
  /** The configured hosts, in the configuration's order. */
  hostIds: readonly string[];
  ttlMs: number;
  logger: Logger;
  /**
   * This replica now owns the host, with this fencing token: make writes carry it, then run the
   * host. A rejection gives the lease back, to be tried again later.
   */
  onGained(hostId: string, token: number): Promise<void>;
  /** The lease is gone (or about to be): stop the host at once. Must not throw or wait. */
  onLost(hostId: string, why: string): void;
  /**
   * Where this replica's leases are written for the parts that act on them (store, keeper, hosts),
   * which are built before it. Its clock is the one leases are counted on. Default: a book of its
   * own, on `clock`.
   */
  fences?: FenceBook;
  /** Monotonic milliseconds, for a book made here (ignored with `fences`). */
  clock?: () => number;
  /**
   * Whether an earlier process of this replica, by its pid, is surely gone: its leases are then
   * taken back at once rather than once it has been silent for a few ticks. Default: this very
   * pid (a restarted container's), or no process by that pid on this machine.
   */
  isGone?: (pid: number) => boolean;
}

/** A replica's processes share its name and, by contract, its machine: a pid is checked there. */
function pidIsGone(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return false;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

interface Held {
  holder: LeaseHolder;
  /** Monotonic ms after which this replica may no longer act for the host. */
  validUntil: number;
  /** Monotonic ms when the last renewal was sent. */
  renewedAt: number;
  expiry: NodeJS.Timeout;
}

/** A replica silent for this many ticks no longer counts as alive. */
const LIVE_TICKS = 3;

/** Thrown by onGained when the lease it was called for ran out before the host could start. */
export class LeaseLostError extends Error {
  constructor(hostId: string) {
    super(`the lease of host ${hostId} ran out while it was being taken`);
    this.name = 'LeaseLostError';
  }
}

export interface HostStanding {
  hostId: string;
  /** `owner`: this replica runs it; `standby`: another does, or nobody yet. */
  role: 'owner' | 'standby';
  /** The replica that owns it, when one does. */
  ownerReplica?: string;
}

export class HostOwnership {
  private readonly clock: () => number;
  private readonly fences: FenceBook;
  private readonly held = new Map<string, Held>();
  private readonly gaining = new Set<string>();
  private others = new Map<string, LeaseHolder>();
  /** Host → how many ticks in a row nobody owned it. */
  private unownedFor = new Map<string, number>();
  /** Processes that said they are alive within the last few ticks. */
  private live = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private ticking: Promise<void> = Promise.resolve();
  private stopped = false;
  /** stopTaking() was called: held leases are renewed, no other is taken. */
  private closing = false;
  /** Safety margin under the lease's lifetime: Redis's clock and ours may drift apart a little. */
  private readonly marginMs: number;
  readonly tickMs: number;
  readonly renewEveryMs: number;

  constructor(private readonly options: HostOwnershipOptions) {
    this.fences = options.fences ?? new FenceBook(options.clock);
    this.clock = this.fences.clock;
    this.marginMs = Math.min(1_000, Math.floor(options.ttlMs / 10));
    this.renewEveryMs = Math.floor(options.ttlMs / 3);
    // A standby looks several times per lease, so a host is taken over soon after its lease ends.
    this.tickMs = Math.max(100, Math.min(1_000, Math.floor(options.ttlMs / 5)));
  }

  /**
   * Starts taking and renewing leases. With several hosts the first round waits as long as a
   * replica counts as alive without a word, so that replicas started together see each other
   * before each takes its share.
   */
  start(): void {
    const first = this.options.hostIds.length > 1 ? LIVE_TICKS * this.tickMs : 0;
    void this.register().finally(() => this.schedule(first));
  }

  /** Whether this replica may act for the host right now. */
  holds(hostId: string): boolean {
    return this.fences.holds(hostId);
  }

  /** The fencing token every write for the host carries, while this replica holds its lease. */
  fenceOf(hostId: string): number | undefined {
    return this.fences.fenceOf(hostId);
  }

  /** Each configured host and this replica's part in it. */
  standings(): HostStanding[] {
    return this.options.hostIds.map((hostId) => {
      if (this.holds(hostId)) return { hostId, role: 'owner', ownerReplica: this.options.replicaId };
      const other = this.others.get(hostId);
      return { hostId, role: 'standby', ...(other ? { ownerReplica: other.replicaId } : {}) };
    });
  }

  /**
   * This replica is shutting down: it keeps renewing the leases of the hosts it runs until they
   * are stopped, and takes no other. A host another replica gives back meanwhile (both told to
   * stop together) would be started only to be abandoned when stop() gives the leases back.
   */
  stopTaking(): void {
    this.closing = true;
  }

  /**
   * Gives every lease back and leaves the replica set; call once the hosts are stopped, so a
   * standby can take over at once instead of after the lease runs out.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.ticking;
    const releases = [...this.held].map(([hostId, held]) => {
      clearTimeout(held.expiry);
      this.fences.drop(hostId);
      return this.options.leases.release(hostId, held.holder);
    });
    this.held.clear();
    await Promise.allSettled([...releases, this.options.leases.leave(this.options.replicaId)]);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.ticking = this.tick().finally(() => this.schedule(this.tickMs));
    }, delayMs);
    this.timer.unref();
  }

  private async register(): Promise<void> {
    try {
      const live = await this.options.leases.heartbeat(
        this.options.replicaId,
        Date.now(),
        LIVE_TICKS * this.tickMs,
        this.options.ttlMs * 4,
      );
      this.live = new Set(live);
    } catch (err) {
      this.options.logger.warn({ err }, 'could not announce this replica');
    }
  }

  private async tick(): Promise<void> {
    await this.register();
    await Promise.all([...this.held.keys()].map((hostId) => this.renewIfDue(hostId)));
    try {
      await this.takeShare();
    } catch (err) {
      this.options.logger.warn({ err }, 'could not look at the host leases');
    }
  }

  private async renewIfDue(hostId: string): Promise<void> {
    const held = this.held.get(hostId);
    if (!held || this.clock() - held.renewedAt < this.renewEveryMs) return;
    const sentAt = this.clock();
    let renewed: boolean;
    try {
      renewed = await this.options.leases.renew(hostId, held.holder, this.options.ttlMs);
    } catch (err) {
      // Not lost yet: the expiry timer stops the host if no renewal gets through in time.
      this.options.logger.warn({ err, hostId }, 'could not renew the host lease; trying again');
      return;
    }
    if (this.held.get(hostId) !== held) return;
    if (!renewed) {
      this.lose(hostId, 'its lease was taken over by another replica');
      return;
    }
    held.renewedAt = sentAt;
    this.extend(hostId, held, sentAt + this.options.ttlMs - this.marginMs);
  }

  private extend(hostId: string, held: Held, validUntil: number): void {
    held.validUntil = validUntil;
    this.fences.hold(hostId, held.holder.token, validUntil);
    clearTimeout(held.expiry);
    held.expiry = setTimeout(
      () => {
        if (this.held.get(hostId) !== held) return;
        // A timer may fire a little before the monotonic clock reaches its deadline (libuv counts
        // whole milliseconds from the loop's cached time): wait out the rest, never skip the stop.
        if (this.clock() < held.validUntil) this.extend(hostId, held, held.validUntil);
        else this.lose(hostId, 'its lease could not be renewed in time');
      },
      Math.max(0, Math.ceil(validUntil - this.clock())),
    );
    held.expiry.unref();
  }

  private lose(hostId: string, why: string): void {
    const held = this.held.get(hostId);
    if (!held) return;
    clearTimeout(held.expiry);
    this.held.delete(hostId);
    this.fences.drop(hostId);
    this.options.logger.error(
      { hostId, token: held.holder.token },
      `lost host ${hostId}: ${why}; stopping it`,
    );
    this.options.onLost(hostId, why);
  }

  /**
   * Takes unowned hosts, at most this replica's share of all hosts first; a host nobody took for
   * a whole tick is taken whatever the share, so none is left without an owner.
   */
  private async takeShare(): Promise<void> {
    const { hostIds, leases, replicaId } = this.options;
    const holders = await leases.holders(hostIds);
    this.others = new Map([...holders].filter(([, h]) => h.replicaId !== replicaId));
    for (const [hostId, held] of this.held) {
      const now = holders.get(hostId);
      // The holder as a whole, not the token alone: after a failover that lost the last writes
      // (Sentinel promotes a replica whose counter is behind), another process may hold the
      // lease with this very token.
      if (!now || now.token !== held.holder.token || now.replicaId !== held.holder.replicaId)
        this.lose(hostId, 'its lease ran out in Redis, or another replica holds it');
    }
    const share = Math.ceil(hostIds.length / Math.max(1, this.live.size));
    // Free, or left by an earlier process of this same replica that no longer says it is alive.
    const takeable = (hostId: string): LeaseHolder | 'free' | undefined => {
      const holder = holders.get(hostId);
      if (!holder) return 'free';
      const mine = replicaOf(holder.replicaId) === replicaOf(replicaId) && holder.replicaId !== replicaId;
      return mine && (!this.live.has(holder.replicaId) || this.earlierProcessGone(holder.replicaId))
        ? holder
        : undefined;
    };
    if (this.closing) return;
    const unowned = hostIds.filter((id) => !this.held.has(id) && !this.gaining.has(id) && takeable(id));
    this.unownedFor = new Map(unowned.map((id) => [id, (this.unownedFor.get(id) ?? 0) + 1]));
    for (const hostId of unowned) {
      const overShare = this.held.size + this.gaining.size >= share;
      // Over the share, a host is taken only once nobody else took it for a while.
      if (overShare && (this.unownedFor.get(hostId) ?? 0) <= LIVE_TICKS) continue;
      const from = takeable(hostId);
      await this.take(hostId, from === 'free' ? undefined : from);
    }
  }

  private earlierProcessGone(process: string): boolean {
    const pid = pidOf(process);
    return pid !== undefined && (this.options.isGone ?? pidIsGone)(pid);
  }

  private async take(hostId: string, replacing?: LeaseHolder): Promise<void> {
    const { leases, replicaId, ttlMs, logger } = this.options;
    const sentAt = this.clock();
    const token = await leases.acquire(hostId, replicaId, ttlMs, replacing);
    if (token === undefined) return;
    if (this.stopped || this.closing) {
      // Taken as this replica stops (stop() waits for this tick): given back now, or a standby
      // would wait a whole lease for a host nobody runs.
      await leases.release(hostId, { replicaId, token }).catch(() => {});
      return;
    }
    const held: Held = {
      holder: { replicaId, token },
      validUntil: 0,
      renewedAt: sentAt,
      expiry: setTimeout(() => {}, 0),
    };
    this.held.set(hostId, held);
    this.extend(hostId, held, sentAt + ttlMs - this.marginMs);
    logger.info({ hostId, token }, `took host ${hostId}`);
    // Started beside the loop: renewing the other leases must not wait for a host's handshake.
    this.gaining.add(hostId);
    void this.gain(hostId, held);
  }

  private async gain(hostId: string, held: Held): Promise<void> {
    const { leases, logger } = this.options;
    try {
      await this.options.onGained(hostId, held.holder.token);
    } catch (err) {
      if (this.held.get(hostId) !== held) {
        // Lost while it was being taken (lose() said so): nothing of it runs here, nothing to give.
        logger.warn({ err, hostId }, `host ${hostId} was not started: its lease ran out first`);
        return;
      }
      logger.error({ err, hostId }, `could not start host ${hostId}; giving its lease back`);
      clearTimeout(held.expiry);
      this.held.delete(hostId);
      this.fences.drop(hostId);
      this.options.onLost(hostId, 'it could not be started');
      await leases.release(hostId, held.holder).catch(() => {});
    } finally {
      this.gaining.delete(hostId);
    }
  }
}
