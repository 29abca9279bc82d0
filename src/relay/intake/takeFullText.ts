import { argsParts, subjectParts } from '../../cards/fullParts.js';
import { prettyArgs } from '../../cards/toJson.js';
import type { ApprovalSubject } from '../../msp/protocol.js';
import { maskPrefix } from '../../secrets/maskPrefix.js';
import { FULL_TEXT_FIELDS, type FullText } from '../../store/fullText.js';
import type { ApprovalRecord, IntakePart } from '../../store/record.js';
import { MAX_FULL_TEXT_CHARS } from './limits.js';

// The text intake cut, kept whole (within what a modal shows) for "View full". Masked the way
// intake masks, one string at a time, so it never shows what the record would have masked.

/** Deeper than any subject a host sends; what lies below is left out and counted. */
const MAX_DEPTH = 32;

class FullTaker {
  omitted = 0;

  constructor(private left: number) {}

  text(raw: string): string {
    const masked = maskPrefix(raw, Math.max(0, this.left));
    this.left -= masked.text.length;
    this.omitted += masked.left;
    return masked.text;
  }

  /** Every string of a value of any shape, masked within the budget. */
  value(value: unknown, depth = 0): unknown {
    if (typeof value === 'string') return this.text(value);
    if (typeof value !== 'object' || value === null) return value;
    if (depth >= MAX_DEPTH) {
      this.omitted += 1;
      return null;
    }
    if (Array.isArray(value)) return value.map((item) => this.value(item, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      Object.defineProperty(out, this.text(key), {
        value: this.value(inner, depth + 1),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
}

/** The subject's full text: the command, every stage, the path… as the modal shows them. */
export function takeFullSubject(subject: ApprovalSubject): FullText {
  const taker = new FullTaker(MAX_FULL_TEXT_CHARS);
  // The kind chooses the parts: kept as sent, as intake keeps it.
  const masked = { ...(taker.value(subject) as ApprovalSubject), kind: subject.kind };
  return { parts: subjectParts(masked), omitted: taker.omitted };
}

/** The arguments' full text, pretty-printed when they are whole JSON. */
export function takeFullArgs(rawArgs: string): FullText {
  const masked = maskPrefix(rawArgs, MAX_FULL_TEXT_CHARS);
  const text = masked.cut ? masked.text : prettyArgs(masked.text);
  return { parts: argsParts(text), omitted: masked.left };
}

function wasCut(part: IntakePart | undefined): boolean {
  return part !== undefined && (part.truncated || (part.stagesOmitted ?? 0) > 0);
}

/**
 * What to keep beside a record (FULL_TEXT_FIELDS → JSON) for the parts of `raw` that intake cut
 * in it; undefined when it cut nothing there, as for every ordinary request.
 */
export function fullTextFields(
  record: Pick<ApprovalRecord, 'intake'>,
  raw: { subject?: ApprovalSubject; rawArgs?: string },
): Record<string, string> | undefined {
  const parts = record.intake?.parts;
  if (!record.intake?.truncated || !parts) return undefined;
  const fields: Record<string, string> = {};
  if (raw.subject !== undefined && wasCut(parts.subject))
    fields[FULL_TEXT_FIELDS.subject] = JSON.stringify(takeFullSubject(raw.subject));
  if (raw.rawArgs !== undefined && wasCut(parts.rawArgs))
    fields[FULL_TEXT_FIELDS.rawArgs] = JSON.stringify(takeFullArgs(raw.rawArgs));
  return Object.keys(fields).length > 0 ? fields : undefined;
}
