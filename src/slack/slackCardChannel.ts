import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { CardChannel, RenderedMessage, UserNotifier } from '../relay/ports.js';
import { KeyedQueue } from '../util/keyedQueue.js';
import { classifySlackError } from './slackFailures.js';
import { withRateLimitRetry } from './withRateLimitRetry.js';

export interface SlackCardChannelOptions {
  /** Told when Slack refuses the token itself: health reads it. */
  onFatal?: (error: string) => void;
}

/**
 * Cards and ephemeral notes through the Slack Web API.
 *
 * Posts go out one at a time per channel, in the order they were asked for: Slack allows about
 * one message per second per channel, and a card posted out of turn would show a burst of
 * approvals in the wrong order. A 429 waits out its Retry-After at the head of its own channel's
 * queue only; other channels keep posting.
 */
export class SlackCardChannel implements CardChannel, UserNotifier {
  private readonly postQueues = new KeyedQueue();

  constructor(
    private readonly client: WebClient,
    private readonly logger: Logger,
    private readonly options: SlackCardChannelOptions = {},
  ) {}

  async post(channel: string, render: () => RenderedMessage): Promise<{ ts: string; channel: string }> {
    const result = await this.postQueues.run(channel, () => {
      const message = render();
      return this.call('chat.postMessage', channel, () =>
        this.client.chat.postMessage({
          channel,
          text: message.text,
          blocks: message.blocks as never,
          unfurl_links: false,
          unfurl_media: false,
        }),
      );
    });
    if (!result.ts) throw new Error('chat.postMessage returned no ts');
    // chat.update and clicks know the channel only by ID, even when it was posted to by name.
    return { ts: result.ts, channel: result.channel ?? channel };
  }

  async update(channel: string, ts: string, message: RenderedMessage): Promise<void> {
    await this.call('chat.update', channel, () =>
      this.client.chat.update({ channel, ts, text: message.text, blocks: message.blocks as never }),
    );
  }

  async ephemeral(channel: string, userId: string, text: string): Promise<void> {
    await this.call('chat.postEphemeral', channel, () =>
      this.client.chat.postEphemeral({ channel, user: userId, text }),
    );
  }

  /** One Slack call: 429s retried after Retry-After, every other failure named once in the log. */
  private async call<T>(method: string, channel: string, run: () => Promise<T>): Promise<T> {
    try {
      return await withRateLimitRetry(run, {
        onRateLimited: (retryAfterMs, attempt) =>
          this.logger.warn(
            { method, channel, retryAfterMs, attempt },
            'slack rate limited; retrying after Retry-After',
          ),
      });
    } catch (err) {
      const failure = classifySlackError(err);
      if (failure.kind === 'fatal') {
        this.logger.fatal(
          { method, channel, error: failure.error },
          'slack refused the bot token or its scopes',
        );
        this.options.onFatal?.(failure.error);
      } else if (failure.kind === 'notInChannel') {
        this.logger.error(
          { method, channel, error: failure.error },
          'the bot cannot post in this channel: invite it with /invite @countersign, or check SLACK_CHANNEL',
        );
      } else {
        this.logger.error({ method, channel, failure }, 'slack call failed');
      }
      throw err;
    }
  }
}
