// Seeing follows deciding, end to end: on a route without approvers in a private approvals
// channel, someone of the team who is not in that channel sees none of its pending approvals or
// grants (slash commands, App Home, View full) and cannot revoke its grants; a member can.

import { afterEach, describe, expect, it } from 'vitest';
import { shellApproval } from '../support/fakeHost.js';
import { commandAnswer, openHome } from './teamSetup.js';
import {
  buttonsOf,
  pressButtonAt,
  rememberButtonOf,
  SESSION,
  textOf,
  viewFullButtonOf,
  World,
} from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

/** Private approvals channel: Alice and Bob are in it; Eve, of the same team, is not. */
async function privateChannelWorld(): Promise<World> {
  const world = await World.start();
  cleanups.push(() => world.close());
  world.slack.setChannelMembers(world.channel, ['U0ALICE', 'U0BOB']);
  return world;
}

/** An approval with a long first line, so that its card has "View full". */
function approval(approvalId: string, argv: string[]) {
  return shellApproval({ approvalId, sessionId: SESSION, stages: [argv] });
}

describe('who sees what', () => {
  it('a pending approval of a private channel is listed to its members only', async () => {
    const world = await privateChannelWorld();
    await world.host.open(approval('vis-0001', ['make', 'vis-secret-target']), { via: 'both' });
    await world.waitForCard('vis-0001', (m) => buttonsOf(m).length > 0);

    expect(JSON.stringify((await commandAnswer(world, 'U0ALICE', 'pending')).body)).toContain(
      'vis-secret-target',
    );
    expect(JSON.stringify((await commandAnswer(world, 'U0EVE', 'pending')).body)).not.toContain('vis-secret');
    await openHome(world, 'U0EVE');
    const home = await world.slack.waitFor('views.publish', (c) => c.args.user_id === 'U0EVE');
    expect(JSON.stringify(home.args.view)).not.toContain('vis-secret');
  });

  it('View full is refused to someone who neither decides nor is in the card’s channel', async () => {
    const world = await privateChannelWorld();
    const long = Array.from({ length: 400 }, (_, i) => `--flag-${i}`);
    await world.host.open(approval('vis-0002', ['deploy', ...long]), { via: 'both' });
    const card = await world.waitForCard('vis-0002', (m) => buttonsOf(m).length > 0);
    const button = viewFullButtonOf(card)!;
    expect(button).toBeDefined();

    await pressButtonAt(world.bot.url, world.slack, { channel: card.channel, ts: card.ts }, button, 'U0EVE');
    expect(await world.ephemeralTo('U0EVE')).toBe(
      `Only members of <#${world.channel}> can decide on (SLACK_CHANNEL): join the channel, or ask one of its members.`,
    );
    expect(world.slack.callsOf('views.open')).toHaveLength(0);
    await pressButtonAt(world.bot.url, world.slack, { channel: card.channel, ts: card.ts }, button, 'U0BOB');
    const opened = await world.slack.waitFor('views.open', () => true);
    expect(JSON.stringify(opened.args.view)).toContain('--flag-399');
  });

  it('a grant of a private channel is listed to, and revoked by, its members only', async () => {
    const world = await privateChannelWorld();
    await world.host.open(approval('vis-0003', ['make', 'vis-granted']));
    const card = await world.waitForCard('vis-0003', (m) => buttonsOf(m).length > 0);
    await world.pressButton(card.ts, rememberButtonOf(card)!, 'U0ALICE', card.channel);
    const done = await world.waitForCard('vis-0003', (m) => textOf(m).includes('Remembered:'));
    const grantId = /revoke ([\w-]+)/.exec(textOf(done))![1]!;

    const eveList = await commandAnswer(world, 'U0EVE', 'grants', world.channel);
    expect(JSON.stringify(eveList.body)).not.toContain(grantId);
    await openHome(world, 'U0EVE');
    const home = await world.slack.waitFor('views.publish', (c) => c.args.user_id === 'U0EVE');
    expect(JSON.stringify(home.args.view)).not.toContain(grantId);
    const bobList = await commandAnswer(world, 'U0BOB', 'grants', world.channel);
    expect(JSON.stringify(bobList.body)).toContain(grantId);

    const refused = await commandAnswer(world, 'U0EVE', `revoke ${grantId}`);
    // Eve may not see it, so the refusal reads as for an unknown id: not its channel, nor its route.
    expect(String(refused.body.text)).toBe(
      `There is no grant \`${grantId}\` that you may revoke: check the id in \`/countersign grants\`, which lists those you may. A grant that expired a while ago is removed and cannot be found any more.`,
    );
    const stillListed = await commandAnswer(world, 'U0BOB', 'grants', world.channel);
    expect(JSON.stringify(stillListed.body)).toContain(grantId);
    const revoked = await commandAnswer(world, 'U0BOB', `revoke ${grantId}`);
    expect(String(revoked.body.text)).toMatch(/^:white_check_mark: You revoked grant/);
  });
});
