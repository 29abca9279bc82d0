import type { App } from '@slack/bolt';
import type { ModalView } from '@slack/types';
import type { Logger } from 'pino';
import { z } from 'zod';
import {
  CHOICE_ACTION_PATTERN,
  decodeChoiceValue,
  FULL_VIEW_CALLBACK_ID,
  REMEMBER_ACTION_PATTERN,
} from '../../cards/ids.js';
import { renderFeedbackModal } from '../../cards/renderFeedbackModal.js';
import { renderFullViewOutdated, renderFullViewSent } from '../../cards/renderFullView.js';
import { subjectSummary } from '../../cards/subjectSummary.js';
import type { Click, ClickCheck, ClickHandler } from '../../relay/deciding/clickHandler.js';
import { reasonMissing } from '../../relay/deciding/reasonRule.js';
import type { SlackViews } from '../slackViews.js';
import { confirmModal } from './confirmModal.js';

const BlockActionBody = z.looseObject({
  user: z.looseObject({ id: z.string() }),
  trigger_id: z.string().optional(),
  container: z
    .looseObject({ channel_id: z.string().optional(), message_ts: z.string().optional() })
    .optional(),
  channel: z.looseObject({ id: z.string() }).optional(),
  message: z.looseObject({ ts: z.string() }).optional(),
  actions: z.array(z.looseObject({ action_id: z.string(), value: z.string().optional() })).min(1),
  /** Set when the button is in a modal (the full view) rather than on the card. */
  view: z
    .looseObject({
      id: z.string(),
      callback_id: z.string().optional(),
      private_metadata: z.string().optional(),
    })
    .optional(),
});
type BlockActionBody = z.infer<typeof BlockActionBody>;

const FullViewMetadata = z.object({ channel: z.string(), ts: z.string(), approvalId: z.string() });

/**
 * The card a press is for: the message it is on, or, for a press in the full view, the card that
 * view was opened from (its private_metadata), with the view to update.
 */
function cardOf(body: BlockActionBody): { channel?: string; ts?: string; viewId?: string } {
  if (body.view?.callback_id === FULL_VIEW_CALLBACK_ID) {
    try {
      const { channel, ts } = FullViewMetadata.parse(JSON.parse(body.view.private_metadata ?? ''));
      return { channel, ts, viewId: body.view.id };
    } catch {
      return {};
    }
  }
  return {
    channel: body.channel?.id ?? body.container?.channel_id,
    ts: body.container?.message_ts ?? body.message?.ts,
  };
}

/**
 * What the full view a press came from becomes: it gives up its buttons once one counted (the
 * card shows what comes of it), or once one was refused for a question asked otherwise since (the
 * card is redrawn; the view's buttons all carry the old question). Otherwise it stays as it is.
 */
function fullViewAfter(checked: ClickCheck): ModalView | undefined {
  if (checked.ok) {
    // A press that opened no reason form the route requires (no trigger_id) is refused before
    // anything is sent (ClickHandler): the view must not say a choice was made.
    if (reasonMissing(checked.record, checked.choice, checked.rules, undefined)) return undefined;
    return renderFullViewSent(checked.choice.label || checked.choice.choiceId);
  }
  if (checked.refusal.code === 'questionChanged') return renderFullViewOutdated();
  return undefined;
}

/**
 * Opens the form a press asks for before it decides: on top of the full view it came from
 * (`viewId`), else on its own. When Slack does not (a trigger past its 3 s, Slack away), nothing
 * was decided and nothing else would say so: the presser is told, and to press again.
 */
async function openForm(
  deps: { views: SlackViews; clicks: ClickHandler; logger: Logger },
  at: { channel: string; userId: string; viewId?: string | undefined },
  form: 'reason' | 'confirmation',
  open: { triggerId: string; modal: ModalView },
): Promise<void> {
  try {
    if (at.viewId) await deps.views.push(open.triggerId, open.modal);
    else await deps.views.open(open.triggerId, open.modal);
  } catch (err) {
    deps.logger.warn({ err, form }, 'Slack did not open the form of a press: nothing decided');
    await deps.clicks.refuse({ channel: at.channel, userId: at.userId }, { code: 'formNotOpened', form });
  }
}

/** The longest a press waits for its decision to leave before Slack is answered anyway. */
export const ACK_WAIT_MS = 250;

/** What a choice press needs: its block_actions body, the acknowledgement, and which kind it was. */
export type ChoicePress = (
  body: unknown,
  ack: () => Promise<void>,
  how: { remember: boolean },
) => Promise<void>;

/** The kind of press an action_id is, or undefined when it is not a choice button. */
export function choiceActionKind(actionId: string): { remember: boolean } | undefined {
  if (REMEMBER_ACTION_PATTERN.test(actionId)) return { remember: true };
  if (CHOICE_ACTION_PATTERN.test(actionId)) return { remember: false };
  return undefined;
}

/**
 * A press on a choice button. The button's value only says which button it was and the question
 * it showed (a digest); the approval and what may be decided come from Redis. Bolt's listeners call it, and in HTTP mode so does
 * the route that takes presses before Bolt (choicePressRoute.ts).
 */
export function choicePresses(clicks: ClickHandler, views: SlackViews, logger: Logger): ChoicePress {
  return async function pressed(body, ack, how) {
    const receivedAt = Date.now();
    const parsed = BlockActionBody.safeParse(body);
    const { channel, ts, viewId } = parsed.success ? cardOf(parsed.data) : {};
    const value = parsed.success ? decodeChoiceValue(parsed.data.actions[0]?.value) : undefined;
    // Slack is answered once the decision is on its way to the agent, so that neither the answer's
    // write nor the wake-up of whoever reads it stands between the click and the decide; at
    // once when nothing will be decided, and never later than ACK_WAIT_MS after the press (Slack
    // wants it within 3 s, while a claim may wait for Redis longer than that).
    let acknowledged: Promise<void> | undefined;
    const acknowledge = (): Promise<void> => {
      acknowledged ??= ack();
      return acknowledged;
    };
    const ackBy = setTimeout(() => {
      acknowledge().catch((err: unknown) => logger.warn({ err }, 'could not acknowledge a press'));
    }, ACK_WAIT_MS);
    const click: Click | undefined =
      parsed.success && channel && ts && value
        ? {
            channel,
            ts,
            userId: parsed.data.user.id,
            sourceIndex: value.s,
            choiceId: value.c,
            approvalHint: value.a,
            receivedAt,
            ...(how.remember ? { remember: true } : {}),
            ...(how.remember && value.k !== undefined ? { rememberScope: value.k } : {}),
            // The question the button showed: it decides only while that is still asked.
            ...(value.d !== undefined ? { askedAs: value.d } : { namesNoQuestion: true as const }),
            // Handed to the host within this turn of the event loop: answered right after it.
            onSent: () => setImmediate(() => void acknowledge().catch(() => {})),
          }
        : undefined;
    try {
      const checking = click ? clicks.check(click) : undefined;
      checking?.catch(() => {});
      if (!parsed.success || !channel || !ts) {
        await acknowledge();
        logger.warn(
          { issues: parsed.success ? 'no channel or ts' : parsed.error.issues },
          'unusable block_actions payload',
        );
        return;
      }
      if (!click || !checking) {
        await acknowledge();
        await clicks.refuse({ channel, userId: parsed.data.user.id }, { code: 'unknownCard' });
        return;
      }
      // The check includes who may decide: a modal only opens for someone who may submit it.
      const checked = await clicks.checkInTime(click, checking);
      if (!checked.ok) await acknowledge();
      if (checked.ok && !how.remember && checked.choice.acceptsFeedback && parsed.data.trigger_id) {
        await acknowledge();
        const { record, rules } = checked;
        const subject = subjectSummary(record);
        // From the full view the reason modal goes on top of it; its submit closes both.
        const modal = renderFeedbackModal({
          metadata: {
            channel,
            ts,
            sourceIndex: click.sourceIndex,
            choiceId: click.choiceId,
            approvalId: record.approvalId,
            // Its submit decides only the question the button showed (checked just now).
            ...(click.askedAs !== undefined ? { askedAs: click.askedAs } : {}),
          },
          choiceLabel: checked.choice.label,
          tool: record.tool,
          ...(subject ? { subject } : {}),
          rejectReason: rules.rejectReason,
          quickReasons: rules.quickReasons,
        }) as never;
        await openForm({ views, clicks, logger }, { channel, userId: click.userId, viewId }, 'reason', {
          triggerId: parsed.data.trigger_id,
          modal,
        });
        return;
      }
      // An approval a risk rule asks to confirm: the press opens the modal, its submit decides.
      if (!checked.ok && checked.refusal.code === 'confirmationNeeded' && parsed.data.trigger_id) {
        const modal = checked.record && confirmModal(click, checked.record, checked.refusal.confirmation);
        if (modal) {
          await acknowledge();
          await openForm(
            { views, clicks, logger },
            { channel, userId: click.userId, viewId },
            'confirmation',
            { triggerId: parsed.data.trigger_id, modal: modal as never },
          );
          return;
        }
      }
      const after = viewId ? fullViewAfter(checked) : undefined;
      const sent =
        viewId && after
          ? views.update(viewId, after).catch((err: unknown) => {
              logger.warn({ err, viewId }, 'could not update the full view');
            })
          : undefined;
      await Promise.all([clicks.click(click, checked), sent]);
    } finally {
      clearTimeout(ackBy);
      await acknowledge();
    }
  };
}

export function registerChoiceButton(app: App, pressed: ChoicePress): void {
  // "Approve and don't ask again" is a click like any other, with a grant made once it is decided.
  app.action(REMEMBER_ACTION_PATTERN, async ({ ack, body }) => {
    await pressed(body, ack, { remember: true });
  });
  app.action(CHOICE_ACTION_PATTERN, async ({ ack, body }) => {
    await pressed(body, ack, { remember: false });
  });
}
