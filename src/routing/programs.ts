import picomatch from 'picomatch';
import type { ProgramMatch } from '../domain/route.js';
import {
  isAssignment,
  isExpansion,
  isOption,
  isPattern,
  isUnknownWord,
  operandStarts,
  programName,
} from './argv.js';
import { globOptions } from './globs.js';
import type { Invocation } from './invocations.js';

// A `programs` entry of a risk rule (`risks[].match.programs`): "this program, with this
// subcommand, and any of these flags anywhere", matched on a program's argv rather than on text,
// so that `/usr/bin/git push origin main --force`, `git push -f` and `git push --force` are one
// request to the rule. Every key the entry lists must match; within `flags` and `args`, any one.

/**
 * The subcommand is the first operand, but which words are option values is known only to the
 * program itself (`git -C dir push`): any option without "=" may take the next word, so each word
 * up to the first that cannot be a value is a candidate (argv.ts).
 */
const ANY_OPTION_MAY_TAKE_A_VALUE = { takesValue: (option: string) => !option.includes('=') };

/** How one listed flag shows in an argv. */
function flagTest(flag: string): (word: string) => boolean {
  if (flag.startsWith('--')) {
    // GNU getopt_long and git take any unambiguous prefix of a long option (`--force-w` is
    // --force-with-lease), and a value after "=". A prefix that is ambiguous to the program
    // fails there, so counting it here costs nothing.
    return (word) => {
      if (!word.startsWith('--')) return false;
      const name = word.split('=', 1)[0] as string;
      return name.length > 2 && flag.startsWith(name);
    };
  }
  if (flag.length === 2) {
    // A short option alone or in a bundle (`-uf`, `-fu`). A bundle's letters after one that takes
    // a value are that value (`-ofoo`), which may count a flag that is not there: never one less.
    const letter = flag[1] as string;
    return (word) => !word.startsWith('--') && word.slice(1).includes(letter);
  }
  // One dash and a long name (`find -delete`): as written, or with a value after "=".
  return (word) => word === flag || word.startsWith(`${flag}=`);
}

/**
 * Whether a pattern may stand for an option: one that may begin with "-" (`{-f,}`, `--forc[e]`,
 * `*`, where a file may be called `-f`), unless the option before it may take it as its value
 * (`find -name *.log`), as operandStarts() reads such a word. `build/*.o` names files only.
 */
function mayBeOption(words: readonly string[], i: number): boolean {
  const before = words[i - 1] as string;
  return /^[-*?[{]/.test(words[i] as string) && !(isOption(before) && !before.includes('='));
}

/**
 * Whether any of `flags` is in the words from `from` on. An expansion (`$F`, `$(…)`) may be any
 * flag (`F=--force; git push $F`), and so may a pattern that may be an option: what cannot be
 * read is not taken for harmless.
 */
function hasFlag(
  words: readonly string[],
  from: number,
  flags: readonly ((word: string) => boolean)[],
): boolean {
  for (let i = from; i < words.length; i++) {
    const word = words[i] as string;
    if (isExpansion(word) || (isPattern(word) && mayBeOption(words, i))) return true;
    if (isOption(word) && flags.some((test) => test(word))) return true;
  }
  return false;
}

/** The operands after `from`: words that are no option, and every word after `--`. */
function operandsFrom(words: readonly string[], from: number): string[] {
  const operands: string[] = [];
  let optionsEnded = false;
  for (let i = from; i < words.length; i++) {
    const word = words[i] as string;
    if (!optionsEnded && word === '--') optionsEnded = true;
    else if (optionsEnded || !isOption(word)) operands.push(word);
  }
  return operands;
}

/**
 * Whether an invocation is one the entry names. Names (program, subcommand) are compared in lower
 * case, as programName() reads them. Flags count anywhere after the program, before the
 * subcommand too and after `--` too (many programs take options anywhere), in their own case
 * (`-r` and `-R` are two options to most programs). `args` are globs, on which `*` crosses "/"
 * and case is ignored, as in `commands`, on the operands after the subcommand. An expansion or
 * a pattern counts as any flag and any arg, once the program and the subcommand match, and as
 * any program or subcommand where one stands (it may stand for several words, the rest too).
 */
export function programMatcher(entry: ProgramMatch): (invocation: Invocation) => boolean {
  const program = entry.program.toLowerCase();
  const subcommand = entry.subcommand?.toLowerCase();
  const flags = entry.flags?.map(flagTest);
  const argMatcher = entry.args ? picomatch(entry.args, globOptions('risks.programs.args')) : undefined;
  // An expansion may be any operand (`git push origin $REF`, REF=+main), as it may be any flag.
  const argMatches = argMatcher && ((arg: string) => isUnknownWord(arg) || argMatcher(arg));
  return ({ words, at }) => {
    const first = words[at] as string;
    // A program in an expansion or a pattern (`$(printf git) push`, `{git,} push`) may be this
    // one, with the subcommand and flags in it too (`$(printf 'git push -f')`). A variable's
    // value is no pattern (`A=*` assigns a star).
    if (isUnknownWord(first) && !isAssignment(first)) return true;
    if (programName(first) !== program) return false;
    if (flags && !hasFlag(words, at + 1, flags)) return false;
    // Where the operands `args` looks at begin: after the subcommand, else after the program.
    const from =
      subcommand === undefined
        ? [at + 1]
        : operandStarts(words, at + 1, ANY_OPTION_MAY_TAKE_A_VALUE)
            // A word that may stand for others may be the subcommand, and its operands too.
            .filter(
              (i) => isUnknownWord(words[i] as string) || (words[i] as string).toLowerCase() === subcommand,
            )
            .map((i) => (isUnknownWord(words[i] as string) ? i : i + 1));
    if (from.length === 0) return false;
    return argMatches === undefined || from.some((start) => operandsFrom(words, start).some(argMatches));
  };
}
