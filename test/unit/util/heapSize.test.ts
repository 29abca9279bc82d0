import { describe, expect, it } from 'vitest';
import { heapSizeUpTo } from '../../../src/util/heapSize.js';

describe('heapSizeUpTo', () => {
  it('counts two bytes a character of every string, keys included, and a slot a value', () => {
    const small = heapSizeUpTo({ a: 'x' }, Number.POSITIVE_INFINITY);
    const big = heapSizeUpTo({ a: 'x'.repeat(1001) }, Number.POSITIVE_INFINITY);
    expect(big - small).toBe(2000);
    expect(heapSizeUpTo({ ['k'.repeat(500)]: 1 }, Number.POSITIVE_INFINITY)).toBeGreaterThan(1000);
    expect(heapSizeUpTo(Array(1000).fill(0), Number.POSITIVE_INFINITY)).toBeGreaterThan(16_000);
  });

  it('gives up past its limit with a number above it', () => {
    expect(heapSizeUpTo(Array(1_000_000).fill('abc'), 1000)).toBeGreaterThan(1000);
    expect(heapSizeUpTo({ a: 'x'.repeat(600) }, 1000)).toBeGreaterThan(1000);
  });

  it('weighs nesting deeper than the call stack', () => {
    const deep = JSON.parse(`${'['.repeat(200_000)}${']'.repeat(200_000)}`);
    expect(heapSizeUpTo(deep, Number.POSITIVE_INFINITY)).toBeGreaterThanOrEqual(200_000 * 16);
  });
});
