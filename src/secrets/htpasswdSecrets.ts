import { nextWord } from './ruleParts.js';

// A password given as a plain argument, after no flag: `htpasswd -b file user X`,
// `htpasswd -nb user X`. Only its place says it is one, so the words after the program's name
// are read as htpasswd reads them (apr_getopt): options first, bundled (`-bc`), `-C`/`-r` taking
// a value glued or as the next word, `--` ending them; then the file unless `-n`, the user, and
// the password only with `-b` (else it is asked for). The same reading serves command text and
// an argv.

export const HTPASSWD = 'htpasswd';

/** More option words than anyone gives htpasswd: what comes after is not read. */
const MAX_OPTION_WORDS = 32;
/** Longer than any bundle of htpasswd's options. */
const MAX_OPTION_CHARS = 64;

/**
 * Where htpasswd's password stands among its arguments, `wordAt(0)` the first: undefined when it
 * has none on the command line (no `-b`) or a word that is not a string (or no word) comes
 * before the options end. Words are asked for in order and only as far as the options go, so a
 * caller may read them lazily; the one at the index returned may not exist.
 */
export function htpasswdPasswordIndex(wordAt: (i: number) => unknown): number | undefined {
  let batch = false;
  let noFile = false;
  let i = 0;
  for (; i < MAX_OPTION_WORDS; i++) {
    const word = wordAt(i);
    if (typeof word !== 'string') return undefined;
    if (word === '--') {
      i++;
      break;
    }
    if (word.length < 2 || word.length > MAX_OPTION_CHARS || !word.startsWith('-')) break;
    for (let j = 1; j < word.length; j++) {
      const option = word[j];
      if (option === 'b') batch = true;
      else if (option === 'n') noFile = true;
      else if (option === 'C' || option === 'r') {
        // Its value is the rest of the word, or the next word.
        if (j === word.length - 1) i++;
        break;
      }
    }
  }
  if (!batch) return undefined;
  return i + (noFile ? 1 : 2);
}

const WORD = new RegExp(nextWord(''), 'yd');

interface Span {
  start: number;
  end: number;
  value: string;
}

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
 * [start, end) and text of the password given to htpasswd in `text`, its name ending at `at`;
 * undefined when there is none. Words are read in the same command, each bounded, and only as
 * far as htpasswdPasswordIndex asks: a text of many `htpasswd` costs a few words each.
 */
export function htpasswdSecret(text: string, at: number): Span | undefined {
  const words: Span[] = [];
  let next = at;
  const spanAt = (i: number): Span | undefined => {
    while (words.length <= i) {
      WORD.lastIndex = next;
      const match = WORD.exec(text);
      if (match === null) return undefined;
      words.push(wordSpan(match));
      next = WORD.lastIndex;
    }
    return words[i];
  };
  const index = htpasswdPasswordIndex((i) => spanAt(i)?.value);
  const password = index === undefined ? undefined : spanAt(index);
  return password?.value === '' ? undefined : password;
}
