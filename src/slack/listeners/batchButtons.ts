import type { App } from '@slack/bolt';
import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { z } from 'zod';
import {
  BATCH_APPROVE_ACTION_ID,
  BATCH_REJECT_ACTION_ID,
  BATCH_REJECT_VIEW_CALLBACK_ID,
  BATCH_REVIEW_ACTION_ID,
  FEEDBACK_BLOCK_ID,
} from '../../cards/ids.js';
import {
  type BatchButtonValue,
  BatchButtonValue as BatchValueSchema,
  batchAnswerText,
  decodeBatchValue,
  REJECT_CHECK_FAILED_TEXT,
  REJECT_FORM_FAILED_TEXT,
  REJECT_SUBMIT_CHECK_FAILED_TEXT,
  REVIEW_ONE_BY_ONE_TEXT,
  renderBatchRejectModal,
} from '../../cards/renderBatchSummary.js';
import { readReason } from '../../cards/renderFeedbackModal.js';
import { reasonRequiredText } from '../../cards/renderUserMessages.js';
import { type BatchOutcome, publicOutcome } from '../../domain/batchGroup.js';
import type { BatchTriage } from '../../relay/batching/batchTriage.js';
import type { BatchChecks, BatchDecider, BatchRequest } from '../../relay/deciding/batchDecider.js';
import { RECORD_WITHIN_MS } from '../../relay/deciding/click.js';
import { RETRY_POLICIES, retrySlackCall } from '../slackRetry.js';
import type { SlackViews } from '../slackViews.js';

const PressBody = z.looseObject({
  user: z.looseObject({ id: z.string() }),
  trigger_id: z.string().optional(),
  channel: z.looseObject({ id: z.string() }),
  actions: z.array(z.looseObject({ action_id: z.string(), value: z.string().optional() })).min(1),
});

/** `r`: the members refused on who may decide when the form opened (absent from an earlier release's). */
const RejectMetadata = BatchValueSchema.extend({ c: z.string(), r: z.array(z.number().int()).optional() });

export interface BatchButtonsOptions {
  decider: BatchDecider;
  triage: Pick<BatchTriage, 'noted'>;
  views: SlackViews;
  web: WebClient;
  logger: Logger;
}

/**
 * The batch summary's buttons (docs/slack.md#batch-triage). Each is acknowledged at once; the
 * decisions are made by the BatchDecider (every one checked as a click on its own card), and the
 * clicker alone is told how it went. "Review one by one" decides nothing.
 */
export function registerBatchButtons(app: App, options: BatchButtonsOptions): void {
  const { logger } = options;
  const tell = (channel: string, user: string, text: string) =>
    retrySlackCall(
      () => options.web.chat.postEphemeral({ channel, user, text }),
      RETRY_POLICIES.interactive,
    ).catch((err: unknown) => {
      logger.warn({ err, user }, 'could not answer a batch button');
    });
  const pressed = (body: unknown) => {
    const parsed = PressBody.safeParse(body);
    const value = parsed.success ? decodeBatchValue(parsed.data.actions[0]?.value) : undefined;
    if (!parsed.success || !value) {
      logger.warn('unusable batch button payload');
      return undefined;
    }
    return {
      userId: parsed.data.user.id,
      channel: parsed.data.channel.id,
      trigger: parsed.data.trigger_id,
      value,
    };
  };
  const requestOf = (
    userId: string,
    channel: string,
    value: BatchButtonValue,
    action: 'approve' | 'reject',
    reason?: string,
    refusedBefore: readonly number[] = [],
  ): BatchRequest => ({
    userId,
    channel,
    groupId: value.g,
    members: value.m.map(([approvalId, sourceIndex], i) => ({
      approvalId,
      sourceIndex,
      ...(refusedBefore.includes(i) ? { refusedBefore: true } : {}),
    })),
    action,
    ...(reason ? { reason } : {}),
  });
  /** A batch's checks, or undefined when Redis did not answer by a click's deadline. */
  const checkedInTime = async (
    checking: Promise<BatchChecks>,
    receivedAt: number,
  ): Promise<BatchChecks | undefined> => {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), Math.max(0, receivedAt + RECORD_WITHIN_MS - Date.now()));
    });
    const answered = checking.catch((err: unknown) => {
      logger.error({ err }, 'batch check failed');
      return undefined;
    });
    try {
      return await Promise.race([answered, late]);
    } finally {
      clearTimeout(timer);
    }
  };
  /** Decides (`deciding`), tells the presser how it went, and notes it on the summary. */
  const decide = async (
    channel: string,
    userId: string,
    value: BatchButtonValue,
    deciding: () => Promise<BatchOutcome>,
  ) => {
    let outcome: BatchOutcome;
    try {
      outcome = await deciding();
    } catch (err) {
      logger.error({ err, groupId: value.g }, 'batch decision failed');
      await tell(channel, userId, 'Nothing was decided: Countersign could not read these requests just now.');
      return;
    }
    await tell(channel, userId, batchAnswerText(outcome));
    // Only what someone was allowed to do is kept on the summary for all to see, and nothing of
    // whom they were refused: that is told to them alone, as a refused click on a card is.
    if (outcome.decided.length > 0) {
      await options.triage.noted(value.g, publicOutcome(outcome)).catch((err: unknown) => {
        logger.warn({ err, groupId: value.g }, 'could not note a batch decision on its summary');
      });
    }
  };

  app.action(BATCH_APPROVE_ACTION_ID, async ({ ack, body }) => {
    await ack();
    const press = pressed(body);
    if (!press) return;
    const request = requestOf(press.userId, press.channel, press.value, 'approve');
    await decide(press.channel, press.userId, press.value, () => options.decider.decide(request));
  });

  app.action(BATCH_REJECT_ACTION_ID, async ({ ack, body }) => {
    const receivedAt = Date.now();
    await ack();
    const press = pressed(body);
    if (!press?.trigger) return;
    // As a card's Reject opens its modal only for someone who may submit it, the members are
    // checked first (a refusal audited as a refused modal open on that card), within the trigger's
    // life; they are checked again at submit.
    const request = requestOf(press.userId, press.channel, press.value, 'reject');
    const checks = await checkedInTime(options.decider.check(request, { opening: true }), receivedAt);
    if (!checks) {
      await tell(press.channel, press.userId, REJECT_CHECK_FAILED_TEXT);
      return;
    }
    if (checks.ready.length === 0) {
      const outcome: BatchOutcome = {
        userId: press.userId,
        action: 'reject',
        at: new Date().toISOString(),
        decided: [],
        skipped: [...checks.skipped],
      };
      await tell(press.channel, press.userId, batchAnswerText(outcome));
      return;
    }
    try {
      // Only a refusal of who may decide was audited now: a member skipped for another reason
      // (being decided, under review, Redis late) is checked in full at submit, and audited then.
      const refused = new Set(
        checks.skipped.filter((s) => s.refusal.code === 'notAuthorized').map((s) => s.approvalId),
      );
      const form = {
        decidable: checks.ready.length,
        takesReason: checks.takesReason,
        reasonRequired: checks.reasonRequired,
        quickReasons: checks.quickReasons,
        refused: press.value.m.flatMap(([approvalId], i) => (refused.has(approvalId) ? [i] : [])),
      };
      await options.views.open(press.trigger, renderBatchRejectModal(press.value, press.channel, form));
    } catch (err) {
      logger.warn({ err }, 'could not open the Reject all modal');
      await tell(press.channel, press.userId, REJECT_FORM_FAILED_TEXT);
    }
  });

  app.action(BATCH_REVIEW_ACTION_ID, async ({ ack, body }) => {
    await ack();
    const press = pressed(body);
    if (press) await tell(press.channel, press.userId, REVIEW_ONE_BY_ONE_TEXT);
  });

  app.view(BATCH_REJECT_VIEW_CALLBACK_ID, async ({ ack, body, view }) => {
    const receivedAt = Date.now();
    let metadata: z.infer<typeof RejectMetadata>;
    try {
      metadata = RejectMetadata.parse(JSON.parse(view.private_metadata));
    } catch (err) {
      await ack();
      logger.warn({ err }, 'Reject all modal with unusable private_metadata');
      return;
    }
    const userId = body.user.id;
    const reason = readReason(view.state.values);
    const request = requestOf(userId, metadata.c, metadata, 'reject', reason, metadata.r);
    // Checked before the modal closes, as a card's reject modal is, so that a reason its route
    // requires is asked for in the modal itself; the decisions are made from this check.
    const checks = await checkedInTime(options.decider.check(request), receivedAt);
    const inModal = asksReason(view);
    const refuse = async (text: string, closed: string) => {
      if (inModal) {
        await ack({ response_action: 'errors', errors: { [FEEDBACK_BLOCK_ID]: text } });
        return;
      }
      await ack();
      await tell(metadata.c, userId, closed);
    };
    if (!checks) {
      await refuse(REJECT_SUBMIT_CHECK_FAILED_TEXT, REJECT_CHECK_FAILED_TEXT);
      return;
    }
    if (checks.reasonRequired && !reason) {
      const required = reasonRequiredText(checks.requiredOn, checks.quickReasons.length > 0);
      await refuse(required, `Nothing was rejected. ${required} Please press Reject all again.`);
      return;
    }
    await ack();
    await decide(metadata.c, userId, metadata, () => options.decider.decideChecked(request, checks));
  });
}

/** Whether the submitted modal holds the reason input (none when no member took a reason). */
function asksReason(view: { state?: { values?: unknown }; blocks?: unknown }): boolean {
  const values = view.state?.values;
  if (typeof values === 'object' && values !== null && FEEDBACK_BLOCK_ID in values) return true;
  return (
    Array.isArray(view.blocks) &&
    view.blocks.some((b) => (b as { block_id?: unknown })?.block_id === FEEDBACK_BLOCK_ID)
  );
}
