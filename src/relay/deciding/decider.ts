import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { askedOtherwise } from '../../domain/claimCredit.js';
import type { ApprovalRecord, Claim } from '../../domain/record.js';
import { type BackoffPolicy, backoffDelay } from '../../msp/backoff.js';
import { RequestTimeoutError } from '../../msp/errors.js';
import type { ApprovalHost } from '../../msp/events.js';
import {
  type ClaimOutcome,
  FencedError,
  FOR_HOST,
  type Mutation,
  type WriteOptions,
} from '../../store/approvalStore.js';
import type { Activity } from '../../util/activity.js';
import { byDeadline, LATE } from '../../util/byDeadline.js';
import { lazyChild } from '../../util/lazyChild.js';
import { closedNotByClaim, decidedByClaim, unanswered, unclaimed } from '../records/decisionMutations.js';
import {
  claimKept,
  type DecisionOutcome,
  type DecisionRequest,
  type Recounted,
  type Unwarranted,
  type WarrantAsk,
} from './decision.js';
import { whyNotDecidable } from './decisionCheck.js';
import { claimKeptUnless, outcomeOfFailure } from './hostRefusal.js';

export type { DecidedBy, DecisionOutcome, DecisionRequest } from './decision.js';

// Deciding, in one place and with no Slack in sight: a click, a remembered grant and an
// escalation timeout all come here. Claim the stage, mint and store the commandId, send
// approval/decide (asking again with the same commandId while the host is up but silent), and
// classify what the host said into an outcome the caller turns into words.

/** What the Decider needs of the RecordKeeper: a stage claimed, and the record changed after. */
export interface DecisionKeeper {
  claim(checked: ApprovalRecord, claim: Claim, abandoned?: () => boolean): Promise<ClaimOutcome>;
  mutateAndSync(
    approvalId: string,
    mutation: Mutation,
    options?: WriteOptions,
  ): Promise<ApprovalRecord | undefined>;
}

/** Where the Decider reads an approval again when it changed under a decision. */
export interface RecordReader {
  get(approvalId: string): Promise<ApprovalRecord | undefined>;
}

export interface DeciderOptions {
  keeper: DecisionKeeper;
  store: RecordReader;
  host: (hostId: string) => ApprovalHost | undefined;
  logger: Logger;
  newCommandId: () => string;
  now?: () => Date;
  random?: () => number;
  /** Pause between asks of a host that is up but left a decide unanswered. */
  unansweredBackoff?: BackoffPolicy;
  /** Whether this process may act for the host (holds its lease); default always. */
  mayAct?: (hostId: string) => boolean;
  /** Hands a decision for a host another replica owns to that replica (DecisionForwarding). */
  forward?: (request: DecisionRequest) => Promise<DecisionOutcome>;
  /** Counts for /metrics (decisions the host accepted). */
  activity?: Activity;
  /**
   * Whether a decision may be made on a record the caller did not check (DecisionWarrant): who
   * may decide, the quorum, the grant or the timeout. Without it, nothing is checked again.
   */
  warrant?: { check(record: ApprovalRecord, ask: WarrantAsk): Promise<Unwarranted | Recounted | undefined> };
  /**
   * A decision carried out again (replay, settle) went through: what its first sender would have
   * done after it, had that send not been cut short (a grant's use counted, its line left).
   * drain() waits for it.
   */
  replayed?: (record: ApprovalRecord, claim: Claim) => Promise<void>;
  /**
   * A decision carried out again (replay, settle) that the host did not take, its claim given
   * back (it is never sent again): what its first sender would have done, had it ended so (a
   * grant's use given back). Not for one kept for the host to come back. drain() waits for it.
   */
  replayDropped?: (record: ApprovalRecord, claim: Claim) => Promise<void>;
}

/** Whether the record still offers the claim's choice. */
function offers(record: ApprovalRecord, claim: Claim): boolean {
  return record.availableChoices.some((c) => c.choiceId === claim.choiceId);
}

/**
 * Whether the record asks, at the claim's stage, a question other than the one the claim was
 * pressed on, or no longer offers its choice: sent, the choice would answer what nobody chose.
 */
function askedSince(record: ApprovalRecord, claim: Claim): boolean {
  return askedOtherwise(record, claim) || !offers(record, claim);
}

/** Re-checks after the approval changed under a decision, before giving up as stale. */
const MAX_CLAIM_ATTEMPTS = 5;
const SENT_MEMORY_MS = 10 * 60_000;
const DEFAULT_UNANSWERED_BACKOFF: BackoffPolicy = { initialMs: 500, maxMs: 15_000 };

interface SendHow {
  /** Asking about a decision the host no longer lists as pending (see settle()). */
  settling?: boolean;
  /** DecisionRequest.onSent. */
  onSent?: () => void;
  /**
   * Whether the claim's grant still answers, read in the round trip that stored the claim: the
   * first send goes on it instead of reading the grant once more (grantStillAnswers).
   */
  grantRead?: Promise<boolean>;
}

export class Decider {
  private readonly now: () => Date;
  private readonly random: () => number;
  private readonly backoff: BackoffPolicy;
  /** approvalId → the send in flight for it. */
  private readonly inFlight = new Map<string, Promise<DecisionOutcome>>();
  /** Decisions between their start and their outcome; drain() waits for them. */
  private readonly active = new Set<Promise<unknown>>();
  /** commandId → the host incarnation it was last sent to: one send per commandId per host process. */
  private readonly sentTo = new Map<string, string>();
  private readonly stopped = new AbortController();

  constructor(private readonly options: DeciderOptions) {
    this.now = options.now ?? (() => new Date());
    this.random = options.random ?? Math.random;
    this.backoff = options.unansweredBackoff ?? DEFAULT_UNANSWERED_BACKOFF;
  }

  /** Claims the stage and sends the decision; resolves with what came of it. Never rejects. */
  decide(request: DecisionRequest): Promise<DecisionOutcome> {
    if (this.stopped.signal.aborted) return Promise.resolve({ kind: 'stopping' });
    if (this.elsewhere(request.record.hostId)) return this.hold(this.forward(request));
    const task = this.decideNow(request).catch((err: unknown): DecisionOutcome => {
      this.options.logger.error({ err, approvalId: request.record.approvalId }, 'decision failed');
      return { kind: 'refused', errorKind: 'internal' };
    });
    return this.hold(task);
  }

  /**
   * A record is in `deciding` but nothing here is sending it: the process restarted or the host
   * died mid-decision. Replaying the same commandId is safe: the host applies it at most once.
   */
  replay(record: ApprovalRecord): void {
    const claim = record.claim;
    if (this.stopped.signal.aborted || !claim || this.inFlight.has(record.approvalId)) return;
    if (this.sentTo.get(claim.commandId) === record.incarnation) return;
    this.options.logger.info(
      { approvalId: record.approvalId, sessionId: record.sessionId, commandId: claim.commandId },
      'replaying an interrupted decision',
    );
    // A decision by grant is sent only while its grant still answers (sendNow): the host still
    // asks, so the first send was never applied, and a grant revoked or ended since must not decide.
    void this.hold(this.send(record, claim).then((outcome) => this.afterReplay(record, claim, outcome)));
  }

  /**
   * A decision in flight whose approval the host no longer lists (the bot died between the host
   * applying it and hearing so). Asking again with the same commandId tells which: the host answers
   * with the original ack if it applied it (then the approval resolved with this choice), or names
   * whoever decided it first.
   */
  settle(record: ApprovalRecord): void {
    const claim = record.claim;
    if (this.stopped.signal.aborted || !claim || this.inFlight.has(record.approvalId)) return;
    this.options.logger.info(
      { approvalId: record.approvalId, sessionId: record.sessionId, commandId: claim.commandId },
      'the host no longer lists an approval being decided; asking with its commandId how it ended',
    );
    void this.hold(
      this.send(record, claim, { settling: true }).then((outcome) =>
        this.afterReplay(record, claim, outcome),
      ),
    );
  }

  private async afterReplay(
    record: ApprovalRecord,
    claim: Claim,
    outcome: DecisionOutcome,
  ): Promise<DecisionOutcome> {
    if (outcome.kind === 'decided') await this.options.replayed?.(record, claim);
    // Kept, it is sent again when the host is back (or the next process starts): not dropped. So
    // is one the host refused whose drop Redis did not store.
    else if (outcome.kind !== 'hostUnavailable' && outcome.kind !== 'stopping' && !claimKept(outcome)) {
      await this.options.replayDropped?.(record, claim);
    }
    return outcome;
  }

  /**
   * The claim a decision of `request` on `record` stores, with a commandId minted here unless
   * given; undefined when the record does not offer the choice. Claims are made only here: by
   * decide(), and for a record created already claimed (GrantAnswerer.claimAtCreate), which
   * decide() then carries out under the same commandId.
   */
  claimFor(
    record: ApprovalRecord,
    request: Pick<DecisionRequest, 'sourceIndex' | 'choiceId' | 'feedback' | 'by'>,
    commandId = this.options.newCommandId(),
  ): Claim | undefined {
    const choice = record.availableChoices.find((c) => c.choiceId === request.choiceId);
    if (!choice) return undefined;
    const { by } = request;
    return {
      sourceIndex: request.sourceIndex,
      ...(by.via === 'click' ? { userId: by.userId } : {}),
      ...(by.via === 'click' && by.voters ? { voters: by.voters } : {}),
      ...(by.via === 'click' && by.stoodInFor ? { stoodInFor: by.stoodInFor } : {}),
      ...(by.via === 'click' && by.onBehalfOf ? { onBehalfOf: by.onBehalfOf } : {}),
      ...(by.via === 'grant' ? { grant: by.grant } : {}),
      via: by.via,
      choiceId: choice.choiceId,
      commandId,
      feedback: choice.acceptsFeedback && request.feedback ? request.feedback : undefined,
      claimedAt: this.now().toISOString(),
    };
  }

  /** Takes no more decisions; resolves once every decision in flight has an outcome. */
  async drain(): Promise<void> {
    this.stopped.abort();
    while (this.active.size > 0) await Promise.allSettled([...this.active]);
  }

  /** Whether a decision for the host is claimed and sent by this process (not forwarded). */
  decidesHere(hostId: string): boolean {
    return !this.elsewhere(hostId);
  }

  /** Another replica owns the host: only it may claim and send. */
  private elsewhere(hostId: string): boolean {
    return this.options.forward !== undefined && this.options.mayAct?.(hostId) === false;
  }

  private forward(request: DecisionRequest): Promise<DecisionOutcome> {
    return this.options.forward!(request).catch((err: unknown): DecisionOutcome => {
      this.options.logger.error(
        { err, approvalId: request.record.approvalId },
        'could not forward the decision',
      );
      return { kind: 'refused', errorKind: 'internal' };
    });
  }

  private hold<T>(task: Promise<T>): Promise<T> {
    this.active.add(task);
    void task.finally(() => this.active.delete(task)).catch(() => {});
    return task;
  }

  private async decideNow(request: DecisionRequest): Promise<DecisionOutcome> {
    const { keeper, store } = this.options;
    const commandId = request.commandId ?? this.options.newCommandId();
    let record = request.record;
    for (let attempt = 1; attempt <= MAX_CLAIM_ATTEMPTS; attempt++) {
      // This very decision was claimed before (carried out again): finish it, never claim anew.
      if (record.claim?.commandId === commandId) {
        const sending = this.inFlight.get(record.approvalId);
        if (sending) return sending;
        // Sent to this very host process already (a replay): the host's answer comes as events.
        if (this.sentTo.get(commandId) === record.incarnation)
          return { kind: 'decided', terminal: undefined };
        // A grant read with the write that stored this very record (a record created claimed)
        // is as fresh as one read now; any other is read again before the send.
        const grantRead = record === request.record ? request.grantRead : undefined;
        return this.send(record, record.claim, grantRead ? { grantRead } : {});
      }
      const why = whyNotDecidable(record, request);
      if (why) return why;
      // The record claimed is the record checked: the caller's own check holds only for the
      // record it was made on, so a forwarded decision or a changed record is checked again.
      let by = request.by;
      if (!(request.warranted && record === request.record)) {
        const verdict = await this.options.warrant?.check(record, request);
        if (verdict?.kind === 'recounted') by = verdict.by;
        else if (verdict) {
          this.options.logger.info(
            { approvalId: record.approvalId, via: request.by.via, refused: verdict.kind },
            'decision refused where it is claimed: it may not be made on the approval as it stands',
          );
          return verdict;
        }
      }
      // Offered: whyNotDecidable said so.
      const claim = this.claimFor(record, { ...request, by }, commandId)!;
      let abandoned = false;
      const claiming = keeper.claim(record, claim, () => abandoned);
      // Read in the claim's round trip, not in one of its own before the send: a revocation
      // stored before the claim is seen, and the auto-decided approval waits no longer.
      const grantRead = claim.via === 'grant' ? this.grantStillAnswers(record, claim) : undefined;
      const outcome = await byDeadline(claiming, request.recordBy);
      if (outcome === LATE) {
        // The person hears that nothing was recorded, so this claim must never decide: should
        // Redis store it, the claim's own task releases it.
        abandoned = true;
        claiming.catch(() => {});
        this.options.logger.warn(
          { approvalId: record.approvalId, commandId },
          'Redis did not store the claim in time; nothing was decided',
        );
        return { kind: 'notRecorded' };
      }
      switch (outcome.kind) {
        case 'claimed':
          return this.send(outcome.record, claim, {
            onSent: request.onSent,
            ...(grantRead ? { grantRead } : {}),
          });
        case 'held':
          return { kind: 'alreadyBeingDecided', ...(outcome.holder ? { holder: outcome.holder } : {}) };
        case 'gone':
          return { kind: 'gone' };
        case 'fenced':
          // Another replica took the host since this one checked: it carries the decision out.
          return this.options.forward ? this.forward({ ...request, commandId }) : { kind: 'hostUnavailable' };
        case 'stale': {
          if (request.onChange === 'return') return { kind: 'changed' };
          // The approval moved on between the check and the claim: check again against what it is now.
          const fresh = await byDeadline(store.get(record.approvalId), request.recordBy);
          if (fresh === LATE) return { kind: 'notRecorded' };
          if (!fresh) return { kind: 'gone' };
          record = fresh;
        }
      }
    }
    return { kind: 'stale' };
  }

  private send(record: ApprovalRecord, claim: Claim, how: SendHow = {}): Promise<DecisionOutcome> {
    // The process it goes to: the record may still name an earlier one the host has not re-listed from.
    this.sentTo.set(claim.commandId, this.options.host(record.hostId)?.incarnation ?? record.incarnation);
    const task = this.sendNow(record, claim, how)
      .catch((err: unknown): DecisionOutcome => {
        this.options.logger.error({ err, approvalId: record.approvalId }, 'sending the decision failed');
        return { kind: 'refused', errorKind: 'internal' };
      })
      .finally(() => {
        this.inFlight.delete(record.approvalId);
        // Once the approval has moved on, the entry can only matter to a late redelivery.
        setTimeout(() => this.sentTo.delete(claim.commandId), SENT_MEMORY_MS).unref();
      });
    this.inFlight.set(record.approvalId, task);
    return task;
  }

  private async sendNow(record: ApprovalRecord, claim: Claim, how: SendHow): Promise<DecisionOutcome> {
    const log = lazyChild(this.options.logger, {
      approvalId: record.approvalId,
      sessionId: record.sessionId,
      commandId: claim.commandId,
    });
    if (record.currentRequirementId.sourceIndex !== claim.sourceIndex) {
      // Never send a choice made for one stage as the answer to another.
      return { kind: 'stale', ...claimKeptUnless(await this.giveBack(record, claim)) };
    }
    // Nor for the same stage asked otherwise since (a host restarted and asking again, or an
    // update, while the claim waited for a replay or a new owner): the requirementId does not tell
    // the two questions apart, so the host would apply the choice to what nobody pressed it on,
    // past the checks (approvers, quorum, typed confirmation) that question asks. Settling, the
    // host no longer asks anything: the same commandId only tells how the decision ended.
    if (!how.settling && askedSince(record, claim)) {
      log().info('the approval was asked otherwise since its choice was made; not sent, given back');
      return { kind: 'stale', ...claimKeptUnless(await this.giveBack(record, claim)) };
    }
    const host = this.options.host(record.hostId);
    if (!host) {
      log().warn({ hostId: record.hostId }, 'no such host; the decision waits for it');
      return { kind: 'hostUnavailable' };
    }
    const params = {
      sessionId: record.sessionId,
      approvalId: record.approvalId,
      commandId: claim.commandId,
      requirementId: record.currentRequirementId,
      choiceId: claim.choiceId,
      ...(claim.feedback ? { feedback: claim.feedback } : {}),
    };
    let grantRead = how.grantRead;
    for (let asked = claim.unanswered ?? 0, first = true; ; first = false) {
      // Each ask goes only while this process holds the host: a lease lost during a backoff makes
      // the claim the new owner's to replay, never asked from two replicas at once.
      if (this.options.mayAct?.(record.hostId) === false) {
        log().info('no longer holds the host; the decision is left to its owner');
        // Nothing was sent: should this process own the host again, its replay is not skipped.
        if (first) this.sentTo.delete(claim.commandId);
        return { kind: 'hostUnavailable' };
      }
      // Each ask of a decision by grant, the first and every one the host left unanswered, goes
      // only while its grant still answers: a revocation stops whatever has not left yet. Not
      // when settling: the host no longer asks, and this only learns how the decision ended.
      if (claim.via === 'grant' && !how.settling) {
        const answers = await (grantRead ?? this.grantStillAnswers(record, claim));
        grantRead = undefined;
        if (!answers) return this.notWarranted(record, claim, log);
      }
      try {
        const answer = host.decide(params);
        how.onSent?.();
        const result = await answer;
        this.options.activity?.count('decisionsSent');
        log().debug(
          { terminal: result.terminal, choiceId: claim.choiceId, userId: claim.userId, via: claim.via },
          'decision accepted',
        );
        // Settling, the resolution a terminal ack stands for was written before and will not come
        // again. Any other ack (one stage passed, or terminal unsaid) did not close the approval,
        // which the host no longer lists: something else closed it, and that close never reached
        // us. The host took the stage all the same, so the outcome stays `decided` (a grant's use
        // is counted, as after a first send's stage ack).
        if (how.settling) {
          await this.mutate(
            record.approvalId,
            result.terminal === true
              ? decidedByClaim(claim.commandId, this.now(), (facts) =>
                  log().warn(
                    facts,
                    'the host asked again what our decide was sent for, then applied it; recorded as its own',
                  ),
                )
              : closedNotByClaim(claim.commandId),
          );
        }
        return { kind: 'decided', terminal: result.terminal };
      } catch (err) {
        // A decide the host left unanswered may or may not have been applied; the same commandId
        // makes asking again safe, and we keep asking for as long as the host is up.
        if (err instanceof RequestTimeoutError && host.isUp() && this.stopped.signal.aborted)
          return this.keptWhileStopping(log, asked);
        if (!(err instanceof RequestTimeoutError) || !host.isUp()) {
          return outcomeOfFailure(err, {
            record,
            claim,
            host,
            log,
            now: this.now,
            ...(how.settling ? { settling: true } : {}),
            mutate: (approvalId, mutation) => this.mutate(approvalId, mutation),
          });
        }
        asked += 1;
        log().warn({ unanswered: asked }, 'the host left the decision unanswered; asking again');
        await this.noteUnanswered(record.approvalId, claim.commandId, asked);
        try {
          await sleep(backoffDelay(asked - 1, this.backoff, this.random), undefined, {
            signal: this.stopped.signal,
          });
        } catch {
          return this.keptWhileStopping(log, asked);
        }
        // The host may ask the stage otherwise while it leaves the decide unanswered (an update,
        // a re-ask): asked again, the choice would answer what nobody pressed it on, as a replay
        // would (above). The first ask may have been taken; the host's resolution tells, and
        // the card asks the question as it is now.
        const current = how.settling
          ? undefined
          : await this.options.store.get(record.approvalId).catch(() => undefined);
        // The stored claim: it holds the question it was pressed on.
        const stored = current?.claim;
        if (current && stored?.commandId === claim.commandId && askedSince(current, stored)) {
          log().info(
            'the approval was asked otherwise while its decide went unanswered; not asked again, given back',
          );
          return { kind: 'stale', ...claimKeptUnless(await this.giveBack(current, claim)) };
        }
      }
    }
  }

  /**
   * This process stops while the host, still up, has left the decide unanswered. The claim is
   * stored and the host may have applied it, so this is not `stopping` (which says nothing was
   * decided): the claim is kept, and the next start or owner sends the same commandId again.
   */
  private keptWhileStopping(log: () => Logger, unanswered: number): DecisionOutcome {
    log().info({ unanswered }, 'stopping with the decision unanswered; its claim is kept for a replay');
    return { kind: 'hostUnavailable', why: 'stopping' };
  }

  /**
   * Whether the grant a claim was made by, as stored now, still answers the record's stage with
   * the claim's choice (DecisionWarrant: one read of the grant). True for any other claim, or
   * with nothing to check it by. False when the grant cannot be read: not knowing is not a
   * warrant. Never rejects.
   */
  async grantStillAnswers(record: ApprovalRecord, claim: Claim): Promise<boolean> {
    const { warrant, logger } = this.options;
    if (claim.via !== 'grant' || !claim.grant || !warrant) return true;
    try {
      const by = { via: 'grant' as const, grant: claim.grant };
      const verdict = await warrant.check(record, {
        sourceIndex: claim.sourceIndex,
        choiceId: claim.choiceId,
        by,
      });
      return verdict === undefined || verdict.kind === 'recounted';
    } catch (err) {
      logger.warn(
        { err, approvalId: record.approvalId },
        'could not read a decision’s grant; not sending it',
      );
      return false;
    }
  }

  /**
   * A decision by grant whose grant no longer answers (revoked, replaced, ended) is not sent: its
   * claim is given back and the question goes to people. A decide already handed to the host
   * cannot be recalled. `claimKept` when Redis did not store the drop: the claim is replayed
   * (and checked) again later, and the use a grant by uses took stays out until then.
   */
  private async notWarranted(
    record: ApprovalRecord,
    claim: Claim,
    log: () => Logger,
  ): Promise<DecisionOutcome> {
    log().info(
      { grantId: claim.grant?.grantId },
      'a decision’s grant no longer answers; not sent, the question goes to people',
    );
    // Not sent: a replay of a claim whose drop was not stored must not be taken for a send.
    this.sentTo.delete(claim.commandId);
    return { kind: 'unwarranted', via: 'grant', ...claimKeptUnless(await this.giveBack(record, claim)) };
  }

  /** Drops our claim and frees its stage, so the question goes back to people. */
  private giveBack(record: ApprovalRecord, claim: Claim): Promise<ApprovalRecord | undefined> {
    return this.mutate(record.approvalId, unclaimed(claim.commandId));
  }

  private async noteUnanswered(approvalId: string, commandId: string, count: number): Promise<void> {
    await this.mutate(approvalId, unanswered(commandId, count));
  }

  /**
   * A record change on the way to an outcome; a Redis failure here must not lose the outcome.
   * What the host said is stored for the host: a replica whose lease ran out (a pause, a
   * partition) before it read the answer stores none of it, since unfenced it would get past the
   * fence of the new owner, whose own claim it could drop. The claim left is the new owner's to
   * replay or settle.
   */
  private async mutate(approvalId: string, mutation: Mutation): Promise<ApprovalRecord | undefined> {
    try {
      return await this.options.keeper.mutateAndSync(approvalId, mutation, FOR_HOST);
    } catch (err) {
      if (err instanceof FencedError) {
        this.options.logger.warn(
          { approvalId, hostId: err.hostId },
          'the host answered a decision after this replica lost the host; left to its new owner',
        );
        return undefined;
      }
      this.options.logger.error({ err, approvalId }, 'could not store what the host said about a decision');
      return undefined;
    }
  }
}
