import type { Logger } from 'pino';
import type { AuditEntry, AuditTrail } from '../../domain/audit.js';
import type { RevokeAuthorization, RevokeRefused } from '../../domain/authorization.js';
import type { Grant, GrantStore } from '../../domain/grants/grant.js';
import type { RevokeOutcome, RevokeVia } from '../../domain/grants/revocation.js';

/** Says in the grant's channel who revoked it, so everyone there knows it no longer answers. */
export interface RevocationNotices {
  grantRevoked(grant: Grant, by: string): Promise<void>;
}

export interface GrantRevokerOptions {
  grants: Pick<GrantStore, 'get' | 'revoke'>;
  authorizer: { mayRevoke(userId: string, grant: Grant): Promise<RevokeAuthorization> };
  notices: RevocationNotices;
  audit?: AuditTrail;
  logger: Logger;
  now?: () => Date;
}

/**
 * Revokes a grant for a person: finds it, checks they may (authorization.ts, authorizeRevoke)
 * before saying anything more of it, revokes it in the store (at once for every replica) and
 * announces it in its channel. Never rejects for what a person did; rejects only when Redis does.
 */
export class GrantRevoker {
  private readonly now: () => Date;

  constructor(private readonly options: GrantRevokerOptions) {
    this.now = options.now ?? (() => new Date());
  }

  async revoke(grantId: string, userId: string, via: RevokeVia): Promise<RevokeOutcome> {
    const { grants, authorizer, logger } = this.options;
    const grant = await grants.get(grantId);
    if (!grant) return { kind: 'unknown', grantId };
    // Whoever may not revoke it may not see it (grantLists.ts): they learn nothing of it, not even
    // that it exists, so that a leaked or guessed id tells them no more than an unknown one.
    const may = await authorizer.mayRevoke(userId, grant);
    if (!may.allowed) {
      this.recordRefusal(grant, userId, via, may);
      return { kind: 'refused', grantId };
    }
    const notLive = this.whyNotLive(grantId, grant);
    if (notLive) return notLive;
    if (grant.holder === 'host') return { kind: 'hostHeld', grant };
    if (!(await grants.revoke(grant.grantId, userId, this.now()))) {
      // Revoked by someone else, expired or spent, since it was read.
      return this.whyNotLive(grantId, await grants.get(grantId)) ?? { kind: 'alreadyRevoked', grant };
    }
    logger.info({ grantId, userId, via, because: may.because, route: grant.route }, 'grant revoked');
    await this.options.notices.grantRevoked(grant, userId).catch((err: unknown) => {
      // The revocation stands (it is in Redis); only the channel was not told.
      logger.warn({ err, grantId, channel: grant.channel }, 'could not announce a revoked grant');
    });
    return { kind: 'revoked', grant, by: userId, because: may.because };
  }

  private whyNotLive(grantId: string, grant: Grant | undefined): RevokeOutcome | undefined {
    if (!grant) return { kind: 'unknown', grantId };
    if (grant.revokedAt !== undefined) return { kind: 'alreadyRevoked', grant };
    // Every use counted (as the store's REVOKE tells spent): a use still out is revoked instead,
    // since it comes back if its decision does not go through.
    if (grant.maxUses !== undefined && grant.usesLeft === 0 && grant.uses >= grant.maxUses) {
      return { kind: 'spent', grant };
    }
    if (grant.expiresAt !== undefined && Date.parse(grant.expiresAt) <= this.now().getTime()) {
      return { kind: 'expired', grant };
    }
    return undefined;
  }

  /** A refused revocation is logged and audited, never posted where others would see it. */
  private recordRefusal(grant: Grant, userId: string, via: RevokeVia, refused: RevokeRefused): void {
    const entry: AuditEntry = {
      kind: 'refusal',
      approvalId: grant.approvalId,
      hostId: grant.hostId,
      route: grant.route,
      userId,
      grantId: grant.grantId,
      action: via === 'command' ? 'command' : 'revokeButton',
      reason: refused.route.why,
      at: this.now().toISOString(),
    };
    this.options.logger.info(
      entry,
      'grant revoke refused: user neither granted it nor may decide on its route',
    );
    this.options.audit?.append(entry).catch((err: unknown) => {
      this.options.logger.warn({ err, grantId: grant.grantId }, 'could not append to the audit trail');
    });
  }
}
