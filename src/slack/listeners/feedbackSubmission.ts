import type { App } from '@slack/bolt';
import type { Logger } from 'pino';
import { FEEDBACK_BLOCK_ID, FEEDBACK_VIEW_CALLBACK_ID } from '../../cards/ids.js';
import { readReason } from '../../cards/renderFeedbackModal.js';
import { notAuthorizedInModalText, reasonRequiredText } from '../../cards/renderUserMessages.js';
import type { Click, ClickHandler } from '../../relay/deciding/clickHandler.js';
import { reasonMissing } from '../../relay/deciding/reasonRule.js';
import { clickOfModal, takenSubmitAnswer } from './modalClick.js';

/**
 * The reject modal was submitted: check the user again (rules or group membership may have
 * changed since it opened) and the route's reason rule, both before the modal closes, so that a
 * refusal shows in the modal itself; then decide with the chosen choice and the reason.
 */
export function registerFeedbackSubmission(app: App, clicks: ClickHandler, logger: Logger): void {
  app.view(FEEDBACK_VIEW_CALLBACK_ID, async ({ ack, body, view }) => {
    const receivedAt = Date.now();
    const base = clickOfModal(view.private_metadata, body.user.id, receivedAt);
    if (!base) {
      await ack();
      logger.warn('feedback modal with unusable private_metadata');
      return;
    }
    const feedback = readReason(view.state.values);
    const click: Click = { ...base, ...(feedback ? { feedback } : {}) };
    // Bounded by the click's deadline, well inside the 3 s Slack gives the acknowledgement.
    const checked = await clicks.checkInTime(click, clicks.check(click));
    if (!checked.ok && checked.refusal.code === 'notAuthorized') {
      const error = notAuthorizedInModalText(checked.refusal.refused);
      await ack({ response_action: 'errors', errors: { [FEEDBACK_BLOCK_ID]: error } });
      await clicks.refuse(click, checked.refusal);
      return;
    }
    // The rule every person's pick is held to (reasonRule.ts), said in the form itself.
    const missing = checked.ok && reasonMissing(checked.record, checked.choice, checked.rules, feedback);
    if (missing) {
      const error = reasonRequiredText(missing.route, missing.quickReasons);
      await ack({ response_action: 'errors', errors: { [FEEDBACK_BLOCK_ID]: error } });
      return;
    }
    await ack(takenSubmitAnswer(view));
    await clicks.click(click, checked);
  });
}
