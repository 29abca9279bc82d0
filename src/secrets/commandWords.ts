import { nextWord } from './ruleParts.js';

// Some secrets are known only by their place among a command's words: htpasswd's password after
// its file and user.
// Those are read here as the program reads them, from words asked for one at a time, so that
// the same reading serves command text (words read lazily from where the program's name ends)
// and an argv. Only a bounded number of words is ever asked for.

/** [start, end) and text of a word, or of the part of it that is secret. */
export interface Span {
  start: number;
  end: number;
  value: string;
}

const WORD = new RegExp(nextWord(''), 'yd');

/** The group holding a word's text: where it is and what it holds. */
function wordSpan(match: RegExpExecArray): Span {
  for (const [name, value] of Object.entries(match.groups!)) {
    if (value === undefined) continue;
    const [start, end] = match.indices!.groups![name]!;
    return { start, end, value };
  }
  throw new Error('a word match holds no word');
}

/**
 * The words of the command in `text` after `at` (where a program's name ends), `wordAt(0)` the
 * first: read as they are asked for, each bounded, up to what ends the command. Quotes are not
 * part of a word's text or span.
 */
export function wordsAfter(text: string, at: number): (i: number) => Span | undefined {
  const words: Span[] = [];
  let next = at;
  return (i) => {
    while (words.length <= i) {
      WORD.lastIndex = next;
      const match = WORD.exec(text);
      if (match === null) return undefined;
      words.push(wordSpan(match));
      next = WORD.lastIndex;
    }
    return words[i];
  };
}

/** More option words than anyone gives a program these read. */
export const MAX_OPTION_WORDS = 32;
