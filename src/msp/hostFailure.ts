import { MspError, RequestTimeoutError } from './errors.js';
import { preview } from './jsonRpc.js';
import type { ExitInfo } from './processControl.js';

// Why a host process did not come up, in words an operator can act on. The supervisor logs
// these sentences and /readyz shows them (the host's stderr on METRICS_PORT only: HostOutput).

/** Where the operator set the command; named in every sentence so that they know what to fix. */
export const COMMAND_SETTING = 'MSP_HOST_COMMAND';

/** Exit codes with a meaning: the MSP host's own (docs/msp-approvals.md §1) and the shell's. */
const EXIT_MEANINGS: ReadonlyMap<number, string> = new Map([
  [2, 'usageError'],
  [3, 'configError'],
  [4, 'leaseUnavailable'],
  [5, 'sdkSurfaceUnavailable'],
  [126, 'not executable'],
  [127, 'command not found'],
]);

/** "exited with code 127 (command not found)", "was killed by SIGSEGV". */
export function describeExit(exit: ExitInfo): string {
  if (exit.signal !== null) return `was killed by ${exit.signal}`;
  if (exit.code === null) return 'could not be started';
  const meaning = EXIT_MEANINGS.get(exit.code);
  return `exited with code ${exit.code}${meaning === undefined ? '' : ` (${meaning})`}`;
}

/** Where Node's argument checks quote the value they refused: an env value, the command line. */
const QUOTED_VALUE = /\. Received [\s\S]*$/;

/** What the log shows of an error of the host process. */
export interface ProcessErrorFields {
  code?: string;
  errno?: number;
  syscall?: string;
  message: string;
}

/**
 * An error of the host process, for the log: its code, errno, syscall and message, never the
 * error itself. A spawn error carries the command line unmasked (`spawnargs`), and an argument
 * check ("must be a string without null bytes") quotes the env value or the command it refused,
 * escaped, so that the logger's list of secrets does not recognise it.
 */
export function processErrorFields(error: unknown): ProcessErrorFields {
  if (!(error instanceof Error)) return { message: 'not an Error' };
  const { code, errno, syscall } = error as NodeJS.ErrnoException;
  return {
    ...(typeof code === 'string' ? { code } : {}),
    ...(typeof errno === 'number' ? { errno } : {}),
    ...(typeof syscall === 'string' ? { syscall } : {}),
    message: error.message.replace(QUOTED_VALUE, ''),
  };
}

/**
 * Why the process could not be spawned at all. Node says "spawn /bin/sh ENOENT" for a working
 * directory that is missing as for a missing shell, so `missingCwd`, the host's cwd when it is
 * no directory (removed after start-up, which checks it), is named instead. The system's code
 * (E2BIG, EACCES) says why; Node's own (ERR_INVALID_ARG_VALUE) does not, its message does.
 */
export function describeSpawnFailure(error: unknown, missingCwd: string | undefined): string {
  if (missingCwd !== undefined)
    return `could not be started in its cwd ${JSON.stringify(missingCwd)} (not a directory)`;
  const { code, message } = processErrorFields(error);
  return `could not be started (${code === undefined || code.startsWith('ERR_') ? message : code})`;
}

/**
 * Whether a sentence about a host may quote what the host wrote (its last stderr line, its
 * `initialize` error): the log and METRICS_PORT's /readyz quote it; a reader that shows only
 * whether the host is up (/metrics) is given it withheld. PORT's /readyz gives no reason at all.
 */
export type HostOutput = 'quoted' | 'withheld';

/** A sentence about a host, quoting what the host wrote and without it. */
export type HostSentence = Readonly<Record<HostOutput, string>>;

/** A sentence that quotes nothing the host wrote: the same everywhere. */
export const quotingNothing = (text: string): HostSentence => ({ quoted: text, withheld: text });

/** What went wrong with `initialize` on a host that was still running. */
export function describeHandshakeFailure(error: unknown): HostSentence {
  if (error instanceof RequestTimeoutError) {
    const ms = error.timeoutMs;
    return quotingNothing(
      `did not answer initialize within ${ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`}`,
    );
  }
  // The host's own words go to the log and to METRICS_PORT's /readyz: masked and cut like a frame.
  const [said, words] =
    error instanceof MspError
      ? ['answered initialize with an error', error.message]
      : [
          'did not answer initialize as an MSP host does',
          error instanceof Error ? error.message : String(error),
        ];
  return { quoted: `${said} (${preview(words)})`, withheld: said };
}

/**
 * One line for failed starts in a row: "MSP_HOST_COMMAND exited with code 1 3 times in a row:
 * <last stderr line>". The stderr tail is shown as the host wrote it; with no tail (or none given:
 * output withheld) the sentence ends at the count.
 */
export function failedStartsMessage(
  reason: string,
  times: number,
  stderrTail: readonly string[],
  setting: string = COMMAND_SETTING,
): string {
  const count = times > 1 ? ` ${times} times in a row` : '';
  const lastLine = stderrTail.findLast((line) => line.trim() !== '');
  return `${setting} ${reason}${count}${lastLine === undefined ? '' : `: ${lastLine.trim()}`}`;
}
