import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { refusalText } from '../cards/renderUserMessages.js';
import type { RenderedMessage } from '../domain/messages.js';
import type { Refusal } from '../domain/refusal.js';
import {
  type CardChannel,
  HostLostError,
  markLogged,
  type PostOptions,
  type RefusalNotifier,
} from '../relay/ports.js';
import { KeyedQueue } from '../util/keyedQueue.js';
import { type CardCalls, webClientCardCalls } from './cardCalls.js';
import { cardMetadata } from './cardMetadata.js';
import { CardUpdates } from './cardUpdates.js';
import { SlackChannelIds } from './channelIds.js';
import { ChannelPacer } from './channelPacer.js';
import { findPostedCard } from './findPostedCard.js';
import { type CallFields, type SlackCallHealth, SlackCallLog } from './slackCallLog.js';
import { classifySlackError } from './slackFailures.js';
import {
  RETRY_POLICIES,
  type RetryTiming,
  realTiming,
  retrySlackCall,
  SlackStoppedError,
} from './slackRetry.js';

export interface SlackCardChannelOptions {
  /** Told when Slack refuses the token or a scope, and when a card call lands: health reads it. */
  health?: SlackCallHealth;
  now?: () => Date;
  timing?: RetryTiming;
  /** How cards are posted and updated; through `client` when not given (see cardCalls.ts). */
  calls?: CardCalls;
  /** Paces every post to a channel, the notices' too (channelPacer.ts); one of its own if not given. */
  pacer?: ChannelPacer;
  /** The bot's own bot id once auth.test has said it: a lost post's card is looked for among its messages. */
  botId?: () => string | undefined;
  /**
   * The IDs of `#name` channels (channelIds.ts): a card is posted to the ID its channel's name
   * was first found as, never by name, and paced by it; conversations.history takes only IDs.
   * One of its own if not given.
   */
  channelIds?: SlackChannelIds;
}

interface Posted {
  ts: string;
  channel: string;
}

/**
 * Cards and ephemeral notes through the Slack Web API.
 *
 * Posts go out one at a time per channel, in the order they were asked for: Slack allows about
 * one message per second per channel, and a card posted out of turn would show a burst of
 * approvals in the wrong order. They go at the channel's pace (channelPacer.ts), ahead of the
 * channel's lines; a 429 waits out its Retry-After at the head of its own channel's queue only,
 * other channels keep posting.
 *
 * A card is never posted twice: every card carries its approvalId in message metadata, and once
 * a post's answer is lost (5xx, timeout, reset: Slack may have posted it) the card is looked for
 * in the channel's history before any further post. Updates are retried until they land
 * (cardUpdates.ts). stop() ends every wait for a retry.
 */
export class SlackCardChannel implements CardChannel, RefusalNotifier {
  private readonly postQueues = new KeyedQueue();
  private readonly stopping = new AbortController();
  private readonly log: SlackCallLog;
  private readonly updates: CardUpdates;
  private readonly now: () => Date;
  private readonly timing: RetryTiming;
  /** approvalId → when a post whose answer was lost was first tried; cleared once it is posted. */
  private readonly lostPosts = new Map<string, Date>();
  private readonly calls: CardCalls;
  private readonly pacer: ChannelPacer;
  private readonly botId: () => string | undefined;
  private readonly channelIds: SlackChannelIds;

  constructor(
    private readonly client: WebClient,
    private readonly logger: Logger,
    options: SlackCardChannelOptions = {},
  ) {
    this.log = new SlackCallLog(logger, options.health);
    this.now = options.now ?? (() => new Date());
    this.timing = options.timing ?? realTiming;
    this.calls = options.calls ?? webClientCardCalls(client);
    this.pacer = options.pacer ?? new ChannelPacer();
    this.botId = options.botId ?? (() => undefined);
    this.channelIds = options.channelIds ?? new SlackChannelIds(client, { ttlMs: 5 * 60_000, logger });
    this.updates = new CardUpdates(this.calls, this.log, this.stopping.signal, { timing: this.timing });
  }

  post(channel: string, render: () => RenderedMessage, options: PostOptions): Promise<Posted> {
    // Paced by ID, as the channel's lines are, once a post has told which ID a #name is.
    const paceKey = this.channelIds.idNow(channel) ?? channel;
    // Announced at once, not when its turn comes: the channel's lines wait behind every card queued.
    const done = this.pacer.cardComing(paceKey);
    return this.postQueues
      .run(channel, () => this.postNow(channel, paceKey, render(), options))
      .finally(done);
  }

  busy(channel: string): boolean {
    return this.postQueues.busy(channel);
  }

  update(channel: string, ts: string, message: RenderedMessage, mayAct?: () => boolean): Promise<void> {
    return this.updates.update(channel, ts, message, mayAct);
  }

  /** What came of a click, in the words cards/ gives it, to the person who clicked only. */
  refuse(channel: string, userId: string, refusal: Refusal): Promise<void> {
    return this.ephemeral(channel, userId, refusalText(refusal));
  }

  async ephemeral(channel: string, userId: string, text: string): Promise<void> {
    const fields: CallFields = { method: 'chat.postEphemeral', channel };
    try {
      await retrySlackCall(
        () => this.client.chat.postEphemeral({ channel, user: userId, text }),
        RETRY_POLICIES.interactive,
        this.retryHooks(fields),
      );
    } catch (err) {
      this.gaveUp(fields, err);
      throw err;
    }
  }

  /** Ends every wait for a retry or a turn to post: what is waiting rejects with SlackStoppedError. */
  stop(): void {
    this.stopping.abort();
    this.pacer.stop();
  }

  private async postNow(
    channel: string,
    paceKey: string,
    message: RenderedMessage,
    options: PostOptions,
  ): Promise<Posted> {
    const { approvalId } = options;
    const fields: CallFields = { method: 'chat.postMessage', channel, approvalId };
    const firstAttempt = this.now();
    let lookSince = earliest(options.postedSince, this.lostPosts.get(approvalId));
    let attempts = 0;
    let target: string | undefined;
    const attempt = async (): Promise<Posted> => {
      attempts += 1;
      if (options.mayAct && !options.mayAct()) throw new HostLostError();
      // A #name is posted to by the ID it was first found as, never by name: Slack would post to
      // whichever channel has the name now, another's once the route's channel was renamed.
      target ??= this.channelIds.idNow(channel) ?? (await this.channelIds.id(channel));
      const to = target;
      if (to !== channel) fields.channelId = to;
      if (lookSince) {
        const found = await this.lookFor(to, approvalId, lookSince);
        if (found) {
          // It was rendered by that earlier attempt, perhaps from an older record (a process that
          // died mid-post): it is brought to what the record says now.
          this.update(found.channel, found.ts, message).catch((err: unknown) => {
            this.logger.warn({ err, approvalId, ts: found.ts }, 'could not update the card found posted');
          });
          return found;
        }
      }
      try {
        const result = await this.pacer.post(
          paceKey,
          'card',
          () => {
            // Asked again when its turn comes: a post may wait out a 429 here for up to a minute,
            // and a replica whose lease ran out meanwhile must leave the card to its new owner.
            if (options.mayAct && !options.mayAct()) throw new HostLostError();
            return this.calls.postMessage({
              channel: to,
              text: message.text,
              blocks: message.blocks as never,
              metadata: cardMetadata(approvalId, message.facts),
              unfurl_links: false,
              unfurl_media: false,
            });
          },
          RETRY_POLICIES.post.maxRetryAfterMs,
        );
        if (!result.ts) throw new Error('chat.postMessage returned no ts');
        return { ts: result.ts, channel: result.channel ?? to };
      } catch (err) {
        if (classifySlackError(err).kind === 'retry') {
          lookSince ??= firstAttempt;
          // Kept past a give-up, so that the relay's next try looks first too.
          this.lostPosts.set(approvalId, lookSince);
        }
        throw err;
      }
    };
    try {
      const posted = await retrySlackCall(attempt, RETRY_POLICIES.post, this.retryHooks(fields));
      this.lostPosts.delete(approvalId);
      this.channelIds.learn(channel, posted.channel);
      this.log.landed(fields, attempts);
      return posted;
    } catch (err) {
      this.gaveUp(fields, err);
      throw err;
    }
  }

  /**
   * The card of `approvalId` if an earlier attempt posted it. A lookup Slack may answer later
   * (429, 5xx) throws, to be retried before anything is posted. So does one refused because the
   * bot is not in the channel (docs/slack.md, "Inviting the bot"): the earlier post may have
   * landed all the same (an app still granted chat:write.public, a bot removed since), so
   * nothing is posted until a lookup can tell; the post gives up with the line that says to
   * invite the bot, and the next try looks first. One Slack refuses otherwise (a missing history
   * scope, say) is logged and counts as not found: a second card beats none.
   */
  private async lookFor(channelId: string, approvalId: string, since: Date): Promise<Posted | undefined> {
    // Another app may post a card's metadata too; only a message of the bot's own is its card.
    const botId = this.botId();
    if (!botId) {
      throw new Error(
        `cannot tell whether the lost post to ${channelId} landed before Slack has said who the bot is; not posting it again yet`,
      );
    }
    try {
      const ts = await findPostedCard(this.client, { channel: channelId, approvalId, since, botId });
      if (!ts) return undefined;
      this.logger.info(
        { approvalId, channel: channelId, ts },
        'found the card of a post whose answer was lost',
      );
      return { ts, channel: channelId };
    } catch (err) {
      const failure = classifySlackError(err);
      if (failure.kind === 'rateLimited' || failure.kind === 'retry' || failure.kind === 'notInChannel')
        throw err;
      this.logger.error(
        { method: 'conversations.history', channel: channelId, approvalId, failure },
        'cannot look for a card whose post answer was lost (the app needs channels:history and groups:history); posting it again',
      );
      return undefined;
    }
  }

  private retryHooks(fields: CallFields) {
    return {
      signal: this.stopping.signal,
      timing: this.timing,
      onRetry: this.log.retrying.bind(this.log, fields),
    };
  }

  private gaveUp(fields: CallFields, err: unknown): void {
    if (err instanceof SlackStoppedError) return;
    if (err instanceof HostLostError) {
      // Not a failure of Slack's: the replica that runs the host now posts or finds the card.
      this.logger.warn(fields, 'card not posted: this replica lost its host; left to the new owner');
      markLogged(err);
      return;
    }
    this.log.gaveUp(fields, classifySlackError(err), `${fields.method} failed`);
    markLogged(err);
  }
}

function earliest(a: Date | undefined, b: Date | undefined): Date | undefined {
  if (!a || !b) return a ?? b;
  return a.getTime() <= b.getTime() ? a : b;
}
