import type { ChildProcess } from 'node:child_process';

// Waiting for and ending a host process (TS SDK close(): EOF, then SIGTERM, then SIGKILL).

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export const SIGKILL_AFTER_MS = 2_000;

/** Resolves when the process has exited (at once if it already has, or never started). */
export function waitForExit(child: ChildProcess): Promise<ExitInfo> {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => {
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      child.off('error', onError);
      resolve({ code, signal });
    };
    // A failed spawn emits 'error' and may never emit 'exit'.
    const onError = (): void => {
      if (child.pid !== undefined) return;
      child.off('exit', onExit);
      resolve({ code: null, signal: null });
    };
    child.once('exit', onExit);
    child.on('error', onError);
  });
}

/** Resolves with true if the process exited within `ms`. */
async function exitsWithin(exited: Promise<ExitInfo>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([exited.then(() => true as const), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function signal(child: ChildProcess, name: NodeJS.Signals): void {
  try {
    child.kill(name);
  } catch {
    // Already gone.
  }
}

/**
 * Orderly stop: the caller has closed stdin (EOF makes the host drain and exit); after
 * `graceMs` send SIGTERM, and SIGKILL `killAfterMs` later. Resolves when the process is gone.
 */
export async function terminate(
  child: ChildProcess,
  graceMs: number,
  killAfterMs: number = SIGKILL_AFTER_MS,
): Promise<ExitInfo> {
  const exited = waitForExit(child);
  if (await exitsWithin(exited, graceMs)) return exited;
  signal(child, 'SIGTERM');
  if (await exitsWithin(exited, killAfterMs)) return exited;
  signal(child, 'SIGKILL');
  return exited;
}
