// Characters a reader cannot see, or that reorder what is drawn around them (Trojan Source,
// CVE-2021-42574): text holding them can read otherwise than it is.

/**
 * Controls (C0 but \n and \t, DEL, C1), zero-width characters and joiners, bidi marks,
 * embeddings, overrides and isolates, the word joiner and invisible operators, the line and
 * paragraph separators, and the byte order mark.
 */
export const HIDDEN_CHARACTER =
  // biome-ignore lint/suspicious/noControlCharactersInRegex: these controls are what it finds.
  /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u061C\u200B-\u200F\u2028-\u202E\u2060-\u2064\u2066-\u2069\uFEFF]/;

/** Whether `text` holds a hidden character, or a tab: either way it cannot be typed as shown. */
export function hasHiddenCharacters(text: string): boolean {
  return HIDDEN_CHARACTER.test(text) || text.includes('\t');
}
