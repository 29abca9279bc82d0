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
  batchRefusalText,
  REJECT_CHECK_FAILED_TEXT,
  REJECT_FORM_FAILED_TEXT,
  REJECT_FORM_GONE_TEXT,
  REJECT_SUBMIT_CHECK_FAILED_TEXT,
  REVIEW_ONE_BY_ONE_TEXT,
  readBatchValue,
  renderBatchRejectModal,
  renderRejectFormGoneModal,
} from '../../cards/renderBatchSummary.js';
import { readReason } from '../../cards/renderFeedbackModal.js';
import { reasonRequiredText } from '../../cards/renderUserMessages.js';
import { type BatchOutcome, publicOutcome } from '../../domain/batchGroup.js';
import type { BatchTriage } from '../../relay/batching/batchTriage.js';
import type { BatchChecks, BatchDecider, BatchRequest } from '../../relay/deciding/batchDecider.js';
import { RECORD_WITHIN_MS } from '../../relay/deciding/click.js';
import { channelOfGroup } from '../../store/batchGroups.js';
import type { BatchRejectForms } from '../../store/batchRejectForms.js';
import { RETRY_POLICIES, retrySlackCall } from '../slackRetry.js';
import type { SlackViews } from '../slackViews.js';

const PressBody = z.looseObject({
  user: z.looseObject({ id: z.string() }),
  trigger_id: z.string().optional(),
  channel: z.looseObject({ id: z.string() }),
  actions: z.array(z.looseObject({ action_id: z.string(), value: z.string().optional() })).min(1),
});

/**
 * `f`: the form's id where the server keeps what it was opened on (BatchRejectForms). `c`, `g` and
 * `m` come back through Slack's client, which may change them: read only for a form the server no
 * longer knows (expired, replayed, opened by an earlier release, or forged), whose members are
 * checked in full, every refusal audited, and nothing decided. An earlier release's `r` is not read.
 */
const RejectMetadata = BatchValueSchema.extend({ c: z.string(), f: z.string().max(64).optional() });

/** What a "Reject all" submit decides from. */
interface SubmittedForm {
  channel: string;
  value: BatchButtonValue;
  /** Members whose refusal of who may decide was audited for this form already. */
  refused: ReadonlySet<string>;
  /** The server's id of the form: kept again while the form stays open. */
  formId: string;
}

export interface BatchButtonsOptions {
  decider: BatchDecider;
  triage: Pick<BatchTriage, 'noted'>;
  /** The "Reject all" forms open now: what a submit trusts, never the form's metadata. */
  forms: Pick<BatchRejectForms, 'opened' | 'take' | 'kept'>;
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
  const pressed = async (body: unknown) => {
    const parsed = PressBody.safeParse(body);
    if (!parsed.success) {
      logger.warn('unusable batch button payload');
      return undefined;
    }
    const userId = parsed.data.user.id;
    const channel = parsed.data.channel.id;
    const read = readBatchValue(parsed.data.actions[0]?.value);
    if ('refused' in read) {
      if (read.refused !== 'unusable') {
        // No summary drew it: refused whole, before any member is read, and said so.
        logger.warn({ userId, refused: read.refused }, 'batch button that no summary drew');
        await tell(channel, userId, batchRefusalText(read.refused));
      } else logger.warn('unusable batch button payload');
      return undefined;
    }
    return { userId, channel, trigger: parsed.data.trigger_id, value: read.value };
  };
  const requestOf = (
    userId: string,
    channel: string,
    value: BatchButtonValue,
    action: 'approve' | 'reject',
    reason?: string,
    refusedBefore: ReadonlySet<string> = new Set(),
  ): BatchRequest => ({
    userId,
    channel,
    groupId: value.g,
    members: value.m.map(([approvalId, sourceIndex]) => ({
      approvalId,
      sourceIndex,
      ...(refusedBefore.has(approvalId) ? { refusedBefore: true } : {}),
    })),
    action,
    ...(reason ? { reason } : {}),
  });
  /** The form a submit names, as the server kept it; undefined when the server holds none. */
  const submitted = async (
    userId: string,
    metadata: z.infer<typeof RejectMetadata>,
  ): Promise<SubmittedForm | undefined> => {
    const kept = metadata.f
      ? await options.forms.take(userId, metadata.f).catch((err: unknown) => {
          logger.warn({ err }, 'could not read a Reject all form: nothing is decided from it');
          return undefined;
        })
      : undefined;
    if (!kept || !metadata.f) return undefined;
    const value = { g: kept.groupId, m: kept.members.map(([id, index]): [string, number] => [id, index]) };
    return { channel: kept.channel, value, refused: new Set(kept.refused), formId: metadata.f };
  };
  /**
   * The members of a submit whose form the server does not hold, checked only so that each
   * refusal of who may decide is audited as a submit's (one may be audited twice, never not at
   * all): its channel and group are only what Slack's client sent back, so nothing is decided.
   */
  const auditUnkept = (userId: string, metadata: z.infer<typeof RejectMetadata>) =>
    options.decider
      .check(requestOf(userId, metadata.c, { g: metadata.g, m: metadata.m }, 'reject'))
      .catch((err: unknown) => {
        logger.warn({ err }, 'could not check the members of a Reject all form the server does not hold');
      });
  /** A form refused in the modal itself is kept again, with the refusals its submit audited. */
  const keepOpen = async (userId: string, form: SubmittedForm, checks: BatchChecks | undefined) => {
    const refused = [...new Set([...form.refused, ...(checks ? refusedOf(checks) : [])])];
    const kept = { channel: form.channel, groupId: form.value.g, members: form.value.m, refused };
    await options.forms.kept(userId, form.formId, kept).catch((err: unknown) => {
      logger.warn({ err }, 'could not keep a Reject all form: its next submit is checked in full');
    });
  };
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
    // The group is named by the button's value, which the presser may write: only a summary of
    // the channel the decisions were made in is redrawn.
    if (outcome.decided.length > 0 && channelOfGroup(value.g) === channel) {
      await options.triage.noted(value.g, publicOutcome(outcome)).catch((err: unknown) => {
        logger.warn({ err, groupId: value.g }, 'could not note a batch decision on its summary');
      });
    }
  };

  app.action(BATCH_APPROVE_ACTION_ID, async ({ ack, body }) => {
    await ack();
    const press = await pressed(body);
    if (!press) return;
    const request = requestOf(press.userId, press.channel, press.value, 'approve');
    await decide(press.channel, press.userId, press.value, () => options.decider.decide(request));
  });

  app.action(BATCH_REJECT_ACTION_ID, async ({ ack, body }) => {
    const receivedAt = Date.now();
    await ack();
    const press = await pressed(body);
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
        ...(checks.refused ? { refused: checks.refused } : {}),
      };
      await tell(press.channel, press.userId, batchAnswerText(outcome));
      return;
    }
    try {
      // Kept here, not in the form (whose metadata Slack's client may change): which refusals
      // were audited now, so that its submit does not audit them again. Without it (Redis away)
      // the submit audits every refusal: one may then be audited twice, none never.
      const formId = await options.forms
        .opened(press.userId, {
          channel: press.channel,
          groupId: press.value.g,
          members: press.value.m,
          refused: refusedOf(checks),
        })
        .catch((err: unknown) => {
          logger.warn({ err }, 'could not keep a Reject all form: its submit is checked in full');
          return undefined;
        });
      const form = {
        decidable: checks.ready.length,
        takesReason: checks.takesReason,
        reasonRequired: checks.reasonRequired,
        quickReasons: checks.quickReasons,
        ...(formId ? { formId } : {}),
      };
      await options.views.open(press.trigger, renderBatchRejectModal(press.value, press.channel, form));
    } catch (err) {
      logger.warn({ err }, 'could not open the Reject all modal');
      await tell(press.channel, press.userId, REJECT_FORM_FAILED_TEXT);
    }
  });

  app.action(BATCH_REVIEW_ACTION_ID, async ({ ack, body }) => {
    await ack();
    const press = await pressed(body);
    if (press) await tell(press.channel, press.userId, REVIEW_ONE_BY_ONE_TEXT);
  });

  app.view(BATCH_REJECT_VIEW_CALLBACK_ID, async ({ ack, body, view }) => {
    const receivedAt = Date.now();
    let metadata: z.infer<typeof RejectMetadata>;
    try {
      metadata = RejectMetadata.parse(JSON.parse(view.private_metadata));
    } catch (err) {
      // Edited, forged, or drawn before the caps (too many members, too long a group id): no form
      // the server could hold. Said in the form, not in silence, and nothing checked or told where
      // the metadata points.
      await ack(formGone(view));
      logger.warn({ err }, 'Reject all modal with unusable private_metadata');
      return;
    }
    const userId = body.user.id;
    const reason = readReason(view.state.values);
    // Taken once: a second submit of the same form (a replay) is checked in full.
    const form = await submitted(userId, metadata);
    if (!form) {
      // Nothing is decided or told from what the metadata says: the person presses again.
      await ack(formGone(view));
      await auditUnkept(userId, metadata);
      return;
    }
    const request = requestOf(userId, form.channel, form.value, 'reject', reason, form.refused);
    // Checked before the modal closes, as a card's reject modal is, so that a reason its route
    // requires is asked for in the modal itself; the decisions are made from this check.
    const checks = await checkedInTime(options.decider.check(request), receivedAt);
    const inModal = asksReason(view);
    const refuse = async (text: string, closed: string) => {
      if (inModal) {
        // The form stays open, to be sent again: one attempt, whose refusals are now audited.
        await keepOpen(userId, form, checks);
        await ack({ response_action: 'errors', errors: { [FEEDBACK_BLOCK_ID]: text } });
        return;
      }
      await ack();
      await tell(form.channel, userId, closed);
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
    await decide(form.channel, userId, form.value, () => options.decider.decideChecked(request, checks));
  });
}

/**
 * The members a check refused on who may decide, each such refusal audited by it. A member
 * skipped for another reason (being decided, under review, Redis late) is checked in full at the
 * next submit, and audited then.
 */
function refusedOf(checks: BatchChecks): string[] {
  return checks.skipped.filter((s) => s.refusal.code === 'notAuthorized').map((s) => s.approvalId);
}

/** The answer to a submit whose form the server does not hold: in the form, to press again. */
function formGone(view: { state?: { values?: unknown }; blocks?: unknown }) {
  return asksReason(view)
    ? { response_action: 'errors' as const, errors: { [FEEDBACK_BLOCK_ID]: REJECT_FORM_GONE_TEXT } }
    : { response_action: 'update' as const, view: renderRejectFormGoneModal() };
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
