import type { RevokeAllowed } from '../authorization.js';
import type { Grant } from './grant.js';

/** Where a revocation came from: `/countersign revoke <id>`, or a Revoke button in a list. */
export type RevokeVia = 'command' | 'button';

/** What became of one attempt to revoke a grant; the Slack side says it to the person. */
export type RevokeOutcome =
  | { kind: 'revoked'; grant: Grant; by: string; because: RevokeAllowed['because'] }
  /** No such grant, or it is gone from Redis (expired long enough ago to be swept). */
  | { kind: 'unknown'; grantId: string }
  | { kind: 'expired'; grant: Grant }
  | { kind: 'alreadyRevoked'; grant: Grant }
  /** A grant by uses whose every use was counted: it ended on its own, nobody revoked it. */
  | { kind: 'spent'; grant: Grant }
  /** The host keeps its own rule; MSP has no call to revoke it, so nothing was changed. */
  | { kind: 'hostHeld'; grant: Grant }
  /**
   * They may not revoke it, so may not see it either (grantLists.ts): the outcome carries nothing of
   * the grant, so that no answer can tell them more than for an unknown id. The revoker audits why.
   */
  | { kind: 'refused'; grantId: string };
