// Pieces the secret rules are built of (secretRules.ts, commandLineRules.ts). Every repeat is
// bounded, so no rule built of them can be made to backtrack across a long text, but for the look
// past a quote that never closes to its line's end: it is tried only where no closed part is, and
// stops at the next quote of its kind, so a text is still read once.

/** `[Pp][Aa]…`: the combined expression cannot take the `i` flag without loosening token shapes. */
export function anyCase(word: string): string {
  return word.replace(/[a-z]/g, (c) => `[${c.toUpperCase()}${c}]`);
}

/**
 * `literal` where none of `inside` (a character class's body) comes before it, or right after a
 * JSON escape (`\n`, `\t`): in rawArgs a token often starts a line, and `\b` sees no boundary
 * between `\n` and `ghp_`. The literal comes first and the look-behind after it, so the scan still
 * skips ahead to where the literal is: a leading look-behind would be tried at every character.
 * The literal must hold no capturing group: it is written twice.
 */
export function atStart(literal: string, inside: string): string {
  return `${literal}(?<=(?:^|[^${inside}]|\\\\[nrt])${literal})`;
}

/** `literal` where a word starts. */
export function atWordStart(literal: string): string {
  return atStart(literal, 'A-Za-z0-9_');
}

/** `literal` where a word starts, not inside a kebab-case name either. */
export function atNameStart(literal: string): string {
  return atStart(literal, 'A-Za-z0-9_-');
}

/** A value that is already a marker is not masked again: masking is idempotent. */
export const NOT_A_MARKER = '(?!\\[masked [a-z-]{1,40}\\])';

/** Inside `"…"`: a backslash escapes the next character, as in the shell and in JSON. */
const IN_QUOTES = String.raw`(?:\\[^\r\n]|[^"\\\r\n])`;

/**
 * Inside `\"…\"`, a quoted string within a JSON string: JSON's escape pairs, but `\"` ends it,
 * unless it is the shell's escaped quote (`\\\"`).
 */
const IN_ESCAPED_QUOTES = String.raw`(?:\\\\\\"|\\[^"\r\n]|[^"\\\r\n])`;

/**
 * What a quote may not be followed by to open a part of a word: the end of a word, or JSON's
 * (`,`, `]`, `}`, `:`). A quote right after a value there closes a string the value stood in
 * (`sh -c "export TOKEN=x" && …`, `["env","TOKEN=x"]`), as a word's opening quote rarely is.
 */
const WORD_END = String.raw`(?:[\s;&|()<>,:\]}]|\\[nrt]|$)`;

/** A quoted part that continues a word (`"c d"` of `ab"c d"e`), its opening quote not before WORD_END. */
const JOINED_PART =
  `(?:'(?!${WORD_END})[^'\\r\\n]{0,1024}'` +
  `|\\\\"(?!${WORD_END})${IN_ESCAPED_QUOTES}{0,1024}\\\\"` +
  `|"(?!${WORD_END})${IN_QUOTES}{0,1024}")`;

/** A word's first part when it is quoted: no part came before it to join. */
const FIRST_QUOTED_PART = `(?:'[^'\\r\\n]{0,1024}'|\\\\"${IN_ESCAPED_QUOTES}{0,1024}\\\\"|"${IN_QUOTES}{0,1024}")`;

/** More parts than anyone quotes one word in. */
const MAX_WORD_PARTS = 64;

/**
 * What a quote that never closes is read over: up to a blank, another quote, a backslash (a JSON
 * escape: `\n`) or what could be shell structure (an operator, a parenthesis, a backtick). Such a
 * quote is often no opening at all: it closes a string the value stood in
 * (`-H 'X-Api-Key: 'abc; curl … | sh`), and all after it is code. Read to its line's end, as it
 * once was, it hid that code from the approver; read so, the rest of the line stays readable and
 * a secret of several blank-separated words (`password="ab cd`) shows its later words.
 */
const UNCLOSED_RUN = '[^\\s\'"\\\\;&|()<>`]{1,1024}';

/**
 * A quote that continues a word and that no closed part could be read from: the text was cut
 * mid-quote, the command written wrong, or the quote closes a string the word stood in. It adds
 * to the word only the run right after it (UNCLOSED_RUN). Tried only where no closed part is, so
 * a word is still read one way.
 */
const UNCLOSED_PART = `(?:'|\\\\?")(?!${WORD_END})${UNCLOSED_RUN}`;

/**
 * A word's first part when it is a quote that never closes: the quote and the run after it
 * (UNCLOSED_RUN), where no quote of its kind closes it later on the line (on the JSON string for
 * `\"`). A quote that closes, even right away (`""`), is no such part.
 */
const UNCLOSED_FIRST_PART =
  `(?:'(?!${WORD_END})${UNCLOSED_RUN}(?=[^'\\r\\n]*(?:[\\r\\n]|$))` +
  `|\\\\"(?!${WORD_END})${UNCLOSED_RUN}(?=${IN_ESCAPED_QUOTES}*(?:"|\\\\?(?:[\\r\\n]|$)))` +
  `|"(?!${WORD_END})${UNCLOSED_RUN}(?=${IN_QUOTES}*\\\\?(?:[\\r\\n]|$)))`;

/**
 * Where a quoted part that starts a word does not end it: a part follows. Not a `,`, `]` or `}`
 * after it, which in JSON follow a string (`"-u","admin:x"`).
 */
function continues(bare: string): string {
  return `(?=[^${bare},\\]}]|${ESCAPED}|['"](?!${WORD_END})|\\\\"(?!${WORD_END}))`;
}

/**
 * A character the shell reads as the word's own after a backslash (`\$`, `\!` of `My\$ecret\!`:
 * how a password holding them is typed), written so in a command or, its backslash doubled, in a
 * command inside a JSON string (`My\\$ecret`). Not a blank, quote or backslash after it, which
 * end or open parts, nor a letter of JSON's escapes (`\n` is a line break there): the value ends
 * before those, as it did before any backslash.
 */
const ESCAPED = String.raw`\\\\?[^\s"'\\nrtbfu/]`;

/**
 * A whole shell word, as written: bare runs of characters not in `[bare]` (a character class's
 * body) and quoted parts, joined (`abc"def ghi"jkl`, `'a b'"c d"`), the last perhaps a quote
 * never closed (`abc"def` of `abc"def ghi`, to its first blank). Each part comes after one of another kind,
 * so a word is read in one way only: nothing can make the reading backtrack.
 */
function shellWord(bare: string): string {
  const run = `(?:[^${bare}]|${ESCAPED}){1,1024}`;
  return (
    `(?:(?:${run}|${FIRST_QUOTED_PART}${continues(bare)}(?:${run})?)` +
    `(?:${JOINED_PART}(?:${run})?){0,${MAX_WORD_PARTS}}(?:${UNCLOSED_PART})?` +
    `|${UNCLOSED_FIRST_PART})`
  );
}

/** What ends a bare value after `key=`: JSON's and a command's punctuation too. */
const KEY_VALUE_BARE = `\\s"'\\\\,;&<>\\]}`;

/**
 * A value after `key=` / `key: `, quoted (also with JSON-escaped quotes, as inside rawArgs) or
 * bare, or a shell word of several parts (`x"y z"`), masked whole, quotes and all. Quoted values
 * may hold spaces and escaped quotes; an empty value is no secret. Its groups are named
 * `secret<name>…`: every name must be unique in the combined expression.
 */
export function keyValue(name: string): string {
  const alone = `(?!${continues(KEY_VALUE_BARE)})`;
  return (
    `(?:\\\\"${NOT_A_MARKER}(?<secret${name}Eq>${IN_ESCAPED_QUOTES}{1,1024})\\\\"${alone}` +
    `|"${NOT_A_MARKER}(?<secret${name}Dq>${IN_QUOTES}{1,1024})"${alone}` +
    `|\\\\?'${NOT_A_MARKER}(?<secret${name}Sq>[^'\\r\\n]{1,1024}?)\\\\?'${alone}` +
    `|${NOT_A_MARKER}(?<secret${name}Word>${shellWord(KEY_VALUE_BARE)}))`
  );
}

/**
 * What a flag's value never starts with: another flag, a command substitution, a marker, or the
 * `=`/`:` of a `key = value` another rule masks.
 */
export const NOT_A_FLAG = `(?![-=:]|\\$\\(|\`)${NOT_A_MARKER}`;

/** NOT_A_FLAG inside single quotes, where `$(` and a backtick are characters, not code. */
const NOT_A_FLAG_SINGLE_QUOTED = `(?![-=:])${NOT_A_MARKER}`;

/** What ends a bare shell word. */
const SHELL_BARE = '\\s"\'\\\\;&|()<>`';

/**
 * A shell word, its secret in the group `secret<name>…`: single-quoted; double-quoted with
 * escaped quotes, as inside a JSON string; double-quoted, a backslash escaping the next
 * character, as in the shell and in JSON; bare, or of several parts (`abc"def ghi"jkl`), masked
 * whole, quotes and all. `lead` is a pattern for what the word starts with and keeps (`admin:` of
 * `admin:hunter2`).
 */
export function quotedOrBare(name: string, lead = ''): string {
  const alone = `(?!${continues(SHELL_BARE)})`;
  // `admin:"two words"`: the shell joins a quoted part to what comes before it in one word. And
  // `"admin:pass` that nothing closes: the lead kept, the run after it masked (shellWord reads
  // such a quote only after the lead).
  const quotedAfterLead =
    lead === ''
      ? ''
      : `|${lead}'(?<secret${name}LeadSq>[^'\\r\\n]{1,1024})'${alone}` +
        `|${lead}"(?<secret${name}LeadDq>${IN_QUOTES}{1,1024})"${alone}` +
        `|'${lead}${NOT_A_FLAG}(?<secret${name}UnclosedSqWord>${UNCLOSED_RUN})(?=[^'\\r\\n]*(?:[\\r\\n]|$))` +
        `|"${lead}${NOT_A_FLAG}(?<secret${name}UnclosedDqWord>${UNCLOSED_RUN})(?=${IN_QUOTES}*\\\\?(?:[\\r\\n]|$))`;
  return (
    `(?:'${lead}${NOT_A_FLAG_SINGLE_QUOTED}(?<secret${name}Sq>[^'\\r\\n]{1,1024})'${alone}` +
    `|\\\\"${lead}${NOT_A_FLAG}(?<secret${name}Eq>${IN_ESCAPED_QUOTES}{1,1024})\\\\"${alone}` +
    `|"${lead}${NOT_A_FLAG}(?<secret${name}Dq>${IN_QUOTES}{1,1024})"${alone}` +
    quotedAfterLead +
    `|${lead}${NOT_A_FLAG}(?<secret${name}Word>${shellWord(SHELL_BARE)}))`
  );
}

/**
 * The blanks between a flag or a name and its value. Bounded so that no rule's scan grows with
 * the input, but far past what anyone types: a value after nine spaces was once left unmasked.
 */
export const BLANKS = '[ \\t]{1,256}';

/** From the closing quote of one JSON array item to the opening quote of the next. */
export const JSON_ITEM_GAP = '"[ \\t]{0,8},[ \\t\\r\\n]{0,64}(?=")';

/**
 * A flag's value after blanks on a command line, or as the next item of a JSON array (an argv
 * inside rawArgs): then the whole JSON string.
 */
export function flagGap(name: string): string {
  return `(?:${BLANKS}|${JSON_ITEM_GAP})${quotedOrBare(name)}`;
}

/**
 * Any shell word, a flag too, after blanks (single-, double- or JSON-escape-quoted, bare, or of
 * several parts: then as written, quotes and all), or the next item of a JSON array
 * (`"-b", "file"`): its text, without quotes when quoted whole, in a group named `word<name>…`. A
 * marker is no word: what was masked is not read again.
 */
export function nextWord(name: string): string {
  const alone = `(?!${continues(SHELL_BARE)})`;
  return (
    `(?:${BLANKS}${NOT_A_MARKER}(?:'(?<word${name}Sq>[^'\\r\\n]{0,1024})'${alone}` +
    `|\\\\"(?<word${name}Eq>${IN_ESCAPED_QUOTES}{0,1024})\\\\"${alone}` +
    `|"(?<word${name}Dq>${IN_QUOTES}{0,1024})"${alone}` +
    `|(?<word${name}Word>${shellWord(SHELL_BARE)}))` +
    `|${JSON_ITEM_GAP}"${NOT_A_MARKER}(?<word${name}Json>${IN_QUOTES}{0,1024})(?="[ \\t]{0,8}[,\\]]))`
  );
}

/** [start, end) and text of a word, or of the part of it that is secret. */
export interface Span {
  start: number;
  end: number;
  value: string;
}

/** How long the quote is that closes a group of quotedOrBare or nextWord, by how its name ends. */
const CLOSING_QUOTES: ReadonlyArray<readonly [ending: string, length: number]> = [
  ['Sq', "'".length],
  ['Eq', '\\"'.length],
  ['Dq', '"'.length],
  // A word of several parts holds its quotes.
  ['Word', 0],
  // A JSON item's closing quote is looked at, not matched.
  ['Json', 0],
];

const NAMED_GROUP = /\(\?<([A-Za-z0-9]+)>/g;

/** An expression of quotedOrBare or nextWord, and where what it matched is. */
export interface WordPattern {
  pattern: RegExp;
  /** The group that matched: where it is and what it holds. */
  spanOf(match: RegExpExecArray): Span | undefined;
}

/**
 * `source`, built of quotedOrBare or nextWord and ending where they do, its named groups numbered
 * instead. Such an expression may match at every word of a text an agent writes, so a match must
 * cost little: V8 builds a groups object for every match of an expression with named groups, and
 * the `d` flag's indices cost more than the match itself. Where a group is follows from where the
 * match ends: right before the group's closing quote, the match's last characters.
 */
export function wordPattern(source: string, flags: string): WordPattern {
  const closing = [...source.matchAll(NAMED_GROUP)].map(([, name]) => {
    const quote = CLOSING_QUOTES.find(([ending]) => name!.endsWith(ending));
    if (quote === undefined) throw new Error(`no closing quote is known for the group ${name}`);
    return quote[1];
  });
  const numbered = source.replace(NAMED_GROUP, '(');
  // The numbering holds only if nothing else is captured.
  if (new RegExp(`${numbered}|`).exec('')!.length !== closing.length + 1) {
    throw new Error('an expression of words captures a group without a name');
  }
  return {
    pattern: new RegExp(numbered, flags),
    spanOf(match) {
      for (let i = 0; i < closing.length; i++) {
        const value = match[i + 1];
        if (value === undefined) continue;
        const end = match.index + match[0].length - closing[i]!;
        return { start: end - value.length, end, value };
      }
      return undefined;
    },
  };
}
