import { afterEach, describe, expect, it } from 'vitest';
import { ChannelPacer } from '../../../src/slack/channelPacer.js';
import { SlackCardChannel } from '../../../src/slack/slackCardChannel.js';
import { SlackNoticeSender } from '../../../src/slack/slackNotices.js';
import { createWebClient } from '../../../src/slack/webClient.js';
import { toBoltLogger } from '../../../src/util/log.js';
import { FakeSlack } from '../../support/fakeSlack.js';
import { captureLogger } from '../../support/logCapture.js';

// Cards and the lines that follow decisions share a channel's posting limit in Slack. Against the
// fake Slack's per-channel limit (429 with Retry-After), as the bot wires them: one pacer for both.

let slack: FakeSlack | undefined;
afterEach(async () => {
  await slack?.close();
  slack = undefined;
});

describe('cards and lines posted to one rate-limited channel', () => {
  it('every card goes before the lines asked meanwhile, and the channel meets one 429', async () => {
    slack = await FakeSlack.start();
    const { logger } = captureLogger('warn');
    const web = createWebClient({
      token: 'xoxb-test-token',
      apiUrl: slack.apiUrl,
      timeoutMs: 2_000,
      logger: toBoltLogger(logger),
    });
    const pacer = new ChannelPacer();
    const cards = new SlackCardChannel(web, logger, { pacer });
    const lines = new SlackNoticeSender(web, logger, undefined, pacer);
    slack.rateLimitPerChannel('chat.postMessage', 3);

    const card = (n: number) => {
      const text = `card ${n}`;
      return cards.post('C1', () => ({ text, blocks: [] }), { approvalId: `a-${n}` });
    };
    const first = await card(0);
    // A burst: the cards of seven more approvals, and a line in the first card's thread for each
    // of four decisions, all asked at once.
    const posts = [1, 2, 3, 4, 5, 6, 7].map(card);
    const threadLines = [1, 2, 3, 4].map((n) => lines.threadReply('C1', first.ts, `line ${n}`));
    await Promise.all([...posts, ...threadLines]);

    const posted = slack.callsOf('chat.postMessage').map((c) => String(c.args.text));
    expect(posted).toEqual([
      'card 0',
      ...[1, 2, 3, 4, 5, 6, 7].map((n) => `card ${n}`),
      ...[1, 2, 3, 4].map((n) => `line ${n}`),
    ]);
    // The 429 that told the pace; every post after it waited for its second instead of meeting one.
    expect(slack.rateLimited).toHaveLength(1);
    expect(pacer.budgetOf('C1')).toBe(3);
  });
});
