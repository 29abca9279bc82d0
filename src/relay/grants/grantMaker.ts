import type { Logger } from 'pino';
import type { Grant, GrantStore } from '../../domain/grants/grant.js';
import { grantQuestion, type RememberOffer } from '../../domain/grants/match.js';
import { type GrantScope, offeredScope, scopeTtlMs } from '../../domain/grants/scope.js';
import type { ApprovalRecord } from '../../domain/record.js';
import type { RouteGrants } from '../../domain/route.js';
import { rememberedAs } from '../records/cardMutations.js';
import type { RecordKeeper } from '../records/recordKeeper.js';

export interface GrantMakerOptions {
  grants: GrantStore;
  keeper: RecordKeeper;
  grantsOf: (route: string | undefined) => RouteGrants | undefined;
  logger: Logger;
  now?: () => Date;
}

/** Host choices that leave a rule at the host: what the host keeps is listed as a host-held grant. */
const HOST_SCOPES: ReadonlySet<string> = new Set(['session', 'localPersistent']);

/**
 * Where grants are made: a person's "don't ask again" on a card (a grant the bot keeps and
 * answers with), and a host choice that left a rule at the host (recorded so it can be listed).
 */
export class GrantMaker {
  private readonly now: () => Date;
  /** Approvals whose host-held grant this process recorded; the store is idempotent anyway. */
  private readonly hostHeldSeen = new Set<string>();

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
   * command) nothing is remembered. `scope` is a scopeToken, of a scope the route offers now;
   * none (a button of a card posted before scopes existed): the route's ttl.
   */
  async remember(
    record: ApprovalRecord,
    userId: string,
    stage: number,
    scope?: string,
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
    const lasts: GrantScope | undefined =
      scope === undefined ? { kind: 'time', ms: settings.ttlMs } : offeredScope(settings.choices, scope);
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
   * host confirmed the rule (amendment): list it, as the host keeps it. Never waits, never throws.
   */
  follow(record: ApprovalRecord): void {
    const resolution = record.resolution;
    if (record.phase !== 'resolved' || !resolution?.amendment || !resolution.slackUserId) return;
    const choice = record.availableChoices.find((c) => c.choiceId === resolution.choiceId);
    if (!choice || !HOST_SCOPES.has(choice.scope) || this.hostHeldSeen.has(record.approvalId)) return;
    this.hostHeldSeen.add(record.approvalId);
    const userId = resolution.slackUserId;
    const amendment = resolution.amendment;
    const work = this.options.grants
      .create({
        caller: record.caller,
        tool: record.tool,
        capabilities: record.requiredCapabilities,
        sandboxMode: record.sandboxMode,
        holder: 'host',
        grantedBy: userId,
        approvalId: record.approvalId,
        hostId: record.hostId,
        route: record.route ?? '',
        channel: record.slack.channel,
        rulePreview: amendment.rulePreview,
        scope: choice.scope,
      })
      .catch((err: unknown) => {
        this.hostHeldSeen.delete(record.approvalId);
        this.options.logger.warn(
          { err, approvalId: record.approvalId },
          'the host-held grant could not be listed',
        );
      });
    this.options.keeper.track(work);
    // The set only spares repeated calls while the record is being re-stored; keep it small.
    if (this.hostHeldSeen.size > 10_000) this.hostHeldSeen.clear();
  }
}
