// Slack treats only & < > as control characters (docs/slack-platform.md §1.5): escaping them turns
// `<!channel>`, `<@U…>` and `<https://evil|docs>` into inert text. Whether Slack ever linkifies a
// bare `@here` in API-posted text is unconfirmed, so a zero-width space after the '@' defuses it.
//
// Characters Slack draws as nothing, or that reorder what is drawn around them (Trojan Source,
// CVE-2021-42574), are shown as a marker naming them: the command an approver reads must be the
// one that runs. Only characters of the input are marked, never the zero-width spaces added here.
//
// A one-line field (clip, quote) shows a line break as a space: text the host or agent chose must
// not start a line of its own under the card's labels. Inline code (a command, a path, a stage's
// words) shows it as a marker instead: there a space would pass for a word break, and two commands
// on two lines for one harmless one. Only truncate and codeBlock keep line breaks.
//
// Every helper escapes one character at a time, so a cut never splits an entity (`&amp;`), a
// surrogate pair or a defused mention, and the "N more characters" note counts characters of the
// original text, not of its escaped form.

import { HIDDEN_CHARACTER, hiddenMarker } from '../util/hiddenCharacters.js';

const ZWSP = '\u200B';

const SPECIAL_MENTION = /@(?:here|channel|everyone)/iy;

/** mrkdwn text that may span lines; `line`: the same on one line; code block; inline code. */
type Mode = 'mrkdwn' | 'line' | 'code' | 'inline';

interface Cut {
  text: string;
  /** Code points of the source left out. */
  omitted: number;
}

function escapeChar(raw: string, ch: string, offset: number, prev: string, mode: Mode): string {
  switch (ch) {
    case '&':
      return '&amp;';
    case '<':
      return '&lt;';
    case '>':
      return '&gt;';
    case '@':
      SPECIAL_MENTION.lastIndex = offset;
      return SPECIAL_MENTION.test(raw) ? `@${ZWSP}` : '@';
    case '`':
      // A code block ends at the first ```; splitting every run of backticks means none can form.
      if (mode === 'code') return prev === '`' ? `${ZWSP}\`` : '`';
      // Inline code cannot hold a backtick at all; a look-alike keeps the text readable.
      if (mode === 'inline') return 'ˋ';
      return '`';
    case '\n':
      // Inline code and one-line fields do not span lines; in code, where every character is read
      // as run, the break stays visible.
      if (mode === 'inline') return hiddenMarker(ch);
      return mode === 'line' ? ' ' : ch;
    case '\t':
      // Code keeps its indentation; in a sentence or a label a tab passes for a space.
      return mode === 'mrkdwn' || mode === 'line' ? hiddenMarker(ch) : ch;
    default:
      return HIDDEN_CHARACTER.test(ch) ? hiddenMarker(ch) : ch;
  }
}

function countCodePoints(s: string, fromOffset: number): number {
  let n = 0;
  for (let i = fromOffset; i < s.length; i++) {
    const c = s.charCodeAt(i);
    // A high surrogate followed by a low one is one character.
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** What escapeChar() changes in each mode: text without any of them is its own escaped form. */
const NEEDS_ESCAPING: Record<Mode, RegExp> = {
  mrkdwn: new RegExp(`[&<>@\t]|${HIDDEN_CHARACTER.source}`, 'u'),
  line: new RegExp(`[&<>@\t\n]|${HIDDEN_CHARACTER.source}`, 'u'),
  code: new RegExp(`[&<>@\`]|${HIDDEN_CHARACTER.source}`, 'u'),
  inline: new RegExp(`[&<>@\`\n]|${HIDDEN_CHARACTER.source}`, 'u'),
};

/** Escapes `raw` in `mode`, keeping at most `max` output characters. */
function escapeUpTo(raw: string, max: number, mode: Mode): Cut {
  // Most text needs nothing: one native scan instead of a string built a character at a time.
  if (raw.length <= max && !NEEDS_ESCAPING[mode].test(raw)) return { text: raw, omitted: 0 };
  let out = '';
  let offset = 0;
  let prev = '';
  for (const ch of raw) {
    const piece = escapeChar(raw, ch, offset, prev, mode);
    if (out.length + piece.length > max) return { text: out, omitted: countCodePoints(raw, offset) };
    out += piece;
    offset += ch.length;
    prev = ch;
  }
  return { text: out, omitted: 0 };
}

export function moreCharactersNote(omitted: number): string {
  return `… ${omitted} more character${omitted === 1 ? '' : 's'}`;
}

/**
 * Escapes `raw` and fits it into `room` characters, `overhead` of which the caller spends on
 * wrapping and `note(N)` on the cut note. Returns the kept text and how much was left out.
 */
function fitEscaped(raw: string, room: number, mode: Mode, noteLength: number): Cut {
  const whole = escapeUpTo(raw, room, mode);
  if (whole.omitted === 0) return whole;
  // The note's length depends on N's digits; the source length bounds N from above.
  return escapeUpTo(raw, Math.max(0, room - noteLength), mode);
}

/** Escapes & < > (& first, by construction) and defuses bare @here/@channel/@everyone. */
export function escapeMrkdwn(raw: string): string {
  return escapeUpTo(raw, Number.POSITIVE_INFINITY, 'mrkdwn').text;
}

/** Whether `raw`, escaped as clip() escapes it, is at most `max` characters long (without escaping all of it). */
export function fitsWithin(raw: string, max: number): boolean {
  return escapeUpTo(raw, max, 'line').omitted === 0;
}

/**
 * Escapes `raw` and, if the result is longer than `max`, cuts it and appends a visible
 * "… N more characters" note (N counts characters of `raw`). The result never exceeds `max`.
 */
export function truncate(raw: string, max: number): string {
  const noteLength = moreCharactersNote(raw.length).length;
  if (max <= noteLength) return clip(raw, max);
  const cut = fitEscaped(raw, max, 'mrkdwn', noteLength);
  return cut.omitted === 0 ? cut.text : `${cut.text}${moreCharactersNote(cut.omitted)}`;
}

/**
 * Escapes `raw` onto one line and cuts it to `max` with a bare "…": for places too small for a
 * note, such as button labels and headers. It leaves * _ ~ and emoji codes as they are: host or
 * agent text goes through clipProse() or inlineCode() instead.
 */
export function clip(raw: string, max: number): string {
  if (max <= 0) return '';
  const cut = fitEscaped(raw, max, 'line', 1);
  return cut.omitted === 0 ? cut.text : `${cut.text}…`;
}

const FENCE = '```';

/**
 * A mrkdwn code block holding `raw`, escaped and with any ``` inside broken up, no longer than
 * `max` in total. When cut, the note sits after the block so it is not mistaken for content.
 */
export function codeBlock(raw: string, max: number): string {
  const open = `${FENCE}\n`;
  const close = `\n${FENCE}`;
  const noteLength = 1 + moreCharactersNote(raw.length).length;
  const room = max - open.length - close.length;
  if (room <= noteLength) return clip(raw, max);
  // An empty block renders as bare backticks; a space keeps it a block.
  const cut = fitEscaped(raw === '' ? ' ' : raw, room, 'code', noteLength);
  const block = `${open}${cut.text}${close}`;
  return cut.omitted === 0 ? block : `${block}\n${moreCharactersNote(cut.omitted)}`;
}

/** `raw` as inline code (one line, no backticks inside), escaped; cut with a note after it. */
export function inlineCode(raw: string, max: number): string {
  if (raw === '') return '_(empty)_';
  const noteLength = moreCharactersNote(raw.length).length;
  const room = max - 2;
  if (room <= noteLength) return clip(raw, max);
  const cut = fitEscaped(raw, room, 'inline', noteLength);
  if (cut.text === '') return clip(raw, max);
  const code = `\`${cut.text}\``;
  return cut.omitted === 0 ? code : `${code}${moreCharactersNote(cut.omitted)}`;
}

/**
 * `raw` between curly quotes, escaped, on one line; when cut, the note sits after the closing quote so text the
 * page controls cannot pass itself off as our note.
 */
export function quote(raw: string, max: number): string {
  const noteLength = moreCharactersNote(raw.length).length;
  const room = max - 2;
  if (room <= noteLength) return clip(raw, max);
  const cut = fitEscaped(raw, room, 'line', noteLength);
  const quoted = `“${cut.text}”`;
  return cut.omitted === 0 ? quoted : `${quoted}${moreCharactersNote(cut.omitted)}`;
}

/** Whether codeBlock(raw, max) shows all of `raw`. */
export function codeBlockFits(raw: string, max: number): boolean {
  const room = max - `${FENCE}\n`.length - `\n${FENCE}`.length;
  return escapeUpTo(raw === '' ? ' ' : raw, room, 'code').omitted === 0;
}

/** Whether inlineCode(raw, max) shows all of `raw`. */
export function inlineCodeFits(raw: string, max: number): boolean {
  return raw === '' || escapeUpTo(raw, max - 2, 'inline').omitted === 0;
}

/**
 * `raw` as consecutive code blocks of at most `max` characters each, at most `maxBlocks` of them,
 * escaped as codeBlock escapes: no block splits an entity or a defused mention, and their
 * contents joined (unescaped) are `raw` from its start. `omitted` counts the characters of `raw`
 * left out past the last block.
 */
export function codeBlocks(
  raw: string,
  max: number,
  maxBlocks: number,
): { blocks: string[]; omitted: number } {
  const open = `${FENCE}\n`;
  const close = `\n${FENCE}`;
  const room = max - open.length - close.length;
  const blocks: string[] = [];
  if (maxBlocks <= 0) return { blocks, omitted: countCodePoints(raw, 0) };
  // An empty block renders as bare backticks; a space keeps it a block.
  if (raw === '') return { blocks: [`${open} ${close}`], omitted: 0 };
  let out = '';
  let offset = 0;
  let prev = '';
  for (const ch of raw) {
    const piece = escapeChar(raw, ch, offset, prev, 'code');
    if (out.length + piece.length > room) {
      blocks.push(`${open}${out}${close}`);
      out = '';
      if (blocks.length >= maxBlocks) return { blocks, omitted: countCodePoints(raw, offset) };
    }
    out += piece;
    offset += ch.length;
    prev = ch;
  }
  if (out !== '') blocks.push(`${open}${out}${close}`);
  return { blocks, omitted: 0 };
}
