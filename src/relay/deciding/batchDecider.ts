import type { Logger } from 'pino';
import {
  BATCH_GROUP_ID_MAX_CHARS,
  BATCH_MAX_MEMBERS,
  type BatchOutcome,
  type BatchRefusal,
  type BatchSkip,
  batchGroupOf,
  firstOfEach,
} from '../../domain/batchGroup.js';
import { timeoutChoice } from '../../domain/decisionWords.js';
import { onceChoice } from '../../domain/grants/match.js';
import { questionDigest } from '../../domain/questionDigest.js';
import type { ApprovalRecord } from '../../domain/record.js';
import type { Refusal } from '../../domain/refusal.js';
import type { Authorizer } from './authorizer.js';
import type { Click, ClickCheck, ClickHandler, ClickRecords } from './clickHandler.js';
import { refusalFor } from './refusals.js';

/** One member as the summary showed it when it was drawn: a batch decides only that stage. */
export interface DrawnMember {
  approvalId: string;
  sourceIndex: number;
  /**
   * Refused to this presser when "Reject all" opened its form, which audited that refusal: the
   * submit's check says it again to the presser alone, and does not audit the one attempt twice.
   */
  refusedBefore?: boolean;
}

export interface BatchRequest {
  userId: string;
  /**
   * The channel the summary's button was pressed in (as Slack says it, never the button's value):
   * only cards of that channel are batch members.
   */
  channel: string;
  groupId: string;
  members: readonly DrawnMember[];
  action: 'approve' | 'reject';
  /** Rejecting: the one reason sent with each rejection. */
  reason?: string;
}

export interface BatchDeciderOptions {
  store: Pick<ClickRecords, 'get'>;
  clicks: Pick<ClickHandler, 'check' | 'decideAsPartOfBatch'>;
  authorizer: Pick<Authorizer, 'quorum'>;
  logger: Logger;
}

/** A member checked as a press of its own card, ready to be decided. */
interface Ready {
  approvalId: string;
  session: string;
  click: Click;
  checked: Extract<ClickCheck, { ok: true }>;
  /** DrawnMember.refusedBefore: a refusal of this attempt is not audited again. */
  refusedBefore?: boolean;
}

/**
 * A batch checked, member by member, before anything is decided: what "Reject all" reads before
 * it opens its modal (whether its presser may decide any, and the routes' reason rules) and at its
 * submit, and what a batch decides from.
 */
export interface BatchChecks {
  /** Members the presser may decide now, each checked as a press of its own card. */
  ready: readonly Ready[];
  /** Members that may not be decided now, and why. */
  skipped: readonly BatchSkip[];
  /**
   * Of `ready`, how many take a reason: their choice accepts feedback, as a card's Reject that
   * opens a reason modal does. The others are sent without one.
   */
  takesReason: number;
  /** A member that takes a reason is on a route whose `rejectReason` is `required`. */
  reasonRequired: boolean;
  /** That member's route, for the words that say so. */
  requiredOn?: string;
  /** The routes' quick reasons of the members that take a reason, each once, in order. */
  quickReasons: string[];
  /** Refused whole (BatchRefusal): no member was read or checked, and none is decided. */
  refused?: BatchRefusal;
}

/**
 * "Approve all once" and "Reject all" of a batch summary: one decision per approval, each checked
 * and claimed exactly as a click on its own card would be (ClickHandler.check: who may decide,
 * audited when refused; the Decider: its own claim, commandId and audit entry). Never a grant.
 * An approval that changed since the summary was drawn (decided elsewhere, its stage moved on,
 * its question no longer the group's) is skipped and named.
 */
export class BatchDecider {
  constructor(private readonly options: BatchDeciderOptions) {}

  async decide(request: BatchRequest): Promise<BatchOutcome> {
    return this.decideChecked(request, await this.check(request));
  }

  /**
   * Checks each member as a press of its card would be, deciding nothing. `opening`: the check
   * before "Reject all" opens its modal (a refusal is audited as a card's refused modal open);
   * otherwise it is the submit's, and `decideChecked` decides from it.
   */
  async check(request: BatchRequest, how: { opening?: boolean } = {}): Promise<BatchChecks> {
    const refused = refusalOf(request);
    if (refused) {
      this.options.logger.warn(
        { userId: request.userId, members: request.members.length, refused },
        'batch that no summary drew: refused whole',
      );
      return {
        ready: [],
        skipped: [],
        takesReason: 0,
        reasonRequired: false,
        quickReasons: [],
        refused,
      };
    }
    const results = await Promise.all(
      firstOfEach(request.members, (member) => member.approvalId).map((member) =>
        this.checkOne(request, member, how),
      ),
    );
    const ready: Ready[] = [];
    const skipped: BatchSkip[] = [];
    let takesReason = 0;
    let reasonRequired = false;
    let requiredOn: string | undefined;
    const quickReasons = new Set<string>();
    for (const result of results) {
      if ('refusal' in result) {
        skipped.push(result);
        continue;
      }
      ready.push(result);
      // The rules of a card's reason modal, which only a choice that takes a reason opens.
      const { choice, rules, record } = result.checked;
      if (!choice.acceptsFeedback) continue;
      takesReason += 1;
      for (const reason of rules.quickReasons) quickReasons.add(reason);
      if (rules.rejectReason === 'required' && !reasonRequired) {
        reasonRequired = true;
        requiredOn = record.route;
      }
    }
    return {
      ready,
      skipped,
      takesReason,
      reasonRequired,
      ...(requiredOn === undefined ? {} : { requiredOn }),
      quickReasons: [...quickReasons],
    };
  }

  /** Decides the members `checks` found ready (from `check` of the same request). */
  async decideChecked(request: BatchRequest, checks: BatchChecks): Promise<BatchOutcome> {
    const results = await Promise.all(checks.ready.map((ready) => this.decideOne(request, ready)));
    const outcome: BatchOutcome = {
      userId: request.userId,
      action: request.action,
      at: new Date().toISOString(),
      decided: [],
      skipped: [...checks.skipped],
      ...(checks.refused ? { refused: checks.refused } : {}),
    };
    for (const result of results) {
      if ('refusal' in result) outcome.skipped.push(result);
      else outcome.decided.push(result);
    }
    return outcome;
  }

  private async checkOne(
    request: BatchRequest,
    member: DrawnMember,
    how: { opening?: boolean },
  ): Promise<Ready | BatchSkip> {
    const { approvalId } = member;
    const record = await this.options.store.get(approvalId).catch((err: unknown) => {
      this.options.logger.warn({ err, approvalId }, 'batch: could not read an approval');
      return null;
    });
    // The members are the button's value, which its presser may have written: a card in another
    // channel is no member of this summary, and is told as an id that does not exist, before any
    // check, which would name its session, state, decider or route to someone who may not see it.
    if (!record || record.slack.channel !== request.channel) {
      return { approvalId, session: '', refusal: { code: 'unknownCard' } };
    }
    const session = record.sessionTitle ?? record.sessionId;
    const skip = (refusal: Refusal): BatchSkip => ({ approvalId, session, refusal });
    const choice =
      request.action === 'approve'
        ? onceChoice(record.availableChoices)
        : timeoutChoice(record.availableChoices);
    if (!record.slack.ts) return skip({ code: 'unknownCard' });
    const click: Click = {
      channel: record.slack.channel,
      ts: record.slack.ts,
      userId: request.userId,
      sourceIndex: member.sourceIndex,
      choiceId: choice?.choiceId ?? '',
      approvalHint: approvalId,
      receivedAt: Date.now(),
      // Opening, a reject is the press that opens a card's reason modal; after, its submit.
      ...(request.action === 'reject' && !how.opening ? { from: 'modal' as const } : {}),
      ...(request.reason && choice?.acceptsFeedback ? { feedback: request.reason } : {}),
    };
    // Who may decide, and whether the stage drawn is still the one asked: as a click on its card.
    const checked = await this.options.clicks
      .check(click, { quiet: member.refusedBefore })
      .catch((err: unknown) => {
        this.options.logger.warn({ err, approvalId }, 'batch: could not check an approval');
        return { ok: false as const, refusal: { code: 'notRecorded' } as Refusal };
      });
    if (!checked.ok) return skip(checked.refusal);
    // Both buttons decide only what the summary asked: a member that since became a question
    // decided one by one (a risk rule, a protected write, a quorum, another command) is skipped,
    // as is one whose choice no longer means what it meant (re-checked on the record the decision
    // is made from, which may be newer than the one read above).
    const meant =
      request.action === 'approve'
        ? onceChoice(checked.record.availableChoices)
        : timeoutChoice(checked.record.availableChoices);
    if (!this.stillInGroup(checked.record, request.groupId) || checked.choice.choiceId !== meant?.choiceId)
      return skip({ code: 'questionChanged' });
    return { approvalId, session, click, checked, ...(member.refusedBefore ? { refusedBefore: true } : {}) };
  }

  private async decideOne(
    request: BatchRequest,
    { approvalId, session, click, checked, refusedBefore }: Ready,
  ): Promise<{ approvalId: string; session: string } | BatchSkip> {
    const skip = (refusal: Refusal): BatchSkip => ({ approvalId, session, refusal });
    // The replica that claims it (the host's owner, maybe another) holds the question to this
    // record's: one re-asked since, which might no longer be the group's, is not decided.
    const asked: Click = { ...click, askedAs: questionDigest(checked.record) };
    // Refused where it is claimed (the owner's own check), it is audited as its card's click
    // would be; not again when the form's opening audited this attempt.
    const outcome = await this.options.clicks.decideAsPartOfBatch(asked, checked, { quiet: refusedBefore });
    if (!outcome) return skip({ code: 'questionChanged' });
    if (outcome.kind === 'decided' || outcome.kind === 'forwarded') return { approvalId, session };
    return skip(refusalFor(outcome, request.userId));
  }

  /** Approving together holds only while the approval still asks what the group asks, by one person. */
  private stillInGroup(record: ApprovalRecord, groupId: string): boolean {
    return batchGroupOf(record, this.options.authorizer.quorum(record))?.groupId === groupId;
  }
}

/**
 * Why no summary drew a request, if none did. Each member costs a read, a check (audited when
 * refused) and perhaps a decision, and the group id becomes a Redis key part: the caps hold here,
 * whichever entry point forgot them. Members are counted as sent, repeats included.
 */
function refusalOf(request: BatchRequest): BatchRefusal | undefined {
  if (request.members.length > BATCH_MAX_MEMBERS) return 'tooManyMembers';
  if (request.groupId.length > BATCH_GROUP_ID_MAX_CHARS) return 'groupIdTooLong';
  return undefined;
}
