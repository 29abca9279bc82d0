import { isAssignment, isOption, type OperandReading, operandStarts, programName } from './argv.js';
import { shellCommands, shellWords, UnreadableCommand } from './shellWords.js';

// The programs one argv runs: itself, and what it runs through a wrapper (`sudo git push -f`
// runs git too). A `programs` risk rule is matched on each of them, so putting a wrapper in front
// of a command does not take it out of a rule's reach.
//
// Covered: leading `NAME=value` variables; the wrappers below, with the options that take a
// value (from their manuals); shell keywords before a command (`if`, `then`, `!`, `{`, `coproc`,
// …); `sh -c '…'` (and bash, zsh, …), `su -c '…'` (and runuser, flock, script), `eval '…'` and
// `env -S '…'`, whose string is split as the shell would. A word in a program's place that may
// stand for other words (`$GIT`, `$(…)`, `{git,}`, `gi?`) is a run too, of any program
// (programs.ts). Not covered: commands that run another over a connection or in another place
// (`ssh host …`, `docker exec`, `kubectl exec`), `find -exec`, `watch`, `strace`, aliases and
// shell functions, git aliases, scripts read from a file or standard input, and command
// substitution in backquotes or inside double quotes (`$(…)` outside quotes is split as a
// command of its own, and the command around it reads on past it: shellWords.ts).
// A command line built to be too costly to unwrap (MAX_STEPS), or a script in it that cannot be
// split, is reported `tangled`, and then matches every `programs` rule: what cannot be read is not
// let through as harmless.

interface Wrapper {
  /** Its options that take the next word as their value (`-u root`). */
  valueOptions?: readonly string[];
  /** Operands it reads before the command: `timeout 10s git …`. */
  skipOperands?: number;
  /** `NAME=value` words before the command are variables for it. */
  assignments?: boolean;
}

const WRAPPERS: Record<string, Wrapper> = {
  sudo: {
    valueOptions: [
      '-C',
      '-D',
      '-g',
      '-h',
      '-p',
      '-R',
      '-r',
      '-T',
      '-t',
      '-U',
      '-u',
      '--chdir',
      '--chroot',
      '--close-from',
      '--command-timeout',
      '--group',
      '--host',
      '--other-user',
      '--prompt',
      '--role',
      '--type',
      '--user',
    ],
    assignments: true,
  },
  doas: { valueOptions: ['-C', '-u'] },
  env: {
    valueOptions: ['-a', '-C', '-P', '-u', '--argv0', '--chdir', '--unset'],
    assignments: true,
  },
  command: {},
  builtin: {},
  exec: { valueOptions: ['-a'] },
  nice: { valueOptions: ['-n', '--adjustment'] },
  nohup: {},
  time: { valueOptions: ['-f', '-o', '--format', '--output'] },
  timeout: { valueOptions: ['-k', '-s', '--kill-after', '--signal'], skipOperands: 1 },
  stdbuf: { valueOptions: ['-e', '-i', '-o', '--error', '--input', '--output'] },
  ionice: {
    valueOptions: ['-c', '-n', '-P', '-p', '-u', '--class', '--classdata', '--pgid', '--pid', '--uid'],
  },
  xargs: {
    valueOptions: [
      '-a',
      '-d',
      '-E',
      '-I',
      '-L',
      '-n',
      '-P',
      '-s',
      '--arg-file',
      '--delimiter',
      '--max-args',
      '--max-chars',
      '--max-procs',
      '--process-slot-var',
    ],
  },
  // A multi-call binary: `busybox rm -rf …`, `busybox sh -c …`.
  busybox: {},
  setsid: {},
  // `flock /tmp/lock git …` (its `-c '…'` is a script: COMMAND_OPTION_RUNNERS).
  flock: {
    valueOptions: ['-c', '-E', '-w', '--command', '--conflict-exit-code', '--timeout', '--wait'],
    skipOperands: 1,
  },
  taskset: { skipOperands: 1 },
  numactl: {
    valueOptions: [
      '-C',
      '-i',
      '-m',
      '-N',
      '-P',
      '-p',
      '-w',
      '--cpunodebind',
      '--interleave',
      '--membind',
      '--physcpubind',
      '--preferred',
      '--preferred-many',
      '--weighted-interleave',
    ],
  },
  prlimit: { valueOptions: ['-o', '-p', '--output', '--pid'] },
  chroot: { valueOptions: ['--groups', '--userspec'], skipOperands: 1 },
  nsenter: { valueOptions: ['-G', '-S', '-t', '-W', '--setgid', '--setuid', '--target', '--wdns'] },
  setpriv: {
    valueOptions: [
      '--ambient-caps',
      '--apparmor-profile',
      '--bounding-set',
      '--egid',
      '--euid',
      '--groups',
      '--inh-caps',
      '--landlock-access',
      '--landlock-rule',
      '--pdeathsig',
      '--regid',
      '--reuid',
      '--rgid',
      '--ruid',
      '--securebits',
      '--seccomp-filter',
      '--selinux-label',
    ],
  },
  unbuffer: {},
  chronic: {},
  firejail: {},
  torsocks: { valueOptions: ['-a', '-P', '-p', '-u', '--address', '--pass', '--port', '--user'] },
  caffeinate: { valueOptions: ['-t', '-w'] },
  // util-linux `script -c '…'` (a script: COMMAND_OPTION_RUNNERS); BSD and macOS `script -q
  // file git …` run the words after the file.
  script: {
    valueOptions: [
      '-B',
      '-c',
      '-E',
      '-F',
      '-I',
      '-m',
      '-O',
      '-o',
      '-T',
      '-t',
      '--command',
      '--echo',
      '--log-in',
      '--log-io',
      '--log-out',
      '--log-timing',
      '--logging-format',
      '--output-limit',
    ],
    skipOperands: 1,
  },
  // `runuser -u user -- git …`; its su form (`runuser user -c '…'`) is COMMAND_OPTION_RUNNERS'.
  runuser: {
    valueOptions: [
      '-c',
      '-G',
      '-g',
      '-s',
      '-u',
      '-w',
      '--command',
      '--group',
      '--shell',
      '--supp-group',
      '--user',
      '--whitelist-environment',
    ],
  },
};

const SHELLS = new Set(['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'ash', 'yash', 'fish']);
/** Programs whose `-c '…'` (`--command`) is a script for a shell. */
const COMMAND_OPTION_RUNNERS = new Set(['su', 'runuser', 'flock', 'script']);

/** A table's options, and bundles of short ones ending with one of them (`sudo -Eu root`). */
function valueTaker(options: readonly string[]): (option: string) => boolean {
  const set = new Set(options);
  return (option) =>
    set.has(option) || (/^-[^-=]{2,}$/.test(option) && set.has(`-${option.at(-1) as string}`));
}

/** Shell keywords that may stand before a command in a command line: they take no options. */
const KEYWORDS = ['!', '{', 'do', 'elif', 'else', 'if', 'then', 'until', 'while'];

/** `coproc git …`, or `coproc NAME { git …; }`: its first operand may be a name. */
const COPROC: OperandReading = { takesValue: () => false, skipOperands: 1 };

const READINGS = new Map<string, OperandReading>([
  ...Object.entries(WRAPPERS).map(([name, wrapper]): [string, OperandReading] => [
    name,
    {
      takesValue: valueTaker(wrapper.valueOptions ?? []),
      ...(wrapper.skipOperands ? { skipOperands: wrapper.skipOperands } : {}),
      ...(wrapper.assignments ? { assignments: true } : {}),
    },
  ]),
  ...KEYWORDS.map((keyword): [string, OperandReading] => [keyword, { takesValue: () => false }]),
  ['coproc', COPROC],
]);

/**
 * A shell's `-c` (alone or in a bundle such as `-lc`) makes an operand its script: every word
 * after it that is no option is split as a command line, the script and its `$0`, `$1`… alike.
 */
function shellScripts(args: readonly string[]): string[][] {
  const at = args.findIndex((word) => /^-[A-Za-z]*c[A-Za-z]*$/.test(word));
  if (at < 0) return [];
  return args.slice(at + 1).flatMap((word) => (isOption(word) ? [] : shellCommands(word)));
}

/** `su -c '…' root`, `su root --command='…'`, `flock /tmp/lock -c '…'`. */
function commandOptionScripts(args: readonly string[]): string[][] {
  const scripts: string[][] = [];
  let afterC = false;
  for (const word of args) {
    const inline = /^--(?:session-)?command=(.*)$/s.exec(word);
    if (inline) scripts.push(...shellCommands(inline[1] as string));
    else if (word === '-c' || word === '--command' || word === '--session-command') afterC = true;
    else if (afterC && !isOption(word)) scripts.push(...shellCommands(word));
  }
  return scripts;
}

/** `env -S 'git push -f' origin`: the string is split into words, before the words after it. */
function envSplitString(args: readonly string[]): string[] | undefined {
  for (let i = 0; i < args.length; i++) {
    const word = args[i] as string;
    if (word === '--') return undefined;
    if (word === '-S' || word === '--split-string')
      return [...shellWords(args[i + 1] ?? ''), ...args.slice(i + 2)];
    const inline = /^(?:--split-string=|-[iv0]*S)(.+)$/s.exec(word);
    if (inline) return [...shellWords(inline[1] as string), ...args.slice(i + 1)];
  }
  return undefined;
}

/** A program's run: `words[at]` is the program and the words after it are its arguments. */
export interface Invocation {
  readonly words: readonly string[];
  readonly at: number;
}

/** The words looked at so far, to bound the work a tangled command line can cause. */
interface Budget {
  steps: number;
}

/** What `invocation` runs in turn, one level down. A wrapper's command is a view of its words. */
function innerCommands({ words, at }: Invocation, budget: Budget): Invocation[] {
  const first = words[at] as string;
  const fresh = (argvs: readonly string[][]) => argvs.map((argv) => ({ words: argv, at: 0 }));
  if (isAssignment(first)) {
    const program = words.findIndex((word, i) => i > at && !isAssignment(word));
    return program < 0 ? [] : [{ words, at: program }];
  }
  const name = programName(first);
  const args = () => {
    budget.steps += words.length - at;
    return words.slice(at + 1);
  };
  if (name === 'eval') return fresh(shellCommands(args().join(' ')));
  if (SHELLS.has(name)) return fresh(shellScripts(args()));
  const scripts = COMMAND_OPTION_RUNNERS.has(name) ? fresh(commandOptionScripts(args())) : [];
  const reading = READINGS.get(name);
  if (!reading) return scripts;
  const wrapped = operandStarts(words, at + 1, reading, budget).map((start) => ({ words, at: start }));
  const split = name === 'env' ? envSplitString(args()) : undefined;
  return [...(split && split.length > 0 ? [{ words: split, at: 0 }] : []), ...scripts, ...wrapped];
}

/**
 * More words than this looked at while unwrapping one argv: far beyond any real command line,
 * reached only by one built to be costly to read (`sudo -h sudo -h …`, where each word may be the
 * command, and each such command may wrap the rest). There is no limit on depth: each level is a
 * later start in the same words or a shorter script, so the unwrapping ends, and this bounds it.
 */
const MAX_STEPS = 100_000;

/** What an argv runs; `tangled` when it could not be read to the end. */
export interface Invocations {
  runs: Invocation[];
  tangled: boolean;
}

/** `argv` and every command it runs through wrappers, shallowest first, each start once. */
export function invocations(argv: readonly string[]): Invocations {
  if (argv.length === 0) return { runs: [], tangled: false };
  const seen = new Map<readonly string[], Set<number>>();
  const isNew = ({ words, at }: Invocation) => {
    const starts = seen.get(words) ?? new Set<number>();
    seen.set(words, starts);
    if (starts.has(at)) return false;
    starts.add(at);
    return true;
  };
  const first = { words: argv, at: 0 };
  isNew(first);
  const runs: Invocation[] = [first];
  const budget: Budget = { steps: 0 };
  let level = [first];
  while (level.length > 0) {
    const next: Invocation[] = [];
    for (const invocation of level) {
      if (budget.steps > MAX_STEPS) return { runs, tangled: true };
      let inner: Invocation[];
      try {
        inner = innerCommands(invocation, budget);
      } catch (error) {
        // A script or `eval` string that cannot be split could run anything.
        if (error instanceof UnreadableCommand) return { runs, tangled: true };
        throw error;
      }
      for (const run of inner) if (isNew(run)) next.push(run);
    }
    runs.push(...next);
    level = next;
  }
  return { runs, tangled: false };
}
