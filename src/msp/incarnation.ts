import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { statSync } from 'node:fs';
import { finished } from 'node:stream/promises';
import type { Logger } from 'pino';
import { maskCommandLine } from '../secrets/maskCommandLine.js';
import type { WarnLog } from '../util/logBudget.js';
import { settlesWithin } from '../util/settlesWithin.js';
import { type IncomingRequest, JsonRpcConnection } from './connection.js';
import {
  describeSpawnFailure,
  type HostSentence,
  processErrorFields,
  quotingNothing,
} from './hostFailure.js';
import type { FailedStart } from './hostRestarts.js';
import { pipeHostStderr } from './hostStderr.js';
import { type ExitInfo, reapGroup, terminate, waitForExit } from './processControl.js';
import type { SessionFollower } from './sessionFollower.js';

// One spawned MSP host process (hostSupervisor.ts): spawning it in a process group of its own
// with its connection and stderr, and waiting until it and what it left behind are gone.

/** After the process exited, how long we wait for the rest of its stdout. */
const STDOUT_DRAIN_MS = 2_000;
/** Processes a dead host left in its group get this long after SIGTERM before SIGKILL. */
const LEFTOVER_KILL_AFTER_MS = 1_000;

/** One spawned host process and everything that lives and dies with it. */
export interface Incarnation {
  readonly id: string;
  readonly child: ChildProcess;
  readonly connection: JsonRpcConnection;
  readonly logger: Logger;
  /**
   * Where lines about frames the host sent wrong go: its connection's, a few a minute and the
   * rest counted (JsonRpcConnection.frameWarnings).
   */
  readonly frameWarnings: WarnLog;
  readonly stderrTail: string[];
  /** Why its handshake failed, when it did (or why it could not be spawned). */
  startFailure: HostSentence | undefined;
  follower: SessionFollower | undefined;
  durable: boolean;
  up: boolean;
  upAt: number | undefined;
  gone: boolean;
  /** Settles once the death was handled (hostDown emitted, respawn scheduled). */
  handled: Promise<void>;
}

export function isLive(incarnation: Incarnation | undefined): incarnation is Incarnation {
  return incarnation?.up === true && !incarnation.connection.isClosed;
}

/** What the process is started from. */
export interface SpawnSpec {
  /** Run through `/bin/sh -c`. */
  command: string;
  /** The host's whole environment (HostSupervisorOptions.env); the bot's own when undefined. */
  env: NodeJS.ProcessEnv | undefined;
  cwd: string | undefined;
  maxFrameBytes: number | undefined;
  /** The supervisor's; the incarnation logs to a child of it. */
  logger: Logger;
  /**
   * Whether the start before this one failed: the supervisor's one line for that backoff step
   * ("respawning host") already says a new start comes, so "host spawned" goes to debug.
   */
  afterFailedStart?: boolean;
}

/** What the supervisor does with what the process sends and with its death. */
export interface IncarnationHooks {
  onRequest(incarnation: Incarnation, request: IncomingRequest): unknown;
  onNotification(incarnation: Incarnation, method: string, params: unknown): void;
  /** The process and what it wrote are gone (handled settles once this returns). */
  onGone(incarnation: Incarnation, exit: ExitInfo): void;
  /** The supervisor is stopping: its own stop() ends the process. */
  isStopping(): boolean;
}

export function spawnIncarnation(spec: SpawnSpec, hooks: IncarnationHooks): Incarnation {
  const id = randomUUID();
  const logger = spec.logger.child({ incarnation: id });
  // A process group of its own, so that stopping it reaches everything it started. Not
  // unref'd: the bot waits for its host.
  const child = spawn('/bin/sh', ['-c', spec.command], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: spec.env ?? process.env,
    ...(spec.cwd ? { cwd: spec.cwd } : {}),
    detached: true,
  });
  const connection = new JsonRpcConnection({
    input: child.stdout!,
    output: child.stdin!,
    logger,
    maxFrameBytes: spec.maxFrameBytes,
  });
  const incarnation: Incarnation = {
    id,
    child,
    connection,
    logger,
    frameWarnings: connection.frameWarnings,
    stderrTail: [],
    startFailure: undefined,
    follower: undefined,
    durable: false,
    up: false,
    upAt: undefined,
    gone: false,
    handled: Promise.resolve(),
  };
  // Without this listener a failed spawn or kill would throw from an EventEmitter.
  child.on('error', (error: NodeJS.ErrnoException) => {
    if (child.pid !== undefined) {
      logger.error(processErrorFields(error), 'host process error');
      return;
    }
    incarnation.startFailure = sayNotSpawned(spec, logger, error);
  });
  pipeHostStderr(child.stderr!, logger, incarnation.stderrTail);
  connection.onRequest((request) => hooks.onRequest(incarnation, request));
  connection.onNotification(({ method, params }) => hooks.onNotification(incarnation, method, params));
  incarnation.handled = watch(incarnation, hooks);
  // A host that closed its stdout, or its stdin (docs/msp-approvals.md §11: on stdio, losing the
  // connection is losing the host), is of no use even if it lives on; make sure it goes.
  void Promise.race([connection.ended, connection.outputFailed]).then(() => {
    if (incarnation.gone || hooks.isStopping()) return;
    connection.close();
    void terminate(child, STDOUT_DRAIN_MS);
  });
  // Without a pid nothing started: the error listener above says so once Node emits it.
  if (child.pid !== undefined) {
    logger[startLevel(spec)]({ hostPid: child.pid, command: maskCommandLine(spec.command) }, 'host spawned');
  }
  return incarnation;
}

/**
 * A start that spawn() refused by throwing rather than by emitting 'error': an environment or
 * command too long for exec (E2BIG), a NUL byte in either (ERR_INVALID_ARG_VALUE). No process
 * ran, so nothing dies: the supervisor counts it at once as a start that failed.
 */
export function refusedStart(spec: SpawnSpec, error: unknown): FailedStart {
  const logger = spec.logger.child({ incarnation: randomUUID() });
  return { logger, stderrTail: [], startFailure: sayNotSpawned(spec, logger, error) };
}

const startLevel = (spec: SpawnSpec) => (spec.afterFailedStart ? 'debug' : 'info');

/**
 * Says that a start ran no process, in words that name the cause rather than "spawn /bin/sh
 * ENOENT", and returns them. This line stands for the start instead of "host spawned"; the
 * failure is counted as any start that failed (StartFailures).
 */
function sayNotSpawned(spec: SpawnSpec, logger: Logger, error: unknown): HostSentence {
  const reason = describeSpawnFailure(error, spec.cwd && !isDirectory(spec.cwd) ? spec.cwd : undefined);
  logger[startLevel(spec)](
    { ...processErrorFields(error), reason, command: maskCommandLine(spec.command) },
    'host could not be spawned',
  );
  // Nothing ran, so nothing of the host's is in it: the cwd named is the operator's setting.
  return quotingNothing(reason);
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

async function watch(incarnation: Incarnation, hooks: IncarnationHooks): Promise<void> {
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
    hooks.isStopping() ? undefined : reapGroup(child, LEFTOVER_KILL_AFTER_MS),
  ]);
  if (!drained) connection.destroy();
  hooks.onGone(incarnation, exit);
}
