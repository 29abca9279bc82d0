// A remembered grant ("don't ask again", docs/grants.md): for this caller, this tool may do what these
// covered capabilities name, while the host runs in this sandbox mode, for requests placed on the
// route it was made on, until it expires or is revoked. Shared by the store (grantStore.ts), the matcher (relay/) and the Slack side.

import type { GrantScope } from './scope.js';

/** Who keeps the grant: the bot (it decides matching requests itself) or the host (its own rule). */
export type GrantHolder = 'bot' | 'host';

/** How a route names the caller a grant is bound to (config `routes[].grants.caller`). */
export type CallerScope = 'session' | 'owner' | 'host';

/** What a grant is keyed by. `capabilities` is canonical: sorted, de-duplicated. */
export interface GrantKey {
  /** `session:<sessionId>`, `user:<slack user id>` or `host:<host id>`. */
  caller: string;
  tool: string;
  capabilities: string[];
  sandboxMode: string;
  /**
   * The name of the route that placed the card it was granted on (`''` for a record without
   * one). A grant answers only requests that route places: a lenient route's grant must never
   * decide what a stricter route would show to other people.
   */
  route: string;
}

/** The Slack user whose agents a grant is bound to (`user:<id>`); undefined for a session or host. */
export function callerOwner(caller: string): string | undefined {
  return caller.startsWith('user:') ? caller.slice('user:'.length) : undefined;
}

/** What a grant's bucket is keyed by: all of its key but the capabilities (see grantIds.ts). */
export type GrantBucketKey = Pick<GrantKey, 'caller' | 'tool' | 'sandboxMode' | 'route'>;

export interface Grant extends GrantKey {
  /** Stable id: what `/countersign revoke <id>` and the Revoke button name. */
  grantId: string;
  holder: GrantHolder;
  /** The Slack user who granted it, and the approval it was granted from. */
  grantedBy: string;
  approvalId: string;
  hostId: string;
  /** The channel of that approval (listing is scoped by channel; revoking by the key's route). */
  channel: string;
  /** ISO times. A host-held grant has no bot-side expiry of its own (the host keeps it). */
  createdAt: string;
  expiresAt?: string;
  lastUsedAt?: string;
  uses: number;
  /** Bot-held: the scope picked on the card (absent on grants made before scopes existed). */
  lasts?: GrantScope;
  /** A grant by uses: how many it was granted, and how many it may still decide. */
  maxUses?: number;
  usesLeft?: number;
  /** Host-held: the host's own words for the rule it keeps (choice.rulePreview / amendment). */
  rulePreview?: string;
  /** Host-held: `session` or `localPersistent`, as the host scoped it. */
  scope?: string;
  revokedAt?: string;
  revokedBy?: string;
  /**
   * Bot-held: the grant that took its place when someone pressed "don't ask again" for its key
   * again. It ended then, as if revoked by them (`revokedAt`, `revokedBy`).
   */
  replacedBy?: string;
}

/** A grant event, for the capped grant audit stream and the log (structured). */
export type GrantEvent =
  | {
      kind: 'created';
      grant: Grant;
      at: string;
      /** The live grant of the same key this one took the place of (see `replaced`). */
      replaces?: { grantId: string; grantedBy: string };
    }
  | { kind: 'used'; grantId: string; approvalId: string; sourceIndex: number; at: string }
  /** Its last use was spent: it decides nothing more. */
  | { kind: 'exhausted'; grantId: string; at: string }
  | { kind: 'expired'; grantId: string; at: string }
  /**
   * `by` revoked it: a person, or `host:<hostId>` for a host-held grant taken off the listings
   * because that host said it did not save the rule; `reason` says why when no person did.
   */
  | { kind: 'revoked'; grantId: string; by: string; at: string; reason?: string }
  /**
   * `by` pressed "don't ask again" for its key again, on `approvalId`: it ended, and the grant
   * `replacedBy` (theirs, with their scope and limits) answers from now on.
   */
  | { kind: 'replaced'; grantId: string; by: string; replacedBy: string; approvalId: string; at: string };

/**
 * Grants in Redis. Lookup cost must not depend on how many grants are stored: grants live in
 * buckets keyed by (caller, tool, sandboxMode, route), and one approval's lookup reads one bucket
 * in one round trip. Revocation and expiry take effect at once for every replica (they are in Redis).
 */
export interface GrantStore {
  /**
   * Stores a new grant and records `created`. Capabilities are canonicalized here. A bot-held
   * grant (it needs `ttlMs`) replaces the live bot-held grant of the same key, whoever granted it
   * and for however long or many uses: the grant is then the new granter's, with their approval,
   * channel, scope, expiry (shorter, maybe) and uses, and the old one ends at once (out of its
   * bucket and the listings, `replacedBy` the new one); `created` names the grant it replaces and
   * `replaced` is recorded for the old one. The same approval recorded again by the same person
   * (two replicas, a retry) changes nothing and resolves with the grant it made. Host-held grants
   * are kept for listing only, one per approval however often it is recorded. Given `expiresAt`,
   * `lastUsedAt`, `revokedAt`, `revokedBy`, `replacedBy` and `usesLeft` are ignored.
   */
  create(grant: Omit<Grant, 'grantId' | 'uses' | 'createdAt'> & { ttlMs?: number }): Promise<Grant>;
  /** Live bot-held grants of one bucket (not expired, not revoked), in one round trip. */
  candidates(bucket: GrantBucketKey, now: Date): Promise<Grant[]>;
  /**
   * A grant by uses: takes one of its uses, atomically, before it decides. Resolves with the uses
   * left after this one, or undefined when none was left (or it is no longer live): then it must
   * not decide. Two callers never both take the last one.
   */
  reserveUse(grant: Grant, now: Date): Promise<number | undefined>;
  /** Gives back a use reserved for a decision that did not go through (a replayed one's too). */
  returnUse(grant: Pick<Grant, 'grantId'>): Promise<void>;
  /**
   * Counts a use (uses, lastUsedAt) and records `used`; a grant by uses whose last use this was
   * leaves its bucket and the listings, and `exhausted` is recorded. Once per approval stage
   * (`approvalId`, `sourceIndex`): the same use recorded again (the old owner of a host and the
   * new one both finishing its decision, a replay) changes nothing. `ride`: the writes may wait
   * a little for another write to leave with (the decision's resolution). Only the id is read: a
   * use of a grant removed since is recorded all the same.
   */
  recordUse(
    grant: Pick<Grant, 'grantId'>,
    approvalId: string,
    sourceIndex: number,
    now: Date,
    how?: { ride?: boolean },
  ): Promise<void>;
  /**
   * The grant as stored, revoked ones included (`revokedAt`), until it is swept or its Redis TTL
   * ends: compare `expiresAt` to tell whether it is still live.
   */
  get(grantId: string): Promise<Grant | undefined>;
  /**
   * Live grants (bot- and host-held), newest first, at most the 100 newest the filter takes
   * (GrantListFilter).
   */
  list(filter: GrantListFilter, now: Date): Promise<Grant[]>;
  /**
   * Revokes a live grant; false when it was not live (unknown, expired or already revoked). A
   * host-held grant only leaves the listing: the host keeps its rule (MSP cannot revoke it).
   * `reason`, recorded with `revoked`: why, when it is not a person's revocation.
   */
  revoke(grantId: string, by: string, now: Date, reason?: string): Promise<boolean>;
  /** Removes expired grants (recording `expired`); resolves with how many were removed. */
  sweep(now: Date): Promise<number>;
}

/** Which live grants a listing takes. */
export interface GrantListFilter {
  /** Those of these channels only (none when empty). */
  channels?: readonly string[];
  /** That user's only. */
  grantedBy?: string;
  /**
   * Of those, the ones the person asking may see, one answer per grant: the listing reads on
   * until it has its limit of these, so grants hidden from them never crowd out the ones they may
   * see (a channel several routes share, where they decide on one).
   */
  shown?: (grants: readonly Grant[]) => Promise<boolean[]>;
}
