import { describe, expect, it } from 'vitest';
import { FenceBook } from '../../../src/replicas/fenceBook.js';

describe('FenceBook', () => {
  it('gives the token only while the lease is valid on its clock, and none once dropped', () => {
    let now = 0;
    const fences = new FenceBook(() => now);
    expect(fences.holds('h1')).toBe(false);
    expect(fences.fenceOf('h1')).toBeUndefined();
    fences.hold('h1', 7, 1_000);
    expect(fences.holds('h1')).toBe(true);
    expect(fences.fenceOf('h1')).toBe(7);
    expect(fences.fenceOf('h2')).toBeUndefined();
    now = 1_000;
    expect(fences.holds('h1')).toBe(false);
    expect(fences.fenceOf('h1')).toBeUndefined();
    fences.hold('h1', 7, 2_000);
    expect(fences.fenceOf('h1')).toBe(7);
    fences.drop('h1');
    expect(fences.holds('h1')).toBe(false);
    expect(fences.fenceOf('h1')).toBeUndefined();
  });
});
