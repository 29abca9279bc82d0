// App Home end to end: the real bot publishes each user's Home when they open it (what waits for
// them, with a button to each card, and what they decided lately) and again when approvals change
// while they look, throttled per user; a publish Slack rate-limits is asked again after its Retry-After.

import { afterEach, describe, expect, it } from 'vitest';
import { keys } from '../../src/store/keys.js';
import { SIGNING_SECRET } from '../support/bot.js';
import type { SlackCall } from '../support/fakeSlack.js';
import { blockActionsPayload, postInteraction } from '../support/slackRequests.js';
import { approvalFor, openHome, startTeamWorld } from './teamSetup.js';
import type { World } from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

async function teamWorld(): Promise<World> {
  const world = await startTeamWorld(cleanups);
  return world;
}

interface HomeBlock {
  type: string;
  text?: { text: string };
  elements?: Array<{ text: string }>;
  accessory?: { type: string; url?: string; action_id: string; text: { text: string } };
}

function publishesFor(world: World, userId: string): SlackCall[] {
  return world.slack.callsOf('views.publish').filter((c) => c.args.user_id === userId);
}

function blocksOf(publish: SlackCall): HomeBlock[] {
  return (publish.args.view as { blocks: HomeBlock[] }).blocks;
}

/** The blocks between the "Waiting for you" header and the divider. */
function waitingBlocks(publish: SlackCall): HomeBlock[] {
  const blocks = blocksOf(publish);
  const start = blocks.findIndex((b) => b.type === 'header' && b.text?.text === 'Waiting for you');
  const end = blocks.findIndex((b) => b.type === 'divider');
  return blocks.slice(start + 1, end);
}

/** The card links of the "Open card" buttons, in order. */
function cardButtons(publish: SlackCall): string[] {
  return waitingBlocks(publish).flatMap((b) => (b.accessory?.url ? [b.accessory.url] : []));
}

/** Everything after the "Recently decided by you" header, as text. */
function recentText(publish: SlackCall): string {
  const blocks = blocksOf(publish);
  const start = blocks.findIndex((b) => b.type === 'header' && b.text?.text === 'Recently decided by you');
  expect(start).toBeGreaterThan(0);
  return JSON.stringify(blocks.slice(start + 1));
}

async function permalinkOf(world: World, approvalId: string): Promise<string> {
  const { channel, ts } = await world.postedAt(approvalId);
  return world.slack.permalink(channel, ts);
}

describe('App Home', () => {
  it('shows what waits for the user with a button to each card, and their decisions once they decide', async () => {
    const world = await teamWorld();
    await world.host.open(
      approvalFor('deploy-a', 'deploy', { command: ['kubectl', 'apply', '-f', '<!here>'] }),
    );
    await world.host.open(approvalFor('shell-a', 'shell'));
    const deployLink = await permalinkOf(world, 'deploy-a');
    await world.postedAt('shell-a');

    await openHome(world, 'U0ALICE');
    const first = await world.slack.waitFor('views.publish', (c) => c.args.user_id === 'U0ALICE');
    // Alice may decide deploys, not shell.
    expect(cardButtons(first)).toEqual([deployLink]);
    const [item] = waitingBlocks(first);
    expect(item!.text!.text).toContain(`*<${deployLink}|deploy>*`);
    expect(item!.text!.text).toContain('kubectl apply -f &lt;!here&gt;');
    expect(item!.text!.text).toMatch(/asked <!date\^\d+\^\{ago\}/);
    expect(item!.accessory).toMatchObject({ type: 'button', text: { text: 'Open card' } });
    expect(recentText(first)).toContain('Nothing yet.');
    expect(JSON.stringify(blocksOf(first))).toContain('Agent host: :large_green_circle: up');

    // The button is a link; Slack still sends its click, and the bot acks it at once.
    const click = await postInteraction(
      world.bot.url,
      SIGNING_SECRET,
      blockActionsPayload({
        userId: 'U0ALICE',
        channel: 'DU0ALICE',
        ts: '1.000001',
        actionId: item!.accessory!.action_id,
        value: '',
        responseUrl: world.slack.responseUrl('home-click'),
      }),
    );
    expect(click.status).toBe(200);

    // Alice decides: her Home (she is looking at it) drops the card and lists her decision.
    await world.waitForCard('deploy-a', (m) => JSON.stringify(m.blocks).includes('Allow once'));
    await world.press('deploy-a', 'Allow once', 'U0ALICE');
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'deploy-a');
    const after = await world.slack.waitFor(
      'views.publish',
      (c) => c.args.user_id === 'U0ALICE' && recentText(c).includes(deployLink),
      10_000,
    );
    expect(cardButtons(after)).toEqual([]);
    expect(JSON.stringify(waitingBlocks(after))).toContain('Nothing is waiting for you to decide.');
    expect(recentText(after)).toContain('Approved (this request only)');
    expect(recentText(after)).toContain('kubectl apply -f &lt;!here&gt;');
    // Listed once, however many times its final record was stored.
    await world.waitForCard('deploy-a', (m) => JSON.stringify(m.blocks).includes('Approved'));
    expect(await world.redis.lrange(keys.recentDecisions('U0ALICE'), 0, -1)).toHaveLength(1);
    // Bob decided nothing: his Home lists shell-a and no decision.
    await openHome(world, 'U0BOB');
    const bob = await world.slack.waitFor('views.publish', (c) => c.args.user_id === 'U0BOB');
    expect(cardButtons(bob)).toEqual([await permalinkOf(world, 'shell-a')]);
    expect(recentText(bob)).toContain('Nothing yet.');
  }, 60_000);

  it('a publish Slack rate-limits past what a click may wait is asked again after its Retry-After, with what is true then', async () => {
    const world = await teamWorld();
    await world.host.open(approvalFor('deploy-a', 'deploy'));
    const deployLink = await permalinkOf(world, 'deploy-a');
    await openHome(world, 'U0ALICE');
    const first = await world.slack.waitFor('views.publish', (c) => c.args.user_id === 'U0ALICE');
    expect(cardButtons(first)).toEqual([deployLink]);

    // The publish that follows her decision gets a 429 longer than a quick retry waits out.
    world.slack.rateLimit('views.publish', { times: 1, retryAfterSec: 5 });
    await world.waitForCard('deploy-a', (m) => JSON.stringify(m.blocks).includes('Allow once'));
    await world.press('deploy-a', 'Allow once', 'U0ALICE');
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'deploy-a');
    const since = world.slack.calls.length;
    const after = await world.slack.waitFor(
      'views.publish',
      (c) => c.args.user_id === 'U0ALICE' && recentText(c).includes(deployLink),
      12_000,
      { since },
    );
    const limited = world.slack.rateLimited.find((c) => c.method === 'views.publish');
    expect(limited).toBeDefined();
    // Not before Slack said it may be asked again.
    expect(after.at - limited!.at).toBeGreaterThanOrEqual(5_000 - 50);
    expect(cardButtons(after)).toEqual([]);
    expect(JSON.stringify(waitingBlocks(after))).toContain('Nothing is waiting for you to decide.');
  }, 60_000);

  it('a burst of 20 approvals while the Home is open costs it a few publishes, and the last shows all 20', async () => {
    const world = await teamWorld();
    await openHome(world, 'U0ALICE');
    await world.slack.waitFor('views.publish', (c) => c.args.user_id === 'U0ALICE');
    const before = publishesFor(world, 'U0ALICE').length;

    const ids = Array.from({ length: 20 }, (_, i) => `burst-${String(i + 1).padStart(2, '0')}`);
    for (const id of ids) await world.host.open(approvalFor(id, 'deploy'));
    const links = await Promise.all(ids.map((id) => permalinkOf(world, id)));

    const all = await world.slack.waitFor(
      'views.publish',
      (c) => c.args.user_id === 'U0ALICE' && cardButtons(c).length === ids.length,
      20_000,
    );
    expect(cardButtons(all)).toEqual(links);
    // Nothing later undoes it: once the trailing publish has had its time, the last one still shows all 20.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    const publishes = publishesFor(world, 'U0ALICE');
    expect(cardButtons(publishes.at(-1)!)).toEqual(links);
    const during = publishes.length - before;
    expect(during).toBeGreaterThanOrEqual(1);
    expect(during).toBeLessThan(ids.length / 2);
    // Someone who never opened the Home gets none.
    expect(publishesFor(world, 'U0EVE')).toEqual([]);
  }, 60_000);
});
