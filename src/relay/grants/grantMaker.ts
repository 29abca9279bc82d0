import type { Logger } from 'pino';
import type { Grant, GrantBucketKey, GrantStore } from '../../domain/grants/grant.js';
import { hostHeldScope } from '../../domain/grants/hostRule.js';
import { grantQuestion, type RememberOffer } from '../../domain/grants/match.js';
import { type GrantScope, offeredScope, scopeTtlMs } from '../../domain/grants/scope.js';
import { type ApprovalRecord, rulePersistence } from '../../domain/record.js';
import type { RouteGrants } from '../../domain/route.js';
import { hostGrantId } from '../../store/grantIds.js';
import { rememberedAs } from '../records/cardMutations.js';
import type { RecordKeeper } from '../records/recordKeeper.js';

export interface GrantMakerOptions {
  grants: GrantStore;
  keeper: RecordKeeper;
  /** The record as stored now: read again once a host-held grant is listed (follow). */
  record: (approvalId: string) => Promise<ApprovalRecord | undefined>;
  grantsOf: (route: string | undefined) => RouteGrants | undefined;
  logger: Logger;
  now?: () => Date;
}

/**
 * Where grants are made: a person's "don't ask again" on a card (a grant the bot keeps and
 * answers with), and a host choice that left a rule at the host (recorded so it can be listed).
 */
export class GrantMaker {
  private readonly now: () => Date;
  /**
   * Approvals whose host-held grant this process listed, or unlisted since the host said it did
   * not save the rule; the store is idempotent anyway.
   */
  private readonly hostHeldSeen = new Map<string, 'listed' | 'unlisted'>();

  constructor(private readonly options: GrantMakerOptions) {
    this.now = options.now ?? (() => new Date());
  }

  /** The "don't ask again" a pending card offers now, if any. */
  offer(record: ApprovalRecord): RememberOffer | undefined {
    if (record.phase !== 'pending') return undefined;
    const settings = this.options.grantsOf(record.route);
    if (!settings?.enabled) return undefined;
    const question = grantQuestion(record);
    if (!question) return undefined;
    return {
      choiceId: question.once.choiceId,
      capabilities: question.capabilities,
      caller: question.caller,
      scopes: settings.choices,
    };
  }

  /**
   * Records the grant a person's "don't ask again" asked for, once their decision was admitted,
   * and shows it on the card. Resolves with the grant, or undefined if it could not be stored.
   * `stage` is the sourceIndex the person pressed on: the grant is derived from the record's
   * current stage, so when that is no longer the one pressed (a later, maybe more dangerous
   * command) nothing is remembered. `scope` is a scopeToken: nothing is remembered unless it is
   * one of the route's choices now, whatever the route's ttl would allow.
   */
  async remember(
    record: ApprovalRecord,
    userId: string,
    stage: number,
    scope: string,
  ): Promise<Grant | undefined> {
    const { grants, keeper, logger } = this.options;
    if (record.currentRequirementId.sourceIndex !== stage) {
      logger.info(
        { approvalId: record.approvalId, pressed: stage, current: record.currentRequirementId.sourceIndex },
        'the stage "don\'t ask again" was pressed on is no longer the one being decided; nothing remembered',
      );
      return undefined;
    }
    const settings = this.options.grantsOf(record.route);
    const question = grantQuestion(record);
    if (!settings?.enabled || !question) return undefined;
    const lasts: GrantScope | undefined = offeredScope(settings.choices, scope);
    if (!lasts) {
      logger.warn({ approvalId: record.approvalId, scope }, 'the scope asked for is no longer offered');
      return undefined;
    }
    let grant: Grant;
    try {
      grant = await grants.create({
        caller: lasts.kind === 'session' ? `session:${record.sessionId}` : question.caller,
        tool: question.tool,
        capabilities: question.capabilities,
        sandboxMode: question.sandboxMode,
        holder: 'bot',
        grantedBy: userId,
        approvalId: record.approvalId,
        hostId: record.hostId,
        route: question.route,
        channel: record.slack.channel,
        lasts,
        ttlMs: scopeTtlMs(lasts, settings),
        ...(lasts.kind === 'uses' ? { maxUses: lasts.uses } : {}),
      });
    } catch (err) {
      logger.error({ err, approvalId: record.approvalId, userId }, 'the grant asked for could not be stored');
      return undefined;
    }
    // Stored, it answers requests from now on: the presser is not told otherwise because the
    // card could not show it (the line of each decision it makes names it, and its id revokes it).
    await keeper
      .mutateAndSync(
        record.approvalId,
        rememberedAs({
          grantId: grant.grantId,
          grantedBy: userId,
          capabilities: grant.capabilities,
          ...(grant.expiresAt ? { expiresAt: grant.expiresAt } : {}),
          ...(grant.usesLeft === undefined ? {} : { usesLeft: grant.usesLeft }),
          ...(grant.caller === record.caller ? {} : { caller: grant.caller }),
        }),
      )
      .catch((err: unknown) => {
        logger.error(
          { err, approvalId: record.approvalId, userId, grantId: grant.grantId },
          'grant stored; the card could not show it',
        );
      });
    return grant;
  }

  /**
   * RecordKeeper follower: a person picked a host choice scoped session or localPersistent and the
   * host confirmed the rule (amendment): list it, as the host keeps it; once the host says it could
   * not save the rule (policyPersistence failed, before the resolution or after), list nothing, and
   * take off the listings what a replica listed. Either may be heard first, on any replica, or only
   * the final record: each step is idempotent. Never waits, never throws.
   */
  follow(record: ApprovalRecord): void {
    const held = hostHeld(record);
    if (!held) return;
    const { approvalId } = record;
    const seen = this.hostHeldSeen.get(approvalId);
    if (held.notSaved) {
      if (seen === 'unlisted') return;
      // Also keeps a stale copy of the resolution heard later from listing it again here.
      this.hostHeldSeen.set(approvalId, 'unlisted');
      const work = this.unlist(record).catch((err: unknown) => {
        this.hostHeldSeen.delete(approvalId);
        this.options.logger.warn(
          { err, approvalId },
          'a host-held grant whose rule the host did not save could not be unlisted',
        );
      });
      this.options.keeper.track(work);
    } else {
      if (seen) return;
      this.hostHeldSeen.set(approvalId, 'listed');
      this.options.keeper.track(this.list(record, held.userId, held.scope, held.rulePreview));
    }
    // The map only spares repeated calls while the record is being re-stored; keep it small.
    if (this.hostHeldSeen.size > 10_000) this.hostHeldSeen.clear();
  }

  /** Lists the host-held grant; then takes it away if the failure was heard while it was on its way. */
  private async list(record: ApprovalRecord, userId: string, scope: string, rulePreview: string) {
    const { approvalId } = record;
    try {
      await this.options.grants.create({
        ...hostHeldKey(record),
        capabilities: record.requiredCapabilities,
        holder: 'host',
        grantedBy: userId,
        approvalId,
        hostId: record.hostId,
        channel: record.slack.channel,
        rulePreview,
        scope,
      });
    } catch (err) {
      if (this.hostHeldSeen.get(approvalId) === 'listed') this.hostHeldSeen.delete(approvalId);
      this.options.logger.warn({ err, approvalId }, 'the host-held grant could not be listed');
      return;
    }
    // Another replica may have heard the failure, and found nothing to unlist, before this listing
    // landed: the record as stored now says. A failure stored after this read is followed after
    // the listing, by whoever stored it, and finds the grant.
    try {
      const latest = await this.options.record(approvalId);
      if (latest && hostHeld(latest)?.notSaved) await this.unlist(latest);
    } catch (err) {
      this.options.logger.warn(
        { err, approvalId },
        'could not check that the host saved the rule of the host-held grant just listed',
      );
    }
  }

  /**
   * Takes the host-held grant off the listings, revoked (and audited) as `host:<hostId>`, with why:
   * the host keeps no such rule. Nothing when it is not listed (never was, or unlisted already).
   */
  private async unlist(record: ApprovalRecord): Promise<void> {
    const grantId = hostGrantId(hostHeldKey(record), record.approvalId);
    const by = `host:${record.hostId}`;
    if (await this.options.grants.revoke(grantId, by, this.now(), HOST_DID_NOT_SAVE)) {
      this.options.logger.info(
        { approvalId: record.approvalId, grantId },
        'host-held grant unlisted: the host did not save its rule',
      );
    }
  }
}

/** Why a host-held grant left the listings, in its `revoked` audit entry. */
export const HOST_DID_NOT_SAVE = 'the host said it did not save the rule';

/**
 * The host-held grant a resolved record stands for: a person's host choice scoped session or
 * localPersistent, with the host's amendment. `notSaved`: the host said saving it failed.
 */
function hostHeld(
  record: ApprovalRecord,
): { userId: string; scope: string; rulePreview: string; notSaved: boolean } | undefined {
  const scope = hostHeldScope(record);
  const resolution = record.resolution;
  if (scope === undefined || !resolution?.amendment || !resolution.slackUserId) return undefined;
  return {
    userId: resolution.slackUserId,
    scope,
    rulePreview: resolution.amendment.rulePreview,
    notSaved: rulePersistence(resolution)?.status === 'failed',
  };
}

/** What a host-held grant is listed by: the same whoever lists it, and whoever unlists it. */
function hostHeldKey(record: ApprovalRecord): GrantBucketKey {
  return {
    caller: record.caller,
    tool: record.tool,
    sandboxMode: record.sandboxMode,
    route: record.route ?? '',
  };
}
