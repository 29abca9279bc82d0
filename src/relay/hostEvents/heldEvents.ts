import type { Logger } from 'pino';
import type { HostEvent } from '../../msp/events.js';
import { heapSizeUpTo } from '../../util/heapSize.js';

/**
 * The most bytes of events held while Redis is away, by default. The count alone does not bound
 * them: a held event is a whole parsed frame, which may be 10 MiB (framing.ts), and intake, which
 * cuts a request's text to size, runs only once the event is handled; 10,000 of them would be
 * 100 GB, a bot out of memory and every host's approvals stopped with it. 64 MiB holds thousands
 * of ordinary events (a few KiB each), and what does not fit is read again from the host anyway.
 */
export const DEFAULT_MAX_HELD_BYTES = 64 * 1024 * 1024;

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
  /** The same, past this many bytes of held events (DEFAULT_MAX_HELD_BYTES). */
  maxBytes?: number;
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
  private readonly maxBytes: number;
  /** Bytes the buffered events hold, as heapSizeUpTo weighs them. */
  private bufferedBytes = 0;

  constructor(private readonly options: HeldEventsOptions) {
    this.maxBytes = options.maxBytes ?? DEFAULT_MAX_HELD_BYTES;
    options.redis.onAvailable(() => this.redisBack());
  }

  /** How many bytes the held events take, as weighed (for tests). */
  get heldBytes(): number {
    return this.bufferedBytes;
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
   *
   * The buffer is full past `max` events or `maxBytes` bytes. Once one of a host's events was
   * dropped, so are all its later ones, even one small enough to fit: none of them is handled
   * after a gap, and the re-read stands for them all.
   *
   * An event is weighed as it is held (only while Redis is away: nothing on the usual path), by
   * walking the parsed event (heapSizeUpTo), not by its frame's length: a frame is parsed far from
   * here (connection.ts), one listPending answer becomes many events, and a frame's unknown
   * fields are kept (z.looseObject), so weighing only the fields the bot reads (the subject's
   * text, the arguments) would miss what a host put elsewhere.
   */
  hold(event: HostEvent): void {
    if (this.buffered.length < this.options.max && !this.dropped.has(event.hostId)) {
      const room = this.maxBytes - this.bufferedBytes;
      const bytes = heapSizeUpTo(event, room);
      if (bytes <= room) {
        this.buffered.push(event);
        this.bufferedBytes += bytes;
        return;
      }
    }
    if (!this.dropped.has(event.hostId)) {
      this.options.logger.warn(
        { hostId: event.hostId, buffered: this.buffered.length, bufferedBytes: this.bufferedBytes },
        'Redis is away and the event buffer is full; dropping host events and re-reading the sessions once Redis is back',
      );
    }
    this.dropped.add(event.hostId);
  }

  private redisBack(): void {
    const events = this.buffered.splice(0);
    this.bufferedBytes = 0;
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
