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
