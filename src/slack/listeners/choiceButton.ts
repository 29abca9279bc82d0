import type { App } from '@slack/bolt';
import type { Logger } from 'pino';
import { z } from 'zod';
import { CHOICE_ACTION_PATTERN, decodeChoiceValue } from '../../cards/ids.js';
import { renderFeedbackModal } from '../../cards/renderFeedbackModal.js';
import type { ClickHandler } from '../../relay/clickHandler.js';

const BlockActionBody = z.looseObject({
  user: z.looseObject({ id: z.string() }),
  trigger_id: z.string().optional(),
  container: z
    .looseObject({ channel_id: z.string().optional(), message_ts: z.string().optional() })
    .optional(),
  channel: z.looseObject({ id: z.string() }).optional(),
  message: z.looseObject({ ts: z.string() }).optional(),
  actions: z.array(z.looseObject({ action_id: z.string(), value: z.string().optional() })).min(1),
});

/**
 * A press on a choice button. The button's value only says which button it was; the approval
 * and what may be decided come from Redis.
 */
export function registerChoiceButton(app: App, clicks: ClickHandler, logger: Logger): void {
  app.action(CHOICE_ACTION_PATTERN, async ({ ack, body, client }) => {
    await ack();
    const parsed = BlockActionBody.safeParse(body);
    const channel = parsed.success
      ? (parsed.data.channel?.id ?? parsed.data.container?.channel_id)
      : undefined;
    const ts = parsed.success ? (parsed.data.container?.message_ts ?? parsed.data.message?.ts) : undefined;
    if (!parsed.success || !channel || !ts) {
      logger.warn(
        { issues: parsed.success ? 'no channel or ts' : parsed.error.issues },
        'unusable block_actions payload',
      );
      return;
    }
    const userId = parsed.data.user.id;
    const value = decodeChoiceValue(parsed.data.actions[0]?.value);
    if (!value) {
      await clicks.refuse(channel, userId, { code: 'unknownCard' });
      return;
    }
    const click = { channel, ts, userId, sourceIndex: value.s, choiceId: value.c, approvalHint: value.a };
    const checked = await clicks.check(click);
    if (checked.ok && checked.choice.acceptsFeedback && parsed.data.trigger_id) {
      await client.views.open({
        trigger_id: parsed.data.trigger_id,
        view: renderFeedbackModal({
          metadata: { channel, ts, sourceIndex: value.s, choiceId: value.c },
          choiceLabel: checked.choice.label,
          tool: checked.record.tool,
        }) as never,
      });
      return;
    }
    await clicks.click(click, checked);
  });
}
