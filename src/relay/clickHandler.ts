import type { Logger } from 'pino';
import { HostGoneError, MspError, RequestTimeoutError } from '../msp/errors.js';
import type { ApprovalHost } from '../msp/events.js';
import type { ApprovalChoice } from '../msp/protocol.js';
import type { ApprovalStore } from '../store/approvalStore.js';
import type { ApprovalRecord, Claim } from '../store/record.js';
import { isTerminal } from '../store/record.js';
import { lazyChild } from '../util/lazyChild.js';
import type { UserNotifier } from './ports.js';
import { resolvedElsewhere, unclaimed } from './recordMutations.js';
import type { Relay } from './relay.js';
import { type Refusal, refusalText } from './userMessages.js';

const DECIDE_TIMEOUT_ATTEMPTS = 3;
const SENT_MEMORY_MS = 10 * 60_000;
/** Re-checks after the approval changed under a click, before telling the user it moved. */
const MAX_CLAIM_ATTEMPTS = 5;

export interface Click {
  channel: string;
  ts: string;
  userId: string;
  /** The requirement the pressed button was rendered for. */
  sourceIndex: number;
  choiceId: string;
  feedback?: string;
  /** The approval the button says it belongs to; checked against the message's own mapping. */
  approvalHint?: string;
}

export type ClickCheck =
  | { ok: true; record: ApprovalRecord; choice: ApprovalChoice }
  | { ok: false; refusal: Refusal; approvalId?: string };

export interface ClickHandlerOptions {
  store: ApprovalStore;
  relay: Relay;
  notifier: UserNotifier;
  host: (hostId: string) => ApprovalHost | undefined;
  logger: Logger;
  newCommandId: () => string;
  now?: () => Date;
}

/**
 * A click becomes at most one approval/decide: find the approval from the message (never from
 * the button), check the question is still the one shown, claim the stage atomically, then send
 * the decision with a commandId stored before it leaves.
 */
export class ClickHandler {
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly clicks = new Set<Promise<void>>();
  /** commandId → the host incarnation it was last sent to: one send per commandId per host process. */
  private readonly sentTo = new Map<string, string>();
  private readonly now: () => Date;
  private accepting = true;

  constructor(private readonly options: ClickHandlerOptions) {
    this.now = options.now ?? (() => new Date());
  }

  async check(click: Click): Promise<ClickCheck> {
    const { store } = this.options;
    if (click.approvalHint) {
      const found = await store.getForMessage(click.channel, click.ts, click.approvalHint);
      if (found.mappedTo === click.approvalHint) return this.checkFound(found.record, click);
      if (!found.mappedTo) return { ok: false, refusal: { code: 'unknownCard' } };
      // The button named another approval than the message is mapped to: trust the mapping.
      return this.checkRecord(found.mappedTo, click);
    }
    const approvalId = await store.findByMessage(click.channel, click.ts);
    return approvalId ? this.checkRecord(approvalId, click) : { ok: false, refusal: { code: 'unknownCard' } };
  }

  private async checkRecord(approvalId: string, click: Click): Promise<ClickCheck> {
    return this.checkFound(await this.options.store.get(approvalId), click);
  }

  private checkFound(record: ApprovalRecord | undefined, click: Click): ClickCheck {
    if (!record) return { ok: false, refusal: { code: 'unknownCard' } };
    const refusal = refusalFor(record, click);
    if (refusal) return { ok: false, refusal, approvalId: record.approvalId };
    const choice = record.availableChoices.find((c) => c.choiceId === click.choiceId)!;
    return { ok: true, record, choice };
  }

  /**
   * Handles one click; drain() waits for it from the first read to the host's answer. `checked`
   * is a check the caller already made for this click, so it is not read again.
   */
  click(click: Click, checked?: ClickCheck): Promise<void> {
    if (!this.accepting) return Promise.resolve();
    const task = this.handleClick(click, checked);
    this.clicks.add(task);
    return task.finally(() => this.clicks.delete(task));
  }

  private async handleClick(click: Click, alreadyChecked?: ClickCheck): Promise<void> {
    const { relay, logger } = this.options;
    const commandId = this.options.newCommandId();
    let checked = alreadyChecked ?? (await this.check(click));
    for (let attempt = 1; ; attempt++) {
      if (!checked.ok) {
        await this.tell(click.channel, click.userId, checked.refusal);
        if (checked.refusal.code === 'questionChanged' && checked.approvalId)
          await relay.resync(checked.approvalId);
        return;
      }
      const { record, choice } = checked;
      const claim: Claim = {
        sourceIndex: click.sourceIndex,
        userId: click.userId,
        choiceId: choice.choiceId,
        commandId,
        feedback: choice.acceptsFeedback && click.feedback ? click.feedback : undefined,
        claimedAt: this.now().toISOString(),
      };
      const outcome = await relay.claim(record, claim);
      switch (outcome.kind) {
        case 'claimed': {
          // The decision is written to the host first; the log line would only delay it.
          const sending = this.send(outcome.record, claim, click.channel);
          logger.info(
            {
              approvalId: record.approvalId,
              sessionId: record.sessionId,
              userId: click.userId,
              choiceId: choice.choiceId,
              commandId,
            },
            'stage claimed',
          );
          await sending;
          return;
        }
        case 'held':
          await this.tell(click.channel, click.userId, {
            code: 'alreadyBeingDecided',
            userId: outcome.holder?.userId,
            self: outcome.holder?.userId === click.userId,
          });
          return;
        case 'gone':
          await this.tell(click.channel, click.userId, { code: 'unknownCard' });
          return;
        case 'stale':
          // The approval moved on between the check and the claim: check the click again
          // against what it is now.
          checked =
            attempt < MAX_CLAIM_ATTEMPTS
              ? await this.checkRecord(record.approvalId, click)
              : { ok: false, refusal: { code: 'questionChanged' }, approvalId: record.approvalId };
      }
    }
  }

  /**
   * A record is in `deciding` but nothing here is sending it: the process restarted or the host
   * died mid-decision. Replaying the same commandId is safe: the host applies it at most once.
   */
  replay(record: ApprovalRecord): void {
    if (!this.accepting || !record.claim || this.inFlight.has(record.approvalId)) return;
    if (this.sentTo.get(record.claim.commandId) === record.incarnation) return;
    this.options.logger.info(
      { approvalId: record.approvalId, sessionId: record.sessionId, commandId: record.claim.commandId },
      'replaying an interrupted decision',
    );
    // Nobody awaits a replay: a failure (a card update Slack refused, say) must end here, logged.
    this.send(record, record.claim, record.slack.channel).catch((err: unknown) => {
      this.options.logger.error({ err, approvalId: record.approvalId }, 'replayed decision failed');
    });
  }

  /** Stop taking clicks; resolves when every decision already in flight has finished. */
  async drain(): Promise<void> {
    this.accepting = false;
    while (this.inFlight.size > 0 || this.clicks.size > 0) {
      await Promise.allSettled([...this.inFlight.values(), ...this.clicks]);
    }
  }

  private send(record: ApprovalRecord, claim: Claim, channel: string): Promise<void> {
    this.sentTo.set(claim.commandId, record.incarnation);
    const task = this.decide(record, claim, channel).finally(() => {
      this.inFlight.delete(record.approvalId);
      // Once the approval has moved on, the entry can only matter to a late redelivery.
      setTimeout(() => this.sentTo.delete(claim.commandId), SENT_MEMORY_MS).unref();
    });
    this.inFlight.set(record.approvalId, task);
    return task;
  }

  private async decide(record: ApprovalRecord, claim: Claim, channel: string): Promise<void> {
    const { relay, logger } = this.options;
    const log = lazyChild(logger, {
      approvalId: record.approvalId,
      sessionId: record.sessionId,
      commandId: claim.commandId,
    });
    const host = this.options.host(record.hostId);
    // Dropping the claim from the record frees its stage key too (the store does both at once).
    const giveBack = () => relay.mutateAndSync(record.approvalId, unclaimed(claim.commandId));
    if (record.currentRequirementId.sourceIndex !== claim.sourceIndex) {
      // Never send a choice made for one stage as the answer to another.
      await giveBack();
      await this.tell(channel, claim.userId, { code: 'questionChanged' });
      return;
    }
    try {
      if (!host) throw new HostGoneError(`no host ${record.hostId}`);
      const params = {
        sessionId: record.sessionId,
        approvalId: record.approvalId,
        commandId: claim.commandId,
        requirementId: record.currentRequirementId,
        choiceId: claim.choiceId,
        ...(claim.feedback ? { feedback: claim.feedback } : {}),
      };
      // A timed-out decide may or may not have been applied; the same commandId makes asking
      // again safe either way.
      let result: Awaited<ReturnType<ApprovalHost['decide']>> | undefined;
      for (let attempt = 1; !result; attempt++) {
        try {
          result = await host.decide(params);
        } catch (err) {
          if (!(err instanceof RequestTimeoutError) || attempt >= DECIDE_TIMEOUT_ATTEMPTS) throw err;
          log().warn({ attempt }, 'decide timed out; asking again with the same commandId');
        }
      }
      log().info(
        { terminal: result.terminal, choiceId: claim.choiceId, userId: claim.userId },
        'decision accepted',
      );
    } catch (err) {
      if (err instanceof HostGoneError || err instanceof RequestTimeoutError) {
        // Keep the claim: when the host is back the approval is re-opened and replayed.
        log().warn({ err: err.message }, 'host gone while deciding; will replay');
        await this.tell(channel, claim.userId, { code: 'hostUnavailable' });
        return;
      }
      if (!(err instanceof MspError)) {
        log().error({ err }, 'decide failed');
        await giveBack();
        await this.tell(channel, claim.userId, { code: 'decideFailed', kind: 'internal' });
        return;
      }
      log().warn({ kind: err.kind, code: err.code }, 'decide refused');
      switch (err.kind) {
        case 'approvalAlreadyResolved': {
          const winner = (err.data?.resolution ?? {}) as { decision?: string; resolvedBy?: string };
          const decision = winner.decision ?? 'unknown';
          const resolvedBy = winner.resolvedBy ?? 'unknown';
          const final = await relay.mutateAndSync(
            record.approvalId,
            resolvedElsewhere(decision, resolvedBy, this.now()),
          );
          await this.tell(channel, claim.userId, {
            code: 'alreadyResolved',
            decision: final?.resolution?.decision ?? decision,
            resolvedBy: final?.resolution?.resolvedBy ?? resolvedBy,
            slackUserId: final?.resolution?.slackUserId,
          });
          return;
        }
        case 'approvalChoiceInvalid':
        case 'approvalRequirementStale':
          await giveBack();
          await this.tell(channel, claim.userId, { code: 'questionChanged' });
          return;
        case 'approvalReviewerUnavailable':
          await giveBack();
          await this.tell(channel, claim.userId, { code: 'reviewerUnavailable' });
          return;
        case 'sessionInUse':
          await giveBack();
          await this.tell(channel, claim.userId, { code: 'sessionElsewhere' });
          return;
        default:
          await giveBack();
          await this.tell(channel, claim.userId, { code: 'decideFailed', kind: err.kind });
      }
    }
  }

  /** Tells one person, and only them, why their click changed nothing. */
  refuse(channel: string, userId: string, refusal: Refusal): Promise<void> {
    return this.tell(channel, userId, refusal);
  }

  private async tell(channel: string, userId: string, refusal: Refusal): Promise<void> {
    try {
      await this.options.notifier.ephemeral(channel, userId, refusalText(refusal));
    } catch (err) {
      this.options.logger.warn({ err, userId, refusal: refusal.code }, 'could not send ephemeral message');
    }
  }
}

/** Why a click on this record cannot be honoured, or undefined if it can. */
function refusalFor(record: ApprovalRecord, click: Click): Refusal | undefined {
  if (isTerminal(record)) {
    if (record.phase === 'superseded') return { code: 'superseded' };
    if (record.phase === 'orphaned') return { code: 'orphaned' };
    return {
      code: 'alreadyResolved',
      decision: record.resolution?.decision ?? 'unknown',
      resolvedBy: record.resolution?.resolvedBy ?? 'unknown',
      slackUserId: record.resolution?.slackUserId,
    };
  }
  if (record.phase === 'reviewing') return { code: 'underReview' };
  if (record.phase === 'deciding' && record.claim?.sourceIndex === click.sourceIndex) {
    return {
      code: 'alreadyBeingDecided',
      userId: record.claim.userId,
      self: record.claim.userId === click.userId,
    };
  }
  const offered = record.availableChoices.some((c) => c.choiceId === click.choiceId);
  if (click.sourceIndex !== record.currentRequirementId.sourceIndex || !offered)
    return { code: 'questionChanged' };
  return undefined;
}
