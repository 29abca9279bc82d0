import { programFlagSecrets } from './commandLineRules.js';
import { SECRET_RULES } from './secretRules.js';
import { isReadingEnd, literalSpan, quoteLeftOpen, readShell } from './shellReading.js';

// One pass per string: every rule is an alternative of one expression, so a text is scanned
// once whatever the number of rules. Matches are rare, so their bookkeeping (group indices, the
// label of a key's value) costs nothing in the common case. Flags that are secret only after a
// program's name (`mysql -p…`, `curl -u …`) need what came before them in the command: a second
// pass reads those, only in a text that names such a program.

export interface Masked {
  text: string;
  /** How many secrets were replaced. */
  count: number;
}

/** Masked text with where each marker sits in it, so a cut can keep markers whole. */
export interface MaskedSpans {
  text: string;
  /** [start, end) of every marker in `text`, in order. */
  markers: Array<[number, number]>;
}

/** What replaces a secret: not reversible, and plainly the bot's own words. */
export function maskMarker(label: string): string {
  return `[masked ${label}]`;
}

// Named groups carry the rule (`rule<i>`) and the part to mask (`secret…`); `d` gives their offsets.
const COMBINED = new RegExp(SECRET_RULES.map((rule, i) => `(?<rule${i}>${rule.source})`).join('|'), 'gd');

/** Rules that match a whole token, to name the value of a `key=value` match by its shape. */
const WHOLE_TOKEN_RULES = SECRET_RULES.filter((rule) => !rule.source.includes('(?<secret')).map((rule) => ({
  label: rule.label,
  pattern: new RegExp(`^(?:${rule.source})$`),
}));

function labelOfValue(value: string, fallback: string): string {
  return WHOLE_TOKEN_RULES.find((rule) => rule.pattern.test(value))?.label ?? fallback;
}

/**
 * `$TOKEN`, `${API_KEY}` (a reference to a secret, not the secret), JSON's `null`/`true`/`false`
 * and placeholders such as `xoxb-…`, `sk-...` or `***`.
 */
const NOT_A_SECRET = /^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|null|true|false|\*+|.*(?:…|\.\.\.))$/;

/**
 * The marker for a value that is secret by where it stands (`--token X`, `password=X`), named by
 * its shape; undefined when the value only refers to a secret. Whether the value holds code
 * (`API_TOKEN="$(curl … | sh)"`) is for the caller to tell: in a text the shell reading below
 * does (inside single quotes `$(` is a secret's characters), an argv word has none.
 */
export function valueMarker(value: string, label = 'secret-value'): string | undefined {
  if (NOT_A_SECRET.test(value)) return undefined;
  return maskMarker(labelOfValue(value, label));
}

interface Replacement {
  start: number;
  end: number;
  marker: string;
  /**
   * Whether the span is a value read where it stands (`password=X`, a flag's value), which may
   * misread the shell's quotes; a token's shape (`ghp_…`, a private key's block) holds none.
   */
  value?: true;
  /** Shown right after the marker: the quote its value left open. */
  after?: string;
}

function replacementFor(match: RegExpExecArray): Replacement | undefined {
  const groups = match.groups!;
  const rule = SECRET_RULES.find((_, i) => groups[`rule${i}`] !== undefined)!;
  const secretGroup = Object.keys(groups).find(
    (name) => name.startsWith('secret') && groups[name] !== undefined,
  );
  if (secretGroup === undefined) {
    return { start: match.index, end: match.index + match[0].length, marker: maskMarker(rule.label) };
  }
  const marker = valueMarker(groups[secretGroup]!, rule.label);
  if (marker === undefined) return undefined;
  const [start, end] = match.indices!.groups![secretGroup]!;
  return { start, end, marker, value: true };
}

function ruleReplacements(text: string): Replacement[] {
  const found: Replacement[] = [];
  COMBINED.lastIndex = 0;
  for (let match = COMBINED.exec(text); match !== null; match = COMBINED.exec(text)) {
    const replacement = replacementFor(match);
    if (replacement !== undefined) found.push(replacement);
  }
  return found;
}

function programFlagReplacements(text: string): Replacement[] {
  const found: Replacement[] = [];
  for (const { start, end, value } of programFlagSecrets(text)) {
    const marker = valueMarker(value);
    if (marker !== undefined) found.push({ start, end, marker, value: true });
  }
  return found;
}

/**
 * Both passes' replacements in order. Two that overlap become one, over both spans, with the
 * marker of the one that starts first: nothing either would mask is left.
 */
function merged(first: Replacement[], second: Replacement[]): Replacement[] {
  if (second.length === 0) return first;
  const all = [...first, ...second].sort((a, b) => a.start - b.start);
  const kept: Replacement[] = [];
  for (const replacement of all) {
    const last = kept.at(-1);
    if (last !== undefined && replacement.start < last.end) last.end = Math.max(last.end, replacement.end);
    else kept.push({ ...replacement });
  }
  return kept;
}

/** A marker already in the text: `[masked secret-value]` holds a space, so word readers split it. */
const MARKER = /\[masked [a-z-]{1,40}\]/g;

/**
 * `replacements` without what falls inside a marker already in `text`: masking is idempotent. A
 * rule that reads words may take part of a marker for a word (`secret-value]` after vault's
 * `password=[masked`); a replacement that starts or ends inside a marker is cut back to its edge,
 * and dropped when nothing is left. Both lists are in order and apart, so one walk does it; only
 * a text with replacements is searched for markers.
 */
function outsideMarkers(text: string, replacements: Replacement[]): Replacement[] {
  if (replacements.length === 0) return replacements;
  const markers = [...text.matchAll(MARKER)].map((match): [number, number] => [
    match.index,
    match.index + match[0].length,
  ]);
  if (markers.length === 0) return replacements;
  const kept: Replacement[] = [];
  // The first marker that does not end before the replacement starts.
  let next = 0;
  for (const replacement of replacements) {
    let { start, end } = replacement;
    while (next < markers.length && markers[next]![1] <= start) next++;
    let i = next;
    // Past the marker the start is in, and past any marker right after it.
    while (i < markers.length && markers[i]![0] <= start && start < markers[i]![1]) start = markers[i++]![1];
    // Back before the marker the end is in, and before any marker right before it.
    let j = i;
    while (j < markers.length && markers[j]![1] < end) j++;
    while (j >= i && j < markers.length && markers[j]![0] < end && end <= markers[j]![1])
      end = markers[j--]![0];
    if (start < end) kept.push({ ...replacement, start, end });
  }
  return kept;
}

/** Whether `text` around [start, end) is a pair of quotes the span is the inside of. */
function quotedWhole(text: string, start: number, end: number): boolean {
  const before = text[start - 1];
  if (before === "'") return text[end] === "'";
  return before === '"' && (text[end] === '"' || (text[start - 2] === '\\' && text.startsWith('\\"', end)));
}

/**
 * `replacements` narrowed so that no marker hides shell structure (shellReading.ts): a value's
 * span is cut to the literal the shell reads, and dropped when none is left; a quote the value's
 * own text leaves open follows its marker when more follows on its line. Only a text with a value
 * to mask is read.
 */
function keepingStructure(text: string, replacements: Replacement[]): Replacement[] {
  if (!replacements.some((replacement) => replacement.value)) return replacements;
  const reading = readShell(text);
  const kept: Replacement[] = [];
  for (const replacement of replacements) {
    if (!replacement.value) {
      kept.push(replacement);
      continue;
    }
    const span = literalSpan(text, reading, replacement.start, replacement.end);
    if (span === undefined) continue;
    const { start, end } = span;
    // Nothing read after the value: no quote is needed to show it is read as quoted. After a
    // line break there is: the quote runs on over it, and hidden, it would read as closed.
    const open =
      span.quotes ??
      (quotedWhole(text, start, end) || isReadingEnd(text, reading, end)
        ? ''
        : quoteLeftOpen(text.slice(start, end)));
    kept.push({ start, end, marker: replacement.marker, ...(open === '' ? {} : { after: open }) });
  }
  return kept;
}

/** maskSecrets, also saying where the markers are. */
export function maskSecretSpans(text: string): MaskedSpans {
  const replacements = keepingStructure(
    text,
    outsideMarkers(text, merged(ruleReplacements(text), programFlagReplacements(text))),
  );
  if (replacements.length === 0) return { text, markers: [] };
  const markers: Array<[number, number]> = [];
  let out = '';
  let from = 0;
  for (const replacement of replacements) {
    out += text.slice(from, replacement.start);
    markers.push([out.length, out.length + replacement.marker.length]);
    out += replacement.marker + (replacement.after ?? '');
    from = replacement.end;
  }
  return { text: out + text.slice(from), markers };
}

/** Replaces every secret shape in `text` by a marker such as `[masked slack-token]`. */
export function maskSecrets(text: string): Masked {
  const { text: masked, markers } = maskSecretSpans(text);
  return { text: masked, count: markers.length };
}
