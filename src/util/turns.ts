/**
 * Turns taken in order per key: a turn is ready once every turn taken before it on the same key
 * is done. Work between taking and being ready runs concurrently; only what follows `ready`
 * keeps the order. Every turn must be ended with done() (calling it again is harmless).
 */
export class Turns {
  private readonly tails = new Map<string, Promise<void>>();

  take(key: string): { ready: Promise<void>; done: () => void } {
    const ready = this.tails.get(key) ?? Promise.resolve();
    let done!: () => void;
    const mine = new Promise<void>((resolve) => {
      done = resolve;
    });
    // Mine ends only after the turn before it: a turn done early never lets a later one overtake.
    const tail = Promise.all([ready, mine]).then(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return { ready, done };
  }
}
