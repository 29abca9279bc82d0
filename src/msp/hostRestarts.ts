import type { Logger } from 'pino';
import { type BackoffPolicy, backoffDelay } from './backoff.js';
import {
  describeExit,
  failedStartsMessage,
  type HostOutput,
  type HostSentence,
  quotingNothing,
} from './hostFailure.js';
import type { ExitInfo } from './processControl.js';

// When a host process is started again (hostSupervisor.ts): the backoff between starts, and
// what is said about starts that keep failing (docs/msp-approvals.md §1 exit codes).

/** Exit codes after which the host will not start without an operator (§1 exit codes). */
const OPERATOR_EXIT_CODES: ReadonlySet<number> = new Set([2, 5]);
const needsOperator = (exit: ExitInfo): boolean => exit.code !== null && OPERATOR_EXIT_CODES.has(exit.code);
/** Failed starts in a row before one error line says what is wrong (at once for operator codes). */
const FAILED_STARTS_BEFORE_ERROR = 3;
/** Stderr lines that go with that error line. */
const STDERR_LINES_REPORTED = 5;

/** What a start that never came up left to report. */
export interface FailedStart {
  readonly logger: Logger;
  readonly stderrTail: readonly string[];
  /** Why its handshake failed, when it did. */
  readonly startFailure: HostSentence | undefined;
}

/** Why the host is down, and when to say so at error. */
export class StartFailures {
  /** Starts in a row that ended before the host came up. */
  private failedStarts = 0;
  /** The failed-start reason last logged at error, so the same one is not logged again. */
  private reportedStartFailure: string | undefined;
  /** Why the host is down, once an attempt has ended, with the host's words and without; cleared when it comes up. */
  private lastFailure: HostSentence | undefined;

  constructor(
    private readonly logger: Logger,
    private readonly commandSetting: string | undefined,
  ) {}

  /** Why the host is down, once an attempt has ended. */
  reason(output: HostOutput): string | undefined {
    return this.lastFailure?.[output];
  }

  /** Whether the last start failed (and no host has come up since). */
  get failing(): boolean {
    return this.failedStarts > 0;
  }

  /** A host that was up exited. */
  noteExit(exit: ExitInfo): void {
    this.lastFailure = quotingNothing(`the MSP host ${describeExit(exit)}; restarting it`);
  }

  /**
   * A start that ended before the host came up. A command that is wrong fails every time, so
   * after a few in a row (at once for the exit codes that need an operator) one error line says
   * why; the same reason is not logged at error again until a host has come up. Otherwise the
   * reason goes with the next start's line (RespawnSchedule): one line per backoff step.
   */
  noteFailedStart(incarnation: FailedStart, exit: ExitInfo): void {
    this.failedStarts += 1;
    const { quoted: reason, withheld } = incarnation.startFailure ?? quotingNothing(describeExit(exit));
    const stderrTail = incarnation.stderrTail.slice(-STDERR_LINES_REPORTED);
    this.lastFailure = {
      quoted: failedStartsMessage(reason, this.failedStarts, stderrTail, this.commandSetting),
      withheld: failedStartsMessage(withheld, this.failedStarts, [], this.commandSetting),
    };
    const fields = { exitCode: exit.code, signal: exit.signal, failedStarts: this.failedStarts, stderrTail };
    const due = this.failedStarts >= FAILED_STARTS_BEFORE_ERROR || needsOperator(exit);
    if (due && reason !== this.reportedStartFailure) {
      this.reportedStartFailure = reason;
      incarnation.logger.error(fields, this.lastFailure.quoted);
    } else {
      incarnation.logger.debug(fields, 'host did not come up');
    }
  }

  noteUp(): void {
    if (this.reportedStartFailure !== undefined) {
      this.logger.info({ failedStarts: this.failedStarts }, 'MSP host is up after failed starts');
    }
    this.failedStarts = 0;
    this.reportedStartFailure = undefined;
    this.lastFailure = undefined;
  }
}

/** The backoff between starts: it grows with each failure in a row, and starts over after a stable run. */
export class RespawnSchedule {
  /** Failed starts or deaths in a row, for the backoff. */
  private failures = 0;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly backoff: BackoffPolicy,
    private readonly random: () => number,
    private readonly stableAfterMs: number,
    private readonly logger: Logger,
  ) {}

  /**
   * Calls `launch` after the backoff; nothing when a respawn is scheduled already. Says so in
   * one line with `reason`, why the host is down, so that a start that keeps failing is one
   * line per backoff step.
   */
  schedule(upAt: number | undefined, exit: ExitInfo, launch: () => void, reason?: string): void {
    if (this.timer !== undefined) return;
    if (upAt !== undefined && Date.now() - upAt >= this.stableAfterMs) this.failures = 0;
    // An operator has to fix these; retrying at the slowest pace keeps us from spinning.
    const attempt = needsOperator(exit) ? Number.POSITIVE_INFINITY : this.failures;
    const delayMs = backoffDelay(attempt, this.backoff, this.random);
    this.failures += 1;
    this.logger.info(
      { delayMs, failures: this.failures, ...(reason === undefined ? {} : { reason }) },
      'respawning host',
    );
    this.timer = setTimeout(() => {
      this.timer = undefined;
      launch();
    }, delayMs);
  }

  /** Drops a scheduled respawn. */
  cancel(): void {
    if (this.timer !== undefined) {
      clearTimeout(this.timer);
      this.timer = undefined;
    }
  }
}
