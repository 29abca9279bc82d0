import type { Logger } from 'pino';
import type { HostEvent } from '../../msp/events.js';

/** Whether Redis answers right now, and a way to hear when it does again. */
export interface RedisAvailability {
  available(): boolean;
  onAvailable(listener: () => void): void;
}

export interface HeldEventsOptions {
  redis: RedisAvailability;
  logger: Logger;
  /** Past this many held events, the rest are dropped and their hosts' sessions re-read. */
  max: number;
  /** Handles an event, held or not, once Redis is there. */
  dispatch: (event: HostEvent) => void;
  /** Reads a host's sessions again (ApprovalHost.refreshAll). */
  reread: (hostId: string) => void;
}

/** Host events that came while Redis was away, handled in arrival order once it is back. */
export class HeldEvents {
  /** Events that came while Redis was away, in arrival order. */
  private readonly buffered: HostEvent[] = [];
  /** Hosts whose events were dropped from a full buffer: their sessions are read again. */
  private readonly dropped = new Set<string>();

  constructor(private readonly options: HeldEventsOptions) {
    options.redis.onAvailable(() => this.redisBack());
  }

  /** Whether the event must wait: Redis is away, or events that came before it still wait. */
  mustWait(): boolean {
    return !this.options.redis.available() || this.buffered.length > 0;
  }

  /**
   * Redis is away: keep the event for when it is back. A full buffer drops events, and the
   * host's sessions are read again instead (listPending): a pending approval is listed there,
   * and a card whose approval was asked before that listing's request and is not listed is
   * closed (OpenApprovals.reconcileSession), so nothing is lost or doubled.
   */
  hold(event: HostEvent): void {
    if (this.buffered.length < this.options.max) {
      this.buffered.push(event);
      return;
    }
    if (!this.dropped.has(event.hostId)) {
      this.options.logger.warn(
        { hostId: event.hostId, buffered: this.buffered.length },
        'Redis is away and the event buffer is full; dropping host events and re-reading the sessions once Redis is back',
      );
    }
    this.dropped.add(event.hostId);
  }

  private redisBack(): void {
    const events = this.buffered.splice(0);
    if (events.length > 0 || this.dropped.size > 0) {
      this.options.logger.info(
        { events: events.length, reread: [...this.dropped] },
        'Redis is back; handling the host events held meanwhile',
      );
    }
    for (const event of events) this.options.dispatch(event);
    for (const hostId of this.dropped) this.options.reread(hostId);
    this.dropped.clear();
  }
}
