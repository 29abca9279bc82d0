// Memories kept to a bound, the entries touched longest ago forgotten first. A Map's or a Set's
// order is the order its keys were added in: a key deleted and added again is the newest.

interface Ordered<K> {
  readonly size: number;
  keys(): IterableIterator<K>;
  delete(key: K): boolean;
}

/**
 * Forgets the oldest keys of `entries` (a Map or a Set) until at most `max` are left, and tells
 * `forgotten` of each, after it is gone.
 */
export function evictOldest<K>(entries: Ordered<K>, max: number, forgotten?: (key: K) => void): void {
  for (const oldest of entries.keys()) {
    if (entries.size <= max) break;
    entries.delete(oldest);
    forgotten?.(oldest);
  }
}

/** A Map of at most `max` entries: set() makes its key the newest; the oldest go past the bound. */
export class RecentMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(
    private readonly max: number,
    private readonly forgotten?: (key: K, value: V) => void,
  ) {}

  get size(): number {
    return this.entries.size;
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size <= this.max) return;
    const oldest = this.entries.keys().next().value as K;
    const gone = this.entries.get(oldest) as V;
    this.entries.delete(oldest);
    this.forgotten?.(oldest, gone);
  }

  delete(key: K): boolean {
    return this.entries.delete(key);
  }

  keys(): IterableIterator<K> {
    return this.entries.keys();
  }
}

/** A Set of at most `max` keys: add() makes the key the newest; the oldest go past the bound. */
export class RecentSet<K> implements Iterable<K> {
  private readonly entries: RecentMap<K, true>;

  constructor(max: number, forgotten?: (key: K) => void) {
    this.entries = new RecentMap(max, forgotten && ((key) => forgotten(key)));
  }

  get size(): number {
    return this.entries.size;
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  add(key: K): void {
    this.entries.set(key, true);
  }

  delete(key: K): boolean {
    return this.entries.delete(key);
  }

  [Symbol.iterator](): IterableIterator<K> {
    return this.entries.keys();
  }
}
