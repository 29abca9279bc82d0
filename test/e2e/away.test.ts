// Delegation while away, end to end: `/countersign away until … [delegate @user]` and `back`
// typed as signed slash commands, the real bot (and a second replica on the same Redis), the fake
// host, the fake Slack and real Redis. A delegate decides what the person away may, and no more;
// escalation passes the person away by and asks their delegate; everything ends with `back` or
// at the time given.

import { afterEach, describe, expect, it } from 'vitest';
import { readGrantAudit } from '../../src/store/grantAudit.js';
import { keys } from '../../src/store/keys.js';
import { SIGNING_SECRET, startBot } from '../support/bot.js';
import { FakeHost, shellApproval } from '../support/fakeHost.js';
import { FakePagerDuty } from '../support/fakePagerDuty.js';
import type { SlackCall } from '../support/fakeSlack.js';
import { postSlashCommand } from '../support/slackRequests.js';
import { type ConfigSpec, configFile, ladder, mainHost, rotation, route, users } from './fixtures/config.js';
import { openHome } from './teamSetup.js';
import { buttonsOf, rememberButtonsOf, SESSION, textOf, World } from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function startWorld(
  spec: ConfigSpec,
  host?: FakeHost,
  env: Record<string, string> = {},
): Promise<World> {
  const config = configFile(spec);
  cleanups.push(config.remove);
  const world = await World.start(
    {},
    { COUNTERSIGN_CONFIG: config.path, ...(host ? { MSP_HOST_COMMAND: '' } : {}), ...env },
    host ? { host } : {},
  );
  cleanups.push(() => world.close());
  return world;
}

/** A world whose one host, `main`, is owned by `owner` (the owner rule applies to its requests). */
async function ownedWorld(owner: string, spec: ConfigSpec): Promise<World> {
  const host = await FakeHost.start({ sessions: [{ sessionId: SESSION, title: 'Bump the version' }] });
  cleanups.push(() => host.close());
  return startWorld({ ...spec, hosts: [mainHost(host.command, { owner })] }, host);
}

function approval(approvalId: string) {
  return shellApproval({ approvalId, sessionId: SESSION, stages: [['make', approvalId]] });
}

let typed = 0;

/** Types `/countersign <text>` as `userId` at `url` (a replica); resolves with the ephemeral answer. */
async function command(world: World, userId: string, text: string, url = world.bot.url): Promise<string> {
  typed += 1;
  const id = `away-${userId}-${typed}`;
  const response = await postSlashCommand(url, SIGNING_SECRET, {
    userId,
    text,
    responseUrl: world.slack.responseUrl(id),
  });
  expect(response.status).toBe(200);
  const answer = await world.slack.waitForResponse((r) => r.id === id);
  expect(answer.body.response_type).toBe('ephemeral');
  const blocks = (answer.body.blocks ?? []) as Array<{ text?: { text: string } }>;
  return [String(answer.body.text), ...blocks.map((b) => b.text?.text ?? '')].join('\n');
}

/** Presses Allow once as `userId`; resolves with the ephemeral refusal, or undefined when the host got a decide. */
async function tryAllow(world: World, approvalId: string, userId: string): Promise<string | undefined> {
  const before = world.slack.callsOf('chat.postEphemeral').length;
  await world.press(approvalId, 'Allow once', userId);
  for (let i = 0; i < 200; i++) {
    if (world.host.decides().some((d) => d.frame.params.approvalId === approvalId)) return undefined;
    const told = world.slack
      .callsOf('chat.postEphemeral')
      .slice(before)
      .find((c) => c.args.user === userId);
    if (told) return String(told.args.text);
    await sleep(25);
  }
  throw new Error(`neither a decide nor a refusal for ${userId} on ${approvalId}\n${world.bot.tail(20)}`);
}

async function awayKey(world: World, userId: string): Promise<string | null> {
  return world.redis.get(`cs:away:{${userId}}`);
}

function postsTo(world: World, channel: string): SlackCall[] {
  return world.slack
    .callsOf('chat.postMessage')
    .filter((c) => c.args.channel === channel && !c.args.thread_ts);
}

const APPROVERS_ALICE = { routes: [route('default', { approvers: users('U0ALICE') })] };

describe('away and delegate', () => {
  it('the delegate decides what the person away may; the card, the thread and the audit say "for @X"', async () => {
    const world = await startWorld(APPROVERS_ALICE);
    await world.host.open(approval('away-1'));
    await world.postedAt('away-1');
    // Before: Bob is nobody on this route.
    expect(await tryAllow(world, 'away-1', 'U0BOB')).toContain('Only');

    const set = await command(world, 'U0ALICE', 'away until 3d delegate <@U0BOB|bob>');
    expect(set).toContain('You are away until');
    expect(set).toContain('<@U0BOB> is asked in your place');

    expect(await tryAllow(world, 'away-1', 'U0BOB')).toBeUndefined();
    const card = await world.waitForCard('away-1', (m) => textOf(m).includes('Decided by'));
    expect(textOf(card)).toContain('<@U0BOB> for <@U0ALICE>');
    await expect
      .poll(async () => (await world.auditEntries()).find((e) => e.kind === 'decision'), { timeout: 5_000 })
      .toMatchObject({ approvalId: 'away-1', userId: 'U0BOB', onBehalfOf: 'U0ALICE' });
    const line = await world.slack.waitFor(
      'chat.postMessage',
      (c) => Boolean(c.args.thread_ts) && String(c.args.text).includes('for @'),
    );
    expect(String(line.args.text)).toContain('u0bob for @u0alice');
    // whoami says why.
    expect(await command(world, 'U0BOB', 'whoami')).toContain('you stand in for <@U0ALICE>, who is away');
  });

  it('refuses, with the reason and changing nothing: a bad time, one in the past or past 30 days, yourself, a bot, a deactivated account, a guest, another team, and a guest going away', async () => {
    const world = await startWorld(APPROVERS_ALICE);
    world.slack.setUser('U0ROBOT', { is_bot: true });
    world.slack.setUser('U0GUEST', { is_restricted: true });
    world.slack.setUser('U0PARTNER', { team_id: 'T0PARTNER' });
    world.slack.setUser('U0GONE', { deleted: true });
    const refusals: Array<[string, string, RegExp]> = [
      ['U0ALICE', 'away', /Say when you are back/],
      ['U0ALICE', 'away until someday', /neither a duration/],
      ['U0ALICE', 'away until 2020-01-01', /already passed/],
      ['U0ALICE', 'away until 31d', /at most 30 days/],
      ['U0ALICE', 'away until 3d delegate <@U0ALICE|alice>', /cannot be your own delegate/],
      ['U0ALICE', 'away until 3d delegate <@U0ROBOT|robot>', /A bot cannot stand in/],
      ['U0ALICE', 'away until 3d delegate <@U0GONE|gone>', /account is deactivated/],
      ['U0ALICE', 'away until 3d delegate <@U0GUEST|guest>', /Guests may not stand in/],
      ['U0ALICE', 'away until 3d delegate <@U0PARTNER|partner>', /another Slack workspace/],
      ['U0ALICE', 'away until 3d delegate @bob', /is not a Slack user/],
      ['U0GUEST', 'away until 3d delegate <@U0BOB|bob>', /Only full members/],
      ['U0PARTNER', 'away until 3d', /Only full members/],
    ];
    for (const [user, text, why] of refusals) {
      const answer = await command(world, user, text);
      expect(answer, text).toMatch(why);
      expect(answer, text).toContain('Nothing was changed');
    }
    for (const user of ['U0ALICE', 'U0GUEST', 'U0PARTNER']) expect(await awayKey(world, user)).toBeNull();
    expect(await world.redis.keys('cs:standin:*')).toEqual([]);
    // Nobody got anything from it: Bob and the bot are still refused.
    await world.host.open(approval('away-refused-1'));
    await world.postedAt('away-refused-1');
    expect(await tryAllow(world, 'away-refused-1', 'U0BOB')).toContain('Only');
    expect(await tryAllow(world, 'away-refused-1', 'U0ROBOT')).toContain('Only');
    // `back` when not away says so.
    expect(await command(world, 'U0BOB', 'back')).toContain('You were not away');
  });

  it('a non-approver’s delegate gains nothing, and a delegate of a delegate counts for one hop only', async () => {
    const world = await startWorld(APPROVERS_ALICE);
    await world.host.open(approval('away-hop-1'));
    await world.postedAt('away-hop-1');
    // Eve may not decide here: Frank standing in for her may not either.
    await command(world, 'U0EVE', 'away until 1d delegate <@U0FRANK|frank>');
    expect(await tryAllow(world, 'away-hop-1', 'U0FRANK')).toContain('Only');
    // Alice → Bob, Bob → Carol: Carol stands in for Bob, who may decide only as Alice's delegate.
    await command(world, 'U0ALICE', 'away until 1d delegate <@U0BOB|bob>');
    await command(world, 'U0BOB', 'away until 1d delegate <@U0CAROL|carol>');
    expect(await tryAllow(world, 'away-hop-1', 'U0CAROL')).toContain('Only');
    // Bob, away himself, may still decide for Alice.
    expect(await tryAllow(world, 'away-hop-1', 'U0BOB')).toBeUndefined();
    await expect
      .poll(async () => (await world.refusalEntries()).map((e) => [e.userId, e.reason]))
      .toEqual([
        ['U0FRANK', 'notApprover'],
        ['U0CAROL', 'notApprover'],
      ]);
  });

  it('the owner rule holds through delegation: the owner may not decide as a delegate, nor may the owner’s delegate', async () => {
    const world = await ownedWorld('U0BOB', {
      routes: [route('default', { approvers: users('U0ALICE', 'U0BOB'), allowSelfApproval: false })],
    });
    await world.host.open(approval('away-owner-1'));
    await world.postedAt('away-owner-1');
    // Alice away, Bob (whose agent asks) her delegate: still his own agent's request.
    await command(world, 'U0ALICE', 'away until 1d delegate <@U0BOB|bob>');
    expect(await tryAllow(world, 'away-owner-1', 'U0BOB')).toMatch(/own agent|requester|your own/i);
    // Bob away, Carol his delegate: Bob may not decide it, so neither may she.
    await command(world, 'U0BOB', 'away until 1d delegate <@U0CAROL|carol>');
    expect(await tryAllow(world, 'away-owner-1', 'U0CAROL')).toContain('Only');
    await expect
      .poll(async () => (await world.refusalEntries()).map((e) => [e.userId, e.reason]))
      .toEqual([
        ['U0BOB', 'selfApproval'],
        ['U0CAROL', 'notApprover'],
      ]);
    expect(world.host.decides()).toHaveLength(0);
    // Carol standing in for Alice instead (not the owner): she may.
    await command(world, 'U0ALICE', 'away until 1d delegate <@U0CAROL|carol>');
    expect(await tryAllow(world, 'away-owner-1', 'U0CAROL')).toBeUndefined();
  });

  it('a quorum counts the person away and their delegate once', async () => {
    const world = await startWorld({
      routes: [route('default', { approvers: users('U0ALICE', 'U0BOB'), quorum: 2 })],
    });
    await world.host.open(approval('away-quorum-1'));
    await world.postedAt('away-quorum-1');
    await command(world, 'U0ALICE', 'away until 1d delegate <@U0CAROL|carol>');
    expect(await tryAllow(world, 'away-quorum-1', 'U0CAROL')).toContain('counted: 1 of 2');
    // Alice's own vote stands for the same rights as Carol's: still one.
    expect(await tryAllow(world, 'away-quorum-1', 'U0ALICE')).toContain('counted: 1 of 2');
    await world.waitForCard('away-quorum-1', (m) => textOf(m).includes('1 of 2 approvals'));
    expect(world.host.decides()).toHaveLength(0);
    expect(await tryAllow(world, 'away-quorum-1', 'U0BOB')).toBeUndefined();
  });

  it('a delegate’s vote stops counting when the absence ends: the quorum is counted again where it is claimed', async () => {
    const world = await startWorld({
      routes: [route('default', { approvers: users('U0ALICE', 'U0BOB'), quorum: 2 })],
    });
    const id = 'away-quorum-back-1';
    await world.host.open(approval(id));
    await world.postedAt(id);
    await command(world, 'U0ALICE', 'away until 1d delegate <@U0CAROL|carol>');
    expect(await tryAllow(world, id, 'U0CAROL')).toContain('counted: 1 of 2');
    // Alice is back: Carol's vote stood for Alice's rights, which Carol no longer holds.
    await command(world, 'U0ALICE', 'back');
    expect(await tryAllow(world, id, 'U0BOB')).toContain('only 1 of those who picked it may decide it now');
    expect(world.host.decides()).toHaveLength(0);
    // Alice's own pick is the second; the decision names those whose votes counted.
    expect(await tryAllow(world, id, 'U0ALICE')).toBeUndefined();
    await expect
      .poll(async () =>
        (await world.auditEntries()).find((e) => e.kind === 'decision' && e.approvalId === id),
      )
      .toMatchObject({ voters: JSON.stringify(['U0BOB', 'U0ALICE']) });
    // The vote Carol cast for Alice says so in the audit.
    expect(
      (await world.auditEntries()).find(
        (e) => e.kind === 'vote' && e.approvalId === id && e.userId === 'U0CAROL',
      ),
    ).toMatchObject({ onBehalfOf: 'U0ALICE' });
  });

  it('strangers never stand in, even on a route that lets guests decide; nor does anyone for a deactivated account', async () => {
    // What Slack says of people is kept one second here, so that the changes below are seen.
    const world = await startWorld(
      { routes: [route('default', { approvers: users('U0ALICE', 'U0DAVE'), allowGuests: true })] },
      undefined,
      { COUNTERSIGN_MEMBERSHIP_CACHE_TTL: '1s' },
    );
    await world.host.open(approval('away-guest-decide-1'));
    await world.postedAt('away-guest-decide-1');
    await command(world, 'U0ALICE', 'away until 1d delegate <@U0BOB|bob>');
    await command(world, 'U0DAVE', 'away until 1d delegate <@U0CAROL|carol>');
    // Bob became a guest after Alice named him; Dave's account was deactivated after he named Carol.
    world.slack.setUser('U0BOB', { is_restricted: true });
    world.slack.setUser('U0DAVE', { deleted: true });
    await sleep(1_100);
    expect(await tryAllow(world, 'away-guest-decide-1', 'U0BOB')).toContain('Only');
    expect(await tryAllow(world, 'away-guest-decide-1', 'U0CAROL')).toContain('Only');
    expect(world.host.decides()).toHaveLength(0);
    // Alice herself still decides.
    expect(await tryAllow(world, 'away-guest-decide-1', 'U0ALICE')).toBeUndefined();
  });

  it('a delegate decides the request only: nothing they pick may outlast it', async () => {
    const world = await startWorld(APPROVERS_ALICE);
    const id = 'away-once-1';
    await world.host.open(approval(id));
    const card = await world.waitForCard(id, (m) => buttonsOf(m).length > 0);
    await command(world, 'U0ALICE', 'away until 1d delegate <@U0CAROL|carol>');
    const refusals = () => world.slack.callsOf('chat.postEphemeral').filter((c) => c.args.user === 'U0CAROL');
    // "Don't ask again" (a grant of Countersign's) and the host's workspace rule: both refused.
    const remember = rememberButtonsOf(card)[0];
    expect(remember, `remember buttons: ${buttonsOf(card).map((b) => b.text)}`).toBeDefined();
    await world.pressButton(card.ts, remember!, 'U0CAROL', card.channel);
    await world.press(id, 'Always allow in this workspace: make away-once-1 ...', 'U0CAROL');
    await expect.poll(() => refusals().length).toBe(2);
    for (const told of refusals()) {
      expect(String(told.args.text)).toContain(
        'You stand in for <@U0ALICE>, so you may allow this request once',
      );
    }
    expect(world.host.decides()).toHaveLength(0);
    // No grant was made: none stored (a grant's row is in its bucket tag's string), none audited.
    expect(await world.redis.keys(keys.grantTag('*'))).toEqual([]);
    expect(await readGrantAudit(world.redis)).toEqual([]);
    // Once is theirs to give.
    expect(await tryAllow(world, id, 'U0CAROL')).toBeUndefined();
  });

  it('standing in for the owner adds no vote to a quorum; standing in for another approver does', async () => {
    // A route that lets the owner decide alone still never counts the owner toward a quorum.
    const world = await ownedWorld('U0ALICE', {
      routes: [
        route('default', {
          approvers: users('U0ALICE', 'U0BOB', 'U0DAVE'),
          quorum: 2,
          allowSelfApproval: true,
        }),
      ],
    });
    const id = 'away-owner-quorum-1';
    await world.host.open(approval(id));
    await world.postedAt(id);
    expect(await tryAllow(world, id, 'U0ALICE')).toContain('does not count');
    await command(world, 'U0ALICE', 'away until 1d delegate <@U0CAROL|carol>');
    expect(await tryAllow(world, id, 'U0CAROL')).toContain('you stand in for <@U0ALICE>, whose agent it is');
    expect(await tryAllow(world, id, 'U0BOB')).toContain('counted: 1 of 2');
    expect(world.host.decides()).toHaveLength(0);
    // Dave away too, with Carol as his delegate: now she votes for him, and that is the second.
    await command(world, 'U0DAVE', 'away until 1d delegate <@U0CAROL|carol>');
    expect(await tryAllow(world, id, 'U0CAROL')).toBeUndefined();
    expect(world.host.decides()).toHaveLength(1);
  });

  it('a quorum’s card and audit say whom each voter stood in for', async () => {
    const world = await startWorld({
      routes: [route('default', { approvers: users('U0ALICE', 'U0BOB'), quorum: 2 })],
    });
    const id = 'away-quorum-for-1';
    await world.host.open(approval(id));
    await world.postedAt(id);
    await command(world, 'U0ALICE', 'away until 1d delegate <@U0CAROL|carol>');
    expect(await tryAllow(world, id, 'U0CAROL')).toContain('counted: 1 of 2');
    expect(await tryAllow(world, id, 'U0BOB')).toBeUndefined();
    await world.waitForCard(id, (m) => textOf(m).includes('<@U0CAROL> for <@U0ALICE> and <@U0BOB>'));
    await expect
      .poll(async () =>
        (await world.auditEntries()).find((e) => e.kind === 'decision' && e.approvalId === id),
      )
      .toMatchObject({
        userId: 'U0BOB',
        voters: JSON.stringify(['U0CAROL', 'U0BOB']),
        stoodInFor: JSON.stringify({ U0CAROL: 'U0ALICE' }),
      });
  });

  it('`back` ends the delegation at once, and an absence ends by itself at its time', async () => {
    const world = await startWorld(APPROVERS_ALICE);
    for (const id of ['away-back-1', 'away-back-2', 'away-back-3']) {
      await world.host.open(approval(id));
      await world.postedAt(id);
    }
    await command(world, 'U0ALICE', 'away until 1d delegate <@U0BOB|bob>');
    expect(await tryAllow(world, 'away-back-1', 'U0BOB')).toBeUndefined();
    expect(await command(world, 'U0ALICE', 'back')).toContain('<@U0BOB> no longer stands in for you');
    expect(await awayKey(world, 'U0ALICE')).toBeNull();
    expect(await world.redis.zrange('cs:standin:{U0BOB}', 0, -1)).toEqual([]);
    expect(await tryAllow(world, 'away-back-2', 'U0BOB')).toContain('Only');

    await command(world, 'U0ALICE', 'away until 3s delegate <@U0CAROL|carol>');
    const ttl = await world.redis.pttl('cs:away:{U0ALICE}');
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(3_000);
    expect(await tryAllow(world, 'away-back-2', 'U0CAROL')).toBeUndefined();
    await sleep(Math.max(0, ttl) + 300);
    expect(await awayKey(world, 'U0ALICE')).toBeNull();
    expect(await tryAllow(world, 'away-back-3', 'U0CAROL')).toContain('Only');
    expect(world.host.decides().map((d) => d.frame.params.approvalId)).toEqual([
      'away-back-1',
      'away-back-2',
    ]);
  });

  it('escalation passes the person away by and reaches their delegate: no mention, no DM to them', async () => {
    const world = await startWorld({
      routes: [
        route('default', {
          approvers: users('U0ALICE', 'U0BOB'),
          oncall: { usergroup: 'S0ONCALL' },
          escalation: ladder(['1s', 'mention', 'oncall'], ['2s', 'dm', 'oncall'], ['3s', 'dm', 'U0CAROL']),
        }),
      ],
    });
    world.slack.setUsergroup('S0ONCALL', ['U0ALICE', 'U0DAVE']);
    await command(world, 'U0ALICE', 'away until 1d delegate <@U0BOB|bob>');
    await command(world, 'U0CAROL', 'away until 1d');
    await world.host.open(approval('away-esc-1'));
    const card = await world.postedAt('away-esc-1');
    const dm = await world.slack.waitFor('chat.postMessage', (c) => c.args.channel === 'DU0BOB', 6_000);
    await sleep(2_000);
    const thread = world.slack.repliesTo(card.channel, card.ts).map((m) => m.text);
    const mention = thread.find((t) => t.includes('waited'))!;
    // The group is named member by member, Alice replaced by Bob in her place.
    expect(mention).toContain('<@U0BOB> <@U0DAVE>');
    expect(mention).not.toContain('U0ALICE');
    expect(mention).not.toContain('subteam');
    expect(dm.args.channel).toBe('DU0BOB');
    expect(JSON.stringify(dm.args.blocks)).toContain('you are asked in place of @u0alice, who is away');
    expect(postsTo(world, 'DU0ALICE')).toHaveLength(0);
    // Carol is away with nobody standing in: her own DM step reaches nobody.
    expect(postsTo(world, 'DU0CAROL')).toHaveLength(0);
    // Bob, asked in Alice's place, decides for her.
    expect(await tryAllow(world, 'away-esc-1', 'U0BOB')).toBeUndefined();
  });

  it('escalation reaches a delegate only while they are a full member: one who became a guest is passed by', async () => {
    // What Slack says of people is kept one second here, so that the change below is seen.
    const world = await startWorld(
      {
        routes: [
          route('default', {
            approvers: users('U0ALICE', 'U0DAVE'),
            escalation: ladder(['1s', 'dm', 'U0ALICE'], ['2s', 'dm', 'U0DAVE']),
          }),
        ],
      },
      undefined,
      { COUNTERSIGN_MEMBERSHIP_CACHE_TTL: '1s' },
    );
    await command(world, 'U0ALICE', 'away until 1d delegate <@U0BOB|bob>');
    // Bob became a guest after Alice named him.
    world.slack.setUser('U0BOB', { is_restricted: true });
    await sleep(1_100);
    await world.host.open(approval('away-guest-1'));
    // Alice's step reaches nobody (her delegate may not stand in now): the ladder goes on to Dave.
    await world.slack.waitFor('chat.postMessage', (c) => c.args.channel === 'DU0DAVE', 8_000);
    expect(postsTo(world, 'DU0BOB')).toHaveLength(0);
    expect(postsTo(world, 'DU0ALICE')).toHaveLength(0);
  });

  it('a page that would wake only people away is not sent: their delegate is DMed in their place; with someone on call present, or back, the page goes', async () => {
    const pd = await FakePagerDuty.start();
    cleanups.push(() => pd.close());
    pd.oncalls = [{ escalation_level: 1, user: { id: 'PBOB', summary: 'Bob', email: 'bob@example.com' } }];
    const world = await startWorld(
      {
        routes: [
          route('default', {
            approvers: users('U0BOB', 'U0CAROL'),
            oncall: { pagerduty: { scheduleId: 'P123ABC' } },
            escalation: ladder(['1s', 'page']),
          }),
        ],
      },
      undefined,
      pd.env(),
    );
    world.slack.setUser('U0BOB', { profile: { email: 'bob@example.com', display_name: 'bob' } });
    await command(world, 'U0BOB', 'away until 1d delegate <@U0CAROL|carol>');
    await world.host.open(approval('away-page-1'));
    await world.postedAt('away-page-1');
    const dm = await world.slack.waitFor('chat.postMessage', (c) => c.args.channel === 'DU0CAROL', 6_000);
    expect(JSON.stringify(dm.args.blocks)).toContain('you are asked in place of @bob, who is away');
    // The card says what was done: a DM, not a page.
    await world.waitForCard('away-page-1', (m) => textOf(m).includes('DMed @'));
    expect(textOf(await world.waitForCard('away-page-1', () => true))).not.toContain('paged');
    await world.bot.waitForLog((l) => l.msg === 'everyone PagerDuty has on call is away; not paging');
    expect(pd.eventsOf('trigger')).toHaveLength(0);
    expect(postsTo(world, 'DU0BOB')).toHaveLength(0);
    // Carol, asked in Bob's place, decides for him.
    expect(await tryAllow(world, 'away-page-1', 'U0CAROL')).toBeUndefined();

    // Someone else on call is present: the page goes, Bob away or not (PagerDuty's overrides decide).
    pd.oncalls = [
      { escalation_level: 1, user: { id: 'PBOB', summary: 'Bob', email: 'bob@example.com' } },
      { escalation_level: 1, user: { id: 'PDAVE', summary: 'Dave', email: 'dave@example.com' } },
    ];
    world.slack.setUser('U0DAVE', { profile: { email: 'dave@example.com', display_name: 'dave' } });
    await world.redis.del(...(await world.redis.keys('cs:oncall:*')));
    await world.host.open(approval('away-page-2'));
    await world.postedAt('away-page-2');
    await pd.waitForEvent('trigger', 'away-page-2', 6_000);
    const paged = textOf(await world.waitForCard('away-page-2', (m) => textOf(m).includes('paged')));
    // The card names whom PagerDuty pages, Bob among them, not the delegate it never reaches.
    expect(paged).toMatch(/paged [^·\n]*@bob/);
    expect(paged).toMatch(/paged [^·\n]*@dave/);
    expect(paged).not.toMatch(/paged [^·\n]*@carol/);

    // Back, and the only one on call again: the next approval's page goes, as it would have.
    pd.oncalls = pd.oncalls.slice(0, 1);
    await world.redis.del(...(await world.redis.keys('cs:oncall:*')));
    expect(await command(world, 'U0BOB', 'back')).toContain('back');
    await world.host.open(approval('away-page-3'));
    await world.postedAt('away-page-3');
    await pd.waitForEvent('trigger', 'away-page-3', 6_000);
    await world.waitForCard('away-page-3', (m) => textOf(m).includes('paged'));
  });

  it('when the only one on call is away with nobody standing in, the steps fall through to the route’s approvers', async () => {
    const world = await startWorld({
      routes: [
        route('default', {
          approvers: users('U0CAROL'),
          oncall: rotation(['U0ALICE'], '2026-01-01T00:00:00Z', '7d'),
          escalation: ladder(['1s', 'mention', 'oncall'], ['2s', 'dm', 'oncall']),
        }),
      ],
    });
    await command(world, 'U0ALICE', 'away until 1d');
    await world.host.open(approval('away-fall-1'));
    const card = await world.postedAt('away-fall-1');
    await world.slack.waitFor('chat.postMessage', (c) => c.args.channel === 'DU0CAROL', 6_000);
    const mention = world.slack.repliesTo(card.channel, card.ts).find((m) => m.text.includes('waited'))!;
    expect(mention.text).toContain('<@U0CAROL>');
    expect(mention.text).not.toContain('U0ALICE');
    expect(postsTo(world, 'DU0ALICE')).toHaveLength(0);
    await world.waitForCard('away-fall-1', (m) => textOf(m).includes('DMed @u0carol'));
  });

  it('when the only one on call, also the only approver, is away, each step falls through to the next at once; never to the timeout', async () => {
    const world = await startWorld({
      // Carol, an admin, may decide though the route does not name her: a DM goes only to one who may.
      admins: ['U0CAROL'],
      routes: [
        route('default', {
          approvers: users('U0ALICE'),
          oncall: rotation(['U0ALICE'], '2026-01-01T00:00:00Z', '7d'),
          escalation: ladder(
            ['1s', 'dm', 'oncall'],
            ['30s', 'mention', 'oncall'],
            ['40s', 'dm', 'U0CAROL'],
            ['60s', 'timeout'],
          ),
        }),
      ],
    });
    await command(world, 'U0ALICE', 'away until 1d');
    await world.host.open(approval('away-next-1'));
    const card = await world.postedAt('away-next-1');
    const opened = Date.now();
    // The DM to Alice and the mention reach nobody, so Carol's DM, due at 40 s, comes at once.
    await world.slack.waitFor('chat.postMessage', (c) => c.args.channel === 'DU0CAROL', 8_000);
    expect(Date.now() - opened).toBeLessThan(10_000);
    const thread = world.slack.repliesTo(card.channel, card.ts).map((m) => m.text);
    expect(thread.some((t) => t.includes('nobody on call could be found'))).toBe(true);
    expect(thread.join('\n')).not.toContain('U0ALICE');
    expect(postsTo(world, 'DU0ALICE')).toHaveLength(0);
    // The timeout keeps its time: nothing is decided for lack of people.
    await sleep(2_000);
    expect(world.host.decides()).toHaveLength(0);
  });

  it('App Home shows your own status and whom you stand in for', async () => {
    const world = await startWorld(APPROVERS_ALICE);
    await command(world, 'U0ALICE', 'away until 3d delegate <@U0BOB|bob>');
    const homeText = async (userId: string) => {
      const before = world.slack.callsOf('views.publish').length;
      await openHome(world, userId);
      const call = await world.slack.waitFor(
        'views.publish',
        (c) => c.args.user_id === userId && world.slack.callsOf('views.publish').indexOf(c) >= before,
      );
      return JSON.stringify(call.args.view);
    };
    const alice = await homeText('U0ALICE');
    expect(alice).toContain('You are away until');
    expect(alice).toContain('<@U0BOB> stands in for you');
    await world.host.open(approval('away-home-1'));
    await world.postedAt('away-home-1');
    const bob = await homeText('U0BOB');
    expect(bob).toContain('You stand in for <@U0ALICE>');
    expect(bob).toContain('You are not away');
    // What Alice may decide waits for Bob too, while he stands in; Eve sees none of it.
    expect(bob).toContain('make away-home-1');
    expect(await homeText('U0EVE')).not.toContain('make away-home-1');
    await command(world, 'U0ALICE', 'back');
    await sleep(3_500);
    const after = await homeText('U0BOB');
    expect(after).not.toContain('You stand in for');
    expect(after).not.toContain('make away-home-1');
  });

  it('a delegate replaced, or dropped, has their App Home published again: it no longer says they stand in', async () => {
    const world = await startWorld(APPROVERS_ALICE);
    /**
     * A Home published for `userId` after `since` (a call index) that `shows` matches: Homes
     * published for an earlier change may still land after it, so the one sought is waited for.
     */
    const published = (userId: string, since: number, shows: (view: string) => boolean) =>
      world.slack.waitFor(
        'views.publish',
        (c) => c.args.user_id === userId && shows(JSON.stringify(c.args.view)),
        8_000,
        { since },
      );
    const standsIn = (view: string) => view.includes('You stand in for <@U0ALICE>');
    let since = world.slack.calls.length;
    await command(world, 'U0ALICE', 'away until 3d delegate <@U0BOB|bob>');
    await published('U0BOB', since, standsIn);

    // Carol in Bob's place: Bob's Home is published again, without his opening it.
    since = world.slack.calls.length;
    await command(world, 'U0ALICE', 'away until 3d delegate <@U0CAROL|carol>');
    await published('U0CAROL', since, standsIn);
    await published('U0BOB', since, (view) => !view.includes('You stand in for'));

    // Away again with nobody standing in: Carol's Home stops saying she does.
    since = world.slack.calls.length;
    await command(world, 'U0ALICE', 'away until 3d');
    await published('U0CAROL', since, (view) => !view.includes('You stand in for'));
    await published('U0ALICE', since, (view) => view.includes('nobody stands in for you'));
  });

  it('across two replicas: set away at one, the other honours it at once; back at one ends it at the other', async () => {
    const world = await startWorld(APPROVERS_ALICE);
    const config = configFile(APPROVERS_ALICE);
    cleanups.push(config.remove);
    const second = await startBot({
      host: world.host,
      slack: world.slack,
      redisDb: world.redisDb,
      env: { COUNTERSIGN_CONFIG: config.path, COUNTERSIGN_REPLICA_ID: 'r2' },
    });
    cleanups.push(() => second.stop(5_000));
    await second.waitReady(20_000);
    await world.host.open(approval('away-rep-1'));
    await world.host.open(approval('away-rep-2'));
    await world.postedAt('away-rep-1');
    await world.postedAt('away-rep-2');

    await command(world, 'U0ALICE', 'away until 1d delegate <@U0BOB|bob>', second.url);
    expect(await tryAllow(world, 'away-rep-1', 'U0BOB')).toBeUndefined();
    await world.waitForCard('away-rep-1', (m) => textOf(m).includes('<@U0BOB> for <@U0ALICE>'));

    await command(world, 'U0ALICE', 'back', world.bot.url);
    const before = world.slack.callsOf('chat.postEphemeral').length;
    const card = await world.card('away-rep-2');
    const { pressButtonAt, buttonsOf } = await import('./world.js');
    const allow = buttonsOf(card).find((b) => b.text === 'Allow once')!;
    await pressButtonAt(second.url, world.slack, { channel: card.channel, ts: card.ts }, allow, 'U0BOB');
    const told = await world.slack.waitFor(
      'chat.postEphemeral',
      (c) => c.args.user === 'U0BOB' && world.slack.callsOf('chat.postEphemeral').indexOf(c) >= before,
    );
    expect(String(told.args.text)).toContain('Only');
    expect(world.host.decides().filter((d) => d.frame.params.approvalId === 'away-rep-2')).toHaveLength(0);
  });
});
