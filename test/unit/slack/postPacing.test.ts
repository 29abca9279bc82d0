import { afterEach, describe, expect, it } from 'vitest';
import type { SummaryView } from '../../../src/domain/batchGroup.js';
import { type CardCalls, directCardCalls } from '../../../src/slack/cardCalls.js';
import { ChannelPacer } from '../../../src/slack/channelPacer.js';
import { Permalinks } from '../../../src/slack/permalinks.js';
import { SlackCardChannel } from '../../../src/slack/slackCardChannel.js';
import { createSlackPool } from '../../../src/slack/slackFetch.js';
import { SlackNoticeSender } from '../../../src/slack/slackNotices.js';
import { SlackSummaryBoard } from '../../../src/slack/slackSummaryBoard.js';
import { createWebClient } from '../../../src/slack/webClient.js';
import { toBoltLogger } from '../../../src/util/log.js';
import { FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';
import { FakeSlack } from '../../support/fakeSlack.js';
import { captureLogger } from '../../support/logCapture.js';

// Cards and the lines that follow decisions share a channel's posting limit in Slack. Against the
// fake Slack's per-channel limit (429 with Retry-After), as the bot wires them: one pacer for both.

let slack: FakeSlack | undefined;
afterEach(async () => {
  await slack?.close();
  slack = undefined;
});

/** The fake Slack, and a card channel on a pacer of its own, as the bot wires them. */
async function setup() {
  slack = await FakeSlack.start();
  const { logger } = captureLogger('warn');
  const web = createWebClient({
    token: FAKE_SLACK_BOT_TOKEN,
    apiUrl: slack.apiUrl,
    timeoutMs: 2_000,
    logger: toBoltLogger(logger),
  });
  const pacer = new ChannelPacer();
  // The card calls as wireSlack makes them (JSON over the pool), each call also counted here.
  const direct = directCardCalls({
    token: FAKE_SLACK_BOT_TOKEN,
    apiUrl: slack.apiUrl,
    dispatcher: createSlackPool(),
    timeoutMs: 2_000,
  });
  const sent: string[] = [];
  const calls: CardCalls = {
    postMessage: (args) => {
      sent.push('chat.postMessage');
      return direct.postMessage(args);
    },
    update: (args) => {
      sent.push('chat.update');
      return direct.update(args);
    },
  };
  return {
    slack,
    web,
    logger,
    pacer,
    calls,
    sent,
    cards: new SlackCardChannel(web, logger, { pacer, botId: () => 'B_BOT' }),
  };
}

/** A batch summary of channel C1 listing `members` of `total`. */
function summaryOf(members: SummaryView['members'], total: number): SummaryView {
  const shared = {
    route: 'routes[0]',
    tool: 'write_file',
    capabilities: ['fs.write:/srv/a'],
    sandboxMode: 'default',
  };
  return { groupId: 'g-1', channel: 'C1', shared, members, total };
}

describe('cards and lines posted to one rate-limited channel', () => {
  it('every card goes before the lines asked meanwhile, and the channel meets one 429', async () => {
    const { slack, web, logger, pacer, cards } = await setup();
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

  it('a batch summary waits for the cards its channel is posting, asked before it or after', async () => {
    const { slack, web, logger, pacer, calls, cards } = await setup();
    const board = new SlackSummaryBoard(calls, new Permalinks(web, logger), logger, pacer);
    const card = (n: number) =>
      cards.post('C1', () => ({ text: `card ${n}`, blocks: [] }), { approvalId: `a-${n}` });
    const first = card(1);
    const summary = board.post('C1', summaryOf([], 2));
    await Promise.all([first, card(2), card(3), summary]);
    const posted = slack.requests.filter((r) => r.method === 'chat.postMessage').map((r) => r.args.text);
    expect(posted.slice(0, 3)).toEqual(['card 1', 'card 2', 'card 3']);
    expect(String(posted[3])).toMatch(/alike/);
  });

  it("a batch summary is posted at the channel's pace: a pause it cannot wait out is not sent into", async () => {
    const { slack, web, logger, pacer, calls, cards } = await setup();
    const board = new SlackSummaryBoard(calls, new Permalinks(web, logger), logger, pacer);
    const card = await cards.post('C1', () => ({ text: 'card', blocks: [] }), { approvalId: 'a-1' });
    // Slack answers the channel's next post with a 429 and a Retry-After longer than a post waits.
    slack.rateLimit('chat.postMessage', { times: 1, retryAfterSec: 120 });
    await expect(
      cards.post('C1', () => ({ text: 'card 2', blocks: [] }), { approvalId: 'a-2' }),
    ).rejects.toThrow();
    const summary = board.post(
      'C1',
      summaryOf([{ approvalId: 'a-1', sourceIndex: 0, ts: card.ts, session: 's-1' }], 1),
    );
    await expect(summary).rejects.toMatchObject({ retryAfter: 120 });
    // The card, then the one refused; the summary never went out into the pause.
    expect(slack.requests.filter((r) => r.method === 'chat.postMessage')).toHaveLength(2);
  });

  it('a batch summary is posted and updated through the card calls, as JSON like a card', async () => {
    const { slack, web, logger, pacer, calls, sent } = await setup();
    const board = new SlackSummaryBoard(calls, new Permalinks(web, logger), logger, pacer);
    const ts = await board.post('C1', summaryOf([], 2));
    await board.update('C1', ts, summaryOf([], 3));
    // Not through the Web API client: with it the whole throughput batch read a tenth lower.
    expect(sent).toEqual(['chat.postMessage', 'chat.update']);
    const [posted, updated] = slack.requests.filter((r) => r.method.startsWith('chat.'));
    expect(posted?.method).toBe('chat.postMessage');
    expect(updated).toMatchObject({ method: 'chat.update', args: { channel: 'C1', ts } });
    // The metadata other apps read travels as an object, as a card's does.
    expect(posted?.args.metadata).toMatchObject({ event_type: 'countersign_batch' });
    expect(updated?.args.text).toBe('3 alike requests are waiting');
  });
});
