import type { ChildProcess } from 'node:child_process';
import { settlesWithin } from '../util/settlesWithin.js';

// Waiting for and ending a host process. The host runs in a process group of its own (spawned
// detached), and signals go to the whole group: a `/bin/sh -c` that did not exec its command,
// and the host's own children, go with it. Order as in the TS SDK's close(): EOF (the caller
// closes stdin), then SIGTERM, then SIGKILL.

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export const SIGKILL_AFTER_MS = 2_000;
/** After SIGKILL, how long we wait for the group to empty (a zombie nobody reaps never does). */
export const SIGKILL_WAIT_MS = 500;
/** How often we look whether a group has emptied (there is no event for it). */
const GROUP_POLL_MS = 25;

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

/**
 * Sends `name` to the child's process group (its pgid is its pid, as it was spawned detached).
 * Returns false when the group has no process left. Signal 0 only asks.
 */
export function signalGroup(child: ChildProcess, name: NodeJS.Signals | 0): boolean {
  if (child.pid === undefined) return false;
  try {
    process.kill(-child.pid, name);
    return true;
  } catch {
    return false;
  }
}

/** Resolves with true once the child has exited and no process of its group is left. */
async function groupGoneWithin(child: ChildProcess, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  if (!(await settlesWithin(waitForExit(child), ms))) return false;
  while (signalGroup(child, 0)) {
    // An orphan that nobody reaps stays a zombie, and a zombie still counts as a member.
    if (Date.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, GROUP_POLL_MS));
  }
  return true;
}

/**
 * What is left of a group whose leader has exited (the host's children, or the host itself
 * under a shell that did not exec it): SIGTERM, then SIGKILL `killAfterMs` later if any remain.
 * Resolves once the group is empty, or `SIGKILL_WAIT_MS` after the SIGKILL.
 */
export async function reapGroup(child: ChildProcess, killAfterMs: number = SIGKILL_AFTER_MS): Promise<void> {
  if (!signalGroup(child, 'SIGTERM')) return;
  if (await groupGoneWithin(child, killAfterMs)) return;
  signalGroup(child, 'SIGKILL');
  // SIGKILL is sent at once but takes effect a moment later.
  await groupGoneWithin(child, SIGKILL_WAIT_MS);
}

/**
 * Orderly stop: the caller has closed stdin (EOF makes the host drain and exit); after
 * `graceMs` SIGTERM goes to the group, and SIGKILL `killAfterMs` later. Resolves with the
 * child's exit once it is gone; by then every process of its group has been sent SIGKILL or
 * has exited.
 */
export async function terminate(
  child: ChildProcess,
  graceMs: number,
  killAfterMs: number = SIGKILL_AFTER_MS,
): Promise<ExitInfo> {
  const exited = waitForExit(child);
  await settlesWithin(exited, graceMs);
  await reapGroup(child, killAfterMs);
  return exited;
}
