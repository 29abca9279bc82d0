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
