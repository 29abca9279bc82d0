import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { renderRequesterDm, renderThreadLine } from '../cards/renderDecisionNotice.js';
import type { NoticeNames, ResolvedRecord } from '../domain/decisionNotice.js';
import type { NoticeSender } from '../relay/deciding/decisionNotices.js';
import { type CardCalls, webClientCardCalls } from './cardCalls.js';
import { ChannelPacer } from './channelPacer.js';
import { RETRY_POLICIES, retrySlackCall } from './slackRetry.js';

/**
 * Thread replies, DMs and the look-ups they need, through the Web API. Messages go out through
 * `calls` (in the bot, the cards' own direct JSON calls: a decision's thread reply is one more
 * post per decision, and the client would serialize it as a form and build two debug lines).
 */
export class SlackNoticeSender implements NoticeSender {
  /** userId → display name; names rarely change and a burst of decisions is often one person's. */
  private readonly names = new Map<string, string>();

  constructor(
    private readonly client: WebClient,
    private readonly logger: Logger,
    private readonly calls: CardCalls = webClientCardCalls(client),
    /** The cards' pacer (channelPacer.ts): a channel's lines go in the room its cards leave. */
    private readonly pacer: ChannelPacer = new ChannelPacer(),
  ) {}

  /** One post of a line to `channel`, at the channel's pace and after its cards. */
  private line(channel: string, args: Parameters<CardCalls['postMessage']>[0]) {
    return this.pacer.post(
      channel,
      'line',
      () => this.calls.postMessage(args),
      RETRY_POLICIES.atMostOnce.maxRetryAfterMs,
    );
  }

  async threadReply(channel: string, threadTs: string, text: string): Promise<void> {
    await retrySlackCall(
      () => this.line(channel, { channel, thread_ts: threadTs, text, unfurl_links: false }),
      RETRY_POLICIES.atMostOnce,
    );
  }

  async decisionLine(
    card: { channel: string; ts: string },
    record: ResolvedRecord,
    names: NoticeNames,
  ): Promise<void> {
    await this.threadReply(card.channel, card.ts, renderThreadLine(record, names));
  }

  async requesterDm(
    userId: string,
    record: ResolvedRecord,
    permalink: string | undefined,
    names: NoticeNames,
  ): Promise<void> {
    await this.directMessage(userId, renderRequesterDm(record, record.hostId, permalink, names));
  }

  /** A line in the channel itself (a grant's use, a revocation), sent at most once. */
  async channelLine(channel: string, text: string): Promise<void> {
    await retrySlackCall(
      () => this.line(channel, { channel, text, unfurl_links: false, unfurl_media: false }),
      RETRY_POLICIES.atMostOnce,
    );
  }

  /** Needs im:write for conversations.open. */
  async directMessage(userId: string, text: string): Promise<void> {
    const opened = await retrySlackCall(
      () => this.client.conversations.open({ users: userId }),
      RETRY_POLICIES.interactive,
    );
    const channel = opened.channel?.id;
    if (!channel) throw new Error(`conversations.open gave no channel for ${userId}`);
    await retrySlackCall(
      () => this.line(channel, { channel, text, unfurl_links: false }),
      RETRY_POLICIES.atMostOnce,
    );
  }

  async permalink(channel: string, ts: string): Promise<string | undefined> {
    try {
      const answer = await retrySlackCall(
        () => this.client.chat.getPermalink({ channel, message_ts: ts }),
        RETRY_POLICIES.interactive,
      );
      return answer.permalink;
    } catch (err) {
      this.logger.warn({ err, channel, ts }, 'no permalink for the card; the DM goes without it');
      return undefined;
    }
  }

  /** Needs users:read; without it (or any answer) the notice mentions the user instead. */
  async nameOf(userId: string): Promise<string | undefined> {
    const known = this.names.get(userId);
    if (known) return known;
    try {
      const { user } = await retrySlackCall(
        () => this.client.users.info({ user: userId }),
        RETRY_POLICIES.interactive,
      );
      const name = user?.profile?.display_name || user?.real_name || user?.name;
      if (name) this.names.set(userId, name);
      return name || undefined;
    } catch (err) {
      this.logger.debug({ err, userId }, 'no name for the user; the notice mentions them');
      return undefined;
    }
  }
}
