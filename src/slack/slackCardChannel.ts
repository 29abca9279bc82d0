import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { CardChannel, RenderedMessage, UserNotifier } from '../relay/ports.js';
import { withRateLimitRetry } from './withRateLimitRetry.js';

/** Cards and ephemeral notes through the Slack Web API. */
export class SlackCardChannel implements CardChannel, UserNotifier {
  constructor(
    private readonly client: WebClient,
    private readonly logger: Logger,
  ) {}

  async post(channel: string, message: RenderedMessage): Promise<{ ts: string }> {
    const result = await withRateLimitRetry(
      () =>
        this.client.chat.postMessage({
          channel,
          text: message.text,
          blocks: message.blocks as never,
          unfurl_links: false,
          unfurl_media: false,
        }),
      {
        onRateLimited: (ms, attempt) =>
          this.logger.warn({ channel, retryAfterMs: ms, attempt }, 'chat.postMessage rate limited'),
      },
    );
    if (!result.ts) throw new Error('chat.postMessage returned no ts');
    return { ts: result.ts };
  }

  async update(channel: string, ts: string, message: RenderedMessage): Promise<void> {
    await withRateLimitRetry(
      () => this.client.chat.update({ channel, ts, text: message.text, blocks: message.blocks as never }),
      {
        onRateLimited: (ms, attempt) =>
          this.logger.warn({ channel, ts, retryAfterMs: ms, attempt }, 'chat.update rate limited'),
      },
    );
  }

  async ephemeral(channel: string, userId: string, text: string): Promise<void> {
    await withRateLimitRetry(() => this.client.chat.postEphemeral({ channel, user: userId, text }));
  }
}
