import type { App } from '@slack/bolt';
import type { Logger } from 'pino';
import { z } from 'zod';
import { FEEDBACK_VIEW_CALLBACK_ID } from '../../cards/ids.js';
import { readFeedback } from '../../cards/renderFeedbackModal.js';
import type { ClickHandler } from '../../relay/clickHandler.js';

const Metadata = z.object({
  channel: z.string(),
  ts: z.string(),
  sourceIndex: z.number().int(),
  choiceId: z.string(),
});

/** The feedback modal was submitted: decide with the chosen choice and the optional reason. */
export function registerFeedbackSubmission(app: App, clicks: ClickHandler, logger: Logger): void {
  app.view(FEEDBACK_VIEW_CALLBACK_ID, async ({ ack, body, view }) => {
    const receivedAt = Date.now();
    await ack();
    let metadata: z.infer<typeof Metadata>;
    try {
      metadata = Metadata.parse(JSON.parse(view.private_metadata));
    } catch (err) {
      logger.warn({ err }, 'feedback modal with unusable private_metadata');
      return;
    }
    const feedback = readFeedback(view.state.values);
    await clicks.click({ ...metadata, userId: body.user.id, receivedAt, ...(feedback ? { feedback } : {}) });
  });
}
