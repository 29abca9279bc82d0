import type { Logger } from 'pino';
import { type HealthProbe, isReady, partsUp, reasonsDown } from './healthRoutes.js';

export interface ReadinessLogOptions {
  /** How often readiness is read. */
  intervalMs?: number;
  /** How long a replica may be not ready at start-up before it is said (auth.test, Redis connecting). */
  graceMs?: number;
}

/**
 * One line each time the replica's readiness changes: `ready (/readyz answers 200)` at info, `not
 * ready (/readyz answers 503)` at warn, each with the parts and every reason /readyz gives on
 * METRICS_PORT. PORT's /readyz says ready or not alone, since PORT may be public: without
 * METRICS_PORT this line is where an operator reads why. The reasons are the probe's, masked as
 * /readyz masks them (wiring/health.ts), and the logger masks the configuration's secrets again.
 *
 * Readiness is read every interval rather than only when /readyz is asked: in Socket Mode, or with
 * no probe set up, nobody may ask, and a change would go unsaid.
 */
export class ReadinessLog {
  private timer: NodeJS.Timeout | undefined;
  private said: boolean | undefined;
  private startedAt = 0;
  private readonly intervalMs: number;
  private readonly graceMs: number;

  constructor(
    private readonly probe: HealthProbe,
    private readonly logger: Logger,
    options: ReadinessLogOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 1_000;
    this.graceMs = options.graceMs ?? 10_000;
  }

  start(): void {
    if (this.timer) return;
    this.startedAt = Date.now();
    this.timer = setInterval(() => this.check(), this.intervalMs);
    this.timer.unref();
  }

  /** From the first shutdown step: a replica going down on purpose is not news. */
  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  private check(): void {
    const status = partsUp(this.probe);
    const ready = isReady(status);
    if (ready === this.said) return;
    // Not ready yet at start-up (Redis connecting, auth.test on its way) is said only once it lasts.
    if (!ready && this.said === undefined && Date.now() - this.startedAt < this.graceMs) return;
    this.said = ready;
    const fields = { ready, ...status, reasons: reasonsDown(this.probe, status) };
    if (ready) this.logger.info(fields, 'ready (/readyz answers 200)');
    else this.logger.warn(fields, 'not ready (/readyz answers 503)');
  }
}
