// A card must never read otherwise than the command runs: a marker may hide a secret's
// characters, never an operator, a substitution or a quote the shell reads as opening or closing
// a string. The secret rules read a value where it starts, blind to the quotes before it, so a
// quote that closes a string can look to them like one that opens a value (`-H 'Key: 'abc; curl
// … | sh`). This reads a masked text once, from its start, as the shell does, and narrows a
// value's span to what the shell reads as one literal. Only texts with a value to mask are read.

/** Quote states, as the shell reads. */
const UNQUOTED = 0;
const SINGLE = 1;
const DOUBLE = 2;

/** In ShellReading.operator: a JSON string's own quote, which ends what is read as one line. */
const JSON_STRING_END = 2;

/** Where a text's shell structure is: operators and substitutions, and the quote state at each character. */
export interface ShellReading {
  /**
   * 1 where an operator, a parenthesis, a redirection or a substitution's opening stands;
   * JSON_STRING_END at a JSON string's own quote.
   */
  operator: Uint8Array;
  /** The quote state before each character, and at the text's end. */
  state: Uint8Array;
  /** 1 at the second character of a JSON escape (`n` of `\\n`): no span starts or ends there. */
  escaped: Uint8Array;
}

function isOperator(code: number): boolean {
  // ; & | ( ) < > ` and a line break
  return (
    code === 0x3b ||
    code === 0x26 ||
    code === 0x7c ||
    code === 0x28 ||
    code === 0x29 ||
    code === 0x3c ||
    code === 0x3e ||
    code === 0x60 ||
    code === 0x0a
  );
}

/** What a JSON escape stands for, as the shell reading it sees it: `\n` a line break. */
function unescaped(code: number): number {
  if (code === 0x6e) return 0x0a; // \n
  if (code === 0x74) return 0x09; // \t
  if (code === 0x72) return 0x0d; // \r
  return code; // \" \\ \/ (a \u escape is read as its letters: never structure)
}

/**
 * `text` read as the shell reads it, from its start: one pass. A JSON text (rawArgs) is read
 * string by string, each string's text as a command of its own, its escapes undone: the quotes
 * of a command inside `{"command":"…"}` are `\"`, its line breaks `\n`.
 */
export function readShell(text: string): ShellReading {
  const operator = new Uint8Array(text.length);
  const state = new Uint8Array(text.length + 1);
  const escaped = new Uint8Array(text.length + 1);
  const json = /^\s*[[{]/.test(text);
  let inJsonString = !json;
  let now = UNQUOTED;
  // The shell's backslash: the next character is a literal.
  let escaping = false;
  for (let i = 0; i < text.length; i++) {
    state[i] = now;
    let code = text.charCodeAt(i);
    if (json) {
      if (code === 0x22) {
        // A JSON string's own quote: each string is read from a fresh state, as a line of its own.
        inJsonString = !inJsonString;
        operator[i] = JSON_STRING_END;
        now = UNQUOTED;
        escaping = false;
        continue;
      }
      if (!inJsonString) continue;
      if (code === 0x5c && i + 1 < text.length) {
        code = unescaped(text.charCodeAt(i + 1));
        state[++i] = now;
        escaped[i] = 1;
      }
    }
    if (escaping) {
      escaping = false;
      continue;
    }
    if (now === SINGLE) {
      if (code === 0x27) now = UNQUOTED;
      continue;
    }
    if (code === 0x5c) escaping = true;
    // `$(` and a backtick substitute inside double quotes too.
    else if (code === 0x60 || (code === 0x24 && text.charCodeAt(i + 1) === 0x28)) operator[i] = 1;
    else if (now === DOUBLE) {
      if (code === 0x22) now = UNQUOTED;
    } else if (code === 0x27) now = SINGLE;
    else if (code === 0x22) now = DOUBLE;
    else if (isOperator(code)) operator[i] = 1;
  }
  state[text.length] = now;
  return { operator, state, escaped };
}

function isBlank(code: number): boolean {
  return code === 0x20 || code === 0x09;
}

/**
 * Whether [start, end) opens a quote that nothing closes before its line ends (the end of its JSON
 * string in JSON): the shell reads all after it as one string, so masking the value whole hides
 * no structure, and its quote shown after the marker (maskSecrets.ts) keeps what follows quoted.
 */
function opensToLineEnd(text: string, reading: ShellReading, start: number, end: number): boolean {
  const { state, escaped } = reading;
  if (state[start] !== UNQUOTED || state[end] === UNQUOTED) return false;
  for (let i = end; i < text.length; i++) {
    if (state[i + 1] === UNQUOTED && escaped[i + 1] === 0) return isLineEnd(text, reading, i);
    if (isLineEnd(text, reading, i)) return true;
  }
  return true;
}

/**
 * The text's end, or in JSON the quote that ends a string: nothing after is read in the state
 * before it. A line break is no such end: a quote left open runs on past it.
 */
export function isReadingEnd(text: string, reading: ShellReading, at: number): boolean {
  return at >= text.length || reading.operator[at] === JSON_STRING_END;
}

/** A line break, or in JSON the quote that ends a string (the state is reset there). */
function isLineEnd(text: string, reading: ShellReading, at: number): boolean {
  if (at >= text.length) return true;
  const code = text.charCodeAt(at);
  if (code === 0x0a || code === 0x0d || reading.operator[at] === JSON_STRING_END) return true;
  return reading.escaped[at + 1] === 1 && (text[at + 1] === 'n' || text[at + 1] === 'r');
}

/** How long the character at `at` is as written: 2 for a JSON escape. */
function width(reading: ShellReading, at: number): number {
  return reading.escaped[at + 1] === 1 ? 2 : 1;
}

/** Whether the character at `at` is a quote, written plainly or as JSON's `\\"`. */
function isQuoteAt(text: string, reading: ShellReading, at: number): boolean {
  const code = text.charCodeAt(width(reading, at) === 2 ? at + 1 : at);
  return code === 0x27 || code === 0x22;
}

/** A value's span as the shell reads it; `quotes`, when set, are shown right after its marker. */
export interface LiteralSpan {
  start: number;
  end: number;
  /** The quotes inside the span that the shell reads as opening or closing a string, as written. */
  quotes?: string;
}

/**
 * The fewest quotes, as written in [from, to) (`\"` in JSON), that take the shell from its quote
 * state at `from` to the one at `to`: a quote that closes what the one before it opened, with only
 * masked text between them, changes nothing the card shows.
 */
function structuralQuotes(text: string, reading: ShellReading, from: number, to: number): string {
  const { state } = reading;
  const kept: Array<{ written: string; before: number }> = [];
  for (let i = from; i < to; ) {
    const step = width(reading, i);
    if (state[i] !== state[i + step]) {
      if (kept.at(-1)?.before === state[i + step]) kept.pop();
      else kept.push({ written: text.slice(i, i + step), before: state[i]! });
    }
    i += step;
  }
  return kept.map((quote) => quote.written).join('');
}

/**
 * [start, end) narrowed to what the shell reads as a literal: past a quote it reads as closing a
 * string before the value, and short of the first operator, substitution or unquoted blank. A
 * value the shell reads as one word up to its end, across a quote that closes the string it stands
 * in (`abc"def` of `"password=abc"def`), is masked whole, that quote shown after its marker;
 * otherwise the span goes back to where the quote state is what it was at its start. Undefined
 * when nothing is left. A span that hides no structure is returned as it is.
 */
export function literalSpan(
  text: string,
  reading: ShellReading,
  start: number,
  end: number,
): LiteralSpan | undefined {
  const { operator, state, escaped } = reading;
  let hidesOperator = false;
  for (let i = start; i < end && !hidesOperator; i++) hidesOperator = operator[i] === 1;
  if (!hidesOperator && (state[start] === state[end] || opensToLineEnd(text, reading, start, end)))
    return { start, end };
  let from = start;
  while (from < end && escaped[from] === 1) from++;
  const quote = from < end ? width(reading, from) : 0;
  // A quote that opens a string is the value's own: only one that closes a string is left out.
  const closing = state[from] !== UNQUOTED && state[from + quote] === UNQUOTED;
  if (quote > 0 && isQuoteAt(text, reading, from) && closing) from += quote;
  let to = from;
  // A blank the shell reads unquoted ends a word: what follows is no longer the value.
  while (to < end && operator[to] !== 1 && !(state[to] === UNQUOTED && isBlank(text.charCodeAt(to)))) to++;
  if (to === end && from < end && state[from] !== state[end]) {
    return { start: from, end, quotes: structuralQuotes(text, reading, from, end) };
  }
  while (to > from && (state[to] !== state[from] || escaped[to] === 1)) to--;
  return from < to ? { start: from, end: to } : undefined;
}

/**
 * The quote a value's own text leaves open (`"` of `abc"def`, `\"` of JSON's `abc\"def`), to
 * follow its marker so that the card still shows where a string starts; '' when none is. In a
 * JSON string the shell's reading from the text's start sees no command's quotes, so a value may
 * still hold one there.
 */
export function quoteLeftOpen(value: string): string {
  let open = '';
  for (let i = 0; i < value.length; i++) {
    const char = value[i]!;
    if (open === "'") {
      if (char === "'") open = '';
    } else if (char === '\\') {
      if (value[i + 1] === '"' && open !== '"') open = open === '\\"' ? '' : '\\"';
      i++;
    } else if (char === '"' && open !== '\\"') open = open === '"' ? '' : '"';
    else if (char === "'" && open === '') open = "'";
  }
  return open;
}
