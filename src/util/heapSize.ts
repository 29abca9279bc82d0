/**
 * What a value counts for in slots: an object's header, a property, an array item, a number. V8
 * takes 8 to 16 bytes for each on a 64-bit heap; 16 is the safe side.
 */
const SLOT_BYTES = 16;

/**
 * An upper estimate of the heap bytes a parsed JSON value holds, given up past `limit` (the
 * result is then some number above it): a value of any size costs at most about limit / 16
 * steps. Strings count two bytes per UTF-16 unit, the most V8 keeps (one for Latin-1 text), read
 * from their length, not scanned; every object, member, item and primitive counts a slot. Not
 * JSON.stringify, which would copy the whole value to weigh it.
 *
 * With a stack of its own, not recursion: JSON.parse takes nesting deeper than the call stack.
 */
export function heapSizeUpTo(value: unknown, limit: number): number {
  let size = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && size <= limit) {
    const next = stack.pop();
    size += SLOT_BYTES;
    if (typeof next === 'string') {
      size += 2 * next.length;
    } else if (Array.isArray(next)) {
      for (const item of next) {
        stack.push(item);
        // Each item left on the stack counts a slot at least.
        if (size + stack.length * SLOT_BYTES > limit) return limit + 1;
      }
    } else if (typeof next === 'object' && next !== null) {
      // for…in, not Object.entries: an object of a million keys is left once past the limit.
      for (const key in next) {
        if (!Object.hasOwn(next, key)) continue;
        size += SLOT_BYTES + 2 * key.length;
        stack.push((next as Record<string, unknown>)[key]);
        if (size + stack.length * SLOT_BYTES > limit) return limit + 1;
      }
    }
  }
  return size;
}
