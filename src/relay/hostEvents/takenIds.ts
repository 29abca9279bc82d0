import type { Logger } from 'pino';

/** Approvals told, per host, remembered; the one told longest ago forgotten first. */
const MAX_TOLD = 10_000;
/** Lines one host's channels get per interval, however many such ids it asks. */
const LINES_PER_INTERVAL = 5;
const INTERVAL_MS = 60_000;

export interface TakenIdsOptions {
  /** Says in `channel` that the host asked `approvalId`, which another host's approval has. */
  tell(hostId: string, approvalId: string, channel: string): Promise<void>;
  logger: Logger;
  now?: () => number;
}

/**
 * A host asked an approval under an id another host's approval already has. Records are kept by
 * approvalId alone, so that approval gets no record and no card, and stays pending at its host
 * (a stopgap: keying records by host too is a store migration). Its host's people are told once
 * per approval, in the channel its card would have gone to, that it must be decided at the host;
 * at most a few lines a minute per host, as a host that asks such ids without end would otherwise
 * fill its channel. An id not told for that budget is told when the host asks it again (a listing).
 */
export class TakenIds {
  private readonly told = new Set<string>();
  private readonly windows = new Map<string, { start: number; lines: number }>();
  private readonly now: () => number;

  constructor(private readonly options: TakenIdsOptions) {
    this.now = options.now ?? (() => performance.now());
  }

  taken(hostId: string, approvalId: string, channel: string): void {
    const key = JSON.stringify([hostId, approvalId]);
    if (this.told.has(key)) return;
    const now = this.now();
    let window = this.windows.get(hostId);
    if (!window || now - window.start >= INTERVAL_MS) {
      window = { start: now, lines: 0 };
      this.windows.set(hostId, window);
    }
    if (window.lines >= LINES_PER_INTERVAL) return;
    window.lines += 1;
    this.told.add(key);
    if (this.told.size > MAX_TOLD) this.told.delete(this.told.values().next().value!);
    this.options.tell(hostId, approvalId, channel).catch((err: unknown) => {
      this.options.logger.warn(
        { err, hostId, approvalId, channel },
        "could not say in the channel that the host's approval id is another host's",
      );
    });
  }
}
