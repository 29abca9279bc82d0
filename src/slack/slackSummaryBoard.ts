import type { Logger } from 'pino';
import { renderBatchSummary } from '../cards/renderBatchSummary.js';
import type { SummaryView } from '../domain/batchGroup.js';
import type { SummaryBoard } from '../relay/batching/batchTriage.js';
import type { CardCalls } from './cardCalls.js';
import { batchMetadata } from './cardMetadata.js';
import { ChannelPacer } from './channelPacer.js';
import type { Permalinks } from './permalinks.js';
import { RETRY_POLICIES, retrySlackCall } from './slackRetry.js';

/**
 * Batch summary cards in Slack: each drawn with links to its members' cards (Permalinks), posted
 * once per group (the relay holds the claim) and updated in place.
 *
 * Posted and updated through the card calls (cardCalls.ts), as approval cards are, not through
 * the Web API client: with the client's calls the throughput bench read about a tenth lower for
 * the whole batch, though a summary is a handful of calls in it (docs/performance.md, "Fifth
 * round: the summaries' own calls").
 */
export class SlackSummaryBoard implements SummaryBoard {
  constructor(
    private readonly calls: CardCalls,
    private readonly permalinks: Permalinks,
    private readonly logger: Logger,
    /**
     * The cards' pacer (channelPacer.ts): a summary goes after the cards its channel is waiting
     * to post, as a line does. It is about cards already there, and in a burst each post it took
     * ahead of them would hold the last card back a whole second (docs/performance.md, "Bursts at
     * Slack's pace").
     */
    private readonly pacer: ChannelPacer = new ChannelPacer(),
  ) {}

  async post(channel: string, view: SummaryView): Promise<string> {
    const message = await this.render(view);
    const answer = await retrySlackCall(
      () =>
        this.pacer.post(
          channel,
          'line',
          () => this.calls.postMessage({ channel, ...message }),
          RETRY_POLICIES.post.maxRetryAfterMs,
        ),
      RETRY_POLICIES.post,
    );
    if (!answer.ts) throw new Error('chat.postMessage gave no ts for a batch summary');
    this.logger.info({ channel, groupId: view.groupId, members: view.total }, 'batch summary posted');
    return answer.ts;
  }

  async update(channel: string, ts: string, view: SummaryView): Promise<void> {
    const message = await this.render(view);
    await retrySlackCall(() => this.calls.update({ channel, ts, ...message }), RETRY_POLICIES.post);
  }

  private async render(view: SummaryView) {
    const links = new Map<string, string>();
    await Promise.all(
      view.members.map(async (m) => {
        const link = await this.permalinks.of(view.channel, m.ts);
        if (link) links.set(m.approvalId, link);
      }),
    );
    return { ...renderBatchSummary(view, links), metadata: batchMetadata(view) };
  }
}
