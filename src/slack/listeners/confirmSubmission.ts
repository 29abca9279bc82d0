import type { App } from '@slack/bolt';
import type { Logger } from 'pino';
import { CONFIRM_BLOCK_ID, CONFIRM_VIEW_CALLBACK_ID } from '../../cards/ids.js';
import { readConfirmation } from '../../cards/renderConfirmModal.js';
import { confirmationMismatchText, notAuthorizedInModalText } from '../../cards/renderUserMessages.js';
import type { Click, ClickHandler } from '../../relay/deciding/clickHandler.js';
import { clickOfModal, takenSubmitAnswer } from './modalClick.js';

/**
 * The typed confirmation was submitted: it is a click like any other, with the text typed. The
 * ClickHandler checks it against the approval as Redis holds it now (who may decide, the question
 * still open, the target of that question), before the modal closes, so that a wrong text or a
 * refusal of who may decide shows in the modal itself; anything else that stops it (decided
 * elsewhere, the question changed) closes the modal and is said in an ephemeral message, as for
 * a click.
 */
export function registerConfirmSubmission(app: App, clicks: ClickHandler, logger: Logger): void {
  app.view(CONFIRM_VIEW_CALLBACK_ID, async ({ ack, body, view }) => {
    const receivedAt = Date.now();
    const base = clickOfModal(view.private_metadata, body.user.id, receivedAt);
    if (!base) {
      await ack();
      logger.warn('confirm modal with unusable private_metadata');
      return;
    }
    const click: Click = { ...base, typed: readConfirmation(view.state.values) };
    // Bounded by the click's deadline, well inside the 3 s Slack gives the acknowledgement.
    const checked = await clicks.checkInTime(click, clicks.check(click));
    if (!checked.ok && checked.refusal.code === 'notAuthorized') {
      const error = notAuthorizedInModalText(checked.refusal.refused);
      await ack({ response_action: 'errors', errors: { [CONFIRM_BLOCK_ID]: error } });
      await clicks.refuse(click, checked.refusal);
      return;
    }
    if (!checked.ok && checked.refusal.code === 'confirmationMismatch') {
      const error = confirmationMismatchText(checked.refusal.confirmation);
      // Not the text itself: a person may paste anything into the field.
      logger.info(
        { approvalId: checked.approvalId, userId: click.userId },
        'typed confirmation did not match: nothing decided',
      );
      await ack({ response_action: 'errors', errors: { [CONFIRM_BLOCK_ID]: error } });
      return;
    }
    await ack(takenSubmitAnswer(view));
    await clicks.click(click, checked);
  });
}
