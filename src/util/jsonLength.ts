/** Characters `JSON.stringify(text)` takes, without its quotes, counted without building it. */
export function jsonEscapedLength(text: string): number {
  let length = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 || c === 0x5c || c === 0x08 || c === 0x0c || c === 0x0a || c === 0x0d || c === 0x09) {
      length += 1;
    } else if (c < 0x20) {
      length += 5;
    } else if (c >= 0xd800 && c <= 0xdfff) {
      // A lone surrogate is written as \uXXXX; a pair stays as it is.
      const pairsForward = c <= 0xdbff && i + 1 < text.length && isLow(text.charCodeAt(i + 1));
      if (pairsForward) i += 1;
      else length += 5;
    }
  }
  return length;
}

function isLow(c: number): boolean {
  return c >= 0xdc00 && c <= 0xdfff;
}

/**
 * Whether `JSON.stringify(value)` takes at most `budget` characters, counted without building it
 * and given up as soon as it would not: a value of any size or depth costs at most `budget` steps.
 */
export function jsonFits(value: unknown, budget: number): boolean {
  return jsonLeft(value, budget) >= 0;
}

/** `budget` less what `value` takes in JSON; negative (not exact) once it does not fit. */
function jsonLeft(value: unknown, budget: number): number {
  if (budget < 0) return budget;
  if (typeof value === 'string') {
    // A string longer than the budget cannot fit: not scanned.
    return value.length > budget ? -1 : budget - jsonEscapedLength(value) - 2;
  }
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) {
    return budget - String(value).length;
  }
  if (Array.isArray(value)) {
    // The brackets and a comma between two items; an item JSON leaves out is written null.
    let left = budget - 1;
    for (const item of value) {
      left = jsonLeft(item === undefined ? null : item, left - 1);
      if (left < 0) return left;
    }
    return left - (value.length === 0 ? 1 : 0);
  }
  if (typeof value === 'object') {
    // The braces, and for each member its colon and the comma or brace before it.
    let left = budget - 1;
    let members = 0;
    // for…in, not Object.entries: an object of a million keys is left after the first few.
    for (const key in value) {
      const inner: unknown = (value as Record<string, unknown>)[key];
      if (!Object.hasOwn(value, key) || inner === undefined) continue;
      members += 1;
      left = jsonLeft(inner, jsonLeft(key, left - 2));
      if (left < 0) return left;
    }
    return left - (members === 0 ? 1 : 0);
  }
  // undefined, functions, symbols: JSON leaves them out.
  return budget;
}
