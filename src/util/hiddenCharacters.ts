// Characters a reader cannot see, or that reorder what is drawn around them (Trojan Source,
// CVE-2021-42574): text holding them can read otherwise than it is.

/**
 * Controls (C0 but \n and \t, DEL, C1), every format character (bidi marks, embeddings,
 * overrides and isolates, zero-width characters and joiners, the soft hyphen, invisible
 * operators, interlinear annotations, tags), every other character Unicode says to draw as
 * nothing (Default_Ignorable_Code_Point: the Hangul fillers, Mongolian and other variation
 * selectors, the combining grapheme joiner, the tag block that "ASCII smuggling" hides text in),
 * the line and paragraph separators, and a lone surrogate half (no character at all).
 *
 * Unicode's own properties, not a list of ranges: a list kept by hand had missed the soft hyphen,
 * the tags and the fillers. A variation selector after an emoji is marked too, as the zero-width
 * joiner of an emoji sequence already was: agent text is read for what runs, not for its look.
 */
export const HIDDEN_CHARACTER =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: these controls are what it finds.
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u2028\u2029\p{Cf}\p{Default_Ignorable_Code_Point}\p{Cs}]/u;

/** Whether `text` holds a hidden character, or a tab: either way it cannot be typed as shown. */
export function hasHiddenCharacters(text: string): boolean {
  return HIDDEN_CHARACTER.test(text) || text.includes('\t');
}

/**
 * `⟨U+202E⟩`: how a hidden character is shown, on cards and wherever else agent text is read.
 * Brackets no shell, path or markup uses, so the marker cannot pass for part of the command.
 */
export function hiddenMarker(ch: string): string {
  return `⟨U+${(ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0')}⟩`;
}

const HIDDEN_CHARACTERS = new RegExp(HIDDEN_CHARACTER.source, 'gu');

/**
 * `text` with each hidden character shown as its marker, for plain text read outside Slack (a
 * PagerDuty page): nothing else in it is changed.
 */
export function markHidden(text: string): string {
  return text.replace(HIDDEN_CHARACTERS, hiddenMarker);
}
