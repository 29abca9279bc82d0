import { encodeChoiceValue } from '../../src/cards/ids.js';
import { SIGNING_SECRET } from '../../test/support/bot.js';
import { blockActionsPayload, postInteraction } from '../../test/support/slackRequests.js';
import { msBetween, type Summary, summarize } from '../lib/stats.js';
import { BENCH_USER, type Post, type World } from '../lib/world.js';

// From a signed block_actions POST leaving the bench to the host reading approval/decide. Clicks
// go one at a time, so each one is measured alone.

export async function clickLatency(
  world: World,
  url: string,
  cards: Array<Pick<Post, 'approvalId' | 'channel' | 'ts'>>,
  warmup: number,
): Promise<Summary> {
  const latencies: number[] = [];
  for (const [i, card] of cards.entries()) {
    const ms = await click(world, url, card);
    if (i >= warmup) latencies.push(ms);
  }
  return summarize(latencies);
}

/** One signed click at the bot (or floor) at `url`; resolves with the ms until the host read its decide. */
export async function click(
  world: World,
  url: string,
  card: Pick<Post, 'approvalId' | 'channel' | 'ts'>,
): Promise<number> {
  const sent = await sendClick(world, url, card);
  const decide = await world.host.waitForFrame(
    (f) =>
      typeof f.frame !== 'string' &&
      f.frame.method === 'approval/decide' &&
      (f.frame.params as { approvalId?: string }).approvalId === card.approvalId,
    10_000,
  );
  // Let what follows a decision (the host's answer, the card's update) settle before the next.
  await new Promise((resolve) => setTimeout(resolve, 10));
  return msBetween(sent, decide.hr);
}

/** Posts the click on the card's first button; resolves with when it left (process.hrtime). */
export async function sendClick(
  world: World,
  url: string,
  card: Pick<Post, 'approvalId' | 'channel' | 'ts'>,
): Promise<bigint> {
  const payload = {
    ...blockActionsPayload({
      userId: BENCH_USER,
      channel: card.channel,
      ts: card.ts,
      actionId: 'cs_choice_0',
      value: firstButtonValue(world, card) ?? encodeChoiceValue({ s: 0, c: 'allow_once' }),
      responseUrl: world.slack.responseUrl('bench'),
    }),
    // Read only by the click floor, which keeps no message map.
    bench_approval_id: card.approvalId,
    bench_session_id: 's-bench',
  };
  const sent = process.hrtime.bigint();
  const res = await postInteraction(url, SIGNING_SECRET, payload);
  if (res.status !== 200) throw new Error(`click on ${card.approvalId}: HTTP ${res.status}`);
  return sent;
}

/** The value of the card's first button, as Slack would send it back (the floors post none). */
function firstButtonValue(world: World, card: Pick<Post, 'channel' | 'ts'>): string | undefined {
  const blocks = world.slack.message(card.channel, card.ts)?.blocks ?? [];
  for (const block of blocks as Array<{
    type?: string;
    elements?: Array<{ type?: string; value?: string }>;
  }>) {
    const button = block.type === 'actions' ? block.elements?.find((e) => e.type === 'button') : undefined;
    if (button?.value) return button.value;
  }
  return undefined;
}
