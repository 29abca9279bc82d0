import { describe, expect, it } from 'vitest';
import { jsonFits } from '../../../src/util/jsonLength.js';

describe('jsonFits', () => {
  it('counts exactly what JSON.stringify writes', () => {
    for (const value of [
      [],
      {},
      [1, 'a', null, [{}]],
      { a: 1, b: 'x\n"', c: [1, 2], d: {}, e: undefined },
      [undefined, 1],
      'q"\u0001\ud800',
      12.5,
      true,
      null,
    ]) {
      const length = JSON.stringify(value).length;
      expect(jsonFits(value, length)).toBe(true);
      expect(jsonFits(value, length - 1)).toBe(false);
    }
  });

  it('gives up early on a value of any size or depth', () => {
    let deep: unknown = [];
    for (let i = 0; i < 1_000_000; i++) deep = [deep];
    expect(jsonFits(deep, 1024)).toBe(false);
    const wide = Object.fromEntries(Array.from({ length: 1_000_000 }, (_, i) => [`k${i}`, i]));
    expect(jsonFits(wide, 1024)).toBe(false);
    expect(jsonFits('x'.repeat(10_000_000), 1024)).toBe(false);
  });
});
