import { hash as digest, randomBytes } from 'node:crypto';
import type { GrantBucketKey } from '../domain/grants/grant.js';
import { keys } from './keys.js';

// A grant id begins with its bucket's tag, so that from the id alone the store finds the grant's
// key, and the grant shares a hash tag (one Cluster slot) with its bucket: creating, matching,
// revoking and sweeping a grant are each one script on one slot.

const TAG_LENGTH = 10;
const ID_PATTERN = /^([0-9a-f]{10})-[^\s]+$/;

export interface Bucket {
  tag: string;
  key: string;
}

/**
 * The bucket of (caller, tool, sandboxMode, route); JSON keeps the four apart whatever they
 * contain. Releases before the route was part of the key hashed the first three only: their
 * buckets are never read again, so their grants answer nothing (they are still listed, revocable
 * and swept through their own keys until they end).
 */
export function bucketOf({ caller, tool, sandboxMode, route }: GrantBucketKey): Bucket {
  // One-shot: a Hash object per lookup costs several times the digest itself.
  const hash = digest('sha256', JSON.stringify([caller, tool, sandboxMode, route]), 'hex');
  const tag = hash.slice(0, TAG_LENGTH);
  return { tag, key: keys.grantBucket(tag, hash) };
}

export function grantIdIn(bucket: Bucket, suffix: string): string {
  return `${bucket.tag}-${suffix}`;
}

/** The random part of a new grant id: short enough to type in `/countersign revoke <id>`. */
export function randomGrantSuffix(): string {
  return randomBytes(6).toString('hex');
}

/** The same for every replica recording one approval's host-held grant: one grant, not two. */
export function hostGrantSuffix(approvalId: string): string {
  return `h${digest('sha256', approvalId, 'hex').slice(0, 12)}`;
}

/**
 * The id of an approval's host-held grant, from what it was listed by: whoever hears the host say
 * it did not save the rule finds the grant to take off the listings, whichever replica listed it.
 */
export function hostGrantId(key: GrantBucketKey, approvalId: string): string {
  return grantIdIn(bucketOf(key), hostGrantSuffix(approvalId));
}

/** The grant's Redis key, or undefined for an id this store never made. */
export function grantKeyOf(grantId: string): string | undefined {
  const tag = ID_PATTERN.exec(grantId)?.[1];
  return tag === undefined ? undefined : keys.grant(tag, grantId);
}

/** Every grant key of a bucket is this prefix and the grant id (what the scripts build keys from). */
export function grantKeyPrefix(bucket: Bucket): string {
  return keys.grant(bucket.tag, '');
}
