import type { App } from '@slack/bolt';
import type { Logger } from 'pino';
import { z } from 'zod';
import { VIEW_FULL_ACTION_ID } from '../../cards/ids.js';
import { renderFullView } from '../../cards/renderFullView.js';
import type { FullTextOf } from '../../domain/fullText.js';
import type { ApprovalRecord } from '../../domain/record.js';
import type { Authorizer } from '../../relay/deciding/authorizer.js';
import { type ClickHandler, RECORD_WITHIN_MS } from '../../relay/deciding/clickHandler.js';
import { byDeadline, LATE } from '../../util/byDeadline.js';
import type { SlackViews } from '../slackViews.js';

/** Reads a card's record with the full text kept for it (ApprovalStore). */
export interface FullTextReader {
  getWithFullText(
    channel: string,
    ts: string,
    hint: string | undefined,
  ): Promise<{ record: ApprovalRecord; full: FullTextOf } | undefined>;
}

const ViewFullBody = z.looseObject({
  user: z.looseObject({ id: z.string() }),
  trigger_id: z.string(),
  container: z
    .looseObject({ channel_id: z.string().optional(), message_ts: z.string().optional() })
    .optional(),
  channel: z.looseObject({ id: z.string() }).optional(),
  message: z.looseObject({ ts: z.string() }).optional(),
  actions: z.array(z.looseObject({ value: z.string().optional() })).min(1),
});

/**
 * "View full" on a card: the whole request in a modal, for those who may read it (its channel's
 * members and whoever may decide it; never a stranger the route does not let in). A choice
 * pressed in the modal is checked like one on the card.
 */
export function registerViewFullButton(
  app: App,
  deps: {
    reader: FullTextReader;
    views: SlackViews;
    clicks: ClickHandler;
    authorizer: Pick<Authorizer, 'mayRead'>;
    logger: Logger;
  },
): void {
  const { reader, views, clicks, authorizer, logger } = deps;
  app.action(VIEW_FULL_ACTION_ID, async ({ ack, body }) => {
    // The read and the check of who may read are bounded as a click's are: a check that answers
    // after the trigger expired would only lead to a views.open Slack refuses, unsaid.
    const deadline = Date.now() + RECORD_WITHIN_MS;
    const parsed = ViewFullBody.safeParse(body);
    const channel = parsed.success
      ? (parsed.data.channel?.id ?? parsed.data.container?.channel_id)
      : undefined;
    const ts = parsed.success ? (parsed.data.container?.message_ts ?? parsed.data.message?.ts) : undefined;
    // Read while Slack gets its acknowledgement: the trigger to open the modal lasts 3 s.
    const reading =
      parsed.success && channel && ts
        ? reader.getWithFullText(channel, ts, parsed.data.actions[0]?.value || undefined)
        : undefined;
    reading?.catch(() => {});
    await ack();
    if (!parsed.success || !channel || !ts || !reading) {
      logger.warn(
        { issues: parsed.success ? 'no channel or ts' : parsed.error.issues },
        'unusable View full payload',
      );
      return;
    }
    const userId = parsed.data.user.id;
    const late = async (what: string) => {
      logger.warn({ channel, ts, slow: what }, 'View full: too slow to open the modal in time');
      await clicks.refuse({ channel, userId }, { code: 'cannotShowFull', why: 'late' });
    };
    let found: Awaited<typeof reading> | typeof LATE;
    try {
      found = await byDeadline(reading, deadline);
    } catch (err) {
      logger.error({ err, channel, ts }, 'could not read the full text of a card');
      await clicks.refuse({ channel, userId }, { code: 'cannotShowFull', why: 'unreadable' });
      return;
    }
    if (found === LATE) {
      await late('read');
      return;
    }
    if (!found) {
      await clicks.refuse({ channel, userId }, { code: 'cannotShowFull', why: 'gone' });
      return;
    }
    const { record, full } = found;
    let seeing: Awaited<ReturnType<Authorizer['mayRead']>> | typeof LATE;
    try {
      // Slack may be asked who the user is and who is in the channel, each with its 429s waited.
      seeing = await byDeadline(authorizer.mayRead(userId, record), deadline);
    } catch (err) {
      logger.error({ err, approvalId: record.approvalId }, 'could not check who may see a card');
      await clicks.refuse({ channel, userId }, { code: 'cannotShowFull', why: 'unreadable' });
      return;
    }
    if (seeing === LATE) {
      await late('mayRead');
      return;
    }
    if (!seeing.allowed) {
      clicks.audited(record, userId, 'viewFull', seeing.why);
      await clicks.refuse({ channel, userId }, { code: 'notAuthorized', refused: seeing });
      return;
    }
    try {
      await views.open(
        parsed.data.trigger_id,
        renderFullView({ record, full, metadata: { channel, ts, approvalId: record.approvalId } }),
      );
    } catch (err) {
      // Most often a trigger past its 3 s: without a word the presser would wait for nothing.
      logger.warn({ err, approvalId: record.approvalId }, 'could not open the full view');
      await clicks.refuse({ channel, userId }, { code: 'formNotOpened', form: 'fullView' });
    }
  });
}
