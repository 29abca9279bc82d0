import { argsParts, subjectParts } from '../../../domain/fullParts.js';
import { FULL_TEXT_FIELDS, type FullPart, type FullText } from '../../../domain/fullText.js';
import type { ApprovalRecord, IntakePart } from '../../../domain/record.js';
import type { ApprovalSubject } from '../../../msp/protocol.js';
import { argvSecrets } from '../../../secrets/argvSecrets.js';
import { type MaskedPrefix, maskPrefix } from '../../../secrets/maskPrefix.js';
import { prettyArgs } from '../../../util/toJson.js';
import { MAX_FULL_TEXT_CHARS } from './limits.js';

// The text intake cut, kept whole (within what a modal shows) for "View full". Masked the way
// intake masks, one string at a time, so it never shows what the record would have masked.

/** Deeper than any subject a host sends; what lies below is left out. */
const MAX_DEPTH = 32;

/** Every string of a value masked on its own, as intake masks it; what is cut is counted. */
function maskStrings(value: unknown, tally: { omitted: number }, depth = 0): unknown {
  if (typeof value === 'string') {
    const masked = maskPrefix(value, MAX_FULL_TEXT_CHARS);
    tally.omitted += masked.left;
    return masked.text;
  }
  if (typeof value !== 'object' || value === null || depth >= MAX_DEPTH) {
    return typeof value === 'object' ? null : value;
  }
  if (Array.isArray(value)) {
    // As intake takes an argv: a word secret for where it stands (after `--password`) goes whole.
    const secret = argvSecrets(value);
    return value.map((item, i) => maskStrings(secret[i] ?? item, tally, depth + 1));
  }
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) {
    // Keys show too (a subject of unknown kind is shown as JSON); their length is not the text's.
    Object.defineProperty(out, maskPrefix(key, MAX_FULL_TEXT_CHARS).text, {
      value: maskStrings(inner, tally, depth + 1),
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/** The parts in order, together at most MAX_FULL_TEXT_CHARS long; the rest counted. */
function bounded(parts: readonly FullPart[], omitted: number): FullText {
  let left = MAX_FULL_TEXT_CHARS;
  const kept: FullPart[] = [];
  for (const part of parts) {
    let keep = Math.min(part.text.length, left);
    // Never half a surrogate pair.
    if (keep < part.text.length && keep > 0 && /[\uD800-\uDBFF]/.test(part.text[keep - 1]!)) keep -= 1;
    if (keep > 0 || part.text === '') kept.push({ label: part.label, text: part.text.slice(0, keep) });
    omitted += part.text.length - keep;
    left -= keep;
  }
  return { parts: kept, omitted };
}

/** The subject's full text: the command, every stage, the path… as the modal shows them. */
export function takeFullSubject(subject: ApprovalSubject): FullText {
  const tally = { omitted: 0 };
  // The kind chooses the parts: masked as intake masks it (a kind this bot knows stays as sent).
  const masked = maskStrings(subject, tally) as ApprovalSubject;
  return bounded(subjectParts(masked), tally.omitted);
}

/**
 * The arguments' full text, pretty-printed when they are whole JSON. `masked`: `rawArgs` already
 * masked to MAX_FULL_TEXT_CHARS (takeRequest's maskedArgs), so that it is not masked twice.
 */
export function takeFullArgs(
  rawArgs: string,
  masked: MaskedPrefix = maskPrefix(rawArgs, MAX_FULL_TEXT_CHARS),
): FullText {
  const text = masked.cut ? masked.text : prettyArgs(masked.text);
  return bounded(argsParts(text), masked.left);
}

function wasCut(part: IntakePart | undefined): boolean {
  return part !== undefined && (part.truncated || (part.stagesOmitted ?? 0) > 0);
}

/**
 * What to keep beside a record (FULL_TEXT_FIELDS → JSON) for the parts of `raw` that intake cut
 * in it; undefined when it cut nothing there, as for every ordinary request. `maskedArgs`: the
 * arguments as intake masked them already for their hash (takeRequest), used instead of masking
 * them again.
 */
export function fullTextFields(
  record: Pick<ApprovalRecord, 'intake'>,
  raw: { subject?: ApprovalSubject; rawArgs?: string; maskedArgs?: MaskedPrefix },
): Record<string, string> | undefined {
  const parts = record.intake?.parts;
  if (!record.intake?.truncated || !parts) return undefined;
  const fields: Record<string, string> = {};
  if (raw.subject !== undefined && wasCut(parts.subject))
    fields[FULL_TEXT_FIELDS.subject] = JSON.stringify(takeFullSubject(raw.subject));
  if (raw.rawArgs !== undefined && wasCut(parts.rawArgs))
    fields[FULL_TEXT_FIELDS.rawArgs] = JSON.stringify(takeFullArgs(raw.rawArgs, raw.maskedArgs));
  return Object.keys(fields).length > 0 ? fields : undefined;
}
