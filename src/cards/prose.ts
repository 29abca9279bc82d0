import { clip, truncate } from './escape.js';

// Free text from the host or the agent (a title, a reason, a rule preview, a session's name) sits
// among the card's own mrkdwn. Escaping & < > keeps it from pinging anyone or linking anywhere,
// but not from formatting: a title with a line break, `*Decided by:*`, an emoji and a code block
// could pass for the card's own lines. Slack has no escape for * _ ~ ` or an emoji's colons, so
// prose is shown on one line with look-alikes where they would act (jsx-slack's approach). Each
// replacement is one character for one, so a cut's "N more characters" still counts the source's.

const LOOK_ALIKES: Record<string, string> = {
  '*': '∗', // U+2217 asterisk operator
  _: 'ˍ', // U+02CD modifier letter low macron
  '~': '∼', // U+223C tilde operator
  '`': 'ˋ', // U+02CB modifier letter grave accent
  ':': '∶', // U+2236 ratio
  '\n': ' ',
  '\r': ' ',
  '\t': ' ',
};

// Slack opens and closes *bold*, _italics_ and ~strikes~ only at a word's edge: a run of them
// inside a word (`write_file`, `mcp__github__create_issue`, `a*b`) is text, and stays as typed.
// A backtick and a line break always act.
const FORMATTING = /(?<![\p{L}\p{N}*_~])[*_~]+|[*_~]+(?![\p{L}\p{N}*_~])|[`\n\r\t]|:(?=[\w+'-]+:)/gu;
/** A `>` opening the text: placed at a line's start, it would quote what follows. */
const LEADING_QUOTE = /^(\s*)>/;

/** `raw` on one line, with no character Slack would read as formatting. Not escaped. */
export function inertProse(raw: string): string {
  return raw
    .replace(FORMATTING, (run) => [...run].map((ch) => LOOK_ALIKES[ch]!).join(''))
    .replace(LEADING_QUOTE, '$1›');
}

/** truncate() of prose: escaped, on one line, formatting made inert. */
export function truncateProse(raw: string, max: number): string {
  return truncate(inertProse(raw), max);
}

/** clip() of prose: escaped, on one line, formatting made inert. */
export function clipProse(raw: string, max: number): string {
  return clip(inertProse(raw), max);
}
