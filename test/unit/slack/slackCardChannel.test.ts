import { afterEach, describe, expect, it } from 'vitest';
import type { RenderedMessage } from '../../../src/domain/messages.js';
import { HostLostError } from '../../../src/relay/ports.js';
import { cardMetadata } from '../../../src/slack/cardMetadata.js';
import { SlackCardChannel } from '../../../src/slack/slackCardChannel.js';
import { type RetryTiming, realTiming } from '../../../src/slack/slackRetry.js';
import { createWebClient } from '../../../src/slack/webClient.js';
import { toBoltLogger } from '../../../src/util/log.js';
import { FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';
import { FakeSlack, type SlackFault } from '../../support/fakeSlack.js';
import { captureLogger } from '../../support/logCapture.js';
import { until } from '../../support/until.js';

// Posting a card against the fake Slack through the real Web API client: whatever becomes of an
// attempt's answer, the channel ends up with exactly one card per approval.

let slack: FakeSlack | undefined;
afterEach(async () => {
  await slack?.close();
  slack = undefined;
});

/** Backoff waits cut short (Retry-After too): these tests are about what is sent, not when. */
const quick: RetryTiming = {
  sleep: (ms, signal) => realTiming.sleep(Math.min(ms, 20), signal),
  random: Math.random,
};

async function setup() {
  slack = await FakeSlack.start();
  const { logger, lines } = captureLogger();
  const web = createWebClient({
    token: FAKE_SLACK_BOT_TOKEN,
    apiUrl: slack.apiUrl,
    timeoutMs: 300,
    logger: toBoltLogger(logger.child({ component: 'slack-web-api' })),
  });
  const cards = new SlackCardChannel(web, logger, { timing: quick, botId: () => 'B_BOT' });
  return { slack, web, cards, lines };
}

const card = (text: string): RenderedMessage => ({
  text,
  blocks: [{ type: 'section', text: { type: 'mrkdwn', text } }],
});

describe('SlackCardChannel.post', () => {
  it.each<[string, SlackFault]>([
    ['HTTP 500 after posting', { status: 500, applied: true }],
    ['a dropped connection', { reset: true }],
    ['an answer past the timeout', { delayMs: 1_000 }],
  ])('a post whose answer was lost (%s) is found in the history, not posted again', async (_name, fault) => {
    const { slack, cards } = await setup();
    slack.fault('chat.postMessage', fault);
    const posted = await cards.post('C1', () => card('card'), { approvalId: 'a-lost' });
    const messages = slack.messagesIn('C1');
    expect(messages).toHaveLength(1);
    expect(posted).toEqual({ ts: messages[0]!.ts, channel: 'C1' });
    expect(messages[0]!.metadata).toEqual(cardMetadata('a-lost'));
    expect(slack.callsOf('chat.postMessage')).toHaveLength(1);
    expect(slack.callsOf('conversations.history')[0]!.args).toMatchObject({
      channel: 'C1',
      include_all_metadata: 'true',
    });
  });

  it('a post for a host this replica no longer owns is not sent', async () => {
    const { slack, cards } = await setup();
    await expect(
      cards.post('C1', () => card('card'), { approvalId: 'a-lost-host', mayAct: () => false }),
    ).rejects.toBeInstanceOf(HostLostError);
    expect(slack.callsOf('chat.postMessage')).toEqual([]);
  });

  it('a post that waited out a 429 is not sent once this replica lost the host meanwhile', async () => {
    const { slack, cards, lines } = await setup();
    slack.rateLimit('chat.postMessage', { times: 1, retryAfterSec: 2 });
    let owner = true;
    const lose = setTimeout(() => {
      owner = false;
    }, 600);
    try {
      // The retry passes the check at the top of its attempt at once (the backoff is cut short),
      // then waits out the channel's pause in the pacer: the lease runs out while it waits.
      await expect(
        cards.post('C1', () => card('card'), { approvalId: 'a-deposed', mayAct: () => owner }),
      ).rejects.toBeInstanceOf(HostLostError);
    } finally {
      clearTimeout(lose);
    }
    expect(slack.messagesIn('C1')).toHaveLength(0);
    // Once, in words that say the new owner has it.
    const said = lines.filter((l) => l.approvalId === 'a-deposed' && (l.level as number) >= 40);
    expect(said).toHaveLength(1);
    expect(said[0]!.msg).toMatch(/new owner/);
  });

  it('a post that failed before Slack carried it out is posted once, after looking', async () => {
    const { slack, cards } = await setup();
    slack.fault('chat.postMessage', { status: 503 }, { times: 2 });
    const posted = await cards.post('C1', () => card('card'), { approvalId: 'a-failed' });
    expect(slack.messagesIn('C1').map((m) => m.ts)).toEqual([posted.ts]);
    expect(slack.httpFailed).toHaveLength(2);
    expect(slack.callsOf('conversations.history')).toHaveLength(2);
  });

  it('with postedSince, a card an earlier attempt posted is found before anything is posted', async () => {
    const { slack, web, cards } = await setup();
    const earlier = await web.chat.postMessage({
      channel: 'C1',
      text: 'old',
      metadata: cardMetadata('a-crash'),
    });
    await web.chat.postMessage({ channel: 'C1', text: 'other', metadata: cardMetadata('a-other') });
    const posted = await cards.post('C1', () => card('card'), {
      approvalId: 'a-crash',
      postedSince: new Date(Date.now() - 5_000),
    });
    expect(posted).toEqual({ ts: earlier.ts, channel: 'C1' });
    expect(slack.callsOf('chat.postMessage')).toHaveLength(2);
    // The found card was rendered by the earlier attempt: it is brought up to date.
    await until(() => slack.message('C1', earlier.ts!)?.text === 'card');
    // Nothing found: it is posted.
    const fresh = await cards.post('C1', () => card('card'), {
      approvalId: 'a-new',
      postedSince: new Date(),
    });
    expect(slack.message('C1', fresh.ts)?.metadata).toEqual(cardMetadata('a-new'));
  });

  it('a lost post is found only among the bot’s own messages: another app’s copy of its metadata is not its card', async () => {
    const { slack, cards } = await setup();
    // The card lands, its answer comes too late; meanwhile another app in the channel reposts
    // its metadata, newer than the card, before the bot looks.
    slack.fault('chat.postMessage', { delayMs: 1_000 });
    const posting = cards.post('C1', () => card('card'), { approvalId: 'a-forged' });
    await until(() => slack.messagesIn('C1').length === 1);
    const forged = slack.postAsOtherApp('C1', 'a copy', cardMetadata('a-forged'));
    const posted = await posting;
    const own = slack.messagesIn('C1').filter((m) => !m.from);
    expect(own.map((m) => m.ts)).toEqual([posted.ts]);
    expect(posted.ts).not.toBe(forged.ts);
    expect(slack.callsOf('chat.postMessage')).toHaveLength(1);
  });

  it('a lost post waits until Slack has said who the bot is before it looks', async () => {
    const { slack, web } = await setup();
    const { logger } = captureLogger();
    const unsure = new SlackCardChannel(web, logger, { timing: quick, botId: () => undefined });
    slack.fault('chat.postMessage', { status: 500, applied: true });
    await expect(unsure.post('C1', () => card('card'), { approvalId: 'a-who' })).rejects.toThrow(
      /before Slack has said who the bot is/,
    );
    expect(slack.callsOf('conversations.history')).toHaveLength(0);
    expect(slack.callsOf('chat.postMessage')).toHaveLength(1);
  });

  it('a post given up on after a lost answer looks first when it is tried again', async () => {
    const { slack, cards } = await setup();
    slack.fault('chat.postMessage', { status: 502, applied: true });
    slack.fault('conversations.history', { status: 503 }, { times: Number.POSITIVE_INFINITY });
    await expect(cards.post('C1', () => card('card'), { approvalId: 'a-later' })).rejects.toMatchObject({
      statusCode: 503,
    });
    slack.heal();
    const posted = await cards.post('C1', () => card('card'), { approvalId: 'a-later' });
    expect(slack.messagesIn('C1').map((m) => m.ts)).toEqual([posted.ts]);
  });

  it('to a #name, a lost post is looked for by the ID Slack gives the name, and found: one card', async () => {
    const { slack, cards } = await setup();
    // The post lands, its answer is lost: no answer has told the name's ID yet.
    slack.fault('chat.postMessage', { reset: true });
    const first = await cards.post('#approvals', () => card('first'), { approvalId: 'a-name' });
    expect(first.channel).toBe('C0APPROVALS');
    expect(slack.callsOf('users.conversations').length).toBeGreaterThanOrEqual(1);
    expect(slack.messagesIn('C0APPROVALS').map((m) => [m.text, m.ts])).toEqual([['first', first.ts]]);
  });

  it('to a #name, cards go to the channel it was found as, never to one that took the name since', async () => {
    const { slack, cards, lines } = await setup();
    const first = await cards.post('#approvals', () => card('first'), { approvalId: 'a-1' });
    expect(first.channel).toBe('C0APPROVALS');
    // Renamed, and another channel the bot was invited to (other members) takes the old name.
    slack.channelNames.set('approvals-old', 'C0APPROVALS');
    slack.channelNames.set('approvals', 'C0OTHER');
    const second = await cards.post('#approvals', () => card('second'), { approvalId: 'a-2' });
    expect(second.channel).toBe('C0APPROVALS');
    expect(slack.callsOf('chat.postMessage').map((c) => c.args.channel)).toEqual([
      'C0APPROVALS',
      'C0APPROVALS',
    ]);
    expect(slack.messagesIn('C0OTHER')).toEqual([]);
    // Archived, or the bot removed: refused with Slack's reason, not posted to the name's new owner.
    slack.setBotChannels(['C0OTHER']);
    await expect(cards.post('#approvals', () => card('third'), { approvalId: 'a-3' })).rejects.toMatchObject({
      data: { error: 'not_in_channel' },
    });
    expect(slack.messagesIn('C0OTHER')).toEqual([]);
    expect(lines.find((l) => l.method === 'chat.postMessage' && l.error === 'not_in_channel')).toMatchObject({
      channel: '#approvals',
      channelId: 'C0APPROVALS',
    });
  });

  it('to a #name the bot is not in, nothing is posted, not even with chat:write.public: it says to invite the bot', async () => {
    const { slack, cards } = await setup();
    slack.setBotChannels([]);
    // An app from an older manifest could post there by name, and then not look for a lost post.
    slack.chatWritePublic = true;
    slack.fault('chat.postMessage', { reset: true });
    await expect(cards.post('#approvals', () => card('first'), { approvalId: 'a-name' })).rejects.toThrow(
      /#approvals is not among the channels the bot is a member of: invite the bot/,
    );
    expect(slack.callsOf('chat.postMessage')).toEqual([]);
    expect(slack.messagesIn('C0APPROVALS')).toEqual([]);
  });

  it('when Slack refuses the lookup (a missing scope), it says so and posts again', async () => {
    const { slack, cards, lines } = await setup();
    slack.fault('chat.postMessage', { status: 500, applied: true });
    slack.fault('conversations.history', { error: 'missing_scope' });
    await cards.post('C1', () => card('card'), { approvalId: 'a-scope' });
    expect(slack.messagesIn('C1')).toHaveLength(2);
    const said = lines.find((l) => l.method === 'conversations.history');
    expect(said?.msg).toMatch(/channels:history and groups:history/);
    expect(said).toMatchObject({ failure: { kind: 'fatal', error: 'missing_scope' } });
  });

  it('when the lookup is refused because the bot is not in the channel, nothing is posted again until one can tell', async () => {
    const { slack, cards, lines } = await setup();
    // An app still granted chat:write.public: its post lands where its history read cannot.
    slack.setBotChannels([]);
    slack.chatWritePublic = true;
    slack.fault('chat.postMessage', { status: 500, applied: true });
    await expect(cards.post('C1', () => card('card'), { approvalId: 'a-unseen' })).rejects.toMatchObject({
      data: { error: 'not_in_channel' },
    });
    expect(slack.messagesIn('C1')).toHaveLength(1);
    expect(slack.callsOf('chat.postMessage')).toHaveLength(1);
    const said = lines.filter((l) => (l.level as number) >= 40);
    expect(said).toEqual([
      expect.objectContaining({
        level: 50,
        msg: 'the bot cannot use this channel: invite it with /invite @countersign, or check SLACK_CHANNEL',
        approvalId: 'a-unseen',
      }),
    ]);
    // Invited, the next try looks first and finds it.
    slack.inviteBot('C1');
    const found = await cards.post('C1', () => card('card'), { approvalId: 'a-unseen' });
    expect(slack.messagesIn('C1').map((m) => m.ts)).toEqual([found.ts]);
    expect(slack.callsOf('chat.postMessage')).toHaveLength(1);
  });

  it('a refused post is logged once with its classification and rejects', async () => {
    const { slack, cards, lines } = await setup();
    slack.failNext('chat.postMessage', 'not_in_channel');
    await expect(cards.post('C1', () => card('card'), { approvalId: 'a-refused' })).rejects.toMatchObject({
      data: { error: 'not_in_channel' },
    });
    const errors = lines.filter((l) => (l.level as number) >= 50);
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({
      method: 'chat.postMessage',
      error: 'not_in_channel',
      approvalId: 'a-refused',
    });
    expect(slack.callsOf('chat.postMessage')).toHaveLength(1);
  });
});
