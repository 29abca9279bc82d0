import type { LookupCache } from '../store/lookupCache.js';

export interface SharedLookupsOptions<T> {
  /** Where an answer is kept, for every replica to read (RedisLookupCache). */
  cache: LookupCache;
  /** How long an answer read from Slack is trusted. */
  ttlMs: number;
  /** Asks Slack. */
  ask: (id: string) => Promise<T>;
  /** The answer as JSON can hold it, and back. */
  encode: (value: T) => unknown;
  decode: (json: unknown) => T;
}

/**
 * What Slack says about a user group, a user or a channel, kept in Redis for a short while, so
 * every replica decides on the same answer, and reads of one id in this process share one
 * lookup, so a burst of clicks costs one Web API call. This process also keeps the answer until
 * the Redis copy expires: no replica trusts it longer than the others, and a click costs no Redis
 * round trip of its own once the answer is known here.
 */
export class SharedLookups<T> {
  private readonly inFlight = new Map<string, Promise<T>>();
  /** id → the answer and when the Redis copy it came from expires (ms since the epoch). */
  private readonly known = new Map<string, { value: T; until: number }>();

  constructor(private readonly options: SharedLookupsOptions<T>) {}

  /** Rejects when neither Redis nor Slack can say. */
  get(id: string): Promise<T> {
    const known = this.known.get(id);
    if (known && Date.now() < known.until) return Promise.resolve(known.value);
    const pending = this.inFlight.get(id);
    if (pending) return pending;
    const lookup = this.lookUp(id).finally(() => this.inFlight.delete(id));
    this.inFlight.set(id, lookup);
    return lookup;
  }

  private async lookUp(id: string): Promise<T> {
    const { cache, ttlMs, ask, encode, decode } = this.options;
    const askedAt = Date.now();
    const cached = await cache.readWithTtl(id);
    if (cached) return this.keep(id, decode(cached.value), askedAt + cached.ttlMs);
    const value = await ask(id);
    await cache.write(id, encode(value), ttlMs);
    return this.keep(id, value, askedAt + ttlMs);
  }

  private keep(id: string, value: T, until: number): T {
    // A copy without an expiry (PTTL -1, never written so by us) is not kept in memory.
    // Only a cache: past this many ids it starts afresh rather than grow without bound.
    if (this.known.size > 10_000) this.known.clear();
    if (until > Date.now()) this.known.set(id, { value, until });
    return value;
  }
}
