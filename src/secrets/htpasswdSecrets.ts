import { MAX_OPTION_WORDS, type Span } from './commandWords.js';

// A password given as a plain argument, after no flag: `htpasswd -b file user X`,
// `htpasswd -nb user X`, and the same of htdbm, which keeps the users in a DBM file. Only its
// place says it is one, so the words after the program's name are read as both read them
// (apr_getopt): options first, bundled (`-bc`), some taking a value glued or as the next word,
// `--` ending them; then the file unless `-n`, the user, and the password only with `-b` (else it
// is asked for). htdbm's `-t` comment comes after the password. The same reading serves command
// text and an argv.

export const HTPASSWD = 'htpasswd';
export const HTDBM = 'htdbm';

/**
 * The programs read so, each with its options that take a value: `-C` (bcrypt cost), `-r`
 * (SHA-2 rounds), and htdbm's `-T` (DBM type).
 */
const VALUE_OPTIONS = new Map<string, string>([
  [HTPASSWD, 'Cr'],
  [HTDBM, 'CrT'],
]);

/** Whether `program` takes a password as a plain argument, read by passwordIndex. */
export function takesPasswordArgument(program: string): boolean {
  return VALUE_OPTIONS.has(program);
}

/** Longer than any bundle of htpasswd's options. */
const MAX_OPTION_CHARS = 64;

/**
 * Where the password of `program` (htpasswd, htdbm) stands among its arguments, `wordAt(0)` the
 * first: undefined when it has none on the command line (no `-b`) or a word that is not a string
 * (or no word) comes before the options end. Words are asked for in order and only as far as the
 * options go, so a caller may read them lazily; the one at the index returned may not exist.
 */
export function passwordIndex(program: string, wordAt: (i: number) => unknown): number | undefined {
  const valueOptions = VALUE_OPTIONS.get(program);
  if (valueOptions === undefined) return undefined;
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
      const option = word[j]!;
      if (option === 'b') batch = true;
      else if (option === 'n') noFile = true;
      else if (valueOptions.includes(option)) {
        // Its value is the rest of the word, or the next word.
        if (j === word.length - 1) i++;
        break;
      }
    }
  }
  if (!batch) return undefined;
  return i + (noFile ? 1 : 2);
}

/**
 * [start, end) and text of the password given to `program`, `spanAt` reading the words after its
 * name; undefined when there is none. Words are read in the same command, each bounded, and only
 * as far as passwordIndex asks: a text of many `htpasswd` costs a few words each.
 */
export function passwordSecret(program: string, spanAt: (i: number) => Span | undefined): Span | undefined {
  const index = passwordIndex(program, (i) => spanAt(i)?.value);
  const password = index === undefined ? undefined : spanAt(index);
  return password?.value === '' ? undefined : password;
}
