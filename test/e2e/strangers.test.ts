// Strangers get nothing by default, end to end: the real bot, the fake host, the fake Slack (whose
// users.info says who is of another team or a guest, and whose conversations.members says who is
// in a channel), real Redis. Users of another Slack team and guests are refused everywhere unless
// the route lets them in; on a route without approvers only the channel's members decide, from
// the card or from an escalation DM. An escalation DM, which carries the request, goes only to
// those who may see the approval.

import { afterEach, describe, expect, it } from 'vitest';
import { shellApproval } from '../support/fakeHost.js';
import { WORKSPACE_PEOPLE } from '../support/fakeSlack.js';
import { until } from '../support/until.js';
import { type ConfigSpec, configFile, ladder, mainHost, rotation, route, users } from './fixtures/config.js';
import { commandAnswer, openHome } from './teamSetup.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

/** Slack Connect: a user whose home team is another organisation's. */
const PARTNER = 'U0PARTNER';
/** A single-channel guest of the bot's own team. */
const GUEST = 'U0GUEST';

async function startWorld(
  spec?: ConfigSpec,
  options: { sharedChannels?: string[]; env?: Record<string, string> } = {},
): Promise<World> {
  const env: Record<string, string> = { ...options.env };
  if (spec !== undefined) {
    const config = configFile(spec);
    cleanups.push(config.remove);
    env.COUNTERSIGN_CONFIG = config.path;
  }
  const world = await World.start({}, env, { slack: { sharedChannels: options.sharedChannels ?? [] } });
  cleanups.push(() => world.close());
  world.slack.setUser(PARTNER, { team_id: 'T0PARTNER', real_name: 'Partner' });
  world.slack.setUser(GUEST, {
    team_id: 'T1',
    is_restricted: true,
    is_ultra_restricted: true,
    real_name: 'Guest',
  });
  return world;
}

async function openShell(world: World, approvalId: string): Promise<void> {
  await world.host.open(shellApproval({ approvalId, sessionId: SESSION, stages: [['make', approvalId]] }), {
    via: 'both',
  });
  await world.waitForCard(approvalId, (m) => buttonsOf(m).length > 0);
}

function postsTo(world: World, channel: string) {
  return world.slack
    .callsOf('chat.postMessage')
    .filter((c) => c.args.channel === channel && !c.args.thread_ts);
}

function ephemeralsTo(world: World, userId: string): string[] {
  return world.slack
    .callsOf('chat.postEphemeral')
    .filter((c) => c.args.user === userId)
    .map((c) => String(c.args.text));
}

async function refusalsOf(world: World, userId: string): Promise<string[]> {
  return (await world.refusalEntries())
    .filter((e) => e.kind === 'refusal' && e.userId === userId)
    .map((e) => e.reason!);
}

describe('strangers', () => {
  it('with no configuration file, a user of another team and a guest are refused; a member decides', async () => {
    const world = await startWorld();
    await openShell(world, 'str-0001');

    await world.press('str-0001', 'Allow once', PARTNER);
    expect(await world.ephemeralTo(PARTNER)).toBe(
      'You belong to another Slack workspace or organization, and (SLACK_CHANNEL) does not let its users decide or see its approvals.',
    );
    await world.press('str-0001', 'Allow once', GUEST);
    expect(await world.ephemeralTo(GUEST)).toBe('Guests cannot decide or see approvals on (SLACK_CHANNEL).');
    // Pressing Reject opens no reason modal for them either.
    await world.press('str-0001', 'Reject', GUEST);
    await expect.poll(() => ephemeralsTo(world, GUEST)).toHaveLength(2);
    expect(world.slack.callsOf('views.open')).toHaveLength(0);
    expect(world.host.decides()).toHaveLength(0);
    await expect.poll(() => refusalsOf(world, PARTNER)).toEqual(['external']);
    await expect.poll(() => refusalsOf(world, GUEST)).toEqual(['guest', 'guest']);

    await world.press('str-0001', 'Allow once', 'U0ALICE');
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'str-0001');
    expect(world.host.decides()).toHaveLength(1);
  });

  it('a route that allows them lets them decide; allowGuests does not let in another team', async () => {
    const world = await startWorld({
      routes: [
        route('partners', { match: { tools: ['bash'] }, allowExternal: true }),
        route('guests', { allowGuests: true }),
      ],
    });
    world.slack.setChannelMembers('C0APPROVALS', [...WORKSPACE_PEOPLE, PARTNER, GUEST]);
    await openShell(world, 'str-0002');
    // allowExternal alone: the guest is still refused, the partner decides.
    await world.press('str-0002', 'Allow once', GUEST);
    expect(await world.ephemeralTo(GUEST)).toBe('Guests cannot decide or see approvals on partners.');
    expect(world.host.decides()).toHaveLength(0);
    await world.press('str-0002', 'Allow once', PARTNER);
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'str-0002');

    // A request of another tool goes to the guests route: the guest decides, the partner may not.
    await world.host.open(
      {
        ...shellApproval({ approvalId: 'str-0003', sessionId: SESSION, stages: [['ls']] }),
        toolName: 'list',
      },
      { via: 'both' },
    );
    await world.waitForCard('str-0003', (m) => buttonsOf(m).length > 0);
    await world.press('str-0003', 'Allow once', PARTNER);
    expect(await world.ephemeralTo(PARTNER)).toContain('guests does not let its users decide');
    await world.press('str-0003', 'Allow once', GUEST);
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'str-0003');
    expect(world.host.decides().map((d) => d.frame.params.approvalId)).toEqual(['str-0002', 'str-0003']);

    // Not members, yet each still decides where they decided: their Home shows it.
    await world.waitForCard('str-0002', (m) => textOf(m).includes('Approved'));
    await openHome(world, PARTNER);
    await until(() =>
      world.slack
        .callsOf('views.publish')
        .some((c) => c.args.user_id === PARTNER && JSON.stringify(c.args.view).includes('make str-0002')),
    );
    // Only what the routes that let them in show: not where other cards go, nor the bot's health.
    for (const c of world.slack.callsOf('views.publish').filter((c) => c.args.user_id === PARTNER)) {
      expect(JSON.stringify(c.args.view)).not.toContain('posted in');
      expect(JSON.stringify(c.args.view)).not.toContain('Agent host');
    }
    const help = JSON.stringify((await commandAnswer(world, PARTNER, 'help')).body);
    expect(help).toContain('Countersign is running. Commands:');
    expect(help).not.toContain('posted in');
  });

  it('on a route without approvers only the channel’s members decide, from the card and from a DM; only they are DMed', async () => {
    const world = await startWorld({
      routes: [
        route('open', {
          oncall: rotation(['U0FRANK'], '2026-01-01T00:00:00Z', '7d'),
          escalation: ladder(['1s', 'dm', 'oncall'], ['60s', 'dm', 'U0BOB']),
        }),
      ],
    });
    // Frank is on call but not in the approvals channel.
    world.slack.setChannelMembers('C0APPROVALS', ['U0ALICE', 'U0BOB']);
    await openShell(world, 'str-0004');
    await world.press('str-0004', 'Allow once', 'U0FRANK');
    expect(await world.ephemeralTo('U0FRANK')).toBe(
      'Only members of <#C0APPROVALS> can decide on open: join the channel, or ask one of its members.',
    );
    await expect.poll(() => refusalsOf(world, 'U0FRANK')).toEqual(['notChannelMember']);
    // He may not see the approval, so the escalation DM, which carries the request, is not sent
    // to him; with no approvers to fall back to, the next step falls due at once (not at 60 s).
    const dm = await world.slack.waitFor('chat.postMessage', (c) => c.args.channel === 'DU0BOB', 8_000);
    expect(postsTo(world, 'DU0FRANK')).toHaveLength(0);
    const passed = await world.bot.waitForLog(
      (l) => l.msg === 'escalation DM passed by people who may not see the approval',
    );
    expect(passed.json?.refused).toEqual([{ userId: 'U0FRANK', why: 'notChannelMember' }]);
    await world.bot.waitForLog(
      (l) => l.msg === 'nobody this step would reach may see the approval; the next step falls due now',
    );

    // A member decides from the DM's button.
    const dmTs = String((dm.response as { ts: string }).ts);
    const allow = buttonsOf({ blocks: dm.args.blocks as unknown[] }).find((b) => b.text === 'Allow once')!;
    await world.pressButton(dmTs, allow, 'U0BOB', 'DU0BOB');
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'str-0004');
    await world.waitForCard('str-0004', (m) => textOf(m).includes('Approved'));
    expect(world.host.decides()).toHaveLength(1);
    expect(postsTo(world, 'DU0FRANK')).toHaveLength(0);
  });

  it('an escalation DM passes by a guest and a user of another team on call: the next on call who may see it is asked', async () => {
    const world = await startWorld({
      routes: [
        route('strict', {
          // Carol may decide: a DM goes only to one who may.
          approvers: users('U0ALICE', 'U0CAROL'),
          oncall: { usergroup: 'S0ONCALL' },
          escalation: ladder(['1s', 'dm', 'oncall']),
        }),
      ],
    });
    world.slack.setUsergroup('S0ONCALL', [GUEST, PARTNER, 'U0CAROL']);
    await openShell(world, 'str-0006');
    // Carol, a member of the team and of the channel, is asked; the two before her are not.
    const dm = await world.slack.waitFor('chat.postMessage', (c) => c.args.channel === 'DU0CAROL', 8_000);
    expect(JSON.stringify(dm.args)).toContain('make str-0006');
    expect(postsTo(world, `D${GUEST}`)).toHaveLength(0);
    expect(postsTo(world, `D${PARTNER}`)).toHaveLength(0);
    const passed = await world.bot.waitForLog(
      (l) => l.msg === 'escalation DM passed by people who may not see the approval',
    );
    expect(passed.json?.refused).toEqual([
      { userId: GUEST, why: 'guest' },
      { userId: PARTNER, why: 'external' },
    ]);
    expect(passed.json?.reached).toBe('U0CAROL');
    await world.waitForCard('str-0006', (m) => textOf(m).includes('DMed @'));
    expect(textOf(await world.waitForCard('str-0006', () => true))).toMatch(/DMed @[^·\n]*carol/i);
  });

  it('with only a guest, or only a user of another team, on call, the escalation DM goes to the approval’s approvers', async () => {
    for (const who of [GUEST, PARTNER]) {
      const world = await startWorld({
        routes: [
          route('strict', {
            approvers: users('U0ALICE'),
            oncall: rotation([who], '2026-01-01T00:00:00Z', '7d'),
            escalation: ladder(['1s', 'dm', 'oncall']),
          }),
        ],
      });
      const approvalId = `str-0007-${who}`;
      await world.host.open(
        shellApproval({ approvalId, sessionId: SESSION, stages: [['deploy', 'top-secret-target']] }),
        { via: 'both' },
      );
      await world.waitForCard(approvalId, (m) => buttonsOf(m).length > 0);
      // The pending list shows them nothing; nor does a DM.
      const pending = await commandAnswer(world, who, 'pending');
      expect(JSON.stringify(pending.body)).not.toContain('top-secret-target');
      const dm = await world.slack.waitFor('chat.postMessage', (c) => c.args.channel === 'DU0ALICE', 8_000);
      expect(JSON.stringify(dm.args)).toContain('top-secret-target');
      expect(postsTo(world, `D${who}`)).toHaveLength(0);
      await world.bot.waitForLog(
        (l) => l.msg === 'nobody on call may see the approval; reaching its approvers instead',
      );
      await world.close();
    }
  }, 40_000);

  it('commands and App Home show a stranger nothing of an open route', async () => {
    const world = await startWorld();
    await openShell(world, 'str-0005');

    const mine = await commandAnswer(world, 'U0ALICE', 'pending');
    expect(JSON.stringify(mine.body)).toContain('make str-0005');
    for (const stranger of [PARTNER, GUEST]) {
      const answer = await commandAnswer(world, stranger, 'pending');
      expect(JSON.stringify(answer.body)).not.toContain('str-0005');
      expect(JSON.stringify(answer.body)).not.toContain('make str');
      await openHome(world, stranger);
      const home = await world.slack.waitFor('views.publish', (c) => c.args.user_id === stranger);
      expect(JSON.stringify(home.args.view)).not.toContain('make str');
    }
    const whoami = await commandAnswer(world, GUEST, 'whoami');
    expect(JSON.stringify(whoami.body)).toContain('you may not decide: guests may not');
  });

  it('the host’s owner who is a guest or of another team is told nothing of their agent’s decisions, unless the route lets them in', async () => {
    const cases = [
      { owner: GUEST, rules: {}, told: false },
      { owner: PARTNER, rules: {}, told: false },
      { owner: GUEST, rules: { allowGuests: true }, told: true },
    ];
    for (const [i, { owner, rules, told }] of cases.entries()) {
      const world = await World.start({}, (host) => {
        const config = configFile({
          hosts: [mainHost(host.command, { owner })],
          routes: [route('strict', { approvers: users('U0ALICE'), ...rules })],
        });
        cleanups.push(config.remove);
        return { COUNTERSIGN_CONFIG: config.path, MSP_HOST_COMMAND: '' };
      });
      cleanups.push(() => world.close());
      world.slack.setUser(PARTNER, { team_id: 'T0PARTNER', real_name: 'Partner' });
      world.slack.setUser(GUEST, { team_id: 'T1', is_restricted: true, real_name: 'Guest' });
      const approvalId = `str-0011-${i}`;
      await world.host.open(
        shellApproval({ approvalId, sessionId: SESSION, stages: [['deploy', 'owner-secret-target']] }),
        { via: 'both' },
      );
      await world.waitForCard(approvalId, (m) => buttonsOf(m).length > 0);
      await world.press(approvalId, 'Reject', 'U0ALICE');
      await world.submitModal('U0ALICE', 'not during the freeze');
      await world.host.waitForDecide((f) => f.frame.params.approvalId === approvalId);
      // The owner's notice has been dealt with, one way or the other.
      await world.bot.waitForLog((l) => l.json?.approvalId === approvalId && l.json?.notice === 'dm');
      const dms = postsTo(world, `D${owner}`);
      if (told) {
        expect(dms).toHaveLength(1);
        expect(String(dms[0]!.args.text)).toContain('not during the freeze');
      } else {
        expect(dms).toHaveLength(0);
        expect(world.slack.callsOf('conversations.open')).toHaveLength(0);
      }
      await world.close();
    }
  }, 60_000);

  it('App Home of a stranger no route lets in is not published again as approvals change; a member’s is', async () => {
    const world = await startWorld();
    const homes = (userId: string) =>
      world.slack.callsOf('views.publish').filter((c) => c.args.user_id === userId);
    for (const userId of [GUEST, 'U0ALICE']) {
      await openHome(world, userId);
      await until(() => homes(userId).length === 1);
    }
    // An approval comes: Alice's Home shows it; the guest's, which says only why not, is left as is.
    await openShell(world, 'str-0030');
    await until(
      () => homes('U0ALICE').some((c) => JSON.stringify(c.args.view).includes('make str-0030')),
      10_000,
    );
    // Past the settling of that burst: any publish of the guest's Home would have been made with Alice's.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(homes(GUEST)).toHaveLength(1);
    expect(JSON.stringify(homes(GUEST)[0]!.args.view)).toContain('You have no access to Countersign here');
  });

  it('App Home stops showing a member who became a guest the decisions they made before', async () => {
    // Slack's answer about who someone is is kept for a second: then the change is seen.
    const world = await startWorld(undefined, { env: { COUNTERSIGN_MEMBERSHIP_CACHE_TTL: '1s' } });
    await openShell(world, 'str-0010');
    const card = await world.card('str-0010');
    await world.pressButton(card.ts, buttonsOf(card)[0]!, 'U0ALICE');
    await world.waitForCard('str-0010', (m) => textOf(m).includes('Approved'));
    const homes = () => world.slack.callsOf('views.publish').filter((c) => c.args.user_id === 'U0ALICE');
    await openHome(world, 'U0ALICE');
    await until(() => homes().some((c) => JSON.stringify(c.args.view).includes('make str-0010')));

    world.slack.setUser('U0ALICE', { team_id: 'T1', is_restricted: true, real_name: 'Alice' });
    await new Promise((r) => setTimeout(r, 1_500));
    const before = homes().length;
    await openHome(world, 'U0ALICE');
    await until(() => homes().length > before, 10_000);
    const home = JSON.stringify(homes().at(-1)!.args.view);
    expect(home).not.toContain('str-0010');
    expect(home).not.toContain('make str');
  });

  it('App Home and help tell a stranger no route lets in only that they have no access, and why; a member sees all', async () => {
    // SLACK_CHANNEL by #name; who someone is is kept for a second, so a delegate turned guest is seen.
    const world = await startWorld(undefined, {
      env: { SLACK_CHANNEL: '#approvals', COUNTERSIGN_MEMBERSHIP_CACHE_TTL: '1s' },
    });
    await openShell(world, 'str-0020');
    // Alice is away and names Dave, a member then, her delegate; Dave's Home says so.
    const away = await commandAnswer(world, 'U0ALICE', 'away until 3d delegate <@U0DAVE|dave>');
    expect(JSON.stringify(away.body)).toContain('You are away until');
    const homeOf = async (userId: string) => {
      const since = world.slack.calls.length;
      await openHome(world, userId);
      const home = await world.slack.waitFor('views.publish', (c) => c.args.user_id === userId, 10_000, {
        since,
      });
      return JSON.stringify(home.args.view);
    };
    const dave = await homeOf('U0DAVE');
    expect(dave).toContain('You stand in for <@U0ALICE>');
    expect(dave).toContain('#approvals');
    expect(dave).toContain('Agent host: :large_green_circle: up');
    expect(dave).toContain('make str-0020');
    const help = JSON.stringify((await commandAnswer(world, 'U0DAVE', 'help')).body);
    expect(help).toContain('Approval cards are posted in #approvals');

    world.slack.setUser('U0DAVE', { team_id: 'T1', is_restricted: true, real_name: 'Dave' });
    await new Promise((r) => setTimeout(r, 1_500));
    const refusals = [
      { who: 'U0DAVE', why: 'guests cannot decide or see approvals, and no route lets them in' },
      { who: GUEST, why: 'guests cannot decide or see approvals, and no route lets them in' },
      { who: PARTNER, why: 'you belong to another Slack workspace or organization' },
    ];
    for (const { who, why } of refusals) {
      const shown = [await homeOf(who), JSON.stringify((await commandAnswer(world, who, 'help')).body)];
      for (const text of shown) {
        expect(text).toContain(`You have no access to Countersign here: ${why}`);
        for (const hidden of ['#approvals', 'C0APPROVALS', 'Agent host', 'Redis', 'U0ALICE', 'make str'])
          expect(text).not.toContain(hidden);
      }
    }
  });

  it('App Home and help refuse whoever Slack cannot say who they are, and say why', async () => {
    const world = await startWorld();
    world.slack.fault(
      'users.info',
      { error: 'fatal_error' },
      { times: Number.POSITIVE_INFINITY, match: (args) => args.user === 'U0EVE' },
    );
    await openHome(world, 'U0EVE');
    const home = await world.slack.waitFor('views.publish', (c) => c.args.user_id === 'U0EVE', 10_000);
    const help = await commandAnswer(world, 'U0EVE', 'help');
    for (const text of [JSON.stringify(home.args.view), JSON.stringify(help.body)]) {
      expect(text).toContain(
        'You have no access to Countersign for now: it could not confirm with Slack who you are',
      );
      expect(text).not.toContain(world.channel);
      expect(text).not.toContain('Agent host');
    }
    // Once Slack says, Eve, a member, is shown where cards go.
    world.slack.heal('users.info');
    expect(JSON.stringify((await commandAnswer(world, 'U0EVE', 'help')).body)).toContain(
      `Approval cards are posted in <#${world.channel}>`,
    );
  });

  it('start-up names each route whose channel is shared with another organization, unless it lets them in', async () => {
    const world = await startWorld(
      {
        routes: [
          route('deploys', { channel: 'C0SHARED', match: { tools: ['deploy'] } }),
          route('partners', { channel: 'C0PARTNERS', allowExternal: true, match: { tools: ['partner'] } }),
          route('builds', { match: { tools: ['build'] } }),
        ],
      },
      { sharedChannels: ['C0SHARED', 'C0PARTNERS'] },
    );
    const shared = (l: { msg?: string }) => String(l.msg).includes('is shared with another workspace');
    const line = await world.bot.waitForLog(shared, 10_000);
    expect(line).toMatchObject({ level: 40, json: { channel: 'C0SHARED', routes: ['deploys'] } });
    expect(line.msg).toContain('though routes "deploys" do not let them decide');
    // The route that lets them in, and the channels of this workspace only, are not named.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(world.bot.logs.filter(shared)).toHaveLength(1);
  });

  it('a route naming its shared channel by #name is named too: the name is asked for by its ID', async () => {
    const world = await startWorld(
      { routes: [route('deploys', { channel: '#approvals', match: { tools: ['deploy'] } })] },
      { sharedChannels: ['C0APPROVALS'] },
    );
    const shared = (l: { msg?: string }) => String(l.msg).includes('is shared with another workspace');
    const line = await world.bot.waitForLog(shared, 10_000);
    expect(line.json).toMatchObject({ channel: 'C0APPROVALS' });
    expect(line.json?.routes).toContain('deploys');
  });

  it('with no approvers anywhere, start-up says once who may decide and how to restrict it', async () => {
    const world = await startWorld();
    const warnings = world.bot.logs.filter((l) => l.level === 40).map((l) => String(l.msg));
    expect(warnings.filter((w) => w.includes('approvers'))).toEqual([
      "no route names approvers: the members of each route's channel may decide its approvals (never guests or users of another Slack team); name routes[].approvers in COUNTERSIGN_CONFIG to restrict who may decide",
    ]);
  });
});
