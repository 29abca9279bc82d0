import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { renderEscalationDm, renderEscalationReply } from '../cards/renderEscalation.js';
import type { EscalationDm, EscalationReply } from '../domain/escalationNotice.js';
import type { PagerDuty } from '../pagerduty/pagerDuty.js';
import type { EscalationSender } from '../relay/escalation/escalationSteps.js';
import type { PagerDutyOnCall } from '../relay/escalation/oncall.js';
import type { LookupCache } from '../store/lookupCache.js';
import type { SlackNoticeSender } from './slackNotices.js';
import { RETRY_POLICIES, retrySlackCall } from './slackRetry.js';

/** Escalation's thread replies (broadcast when asked) and DMs with buttons. */
export class SlackEscalationSender implements EscalationSender {
  constructor(
    private readonly client: WebClient,
    private readonly notices: SlackNoticeSender,
  ) {}

  async threadReply(
    card: { channel: string; ts: string },
    reply: EscalationReply,
    broadcast: boolean,
  ): Promise<void> {
    const { channel, ts: threadTs } = card;
    const text = renderEscalationReply(reply);
    await retrySlackCall(
      () =>
        this.client.chat.postMessage(
          broadcast
            ? { channel, thread_ts: threadTs, text, unfurl_links: false, reply_broadcast: true }
            : { channel, thread_ts: threadTs, text, unfurl_links: false },
        ),
      RETRY_POLICIES.atMostOnce,
    );
  }

  async directMessage(userId: string, dm: EscalationDm): Promise<{ channel: string; ts: string }> {
    const message = renderEscalationDm(dm.record, {
      waitedMs: dm.waitedMs,
      ...(dm.permalink ? { permalink: dm.permalink } : {}),
      ...(dm.inPlaceOf ? { inPlaceOf: dm.inPlaceOf } : {}),
    });
    const opened = await retrySlackCall(
      () => this.client.conversations.open({ users: userId }),
      RETRY_POLICIES.interactive,
    );
    const channel = opened.channel?.id;
    if (!channel) throw new Error(`conversations.open gave no channel for ${userId}`);
    const posted = await retrySlackCall(
      () =>
        this.client.chat.postMessage({
          channel,
          text: message.text,
          blocks: message.blocks as never,
          unfurl_links: false,
        }),
      RETRY_POLICIES.atMostOnce,
    );
    if (!posted.ts) throw new Error('chat.postMessage gave no ts for the DM');
    return { channel: posted.channel ?? channel, ts: posted.ts };
  }

  permalink(channel: string, ts: string): Promise<string | undefined> {
    return this.notices.permalink(channel, ts);
  }

  nameOf(userId: string): Promise<string | undefined> {
    return this.notices.nameOf(userId);
  }
}

/**
 * PagerDuty's on-call people as Slack users: found by email (users.lookupByEmail, needs
 * users:read.email), and kept in Redis for a short while so every replica asks PagerDuty once.
 */
export class SlackPagerDutyOnCall implements PagerDutyOnCall {
  constructor(
    private readonly pagerDuty: PagerDuty,
    private readonly client: WebClient,
    private readonly cache: LookupCache,
    private readonly options: { ttlMs: number; logger: Logger },
  ) {}

  async slackUsers(source: { scheduleId?: string; escalationPolicyId?: string }): Promise<string[]> {
    const id = source.scheduleId ? `schedule:${source.scheduleId}` : `policy:${source.escalationPolicyId}`;
    const cached = await this.cache.read(id);
    if (cached) return cached.value as string[];
    const people = await this.pagerDuty.onCall(source);
    const users: string[] = [];
    for (const person of people) {
      if (!person.email) continue;
      try {
        const found = await retrySlackCall(
          () => this.client.users.lookupByEmail({ email: person.email! }),
          RETRY_POLICIES.interactive,
        );
        if (found.user?.id && !users.includes(found.user.id)) users.push(found.user.id);
      } catch (err) {
        this.options.logger.warn(
          { err, pagerDutyUser: person.id },
          'no Slack user for a PagerDuty on-call person',
        );
      }
    }
    if (users.length === 0) throw new Error(`nobody on call in PagerDuty ${id} has a Slack user`);
    await this.cache.write(id, users, this.options.ttlMs);
    return users;
  }
}
