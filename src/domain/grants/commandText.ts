import type { ApprovalSubject } from '../../msp/protocol.js';

// Whether a shell command's text holds syntax that none of its stages' words show: a redirection
// (`> .git/hooks/pre-commit`, `2>`, `&>`, `>|`, `<`), a here-doc or here-string (`<<`, `<<<`) or a
// leading assignment (`NODE_OPTIONS=--require=/tmp/x.js npm test`). A shell capability is made of
// the words alone, so a grant for `npm test` would otherwise answer `npm test > .git/hooks/x` too.
// Fail closed, with no parsing of our own: any such text is a `<`, `>` or `=`, and the shell
// keeps each of those in a word only when it is quoted or inside one (`-m "a > b"`, `CC=gcc`), so
// a text that holds more of them than the words do holds syntax outside them. A comment, an
// ANSI-C quote or a here-doc body, which a parser could read otherwise than the shell, still count.

const SYNTAX_CHARS = ['<', '>', '='] as const;

/**
 * One stream joined to another (`2>&1`, `>&2`), a word of its own: it writes nowhere new, and
 * agents add it to most commands. Taken out of the text and of the words alike before counting,
 * so one inside a quoted word (`' 2>&1 '`) leaves the count as it was, and a redirection beside
 * it (`2>&1 > x`, `2>&1>x`, `>&file`) still counts.
 */
const STREAM_JOIN = /(?<=^|\s)\d?>&\d(?=$|[\s;&|)])/g;

/**
 * A word that reads as a redirection (`>`, `2>/dev/null`, `&>log`, `<<EOF`, `{fd}>x`): the
 * capability does not tell a quoted `'>'` from the operator, so a grant on it would answer both.
 */
const REDIRECTION_WORD = /^(?:\d+|\{[A-Za-z_][A-Za-z0-9_]*\})?(?:[<>]|&>)/;

/**
 * Why the command may do more than its stages' words say, or undefined. The whole command is
 * looked at, whichever stage is asked: an earlier stage's `> .git/hooks/pre-commit` changes what
 * a later `git commit` runs. A subject with no command text has only its words to show.
 */
export function syntaxOutsideWords(subject: ApprovalSubject): string | undefined {
  const words = (subject.stages ?? []).flatMap((stage) => stage.argv).map(withoutStreamJoins);
  const outside = 'a redirection, here-doc or assignment outside its words';
  if (words.some((word) => REDIRECTION_WORD.test(word))) return outside;
  if (subject.command === undefined) return undefined;
  const text = withoutStreamJoins(subject.command);
  return SYNTAX_CHARS.some((char) => count(text, char) > words.reduce((n, word) => n + count(word, char), 0))
    ? outside
    : undefined;
}

function count(text: string, char: string): number {
  return text.split(char).length - 1;
}

function withoutStreamJoins(text: string): string {
  return text.replace(STREAM_JOIN, '');
}
