import { MAX_OPTION_WORDS, subcommandEnd } from './commandWords.js';

// The Cloud Foundry CLI's `cf auth USERNAME PASSWORD` (and `cf auth CLIENT_ID CLIENT_SECRET
// --client-credentials`) takes its secret as its second argument, after no flag: only its place
// says it is one. Its options (go-flags) may come before, between or after the arguments, and
// `--` ends them. `cf login -p X` and `--password X` are masked as flags (commandLineRules.ts).
// The same reading serves command text and an argv.

export const CF = 'cf';

/** The options of `cf auth` that take a value, which may be the next word. */
const VALUE_OPTIONS = new Set(['--origin']);

/**
 * Where the password of `cf auth` stands among cf's words, given by `wordAt` (`wordAt(0)` the
 * first after `cf`): undefined for another subcommand, or when no second argument comes in a
 * bounded number of words. Words are asked for in order; the one at the index returned exists.
 */
export function cfAuthPasswordIndex(wordAt: (i: number) => unknown): number | undefined {
  const start = subcommandEnd(['auth'], wordAt);
  if (start === undefined) return undefined;
  let options = true;
  let argument = 0;
  for (let i = start; i < start + MAX_OPTION_WORDS; i++) {
    const word = wordAt(i);
    if (typeof word !== 'string') return undefined;
    if (options && word === '--') options = false;
    else if (options && word.length > 1 && word.startsWith('-')) {
      if (VALUE_OPTIONS.has(word)) i++;
    } else if (argument === 1) return i;
    else argument++;
  }
  return undefined;
}
