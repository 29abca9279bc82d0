// What the remembered-grant tests share: the bot's grants read through the store itself, whether
// a card was ever posted, and pressing "don't ask again" on a card.

import { pino } from 'pino';
import { expect } from 'vitest';
import { RedisGrantStore } from '../../src/store/grantStore.js';
import type { ApprovalRequestParams } from '../support/fakeHost.js';
import type { SlackCall } from '../support/fakeSlack.js';
import { buttonsOf, rememberButtonsOf, textOf, type World } from './world.js';

/** A store of the test's on the bot's Redis: what one replica writes, all read. */
export function storeOf(world: World): RedisGrantStore {
  return new RedisGrantStore(world.redis, { logger: pino({ level: 'silent' }), auditMaxLen: 1_000 });
}

/** Whether the bot ever posted a card (a message with the approval's metadata) for this approval. */
export function cardPostedFor(world: World, approvalId: string): boolean {
  return world.slack
    .callsOf('chat.postMessage')
    .some((c: SlackCall) => JSON.stringify(c.args.metadata ?? {}).includes(approvalId));
}

/**
 * Opens a request, waits for its card and presses as `userId` its first "don't ask again" button
 * whose label is (or matches) `label`; resolves with the id of the grant the card then shows.
 */
export async function grantFrom(
  world: World,
  approval: ApprovalRequestParams,
  label: string | RegExp,
  userId = 'U0ALICE',
): Promise<string> {
  await world.host.open(approval);
  const card = await world.waitForCard(approval.approvalId, (m) => buttonsOf(m).length > 0);
  const offered = rememberButtonsOf(card);
  const button = offered.find((b) => (typeof label === 'string' ? b.text === label : label.test(b.text)));
  expect(button, `no "${label}" among ${offered.map((b) => b.text)}`).toBeDefined();
  await world.pressButton(card.ts, button!, userId, card.channel);
  const decide = await world.host.waitForDecide((d) => d.frame.params.approvalId === approval.approvalId);
  expect(decide.frame.params.choiceId).toBe('allow_once');
  const done = await world.waitForCard(approval.approvalId, (m) => textOf(m).includes('Remembered:'));
  const grantId = /revoke ([\w-]+)/.exec(textOf(done))?.[1];
  expect(grantId).toBeDefined();
  return grantId!;
}
