import type { Logger } from 'pino';
import type { BackoffPolicy } from './backoff.js';
import { decideWithRetry } from './decide.js';
import { HostGoneError, MspError } from './errors.js';
import type { ApprovalHost, HostEvent, SessionMemory } from './events.js';
import { performHandshake } from './handshake.js';
import { describeHandshakeFailure, type HostOutput } from './hostFailure.js';
import { handleHostNotification, handleHostRequest } from './hostMessages.js';
import { RespawnSchedule, StartFailures } from './hostRestarts.js';
import { type Incarnation, isLive, refusedStart, type SpawnSpec, spawnIncarnation } from './incarnation.js';
import {
  type ExitInfo,
  SIGKILL_AFTER_MS,
  SIGKILL_WAIT_MS,
  signalGroup,
  terminate,
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
  /**
   * The host's whole environment; the bot's own when absent. The bot passes its own without its
   * settings (config/hostEnvironment.ts): the agent the host runs must not read its secrets.
   */
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
/** How a start that ran no process ends, as waitForExit reports a spawn that failed later. */
const NEVER_RAN: ExitInfo = { code: null, signal: null };
/** A host whose handshake failed gets this long after EOF before SIGTERM. */
const FAILED_HANDSHAKE_GRACE_MS = 1_000;
/**
 * In stop(): SIGTERM goes to the group this long before the deadline, SIGKILL this long before;
 * after SIGKILL we wait up to SIGKILL_WAIT_MS, which leaves a little for the death's handling.
 */
const STOP_SIGTERM_BEFORE_END_MS = 1_500;
const STOP_SIGKILL_BEFORE_END_MS = SIGKILL_WAIT_MS + 250;

export class HostSupervisor implements ApprovalHost {
  readonly hostId: string;
  private readonly command: string;
  private readonly logger: Logger;
  private readonly clientVersion: string;
  private readonly onEvent: (event: HostEvent) => void;
  private readonly env: NodeJS.ProcessEnv | undefined;
  private readonly maxFrameBytes: number | undefined;
  private readonly random: () => number;
  private readonly timing: typeof DEFAULTS;

  private started = false;
  private stopping = false;
  private stopPromise: Promise<void> | undefined;
  private current: Incarnation | undefined;
  private readonly respawns: RespawnSchedule;
  private readonly startFailures: StartFailures;
  private readonly cwd: string | undefined;
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
    this.env = options.env;
    this.cwd = options.cwd;
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
    this.respawns = new RespawnSchedule(
      options.backoff ?? DEFAULT_BACKOFF,
      this.random,
      this.timing.stableAfterMs,
      this.logger,
    );
    this.startFailures = new StartFailures(this.logger, options.commandSetting);
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
  downReason(output: HostOutput = 'quoted'): string | undefined {
    if (this.isUp()) return undefined;
    if (this.stopping) return 'the MSP host was stopped';
    return this.startFailures.reason(output) ?? 'the MSP host is starting';
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
    this.respawns.cancel();
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
      // No process, so no death for onGone to count: counted here as it counts a failed start.
      this.startFailures.noteFailedStart(refusedStart(this.spawnSpec(), error), NEVER_RAN);
      this.scheduleRespawn(undefined, NEVER_RAN);
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
        frameWarnings: incarnation.frameWarnings,
        emit: (event) => this.emit(event),
        tracked: this.tracked,
        ...(this.sessionMemory ? { memory: this.sessionMemory } : {}),
      });
      incarnation.up = true;
      incarnation.upAt = Date.now();
      this.startFailures.noteUp();
      this.emit({ type: 'hostUp', hostId: this.hostId, incarnation: incarnation.id, durable });
      this.upGate.open(incarnation);
      await incarnation.follower.syncAll();
      if (!incarnation.gone) incarnation.logger.info('session sync done');
    } catch (error) {
      if (incarnation.gone || error instanceof HostGoneError) {
        // Its death is said once, with the next start (StartFailures, RespawnSchedule).
        incarnation.logger.debug('host went away during start-up');
        return;
      }
      // The death handler schedules the respawn once the process is gone.
      incarnation.startFailure = describeHandshakeFailure(error);
      incarnation.logger.warn(
        { reason: incarnation.startFailure.quoted },
        'MSP handshake failed; restarting the host',
      );
      incarnation.connection.close();
      void terminate(incarnation.child, FAILED_HANDSHAKE_GRACE_MS);
    }
  }

  private spawnSpec(): SpawnSpec {
    return {
      command: this.command,
      env: this.env,
      cwd: this.cwd,
      maxFrameBytes: this.maxFrameBytes,
      logger: this.logger,
      afterFailedStart: this.startFailures.failing,
    };
  }

  private spawnIncarnation(): Incarnation {
    const incarnation = spawnIncarnation(this.spawnSpec(), {
      onRequest: (from, request) => handleHostRequest(this.hostId, from, request, this.emitter),
      onNotification: (from, method, params) =>
        handleHostNotification(this.hostId, from, method, params, this.emitter),
      onGone: (from, exit) => this.onGone(from, exit),
      isStopping: () => this.stopping,
    });
    this.current = incarnation;
    return incarnation;
  }

  // ── death and respawn ──────────────────────────────────────────────────────────────────

  private onGone(incarnation: Incarnation, exit: ExitInfo): void {
    incarnation.gone = true;
    incarnation.follower?.dispose();
    incarnation.connection.close();
    if (this.current === incarnation) this.current = undefined;
    const wasUp = incarnation.up;
    incarnation.up = false;

    const fields = { exitCode: exit.code, signal: exit.signal, stderrTail: incarnation.stderrTail };
    if (this.stopping) incarnation.logger.info(fields, 'host stopped');
    else if (!wasUp) this.startFailures.noteFailedStart(incarnation, exit);
    else {
      this.startFailures.noteExit(exit);
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

  private scheduleRespawn(incarnation: Incarnation | undefined, exit: ExitInfo): void {
    if (this.stopping) return;
    this.respawns.schedule(
      incarnation?.upAt,
      exit,
      () => void this.launch(),
      this.startFailures.reason('quoted'),
    );
  }

  // ── helpers ────────────────────────────────────────────────────────────────────────────

  private readonly emitter = (event: HostEvent): void => this.emit(event);

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
