import { nextWord, type Span, wordPattern } from './ruleParts.js';

// Some secrets are known only by their place among a command's words: htpasswd's password after
// its file and user, vault's token after `login`, docker's `-p` once `login` is its subcommand.
// Those are read here as the program reads them, from words asked for one at a time, so that
// the same reading serves command text (words read lazily from where the program's name ends)
// and an argv. Only a bounded number of words is ever asked for.

export type { Span };

/** A word is read at every program name of a text, so it is read without the `d` flag. */
const WORD = wordPattern(nextWord(''), 'y');

interface Read {
  word: Span;
  /** Where the next word may start. */
  next: number;
}

/**
 * The words of one text, each read once: readers that start where another went by (the
 * `docker` inside `docker -H docker …`) take what it read, so a text of many program names costs
 * its words once, not once per name.
 */
export class CommandWords {
  private readonly reads = new Map<number, Read | null>();

  constructor(private readonly text: string) {}

  /**
   * The words of the command after `at` (where a program's name ends), `wordAt(0)` the first:
   * read as they are asked for, each bounded, up to what ends the command. The quotes of a word
   * quoted whole are not part of its text or span; a word of several parts (`ab"c d"e`) is read
   * as written, quotes and all, so that all of it is masked.
   */
  after(at: number): (i: number) => Span | undefined {
    const words: Span[] = [];
    let next = at;
    return (i) => {
      while (words.length <= i) {
        const read = this.readAt(next);
        if (read === null) return undefined;
        words.push(read.word);
        next = read.next;
      }
      return words[i];
    };
  }

  private readAt(at: number): Read | null {
    let read = this.reads.get(at);
    if (read === undefined) {
      WORD.pattern.lastIndex = at;
      const match = WORD.pattern.exec(this.text);
      read = match === null ? null : { word: WORD.spanOf(match)!, next: WORD.pattern.lastIndex };
      this.reads.set(at, read);
    }
    return read;
  }
}

/** More option words than anyone gives a program these read. */
export const MAX_OPTION_WORDS = 32;
/** More words than anyone puts before a subcommand: past them, in doubt, it is taken as given. */
const MAX_SUBCOMMAND_WORDS = 16;
/** Longer than any option or key before its `=` (`--context=`, `secret_id=`). */
const MAX_OPTION_CHARS = 256;

/**
 * Where the first `=` of a word is, looked for among its first characters only, however long
 * the word (`--context=prod`, `password=x`); -1 when there is none there.
 */
export function equalsIndex(word: string): number {
  const end = Math.min(word.length, MAX_OPTION_CHARS);
  for (let i = 0; i < end; i++) if (word.charCodeAt(i) === 0x3d) return i;
  return -1;
}

/**
 * Where the words after `path` start when `path` (`login`, `registry login`) is the program's
 * subcommand, the words after its name given by `wordAt`; undefined when it is not. The
 * subcommand is the first word that is not an option, but a word right after an option without
 * `=` may be that option's value (`docker --config /x login`): such a word is passed over unless
 * it is the subcommand, as whether it is a value cannot be told without knowing the option. So
 * `docker run --name login` is no login, and a reading that runs past its bound, in doubt, is.
 */
export function subcommandEnd(path: readonly string[], wordAt: (i: number) => unknown): number | undefined {
  let matched = 0;
  let afterOption = false;
  for (let i = 0; i < MAX_SUBCOMMAND_WORDS; i++) {
    const word = wordAt(i);
    if (typeof word !== 'string') return undefined;
    if (word === path[matched]) {
      matched++;
      if (matched === path.length) return i + 1;
      afterOption = false;
    } else if (word.length > 1 && word.startsWith('-')) {
      afterOption = word !== '--' && equalsIndex(word) < 0;
    } else if (afterOption) afterOption = false;
    else return undefined;
  }
  return MAX_SUBCOMMAND_WORDS;
}
