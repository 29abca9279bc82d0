import type { IntakePart } from '../../../domain/record.js';
import { argvSecrets } from '../../../secrets/argvSecrets.js';
import { jsonEscapedLength } from '../../../util/jsonLength.js';
import { fitText } from './fitText.js';
import { MAX_JSON_DEPTH, MAX_JSON_KEYS, MAX_SUBJECT_STRING_CHARS } from './limits.js';

/** What taking in one part of a request did. */
export type PartReport = IntakePart;

/** Takes a known field its own way; returns undefined to leave the field out. */
export type FieldTaker = (value: unknown) => unknown;

/**
 * Takes in one part of a host payload within a character budget: every string masked and cut to
 * what is left, values of unknown shape bounded in depth and keys, and a tally of what was done.
 */
export class PartIntake {
  maskedSecrets = 0;
  truncated = false;
  stagesOmitted = 0;
  /** Choices left out because their choiceId named another choice too (takeChoices). */
  choicesWithheld = 0;

  constructor(private left: number) {}

  report(): PartReport {
    const report: PartReport = { maskedSecrets: this.maskedSecrets, truncated: this.truncated };
    if (this.stagesOmitted > 0) report.stagesOmitted = this.stagesOmitted;
    if (this.choicesWithheld > 0) report.choicesWithheld = this.choicesWithheld;
    return report;
  }

  /** A string the agent or host wrote, masked and cut to `maxChars` and to what is left. */
  text(raw: string, maxChars: number): string {
    const fitted = fitText(raw, Math.max(0, Math.min(maxChars, this.left - 2)));
    this.left -= jsonEscapedLength(fitted.text) + 2;
    this.maskedSecrets += fitted.maskedSecrets;
    if (fitted.truncated) this.truncated = true;
    return fitted.text;
  }

  /**
   * Strings such as argv: each one taken as text, a word that is secret for where it stands
   * (after `--password`) masked whole; those past the budget are left out.
   */
  strings(values: readonly string[], maxEach: number): string[] {
    const secret = argvSecrets(values);
    const out: string[] = [];
    for (const [i, value] of values.entries()) {
      if (this.left <= 0) {
        this.truncated = true;
        break;
      }
      const masked = secret[i];
      out.push(masked === undefined ? this.text(value, maxEach) : this.maskedWord(masked, maxEach));
      this.left -= 1;
    }
    return out;
  }

  /** A word argvSecrets masked: taken as text, and counted as one secret. */
  private maskedWord(masked: string, maxChars: number): string {
    this.maskedSecrets += 1;
    return this.text(masked, maxChars);
  }

  /** An identifier or flag the bot must keep as sent: only counted. */
  verbatim<T>(value: T): T {
    this.left -= jsonLength(value);
    return value;
  }

  /**
   * An object of a known shape. Keys in `fields` are always kept, taken their own way (in the
   * order given, so the first ones are never starved); any other key is data of unknown shape.
   */
  shaped(value: Record<string, unknown>, fields: Record<string, FieldTaker>): Record<string, unknown> {
    const known: Record<string, unknown> = Object.create(null);
    for (const key of Object.keys(fields)) {
      const inner = value[key];
      if (inner === undefined || !Object.hasOwn(value, key)) continue;
      this.left -= key.length + 4;
      known[key] = fields[key]!(inner);
    }
    const out: Record<string, unknown> = {};
    let extra = 0;
    for (const key of Object.keys(value)) {
      if (Object.hasOwn(fields, key)) {
        if (key in known) setOwn(out, key, known[key]);
      } else if (this.left <= 0 || extra >= MAX_JSON_KEYS) {
        this.truncated = true;
      } else {
        extra += 1;
        this.putUnknown(out, key, value[key], 1);
      }
    }
    return out;
  }

  /** A value of unknown shape (the host's JSON), bounded in size, depth and keys. */
  json(value: unknown, depth = 0): unknown {
    if (typeof value === 'string') return this.text(value, MAX_SUBJECT_STRING_CHARS);
    if (typeof value === 'number' || typeof value === 'boolean' || value === null)
      return this.verbatim(value);
    if (typeof value !== 'object') return undefined;
    if (depth >= MAX_JSON_DEPTH) {
      this.truncated = true;
      return null;
    }
    if (Array.isArray(value)) {
      // An array of strings may be an argv: its words are masked for where they stand too.
      const secret = argvSecrets(value);
      const out: unknown[] = [];
      for (const [i, item] of value.entries()) {
        if (this.left <= 0) {
          this.truncated = true;
          break;
        }
        const masked = secret[i];
        out.push(
          masked === undefined
            ? (this.json(item, depth + 1) ?? null)
            : this.maskedWord(masked, MAX_SUBJECT_STRING_CHARS),
        );
        this.left -= 1;
      }
      return out;
    }
    const out: Record<string, unknown> = {};
    let keys = 0;
    for (const [key, inner] of Object.entries(value)) {
      if (this.left <= 0 || keys >= MAX_JSON_KEYS) {
        this.truncated = true;
        break;
      }
      keys += 1;
      this.putUnknown(out, key, inner, depth + 1);
    }
    return out;
  }

  private putUnknown(out: Record<string, unknown>, rawKey: string, value: unknown, depth: number): void {
    // Keys show on cards too (a subject of unknown kind is shown as JSON): they are text like any.
    const taken = this.text(rawKey, MAX_SUBJECT_STRING_CHARS);
    let key = taken;
    for (let n = 2; Object.hasOwn(out, key); n++) key = `${taken} (${n})`;
    this.left -= 2;
    const inner = this.json(value, depth);
    if (inner !== undefined) setOwn(out, key, inner);
  }
}

/** Characters `value` takes in JSON; only small identifiers and flags come here. */
function jsonLength(value: unknown): number {
  if (typeof value === 'string') return jsonEscapedLength(value) + 2;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value).length;
  return JSON.stringify(value)?.length ?? 0;
}

/** Sets a property even when its name is `__proto__` (JSON.parse makes such own properties). */
function setOwn(target: Record<string, unknown>, key: string, value: unknown): void {
  // defineProperty only where it is needed: it leaves the object slower to build and to encode.
  if (key === '__proto__') {
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    target[key] = value;
  }
}
