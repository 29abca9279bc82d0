import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { finished } from 'node:stream/promises';
import type { Logger } from 'pino';
import { maskCommandLine } from '../secrets/maskCommandLine.js';
import { settlesWithin } from '../util/settlesWithin.js';
import {
  APPROVAL_NOTIFICATIONS,
  approvalEventFromNotification,
  parseApprovalRequest,
} from './approvalEvents.js';
import { type BackoffPolicy, backoffDelay } from './backoff.js';
import { type IncomingRequest, JsonRpcConnection } from './connection.js';
import { decideWithRetry } from './decide.js';
import { HostGoneError, MspError } from './errors.js';
import type { ApprovalHost, HostEvent, SessionMemory } from './events.js';
import { performHandshake } from './handshake.js';
import { describeExit, describeHandshakeFailure, failedStartsMessage } from './hostFailure.js';
import { pipeHostStderr } from './hostStderr.js';
import {
  type ExitInfo,
  reapGroup,
  SIGKILL_AFTER_MS,
  SIGKILL_WAIT_MS,
  signalGroup,
  terminate,
  waitForExit,
} from './processControl.js';
import type { DecideParams, DecideResult } from './protocol.js';
import { SessionFollower } from './sessionFollower.js';
import { UpGate } from './upGate.js';

// Owns one MSP host process: spawn, handshake, follow sessions, turn approval frames into
// HostEvents, respawn with backoff when it dies (docs/msp-approvals.md §1, §2, §3, §11).

export interface HostSupervisorOptions {
  hostId: string;
  /** Run through `/bin/sh -c`. */
  command: string;
  logger: Logger;
  clientVersion: string;
  /** Called synchronously, in the order the frames arrived. */
  onEvent: (event: HostEvent) => void;
  /** Remembers followed sessions across restarts of the bot. */
  sessionMemory?: SessionMemory;
  /** Respawn backoff; default 200 ms doubling to 30 s. */
  backoff?: BackoffPolicy;
  /** The longest an orderly stop waits after EOF before SIGTERM; default 10 s. */
  shutdownGraceMs?: number;
  env?: NodeJS.ProcessEnv;
  /** The host's working directory; the bot's when absent. */
  cwd?: string;
  /** Where the operator wrote the command, named when it keeps failing; default MSP_HOST_COMMAND. */
  commandSetting?: string;
  /** Per approval/decide request; default 30 s. */
  decideTimeoutMs?: number;
  /** How long decide() waits for a host that is down; default 30 s. */
  upWaitMs?: number;
  /** initialize must be answered within this; default 30 s. */
  handshakeTimeoutMs?: number;
  /** session/list, listPending, resume; default 60 s. */
  requestTimeoutMs?: number;
  /** A host that stayed up this long starts the backoff over; default 60 s. */
  stableAfterMs?: number;
  maxFrameBytes?: number;
  random?: () => number;
}

const DEFAULT_BACKOFF: BackoffPolicy = { initialMs: 200, maxMs: 30_000 };
const DEFAULTS = {
  shutdownGraceMs: 10_000,
  decideTimeoutMs: 30_000,
  upWaitMs: 30_000,
  handshakeTimeoutMs: 30_000,
  requestTimeoutMs: 60_000,
  stableAfterMs: 60_000,
};
/** After the process exited, how long we wait for the rest of its stdout. */
const STDOUT_DRAIN_MS = 2_000;
/** A host whose handshake failed gets this long after EOF before SIGTERM. */
const FAILED_HANDSHAKE_GRACE_MS = 1_000;
/**
 * In stop(): SIGTERM goes to the group this long before the deadline, SIGKILL this long before;
 * after SIGKILL we wait up to SIGKILL_WAIT_MS, which leaves a little for the death's handling.
 */
const STOP_SIGTERM_BEFORE_END_MS = 1_500;
const STOP_SIGKILL_BEFORE_END_MS = SIGKILL_WAIT_MS + 250;
/** Processes a dead host left in its group get this long after SIGTERM before SIGKILL. */
const LEFTOVER_KILL_AFTER_MS = 1_000;
/** Exit codes after which the host will not start without an operator (§1 exit codes). */
const OPERATOR_EXIT_CODES: ReadonlySet<number> = new Set([2, 5]);
const needsOperator = (exit: ExitInfo): boolean => exit.code !== null && OPERATOR_EXIT_CODES.has(exit.code);
/** Failed starts in a row before one error line says what is wrong (at once for operator codes). */
const FAILED_STARTS_BEFORE_ERROR = 3;
/** Stderr lines that go with that error line. */
const STDERR_LINES_REPORTED = 5;

/** One spawned host process and everything that lives and dies with it. */
interface Incarnation {
  readonly id: string;
  readonly child: ChildProcess;
  readonly connection: JsonRpcConnection;
  readonly logger: Logger;
  readonly stderrTail: string[];
  /** Why its handshake failed, when it did. */
  startFailure: string | undefined;
  follower: SessionFollower | undefined;
  durable: boolean;
  up: boolean;
  upAt: number | undefined;
  gone: boolean;
  /** Settles once the death was handled (hostDown emitted, respawn scheduled). */
  handled: Promise<void>;
}

function isLive(incarnation: Incarnation | undefined): incarnation is Incarnation {
  return incarnation?.up === true && !incarnation.connection.isClosed;
}

export class HostSupervisor implements ApprovalHost {
  readonly hostId: string;
  private readonly command: string;
  private readonly logger: Logger;
  private readonly clientVersion: string;
  private readonly onEvent: (event: HostEvent) => void;
  private readonly backoff: BackoffPolicy;
  private readonly env: NodeJS.ProcessEnv | undefined;
  private readonly maxFrameBytes: number | undefined;
  private readonly random: () => number;
  private readonly timing: typeof DEFAULTS;

  private started = false;
  private stopping = false;
  private stopPromise: Promise<void> | undefined;
  private current: Incarnation | undefined;
  private respawnTimer: NodeJS.Timeout | undefined;
  /** Failed starts or deaths in a row, for the backoff. */
  private failures = 0;
  /** Starts in a row that ended before the host came up. */
  private failedStarts = 0;
  /** The failed-start reason last logged at error, so the same one is not logged again. */
  private reportedStartFailure: string | undefined;
  /** Why the host is down, once an attempt has ended; cleared when a host comes up. */
  private readonly cwd: string | undefined;
  private readonly commandSetting: string | undefined;
  private lastFailure: string | undefined;
  private readonly upGate = new UpGate<Incarnation>();
  /** Sessions followed so far, with their last view cursor; followed again on a respawned host. */
  private readonly tracked = new Map<string, { viewCursor?: string }>();
  private readonly sessionMemory: SessionMemory | undefined;

  constructor(options: HostSupervisorOptions) {
    this.hostId = options.hostId;
    this.command = options.command;
    // Callers often pass a logger already bound to the host; don't bind hostId twice.
    this.logger =
      options.logger.bindings().hostId === options.hostId
        ? options.logger
        : options.logger.child({ hostId: options.hostId });
    this.clientVersion = options.clientVersion;
    this.onEvent = options.onEvent;
    this.sessionMemory = options.sessionMemory;
    this.backoff = options.backoff ?? DEFAULT_BACKOFF;
    this.env = options.env;
    this.cwd = options.cwd;
    this.commandSetting = options.commandSetting;
    this.maxFrameBytes = options.maxFrameBytes;
    this.random = options.random ?? Math.random;
    this.timing = {
      shutdownGraceMs: options.shutdownGraceMs ?? DEFAULTS.shutdownGraceMs,
      decideTimeoutMs: options.decideTimeoutMs ?? DEFAULTS.decideTimeoutMs,
      upWaitMs: options.upWaitMs ?? DEFAULTS.upWaitMs,
      handshakeTimeoutMs: options.handshakeTimeoutMs ?? DEFAULTS.handshakeTimeoutMs,
      requestTimeoutMs: options.requestTimeoutMs ?? DEFAULTS.requestTimeoutMs,
      stableAfterMs: options.stableAfterMs ?? DEFAULTS.stableAfterMs,
    };
  }

  /**
   * Spawns the host and resolves once the first attempt is over: handshake and session sync
   * done, or the attempt failed (then it keeps retrying in the background). Never rejects
   * because of the host.
   */
  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await this.launch();
  }

  /** Handshake done on a live connection. */
  isUp(): boolean {
    return isLive(this.current);
  }

  /** Why the host is not up, in one sentence (for /readyz); undefined while it is. */
  downReason(): string | undefined {
    if (this.isUp()) return undefined;
    if (this.stopping) return 'the MSP host was stopped';
    return this.lastFailure ?? 'the MSP host is starting';
  }

  refreshSession(sessionId: string): void {
    const follower = this.current?.follower;
    if (isLive(this.current) && follower) void follower.refresh(sessionId);
  }

  refreshAll(): void {
    const incarnation = this.current;
    if (!isLive(incarnation) || !incarnation.follower) return;
    incarnation.follower.refreshAll().catch((error: unknown) => {
      if (!(error instanceof HostGoneError)) incarnation.logger.warn({ err: error }, 'session sync failed');
    });
  }

  /** The current incarnation id, if a host process is running. */
  get incarnation(): string | undefined {
    return this.current?.id;
  }

  /**
   * approval/decide with retries (see decideWithRetry). Waits up to `upWaitMs` for a host that
   * is down. Throws MspError for the host's answer, HostGoneError when the host is gone (or
   * died with the request in flight), RequestTimeoutError when it did not answer in time.
   */
  async decide(params: DecideParams): Promise<DecideResult> {
    const log = this.logger.child({
      approvalId: params.approvalId,
      sessionId: params.sessionId,
      commandId: params.commandId,
    });
    let first: Incarnation | undefined;
    const incarnationForAttempt = async (): Promise<Incarnation> => {
      const incarnation = await this.waitUntilUp();
      first ??= incarnation;
      // §7: an ephemeral host's dedupe ledger died with it; never replay a commandId elsewhere.
      if (incarnation !== first && !first.durable) {
        throw new HostGoneError('ephemeral MSP host restarted; the decision cannot be replayed');
      }
      return incarnation;
    };
    const body: DecideParams = {
      sessionId: params.sessionId,
      approvalId: params.approvalId,
      commandId: params.commandId,
      requirementId: params.requirementId,
      choiceId: params.choiceId,
      ...(params.feedback === undefined ? {} : { feedback: params.feedback }),
    };
    try {
      const result = await decideWithRetry(
        async (decision) => {
          const incarnation = await incarnationForAttempt();
          return incarnation.connection.request('approval/decide', decision, {
            timeoutMs: this.timing.decideTimeoutMs,
          });
        },
        body,
        {
          resume: async (sessionId) => {
            const incarnation = await incarnationForAttempt();
            if (incarnation.follower === undefined) throw new HostGoneError('MSP host is not ready');
            await incarnation.follower.resume(sessionId);
          },
          random: this.random,
          logger: this.logger,
        },
      );
      log.debug({ status: result.status, terminal: result.terminal }, 'decision admitted by the host');
      return result;
    } catch (error) {
      const fields = error instanceof MspError ? { kind: error.kind, code: error.code } : { err: error };
      log.warn(fields, 'approval/decide failed');
      throw error;
    }
  }

  /**
   * No more respawns. EOF on the host's stdin (it drains and exits); SIGTERM to its process
   * group 1.5 s before `withinMs` runs out (or after shutdownGraceMs, if sooner), SIGKILL 0.75 s
   * before. Resolves when the host and its group are gone, within `withinMs`.
   */
  stop(withinMs: number = this.timing.shutdownGraceMs + SIGKILL_AFTER_MS): Promise<void> {
    if (this.stopPromise !== undefined) return this.stopPromise;
    this.stopping = true;
    if (this.respawnTimer !== undefined) {
      clearTimeout(this.respawnTimer);
      this.respawnTimer = undefined;
    }
    this.upGate.fail(new HostGoneError('MSP host supervisor stopped'));
    const incarnation = this.current;
    this.stopPromise = (async () => {
      if (incarnation === undefined || incarnation.gone) return;
      incarnation.logger.info('stopping host');
      incarnation.connection.close();
      const graceMs = Math.min(this.timing.shutdownGraceMs, withinMs - STOP_SIGTERM_BEFORE_END_MS);
      await terminate(incarnation.child, graceMs, STOP_SIGTERM_BEFORE_END_MS - STOP_SIGKILL_BEFORE_END_MS);
      await incarnation.handled;
    })();
    return this.stopPromise;
  }

  /** SIGKILL to the host's group, synchronously: for a process that is exiting right now. */
  killNow(): void {
    if (this.current !== undefined) signalGroup(this.current.child, 'SIGKILL');
  }

  // ── one incarnation ────────────────────────────────────────────────────────────────────

  private async launch(): Promise<void> {
    if (this.stopping) return;
    let incarnation: Incarnation;
    try {
      incarnation = this.spawnIncarnation();
    } catch (error) {
      this.logger.error({ err: error }, 'could not spawn the MSP host');
      this.scheduleRespawn(undefined, { code: null, signal: null });
      return;
    }
    try {
      const { durable } = await performHandshake(incarnation.connection, {
        clientVersion: this.clientVersion,
        logger: incarnation.logger,
        timeoutMs: this.timing.handshakeTimeoutMs,
      });
      if (incarnation.gone || this.stopping) return;
      incarnation.durable = durable;
      incarnation.follower = new SessionFollower({
        request: (method, params) =>
          incarnation.connection.request(method, params, { timeoutMs: this.timing.requestTimeoutMs }),
        origin: { hostId: this.hostId, incarnation: incarnation.id },
        durable,
        logger: incarnation.logger,
        emit: (event) => this.emit(event),
        tracked: this.tracked,
        ...(this.sessionMemory ? { memory: this.sessionMemory } : {}),
      });
      incarnation.up = true;
      incarnation.upAt = Date.now();
      this.noteUp();
      this.emit({ type: 'hostUp', hostId: this.hostId, incarnation: incarnation.id, durable });
      this.upGate.open(incarnation);
      await incarnation.follower.syncAll();
      if (!incarnation.gone) incarnation.logger.info('session sync done');
    } catch (error) {
      if (incarnation.gone || error instanceof HostGoneError) {
        incarnation.logger.info('host went away during start-up');
        return;
      }
      // The death handler schedules the respawn once the process is gone.
      incarnation.startFailure = describeHandshakeFailure(error);
      incarnation.logger.warn(
        { reason: incarnation.startFailure },
        'MSP handshake failed; restarting the host',
      );
      incarnation.connection.close();
      void terminate(incarnation.child, FAILED_HANDSHAKE_GRACE_MS);
    }
  }

  private spawnIncarnation(): Incarnation {
    const id = randomUUID();
    const logger = this.logger.child({ incarnation: id });
    // A process group of its own, so that stopping it reaches everything it started. Not
    // unref'd: the bot waits for its host.
    const child = spawn('/bin/sh', ['-c', this.command], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: this.env ?? process.env,
      ...(this.cwd ? { cwd: this.cwd } : {}),
      detached: true,
    });
    // Without this listener a failed spawn or kill would throw from an EventEmitter.
    child.on('error', (error) => logger.error({ err: error }, 'host process error'));
    const connection = new JsonRpcConnection({
      input: child.stdout!,
      output: child.stdin!,
      logger,
      maxFrameBytes: this.maxFrameBytes,
    });
    const incarnation: Incarnation = {
      id,
      child,
      connection,
      logger,
      stderrTail: [],
      startFailure: undefined,
      follower: undefined,
      durable: false,
      up: false,
      upAt: undefined,
      gone: false,
      handled: Promise.resolve(),
    };
    this.current = incarnation;
    pipeHostStderr(child.stderr!, logger, incarnation.stderrTail);
    connection.onRequest((request) => this.handleHostRequest(incarnation, request));
    connection.onNotification(({ method, params }) => this.handleNotification(incarnation, method, params));
    incarnation.handled = this.watch(incarnation);
    // A host that closed its stdout is of no use even if it lives on; make sure it goes.
    void connection.ended.then(() => {
      if (incarnation.gone || this.stopping) return;
      connection.close();
      void terminate(child, STDOUT_DRAIN_MS);
    });
    logger.info({ hostPid: child.pid, command: maskCommandLine(this.command) }, 'host spawned');
    return incarnation;
  }

  private handleHostRequest(incarnation: Incarnation, request: IncomingRequest): unknown {
    if (request.method === 'approval/request') {
      // §5.1: the receipt goes out before anything else; it is not a decision.
      request.respond({});
      const params = parseApprovalRequest(request.params, request.method, incarnation.logger);
      if (params === undefined) return undefined;
      incarnation.logger.info(
        { approvalId: params.approvalId, sessionId: params.sessionId },
        'approval requested',
      );
      this.emit({
        type: 'approvalOpened',
        hostId: this.hostId,
        incarnation: incarnation.id,
        via: 'request',
        params,
      });
      return undefined;
    }
    // userInput/request cannot come (userInputDialogs: false); if it does, we cannot show it.
    incarnation.logger.warn(
      { method: request.method, id: request.id },
      'refusing host request we do not serve',
    );
    throw MspError.methodNotFound(request.method);
  }

  private handleNotification(incarnation: Incarnation, method: string, params: unknown): void {
    if (APPROVAL_NOTIFICATIONS.has(method)) {
      const event = approvalEventFromNotification(
        method,
        params,
        { hostId: this.hostId, incarnation: incarnation.id },
        incarnation.logger,
      );
      if (event === undefined) return;
      if ('params' in event) {
        // The relay logs what it does with the event at info; this line is for tracing the wire.
        incarnation.logger.debug(
          { approvalId: event.params.approvalId, sessionId: event.params.sessionId, method },
          'approval event',
        );
      }
      this.emit(event);
      return;
    }
    if (incarnation.follower?.handleNotification(method, params)) return;
    incarnation.logger.debug({ method }, 'ignoring notification');
  }

  // ── death and respawn ──────────────────────────────────────────────────────────────────

  private async watch(incarnation: Incarnation): Promise<void> {
    const { child, connection } = incarnation;
    const exit = await waitForExit(child);
    // What it left in its group goes too, before a new host starts (a leftover may still hold
    // the session log); in stop(), terminate() does that on its own schedule. Meanwhile handle
    // what the host wrote before it died, and read the rest of its stderr for the log line about
    // its death; a process holding a pipe open must not keep us waiting for ever.
    const stderrEnded = child.stderr === null ? Promise.resolve() : finished(child.stderr);
    const [drained] = await Promise.all([
      settlesWithin(connection.ended, STDOUT_DRAIN_MS),
      settlesWithin(stderrEnded, STDOUT_DRAIN_MS),
      this.stopping ? undefined : reapGroup(child, LEFTOVER_KILL_AFTER_MS),
    ]);
    if (!drained) connection.destroy();
    this.onGone(incarnation, exit);
  }

  private onGone(incarnation: Incarnation, exit: ExitInfo): void {
    incarnation.gone = true;
    incarnation.follower?.dispose();
    incarnation.connection.close();
    if (this.current === incarnation) this.current = undefined;
    const wasUp = incarnation.up;
    incarnation.up = false;

    const fields = { exitCode: exit.code, signal: exit.signal, stderrTail: incarnation.stderrTail };
    if (this.stopping) incarnation.logger.info(fields, 'host stopped');
    else if (!wasUp) this.noteFailedStart(incarnation, exit);
    else {
      this.lastFailure = `the MSP host ${describeExit(exit)}; restarting it`;
      if (exit.code === 0) incarnation.logger.info(fields, 'host exited on its own');
      else incarnation.logger.warn(fields, 'host exited unexpectedly');
    }

    if (wasUp) {
      this.emit({
        type: 'hostDown',
        hostId: this.hostId,
        incarnation: incarnation.id,
        durable: incarnation.durable,
        exitCode: exit.code,
        signal: exit.signal,
      });
    }
    // Nothing of an ephemeral host survives it, not even its sessions (§11).
    // (An incarnation that never came up tells us nothing about durability.)
    if (wasUp && !incarnation.durable) this.tracked.clear();
    if (!this.stopping) this.scheduleRespawn(incarnation, exit);
  }

  /**
   * A start that ended before the host came up. A command that is wrong fails every time, so
   * after a few in a row (at once for the exit codes that need an operator) one error line says
   * why; the same reason is not logged at error again until a host has come up.
   */
  private noteFailedStart(incarnation: Incarnation, exit: ExitInfo): void {
    this.failedStarts += 1;
    const reason = incarnation.startFailure ?? describeExit(exit);
    const stderrTail = incarnation.stderrTail.slice(-STDERR_LINES_REPORTED);
    this.lastFailure = failedStartsMessage(reason, this.failedStarts, stderrTail, this.commandSetting);
    const fields = { exitCode: exit.code, signal: exit.signal, failedStarts: this.failedStarts, stderrTail };
    const due = this.failedStarts >= FAILED_STARTS_BEFORE_ERROR || needsOperator(exit);
    if (due && reason !== this.reportedStartFailure) {
      this.reportedStartFailure = reason;
      incarnation.logger.error(fields, this.lastFailure);
    } else {
      incarnation.logger.info(fields, 'host did not come up');
    }
  }

  private noteUp(): void {
    if (this.reportedStartFailure !== undefined) {
      this.logger.info({ failedStarts: this.failedStarts }, 'MSP host is up after failed starts');
    }
    this.failedStarts = 0;
    this.reportedStartFailure = undefined;
    this.lastFailure = undefined;
  }

  private scheduleRespawn(incarnation: Incarnation | undefined, exit: ExitInfo): void {
    if (this.stopping || this.respawnTimer !== undefined) return;
    const upAt = incarnation?.upAt;
    if (upAt !== undefined && Date.now() - upAt >= this.timing.stableAfterMs) this.failures = 0;
    // An operator has to fix these; retrying at the slowest pace keeps us from spinning.
    const attempt = needsOperator(exit) ? Number.POSITIVE_INFINITY : this.failures;
    const delayMs = backoffDelay(attempt, this.backoff, this.random);
    this.failures += 1;
    this.logger.info({ delayMs, failures: this.failures }, 'respawning host');
    this.respawnTimer = setTimeout(() => {
      this.respawnTimer = undefined;
      void this.launch();
    }, delayMs);
  }

  // ── helpers ────────────────────────────────────────────────────────────────────────────

  private emit(event: HostEvent): void {
    try {
      this.onEvent(event);
    } catch (error) {
      // A consumer's bug must not break the reader; the event is lost, so say so loudly.
      this.logger.error({ err: error, eventType: event.type }, 'host event handler threw');
    }
  }

  private waitUntilUp(): Promise<Incarnation> {
    if (this.stopping) return Promise.reject(new HostGoneError('MSP host supervisor stopped'));
    const incarnation = this.current;
    if (isLive(incarnation)) return Promise.resolve(incarnation);
    const waitMs = this.timing.upWaitMs;
    return this.upGate.wait(
      waitMs,
      () => `MSP host ${this.hostId} is down and did not come back within ${waitMs} ms`,
    );
  }
}
