import { type Masked, maskSecretSpans } from './maskSecrets.js';

// Masking a multi-megabyte string only to keep its first kilobytes would let an agent spend our
// CPU: only a window a little longer than what is kept is scanned. A secret that starts before
// the cut is inside the window whole (secrets are far shorter than the look-ahead); the very end
// of a window may hold the start of a secret too short there to be recognised, so it is never
// kept.

/** Scanned past the kept length. */
const LOOKAHEAD_CHARS = 8 * 1024;
/** Never kept from the end of a window cut out of a longer text. */
const WINDOW_GUARD_CHARS = 4 * 1024;

export interface MaskedPrefix extends Masked {
  /** Whether anything of `text` was left out. */
  cut: boolean;
  /**
   * Characters left out: of the masked text inside the scanned window, and of the raw text past
   * it (not scanned, so not masked, but about as long).
   */
  left: number;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/**
 * `text` with its secrets masked, cut to at most `maxChars` characters. A cut never splits a
 * marker or a surrogate pair; `count` counts the markers kept.
 */
export function maskPrefix(text: string, maxChars: number): MaskedPrefix {
  const windowed = text.length > maxChars + LOOKAHEAD_CHARS;
  const { text: masked, markers } = maskSecretSpans(
    windowed ? text.slice(0, maxChars + LOOKAHEAD_CHARS) : text,
  );
  let keep = Math.max(0, Math.min(maxChars, windowed ? masked.length - WINDOW_GUARD_CHARS : masked.length));
  if (!windowed && keep === masked.length)
    return { text: masked, count: markers.length, cut: false, left: 0 };
  const split = markers.find(([start, end]) => start < keep && keep < end);
  if (split) keep = split[0];
  if (keep > 0 && isHighSurrogate(masked.charCodeAt(keep - 1))) keep -= 1;
  const count = markers.filter(([, end]) => end <= keep).length;
  const unscanned = windowed ? text.length - (maxChars + LOOKAHEAD_CHARS) : 0;
  return { text: masked.slice(0, keep), count, cut: true, left: masked.length - keep + unscanned };
}
