// Each body is read whole before its signature can be checked (choicePressRoute.ts), so whoever
// reaches the port can have BODY_LIMIT_BYTES held per connection for as long as the body
// deadline allows (BODY_DEADLINE_MS). A per-request limit alone bounds nothing across connections:
// 170 connections each holding all but the last byte of 3 MB is past a 512 MiB pod. This is the
// one count, per server, of the body bytes held before verification; past it a request is refused.

/**
 * What the bodies not yet verified may hold together: ten of Slack's largest (a press in "View
 * full", 2.4 MB at worst) at once, and a small part of the pod's 512 MiB.
 */
export const UNVERIFIED_BYTES_LIMIT = 32 * 1024 * 1024;

/** The body bytes held, across every request of a server, before their signature is checked. */
export class UnverifiedBytes {
  #held = 0;

  constructor(readonly limit = UNVERIFIED_BYTES_LIMIT) {}

  /** How many bytes are held now. */
  get held(): number {
    return this.#held;
  }

  /** Counts `bytes` as held, unless that would pass the limit: then nothing is counted, and false. */
  take(bytes: number): boolean {
    if (this.#held + bytes > this.limit) return false;
    this.#held += bytes;
    return true;
  }

  /** Counts `bytes` taken earlier as held no longer. */
  release(bytes: number): void {
    this.#held -= bytes;
  }
}
