import { describe, expect, it } from 'vitest';
import { Late } from '../../../src/wiring/late.js';

describe('Late', () => {
  it('hands out the part once set, refuses to be read before or set twice', () => {
    const late = new Late<{ n: number }>('the part');
    expect(() => late.get()).toThrow('the part is used before it is built');
    const part = { n: 1 };
    expect(late.set(part)).toBe(part);
    expect(late.get()).toBe(part);
    expect(() => late.set({ n: 2 })).toThrow('the part is wired twice');
  });
});
