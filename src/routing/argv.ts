import { posix } from 'node:path';

// How a program's argv is read by the risk rules that look at programs (programs.ts) and at the
// wrappers that run them (invocations.ts).

/**
 * The name a rule compares: the base name of argv[0] (`/usr/bin/git` is `git`), in lower case,
 * since a case-insensitive file system (macOS's default) runs `/usr/bin/GIT` as git.
 */
export function programName(word: string): string {
  return posix.basename(word).toLowerCase();
}

/** An option of the program before it: `-f`, `--force`, `-uf`; not `-` (stdin) nor a word. */
export function isOption(word: string): boolean {
  return word.length > 1 && word.startsWith('-');
}

/**
 * An unquoted expansion as shellWords.ts keeps it (`$NAME`, `$(…)`): the shell makes it zero or
 * more words the bot cannot know. (A quoted one comes out the same: one word, still unknown.)
 */
export function isExpansion(word: string): boolean {
  return word.length > 1 && word.startsWith('$');
}

/**
 * A word the shell expands into words of its own choosing: a brace expansion (`{push,}`,
 * `{a..z}`) or a file name pattern (`pu?h`, `gi[t]`, `*`). shell-quote expands neither, and
 * which files a pattern finds only the agent's directory knows. A quoted one reads the same here
 * (shell-quote drops the quotes): it is then taken for unknown too, which asks once too often.
 */
export function isPattern(word: string): boolean {
  // Each scan stops at the next bracket or brace, so a word the agent wrote long costs no more
  // than its length.
  if (/[*?]|\[[^[\]]+\]/.test(word)) return true;
  for (const [, inside] of word.matchAll(/\{([^{}]*)\}/g))
    if (inside?.includes(',') || inside?.includes('..')) return true;
  return false;
}

/** A word that may stand for other words, or for none: an expansion or a pattern. */
export function isUnknownWord(word: string): boolean {
  return isExpansion(word) || isPattern(word);
}

/** `NAME=value`, which the shell, `env` and `sudo` read as a variable for the command. */
export function isAssignment(word: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*=/.test(word);
}

/** How a program reads its words before its first operand (a subcommand, a wrapped command). */
export interface OperandReading {
  /** Whether this option takes the next word as its value (`sudo -u root`). */
  takesValue: (option: string) => boolean;
  /** Operands read before the one looked for: `timeout 10s git …` has one. */
  skipOperands?: number;
  /** `NAME=value` words before it are variables, not operands (`env A=1 git …`). */
  assignments?: boolean;
}

/**
 * Where the first operand of `words` may be, from `from` on: every word that is not an option
 * up to the first one that cannot be an option's value or a skipped operand. No table of options
 * is sure which take a value (`sudo -h` is help, or a host), so a word that may be a value is a
 * candidate too: a rule then looks at a word too many, never one too few.
 */
export function operandStarts(
  words: readonly string[],
  from: number,
  reading: OperandReading,
  /** Counts the words looked at, for a caller that bounds its work. */
  counter?: { steps: number },
): number[] {
  const starts: number[] = [];
  let skip = reading.skipOperands ?? 0;
  let maybeValue = false;
  let optionsEnded = false;
  for (let i = from; i < words.length; i++) {
    if (counter) counter.steps++;
    const word = words[i] as string;
    if (!optionsEnded && word === '--') {
      optionsEnded = true;
      maybeValue = false;
      continue;
    }
    if (!optionsEnded && isOption(word)) {
      maybeValue = reading.takesValue(word);
      continue;
    }
    // It may be no word at all, or an option that takes the next word: the word after it may
    // still be the operand (`git $(true) push`, `sudo $OPTS git push`). It may as well be the
    // operand itself (`$(printf git) push`, `git {push,}`), unless an option before it may take
    // it as its value (`git -C "$REPO" status`).
    if (isUnknownWord(word)) {
      if (!maybeValue) starts.push(i);
      maybeValue = true;
      continue;
    }
    if (!maybeValue && reading.assignments && isAssignment(word)) continue;
    starts.push(i);
    if (maybeValue) maybeValue = false;
    else if (skip > 0) skip--;
    else break;
  }
  return starts;
}
