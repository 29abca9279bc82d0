import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

// What one replica hands another through Redis is sealed: a forwarded decision, and the outcome
// its owner writes back (which the asker trusts, and from which it may make a grant). The MAC is
// HMAC-SHA256 under a key every replica derives from the secret they share, so someone who can
// write to Redis but does not hold that secret can neither forge a decision nor its outcome.
// The key lives only inside this object: it is never logged, and never leaves the process.

/** What is sealed: each purpose has a key of its own, so a MAC made for one never passes as another. */
export type SealPurpose = 'decision' | 'outcome';

const SALT = 'countersign replicas';
const INFO: Record<SealPurpose, string> = {
  decision: 'countersign decision stream: forwarded decision v1',
  outcome: 'countersign decision stream: owner outcome v1',
};
const KEY_BYTES = 32;

export class ReplicaSeal {
  readonly #keys: ReadonlyMap<SealPurpose, Buffer>;

  /** `secret`: COUNTERSIGN_REPLICA_SECRET, or the bot token every replica of one app has. */
  constructor(secret: string) {
    this.#keys = new Map(
      (Object.keys(INFO) as SealPurpose[]).map((purpose) => [
        purpose,
        Buffer.from(hkdfSync('sha256', secret, SALT, INFO[purpose], KEY_BYTES)),
      ]),
    );
  }

  /** The MAC of exactly `text` (base64url). */
  mac(purpose: SealPurpose, text: string): string {
    return this.digest(purpose, text).toString('base64url');
  }

  /** Whether `mac` is the MAC of exactly `text`; false when it is missing or malformed. */
  verifies(purpose: SealPurpose, text: string, mac: string | undefined): boolean {
    if (mac === undefined) return false;
    const given = Buffer.from(mac, 'base64url');
    const expected = this.digest(purpose, text);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /** Never shows the keys, whatever logs or inspects this object. */
  toJSON(): string {
    return '[ReplicaSeal]';
  }

  private digest(purpose: SealPurpose, text: string): Buffer {
    return createHmac('sha256', this.#keys.get(purpose)!).update(text, 'utf8').digest();
  }
}
