import { maskSecrets, valueMarker } from './maskSecrets.js';
import { NOT_A_MARKER } from './ruleParts.js';

// MSP_HOST_COMMAND is an operator's shell line and may carry credentials for the host. Besides
// every shape maskSecrets knows (flags such as `--token X`, and `mysql -pSECRET` or
// `curl -u user:SECRET` after those programs' names), the values of long flags and variable
// assignments named more loosely (`--auth X`, `--credentials=X`, `GH_AUTH=X`) are masked.
//
// Other short flags are left alone: `-p` is a port for `docker run` and ssh, a profile elsewhere;
// guessing would hide ports and paths from the log an operator reads to debug the host. A flag
// naming where a secret lives (`--token-file`, `--password-env`) is left alone too: its value is
// a path or a name, not the secret.

const SECRET_WORD =
  'token|secret|passw(?:or)?d|passphrase|api-?key|access-?key|private-?key|credentials?|auth';

const SINGLE_QUOTED = `'[^']*'`;
const DOUBLE_QUOTED = `"(?:[^"\\\\]|\\\\.)*"`;
const BARE = `[^\\s;&|()<>'"]`;
/** A quote right before the end of a word closes a string the word stood in (`sh -c "K=x"`). */
const OPENS_PART = `(?![\\s;&|()<>]|$)`;

/**
 * A quote that nothing closes (the line cut, or written wrong): the shell reads on to the end of
 * the text, and so does the word, as the closed parts above may span lines too.
 */
const UNCLOSED = `['"]${OPENS_PART}[\\s\\S]*`;

/**
 * A shell word: single-quoted, double-quoted (with escapes), bare, or parts of those joined
 * (`ab"c d"e`), and last perhaps a quote never closed. Every part starts with a character of its
 * own, and a quote is taken as never closed only where no closed part could be read, so the word
 * is read one way only.
 */
const WORD = `(?:${SINGLE_QUOTED}|${DOUBLE_QUOTED}|${BARE}|${UNCLOSED})(?:${BARE}|'${OPENS_PART}[^']*'|"${OPENS_PART}(?:[^"\\\\]|\\\\.)*")*(?:${UNCLOSED})?`;

/** A word quoted whole, whose quotes the marker keeps. */
const QUOTED_WHOLE = new RegExp(`^(?:${SINGLE_QUOTED}|${DOUBLE_QUOTED})$`);

const SECRET_FLAG = new RegExp(
  `(?<![\\w-])(--(?:[a-z0-9]+-)*(?:${SECRET_WORD})(?:-(?!(?:file|path|dir|env|var)\\b)[a-z0-9]+)*)(=|[ \\t]+(?!-))${NOT_A_MARKER}(${WORD})`,
  'gi',
);

/** NAME=value at the start of a shell word (`FOO_SECRET=x cmd`, `export API_KEY=x`). */
const ASSIGNMENT = new RegExp(`(?<![\\w$-])([A-Za-z_][A-Za-z0-9_]*)=${NOT_A_MARKER}(${WORD})`, 'g');
const SECRET_NAME = /token|secret|passw(?:or)?d|passphrase|key|credential|auth|private|cookie|session/i;

function quoteOf(value: string): string {
  return QUOTED_WHOLE.test(value) ? value[0]! : '';
}

/**
 * `value` masked, keeping its quotes so the line still reads as the shell would split it; a word
 * of several parts (`ab"c d"e`) is masked whole.
 */
function masked(value: string): string {
  const quote = quoteOf(value);
  const marker = valueMarker(quote ? value.slice(1, -1) : value);
  return marker === undefined ? value : `${quote}${marker}${quote}`;
}

/** The command line with its secrets masked, for the log. */
export function maskCommandLine(command: string): string {
  const flagsMasked = command.replace(
    SECRET_FLAG,
    (_, flag: string, separator: string, value: string) => `${flag}${separator}${masked(value)}`,
  );
  const assignmentsMasked = flagsMasked.replace(ASSIGNMENT, (whole, name: string, value: string) =>
    SECRET_NAME.test(name) ? `${name}=${masked(value)}` : whole,
  );
  return maskSecrets(assignmentsMasked).text;
}
