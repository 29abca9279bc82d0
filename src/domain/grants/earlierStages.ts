import type { ApprovalStage } from '../../msp/protocol.js';

// Whether the stages of a shell command before the one asked about leave it to run where, and as,
// the subject says. Fail closed: nobody can list every way a shell has to change its directory
// (zsh alone has `chdir`, `noglob cd`, `- cd`, `setopt autocd` then a bare `/srv/b`, named
// directories), so an earlier stage leaves a later one grantable only when it runs a program by a
// plain name, or is one of the few builtins below that change nothing.

/** `compgen -b` and `compgen -k` of bash 5. */
const BASH_WORDS = [
  ...['.', ':', '[', 'alias', 'bg', 'bind', 'break', 'builtin', 'caller', 'cd', 'command', 'compgen'],
  ...['complete', 'compopt', 'continue', 'declare', 'dirs', 'disown', 'echo', 'enable', 'eval'],
  ...['exec', 'exit', 'export', 'false', 'fc', 'fg', 'getopts', 'hash', 'help', 'history', 'jobs'],
  ...['kill', 'let', 'local', 'logout', 'mapfile', 'popd', 'printf', 'pushd', 'pwd', 'read'],
  ...['readarray', 'readonly', 'return', 'set', 'shift', 'shopt', 'source', 'suspend', 'test'],
  ...['times', 'trap', 'true', 'type', 'typeset', 'ulimit', 'umask', 'unalias', 'unset', 'wait'],
  ...['if', 'then', 'else', 'elif', 'fi', 'case', 'esac', 'for', 'select', 'while', 'until', 'do'],
  ...['done', 'in', 'function', 'time', '{', '}', '!', '[[', ']]', 'coproc'],
];

/**
 * zsh 5's builtins, precommand modifiers (`-`, `noglob`, `nocorrect`) and reserved words, and the
 * builtins of its modules that load on first use (`vared`, `zparseopts`, `sched`, `limit` … set
 * variables or change the shell). The zsh/files builtins (`rm`, `mkdir` …) are left out: loaded,
 * they do what the programs of the same names do.
 */
const ZSH_WORDS = [
  ...['-', 'noglob', 'nocorrect', 'builtin', 'command', 'exec', '.', ':', '[', 'alias', 'autoload'],
  ...['bg', 'break', 'bye', 'cd', 'chdir', 'continue', 'declare', 'dirs', 'disable', 'disown'],
  ...['echo', 'emulate', 'enable', 'eval', 'exit', 'export', 'false', 'fc', 'fg', 'float'],
  ...['functions', 'getln', 'getopts', 'hash', 'history', 'integer', 'jobs', 'kill', 'let', 'local'],
  ...['logout', 'popd', 'print', 'printf', 'pushd', 'pushln', 'pwd', 'r', 'read', 'readonly'],
  ...['rehash', 'return', 'set', 'setopt', 'shift', 'source', 'suspend', 'test', 'ttyctl', 'times'],
  ...['trap', 'true', 'type', 'typeset', 'umask', 'unalias', 'unfunction', 'unhash', 'unset'],
  ...['unsetopt', 'wait', 'whence', 'where', 'which', 'zcompile', 'zmodload'],
  ...['limit', 'ulimit', 'unlimit', 'sched', 'bindkey', 'vared', 'zle', 'compadd', 'compset'],
  ...['compctl', 'compcall', 'comparguments', 'compdescribe', 'compfiles', 'compgroups'],
  ...['compquote', 'comptags', 'comptry', 'compvalues', 'zformat', 'zparseopts', 'zregexparse'],
  ...['zstyle', 'strftime', 'zstat', 'sysopen', 'sysread', 'sysseek', 'syswrite', 'syserror'],
  ...['zsystem', 'echotc', 'echoti', 'zpty', 'zprof', 'zselect', 'ztcp', 'zsocket', 'zftp'],
  ...['zcurses', 'log', 'zgetattr', 'zsetattr', 'zdelattr', 'zlistattr', 'cap', 'getcap', 'setcap'],
  ...['clone', 'ztie', 'zuntie', 'zgdbmpath', 'private', 'nameref', 'pcre_compile', 'pcre_study'],
  ...['pcre_match', 'zf_chgrp', 'zf_chmod', 'zf_chown', 'zf_ln', 'zf_mkdir', 'zf_mv', 'zf_rm'],
  ...['zf_rmdir', 'zf_sync', 'repeat', 'foreach', 'end', 'do', 'done', 'esac', 'then', 'elif'],
  ...['else', 'fi', 'for', 'case', 'if', 'while', 'until', 'select', 'function', 'time', 'coproc'],
  ...['!', '[[', ']]', '{', '}'],
];

/**
 * Words the shell itself runs, not a program: a builtin of either shell may change the directory
 * (`cd`, `chdir`, `pushd`, `popd`), variables (`export`, `read`, `vared`), what a name means
 * (`alias`, `hash -d`, `autoload`, `enable`, `disable`) or the shell's options (`setopt autocd`,
 * `emulate`, `shopt`), or run words as commands here (`eval`, `source`, `builtin`, `noglob`…).
 */
const SHELL_WORDS: ReadonlySet<string> = new Set([...BASH_WORDS, ...ZSH_WORDS]);

/**
 * Builtins that leave the shell as it was, in both shells, with the options that would not:
 * `printf -v` sets a variable, and bash's `test -v 'a[i=1]'` evaluates, and so assigns, in a
 * subscript.
 */
const STILL_BUILTINS: ReadonlyMap<string, (args: readonly string[]) => string | undefined> = new Map([
  ['echo', () => undefined],
  ['true', () => undefined],
  ['false', () => undefined],
  ['pwd', () => undefined],
  ['printf', ([first]: readonly string[]) => (first?.startsWith('-') ? `printf ${first}` : undefined)],
  ['test', (args: readonly string[]) => (args.includes('-v') ? 'test -v' : undefined)],
  ['[', (args: readonly string[]) => (args.includes('-v') ? '[ -v' : undefined)],
]);

/**
 * A program looked up by its name. Anything else may move the shell: a path (`/srv/b`, `~/x`,
 * `..`) is a `cd` to it under `autocd`, `~name` a named directory, and `=`, `%`, quotes or globs
 * are other shell syntax.
 */
const PROGRAM_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.+-]*$/;

/**
 * A parameter, arithmetic or command expansion: `${X:=v}`, zsh's `${X::=v}` and `$((X = 1))`
 * assign as they expand, whatever command they are given to. The words may have been quoted so
 * that nothing expands (`'$5'`): nothing here can tell.
 */
const EXPANSION = /[$`]/;

/**
 * A word with a `(` in it: in zsh it may be a glob qualifier, whose `e:…:` and `+name` run code in
 * the shell itself as the word expands (`ls *(e:'cd /srv/b':)`), and that code may hold
 * parentheses of its own, so no narrower shape is safe. Quoted text such as `-m "fix (x)"` counts
 * too: the words do not show quoting.
 */
const GLOB_QUALIFIER = /\(/;

/** `NAME=value`: an assignment, kept by the shell for the stages after it. */
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/;

/**
 * Why the stage at `sourceIndex` may not run where the subject says, or undefined: an earlier
 * stage of the same command may change the directory or the environment it runs in (`cd /srv/b
 * && make install` runs `make install` in /srv/b), was not parsed, or is not shown at all.
 */
export function earlierStageMoves(stages: readonly ApprovalStage[], sourceIndex: number): string | undefined {
  const earlier = stages.filter((s) => s.requirementId.sourceIndex < sourceIndex);
  if (new Set(earlier.map((s) => s.requirementId.sourceIndex)).size !== sourceIndex) {
    return 'a stage after one not shown';
  }
  for (const stage of earlier) {
    if (stage.argvComplete !== true) return 'a stage after one that could not be parsed';
    const moves = stageMoves(stage.argv);
    if (moves) return `a stage after ${moves}`;
  }
  return undefined;
}

/** What in one stage may change the shell for the stages after it, or undefined. */
function stageMoves(argv: readonly string[]): string | undefined {
  const [word = '', ...args] = argv;
  if (word === '') return 'an empty command';
  if (ASSIGNMENT.test(word)) return 'a variable assignment';
  const still = STILL_BUILTINS.get(word);
  if (!still && (SHELL_WORDS.has(word) || !PROGRAM_NAME.test(word))) return word;
  const option = still?.(args);
  if (option) return option;
  if (args.some((arg) => EXPANSION.test(arg))) return 'an expansion';
  if (args.some((arg) => GLOB_QUALIFIER.test(arg))) return 'a glob qualifier';
  return undefined;
}
