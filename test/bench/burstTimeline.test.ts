import { describe, expect, it } from 'vitest';
import { burstTimeline, timelineLines } from '../../bench/lib/burstTimeline.js';
import { batchMetadata, cardMetadata } from '../../src/slack/cardMetadata.js';
import type { SlackRequest } from '../support/fakeSlack.js';

// The burst's timeline tells the bot's posts apart by their metadata, as Slack shows them: the
// lines it counts are the ones the burst waits for (grants' and resolutions'), so a batch summary
// posted in the same channel is counted on its own.

const START = 1_000_000_000n;
const at = (ms: number) => START + BigInt(ms) * 1_000_000n;

function post(ms: number, metadata?: unknown, outcome: SlackRequest['outcome'] = 'answered'): SlackRequest {
  return {
    method: 'chat.postMessage',
    args: { channel: 'C0BENCH0', ...(metadata ? { metadata } : {}) },
    hr: at(ms),
    outcome,
  };
}

describe('burstTimeline', () => {
  it('counts cards, lines and batch summaries apart, second by second', () => {
    const summary = batchMetadata({ groupId: 'C0BENCH0:abc', shared: { route: 'r' }, total: 2 });
    const timeline = burstTimeline(
      [
        post(10, cardMetadata('a1')),
        post(20, cardMetadata('a2')),
        post(30, undefined, 'rateLimited'),
        post(600, summary),
        post(1_200, undefined),
        { method: 'chat.update', args: { channel: 'C0BENCH0' }, hr: at(1_300), outcome: 'answered' },
      ],
      START,
      ['C0BENCH0'],
    );
    expect(timeline.channels.C0BENCH0).toEqual([
      { second: 0, cards: 2, lines: 0, summaries: 1, rateLimited: 1, other: {} },
      { second: 1, cards: 0, lines: 1, summaries: 0, rateLimited: 0, other: { 'chat.update': 1 } },
    ]);
    expect(timeline.lastLineMs.C0BENCH0).toBe(1_200);
    expect(timelineLines(timeline)).toEqual(['C0BENCH0 (last card 0.02 s): 2~1!1 0/1+1']);
  });
});
