// Telling one person how something they asked went, after the request's ack: through the
// request's response_url, else an ephemeral message in the channel they asked in.

import type { RespondArguments, RespondFn } from '@slack/bolt';
import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { RenderedMessage } from '../domain/messages.js';
import { classifyRespondError, classifySlackError } from './slackFailures.js';
import { RETRY_POLICIES, retrySlackCall } from './slackRetry.js';

/** Who asked, where, and what the log calls the request (`/countersign`, `a Revoke button`). */
export interface Asker {
  userId: string;
  channelId: string;
  what: string;
  /** Fields the log lines add, such as the subcommand or the grant's id. */
  about?: Record<string, string>;
}

/** An answer for the person alone, as a response_url takes it. */
export function ephemeral(message: RenderedMessage): RespondArguments {
  return { response_type: 'ephemeral', text: message.text, blocks: message.blocks } as RespondArguments;
}

/**
 * The answer, to the person who asked alone. Through the request's response_url first: Slack's
 * own way back, which works wherever the request came from, a DM or a channel the bot is not in.
 * When that fails (the URL refused or unreachable), as an ephemeral message in the channel they
 * asked in, which needs the bot in that channel: so it is the second way, not the first. A post
 * to the response_url whose answer was lost may have landed all the same: the person then reads
 * the answer twice, which beats not at all. One warn line when neither way takes it, with what
 * each said and nothing of the answer or the URL.
 */
export async function answerInPrivate(
  answer: RenderedMessage,
  asker: Asker,
  ways: { respond: RespondFn; web: WebClient; logger: Logger },
  extra: Partial<RespondArguments> = {},
): Promise<void> {
  const { respond, web, logger } = ways;
  const who = { userId: asker.userId, channel: asker.channelId, ...asker.about };
  let responseUrl: string;
  try {
    await respond({ ...ephemeral(answer), ...extra } as RespondArguments);
    return;
  } catch (err) {
    responseUrl = classifyRespondError(err);
  }
  try {
    await retrySlackCall(
      () =>
        web.chat.postEphemeral({
          channel: asker.channelId,
          user: asker.userId,
          text: answer.text,
          ...(answer.blocks.length > 0 ? { blocks: answer.blocks } : {}),
        }),
      RETRY_POLICIES.interactive,
    );
    logger.info(
      { ...who, responseUrl },
      `answered ${asker.what} in an ephemeral message: its response_url failed`,
    );
  } catch (err) {
    logger.warn(
      { ...who, responseUrl, ephemeral: classifySlackError(err) },
      `could not answer ${asker.what}: neither its response_url nor an ephemeral message took the answer`,
    );
  }
}
