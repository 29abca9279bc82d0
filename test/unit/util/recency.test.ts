import { describe, expect, it } from 'vitest';
import { evictOldest, RecentMap, RecentSet } from '../../../src/util/recency.js';

describe('recency', () => {
  it('RecentSet keeps the keys added last, telling of each one it forgot', () => {
    const forgotten: number[] = [];
    const set = new RecentSet<number>(3, (key) => forgotten.push(key));
    for (let i = 0; i < 10_000; i++) set.add(i);
    expect(set.size).toBe(3);
    expect([...set]).toEqual([9_997, 9_998, 9_999]);
    expect(forgotten).toHaveLength(9_997);
  });

  it('counts a key added again as the newest', () => {
    const set = new RecentSet<string>(2);
    set.add('a');
    set.add('b');
    set.add('a');
    set.add('c');
    expect([...set]).toEqual(['a', 'c']);
  });

  it('RecentMap hands the forgotten value over, and evictOldest trims any Map or Set', () => {
    const gone: Array<[string, number]> = [];
    const map = new RecentMap<string, number>(1, (key, value) => gone.push([key, value]));
    map.set('a', 1);
    map.set('b', 2);
    expect(gone).toEqual([['a', 1]]);
    expect(map.get('b')).toBe(2);
    const plain = new Map([
      ['x', 1],
      ['y', 2],
      ['z', 3],
    ]);
    evictOldest(plain, 1);
    expect([...plain.keys()]).toEqual(['z']);
  });
});
