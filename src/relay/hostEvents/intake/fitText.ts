import { maskPrefix } from '../../../secrets/maskPrefix.js';
import { jsonEscapedLength } from '../../../util/jsonLength.js';

export interface FittedText {
  text: string;
  maskedSecrets: number;
  truncated: boolean;
}

/**
 * Says where stored text was cut. Plain characters only, so it reads the same after the cards'
 * escaping, and unlike the cards' own "… N more characters" note it names the whole length.
 */
export function cutNote(totalChars: number): string {
  return ` [… cut by Countersign: ${totalChars} characters in all]`;
}

/**
 * `raw` with its secrets masked, cut (with a note) so that its JSON encoding takes at most
 * `room` characters.
 */
export function fitText(raw: string, room: number): FittedText {
  const first = maskPrefix(raw, room);
  // The common case: short text that fits as it is.
  if (!first.cut && jsonEscapedLength(first.text) <= room) {
    return { text: first.text, maskedSecrets: first.count, truncated: false };
  }
  const note = cutNote(raw.length);
  let limit = room;
  for (;;) {
    const masked = limit === room ? first : maskPrefix(raw, limit);
    const text = masked.cut ? `${masked.text}${note}` : masked.text;
    const cost = jsonEscapedLength(text);
    if (cost <= room) return { text, maskedSecrets: masked.count, truncated: masked.cut };
    if (limit === 0) return { text: '', maskedSecrets: 0, truncated: raw !== '' };
    // Escapes and the note overshot: shrink in proportion, which settles in a few rounds.
    limit = Math.max(0, Math.min(limit - 1, Math.floor((limit * (room - note.length)) / cost)));
  }
}
