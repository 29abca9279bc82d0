// The cap on a host's open approvals (COUNTERSIGN_MAX_OPEN_APPROVALS_PER_HOST), end to end: the
// real bot runs two fake hosts under a cap of 3. The one that asks 5 gets 3 cards, one warning in
// the log and one line in its channel; the 2 past the cap get no record and no card and stay
// pending at the host, undecided. Once two of its approvals are decided the host is read again and
// the 2 get their cards. The other host, asking as many as the cap, is never held back.

import { afterEach, expect, it } from 'vitest';
import { keys } from '../../src/store/keys.js';
import { type ApprovalRequestParams, FakeHost, shellApproval } from '../support/fakeHost.js';
import type { SlackCall } from '../support/fakeSlack.js';
import { APPROVALS, configFile, mainHost, route, users } from './fixtures/config.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

const OTHER_SESSION = '0198f0aa-7777-7000-8000-0000000000c2';
const CAPPED = 'the host has as many approvals open as it may; new ones get no card until some are decided';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

/** A request of its own (no two alike, so no batch summary): `echo <id>`. */
function ask(approvalId: string, sessionId: string): ApprovalRequestParams {
  return shellApproval({ approvalId, sessionId, stages: [['echo', approvalId]], workspaceRoot: '/srv/app' });
}

/** Posts in the channel that are neither a card nor a thread reply: the bot's own lines. */
function channelLines(world: World): SlackCall[] {
  return world.slack
    .callsOf('chat.postMessage')
    .filter((c) => c.args.channel === APPROVALS && c.args.thread_ts === undefined && !c.args.metadata);
}

async function settle(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

it('a host past the cap gets no more cards, says so once, and gets them once it is under again; another host is unaffected', async () => {
  const main = await FakeHost.start({ sessions: [{ sessionId: SESSION, title: 'Runaway loop' }] });
  const other = await FakeHost.start({ sessions: [{ sessionId: OTHER_SESSION, title: 'Quiet work' }] });
  cleanups.push(
    () => main.close(),
    () => other.close(),
  );
  const file = configFile({
    hosts: [mainHost(main.command), { id: 'other', command: other.command, env: { ...other.env } }],
    routes: [route('default', { approvers: users('U0ALICE', 'U0BOB') })],
  });
  cleanups.push(file.remove);
  const world = await World.start(
    {},
    { COUNTERSIGN_CONFIG: file.path, MSP_HOST_COMMAND: '', COUNTERSIGN_MAX_OPEN_APPROVALS_PER_HOST: '3' },
    { host: main },
  );
  cleanups.push(() => world.close());
  await other.waitForIncarnation(1, 20_000);

  // The main host asks 5, in order; the other asks 3 (as many as the cap) meanwhile.
  const mains = Array.from({ length: 5 }, (_, i) => ask(`runaway-${i}`, SESSION));
  const others = Array.from({ length: 3 }, (_, i) => ask(`quiet-${i}`, OTHER_SESSION));
  for (const a of mains) await main.open(a);
  await Promise.all(others.map((a) => other.open(a)));

  // The first 3 get their cards, and so does every one of the other host.
  for (const a of [...mains.slice(0, 3), ...others]) {
    await world.waitForCard(a.approvalId, (m) => buttonsOf(m).length > 0, 10_000);
  }
  await world.bot.waitForLog((l) => l.msg === CAPPED, 5_000);
  await settle(1_000);
  // The 2 past the cap: no record, no card; still pending at the host, nothing decided.
  for (const a of mains.slice(3)) {
    expect(await world.redis.exists(keys.approval(a.approvalId))).toBe(0);
  }
  expect(world.slack.cardPosts().filter((c) => !channelLines(world).includes(c))).toHaveLength(6);
  expect(world.host.decides()).toEqual([]);

  // One warning naming the host and the cap, and one line in the channel, not one per approval.
  const warned = world.bot.logs.filter((l) => l.msg === CAPPED);
  expect(warned).toHaveLength(1);
  expect(warned[0]!.json).toMatchObject({ level: 40, hostId: 'main', max: 3 });
  const lines = channelLines(world);
  expect(lines).toHaveLength(1);
  expect(String(lines[0]!.args.text)).toContain('`main`');
  expect(String(lines[0]!.args.text)).toContain('3 approvals open');
  expect(world.bot.logs.filter((l) => l.json?.hostId === 'other' && l.msg === CAPPED)).toEqual([]);

  // Two decided: the host is back under 90 % of its cap, is read again, and the 2 get their cards.
  for (const a of mains.slice(0, 2)) {
    await world.press(a.approvalId, 'Allow once', 'U0ALICE');
    await world.waitForCard(a.approvalId, (m) => buttonsOf(m).length === 0 && textOf(m).includes('Approved'));
  }
  for (const a of mains.slice(3)) {
    const card = await world.waitForCard(a.approvalId, (m) => buttonsOf(m).length > 0, 15_000);
    expect(textOf(card)).toContain(a.approvalId);
  }
  await world.bot.waitForLog(
    (l) => l.msg === 'the host is under its cap of open approvals again; reading it again',
  );
  // Each approval once: 5 + 3 cards, still the one channel line, the one warning.
  expect(world.slack.cardPosts().filter((c) => !channelLines(world).includes(c))).toHaveLength(8);
  expect(channelLines(world)).toHaveLength(1);
  expect(world.bot.logs.filter((l) => l.msg === CAPPED)).toHaveLength(1);
  expect(world.host.decides().map((d) => d.frame.params.approvalId)).toEqual(['runaway-0', 'runaway-1']);
});
