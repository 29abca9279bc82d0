import { posix } from 'node:path';
import type { ConfirmTarget } from '../domain/typedConfirmation.js';
import type { ApprovalSubject } from '../msp/protocol.js';
import { isOption, programName } from './argv.js';
import { invocations } from './invocations.js';
import { isSubstitutionStandIn, shellCommands, UnreadableCommand } from './shellWords.js';

// What a risk rule with `confirm: type` asks the approver to type before approving: the one word
// of a request that names what it acts on, as GitHub asks for a repository's name before deleting
// it. Read from the request as the record stores it (what the card and the modal show), so that
// what is asked for is what the approver can see.

/**
 * Commands that only prepare the shell for the next one: a command line that starts with them
 * (`cd /srv/app && git push origin main`) is about the command after.
 */
const SETUP_ONLY = new Set(['cd', 'pushd', 'popd', 'export', 'set', 'unset', 'umask', 'source', '.']);

/**
 * The target of a request, or undefined when none can be derived (the caller falls back to the
 * tool's name: a confirmation is never skipped).
 * - network: the host, as the host sent it;
 * - file or socket: the last segment of the path (`/etc/app/.env` → `.env`);
 * - shell: the last operand of the program the stage runs, past wrappers (`sudo`, `env`, `sh -c`,
 *   …): `git push origin main --force` → `main`, `kubectl delete namespace prod` → `prod`; the
 *   program's name when it has no operand (`reboot`).
 */
export function confirmTarget(subject: ApprovalSubject, sourceIndex: number): ConfirmTarget | undefined {
  if (subject.kind === 'network') {
    const host = subject.host?.trim();
    return host ? { text: host, source: 'host' } : undefined;
  }
  if (subject.kind === 'fileAccess' || subject.kind === 'unixSocket') {
    const path = subject.path?.trim();
    if (!path) return undefined;
    const segment = posix.basename(path.replace(/\/+$/, ''));
    return { text: segment || path, source: 'file' };
  }
  if (subject.kind === 'shell') {
    const argv = stageArgv(subject, sourceIndex);
    return argv ? argvTarget(argv) : undefined;
  }
  return undefined;
}

/**
 * The argv being asked about: the host's stage for this requirement (each stage is its own
 * question), else its only stage, else the command text split as a shell would, at its first
 * command that is more than setup.
 */
function stageArgv(subject: ApprovalSubject, sourceIndex: number): readonly string[] | undefined {
  const stages = subject.stages ?? [];
  const stage =
    stages.find((s) => s.requirementId.sourceIndex === sourceIndex) ??
    (stages.length === 1 ? stages[0] : undefined);
  if (stage && stage.argv.length > 0) return stage.argv;
  if (subject.command === undefined) return undefined;
  let commands: string[][];
  try {
    commands = shellCommands(subject.command);
  } catch (error) {
    if (error instanceof UnreadableCommand) return undefined;
    throw error;
  }
  return commands.find((argv) => argv.length > 0 && !SETUP_ONLY.has(programName(argv[0] as string)));
}

function argvTarget(argv: readonly string[]): ConfirmTarget | undefined {
  const { runs, tangled } = invocations(argv);
  // What cannot be read to its end has no word that surely names its target.
  const run = tangled ? undefined : runs.at(-1);
  if (!run) return undefined;
  const operand = targetWords(run.words, run.at + 1);
  // A substitution's stand-in (`$(…)`) is not on the card, and what it stands for is not known:
  // no word of the command then surely names the target, and the caller asks for the tool's name.
  if (operand?.some(isSubstitutionStandIn)) return undefined;
  if (operand !== undefined) return { text: operand.join(' '), source: 'argument' };
  const program = programName(run.words[run.at] as string);
  return program ? { text: program, source: 'program' } : undefined;
}

/**
 * The last word from `from` on that is no option (every word after `--` is an operand). Without
 * each program's options it cannot be told whether a word right after an option is that option's
 * value (`-n staging`) or an operand, and the agent writes the command: were the last operand
 * such a word, it could make the approver type a harmless one (`kubectl delete namespace prod -n
 * staging` asking for `staging`). Then the words from the last operand that surely is one to the
 * end are asked for (`prod -n staging`): whatever the command acts on is in what is typed.
 */
function targetWords(words: readonly string[], from: number): readonly string[] | undefined {
  let last: number | undefined;
  let lastSure: number | undefined;
  let optionsEnded = false;
  for (let i = from; i < words.length; i++) {
    const word = words[i] as string;
    if (!optionsEnded && word === '--') {
      optionsEnded = true;
      continue;
    }
    if ((!optionsEnded && isOption(word)) || word.trim() === '') continue;
    last = i;
    const before = words[i - 1] as string;
    const mayBeValue = i > from && !optionsEnded && isOption(before) && !before.includes('=');
    if (!mayBeValue) lastSure = i;
  }
  if (last === undefined) return undefined;
  if (lastSure === undefined || lastSure === last) return [words[last] as string];
  return words.slice(lastSure, last + 1);
}
