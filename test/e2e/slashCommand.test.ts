// /countersign end to end: the real bot with a config file of restricted routes, the fake host
// asking, signed slash commands, and the answers the bot sends back (its ack, or a post to the
// command's response_url). Each user sees exactly the pending approvals they may decide.

import { afterEach, describe, expect, it } from 'vitest';
import { FALLBACK_ROUTE_NAME } from '../../src/routing/router.js';
import type { ResponseUrlPost } from '../support/fakeSlack.js';
import { probeUntil } from '../support/until.js';
import { storeOf } from './grantSteps.js';
import { approvalFor, commandAnswer, openHome, startTeamWorld, typeCommand } from './teamSetup.js';
import { SESSION, World } from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

async function teamWorld(): Promise<World> {
  const world = await startTeamWorld(cleanups);
  world.slack.setUsergroup('S0SRE', ['U0CAROL']);
  return world;
}

/** Every line of an answer's blocks. */
function linesOf(answer: { blocks?: unknown }): string[] {
  const blocks = (answer.blocks ?? []) as Array<{ text?: { text: string } }>;
  return blocks.flatMap((b) => (b.text ? b.text.text.split('\n') : []));
}

/** Which approvals an answer links to, in order, by their cards' permalinks. */
function linkedApprovals(answer: ResponseUrlPost, cards: Map<string, string>): string[] {
  const text = JSON.stringify(answer.body.blocks);
  return [...cards]
    .map(([id, link]) => ({ id, at: text.indexOf(link) }))
    .filter((c) => c.at >= 0)
    .sort((a, b) => a.at - b.at)
    .map((c) => c.id);
}

describe('/countersign', () => {
  it('pending lists exactly the approvals each user may decide, across routes, with links; it acks before the work', async () => {
    const world = await teamWorld();
    const opened = [
      approvalFor('deploy-a', 'deploy', { command: ['kubectl', 'rollout', 'restart', 'web'] }),
      approvalFor('deploy-pw', 'deploy', { protectedWrite: true }),
      approvalFor('shell-a', 'shell', { command: ['echo', '<!channel>', '\n', 'second line'] }),
      approvalFor('shell-done', 'shell'),
    ];
    const cards = new Map<string, string>();
    for (const approval of opened) {
      await world.host.open(approval);
      const { channel, ts } = await world.postedAt(approval.approvalId);
      cards.set(approval.approvalId, world.slack.permalink(channel, ts));
    }
    expect(world.slack.permalink('C0DEPLOYS', (await world.postedAt('deploy-a')).ts)).toBe(
      cards.get('deploy-a'),
    );
    expect((await world.postedAt('shell-a')).channel).toBe('C0SHELL');
    // A decided approval is pending for nobody.
    await world.waitForCard('shell-done', (m) => JSON.stringify(m.blocks).includes('Allow once'));
    await world.press('shell-done', 'Allow once', 'U0BOB');
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'shell-done');

    // The command is acked at once, while the lookup behind it still waits for Slack (who Alice
    // is: card links need no call once auth.test has given the workspace's address).
    let releaseLinks = () => {};
    world.slack.fault(
      'users.info',
      { until: new Promise<void>((resolve) => (releaseLinks = resolve)) },
      { times: Number.POSITIVE_INFINITY },
    );
    const acked = await typeCommand(world, 'U0ALICE', 'pending');
    expect({ status: acked.status, body: acked.body }).toEqual({ status: 200, body: '' });
    expect(world.slack.responses.filter((r) => r.id === acked.responseId)).toEqual([]);
    releaseLinks();
    world.slack.heal('users.info');
    const alice = await world.slack.waitForResponse((r) => r.id === acked.responseId);
    expect(alice.body.response_type).toBe('ephemeral');
    // The held call was the lookup's own: the answer waited for it.
    expect(world.slack.calls.some((c) => c.method === 'users.info' && c.args.user === 'U0ALICE')).toBe(true);
    // Alice approves deploys, and their protected writes; not shell.
    expect(linkedApprovals(alice, cards)).toEqual(['deploy-a', 'deploy-pw']);
    const first = linesOf(alice.body).find((l) => l.includes(cards.get('deploy-a')!))!;
    expect(first).toContain(`*<${cards.get('deploy-a')}|deploy>*`);
    expect(first).toContain('kubectl rollout restart web');
    expect(first).toMatch(/asked <!date\^\d+\^\{ago\}.*\|just now/);

    // Carol is in @sre: deploys, but not its protected write.
    expect(linkedApprovals(await commandAnswer(world, 'U0CAROL', 'pending'), cards)).toEqual(['deploy-a']);
    // Bob: shell only; the agent's text is escaped, on one line, its line break a marker (a
    // space would read as one command where there are two).
    const bob = await commandAnswer(world, 'U0BOB', 'pending');
    expect(linkedApprovals(bob, cards)).toEqual(['shell-a']);
    const bobLine = linesOf(bob.body).find((l) => l.includes(cards.get('shell-a')!))!;
    expect(bobLine).toContain('echo &lt;!channel&gt;⟨U+000A⟩second line');
    expect(JSON.stringify(bob.body)).not.toContain('<!channel>');
    // The admin sees every pending approval, oldest first.
    const ada = await commandAnswer(world, 'U0ADA', 'pending');
    expect(linkedApprovals(ada, cards)).toEqual(['deploy-a', 'deploy-pw', 'shell-a']);
    expect(linesOf(ada.body)[0]).toContain('you are an admin');
    // Someone on no route's list sees none.
    const eve = await commandAnswer(world, 'U0EVE', 'pending');
    expect(linkedApprovals(eve, cards)).toEqual([]);
    expect(linesOf(eve.body)).toEqual(['Nothing is waiting for you to decide.']);
  }, 60_000);

  it('whoami says where the user may decide and why: listed, group member, admin, channel member', async () => {
    const world = await teamWorld();
    // Frank is not in the fallback's channel; the others are.
    world.slack.setChannelMembers(world.channel, ['U0ALICE', 'U0CAROL', 'U0ADA', 'U0EVE']);
    const route = (lines: string[], name: string) => lines.find((l) => l.startsWith(`• *${name}*`));

    const alice = linesOf((await commandAnswer(world, 'U0ALICE', 'whoami')).body);
    expect(alice[0]).toBe('<@U0ALICE>: where you may decide.');
    expect(route(alice, 'deploys')).toBe(
      '• *deploys* in <#C0DEPLOYS>: you may decide: you are listed as an approver; protected writes: you may decide: you are listed as an approver.',
    );
    expect(route(alice, 'shell')).toBe('• *shell* in <#C0SHELL>: you may not decide: only <@U0BOB>.');
    expect(route(alice, '(SLACK_CHANNEL)')).toBe(
      `• *(SLACK_CHANNEL)* in <#${world.channel}>: you may decide: you are a member of its channel.`,
    );
    // The routes where she may decide come first.
    expect(alice.indexOf(route(alice, 'shell')!)).toBeGreaterThan(alice.indexOf(route(alice, 'deploys')!));

    const carol = linesOf((await commandAnswer(world, 'U0CAROL', 'whoami')).body);
    expect(route(carol, 'deploys')).toBe(
      '• *deploys* in <#C0DEPLOYS>: you may decide: you are a member of <!subteam^S0SRE>; protected writes: you may not decide: only <@U0ALICE>.',
    );

    const ada = linesOf((await commandAnswer(world, 'U0ADA', 'whoami')).body);
    expect(ada[0]).toContain('you are an admin');
    expect(route(ada, 'shell')).toBe('• *shell* in <#C0SHELL>: you may decide: you are an admin.');

    const eve = linesOf((await commandAnswer(world, 'U0EVE', 'whoami')).body);
    expect(route(eve, 'deploys')).toBe(
      '• *deploys* in <#C0DEPLOYS>: you may not decide: only <@U0ALICE>, <!subteam^S0SRE>; protected writes: you may not decide: only <@U0ALICE>.',
    );
    expect(route(eve, '(SLACK_CHANNEL)')).toContain('you are a member of its channel');
    // Someone the channel does not have may not decide there.
    const frank = linesOf((await commandAnswer(world, 'U0FRANK', 'whoami')).body);
    expect(route(frank, '(SLACK_CHANNEL)')).toBe(
      `• *(SLACK_CHANNEL)* in <#${world.channel}>: you may not decide: only members of <#${world.channel}> may.`,
    );
  }, 60_000);

  it('a #name channel (SLACK_CHANNEL=#approvals) is asked for by its id: whoami, stats and the Home grants see its members', async () => {
    // No card is posted first: the ID comes from the channels the bot is in, not from a post.
    const world = await World.start({}, { SLACK_CHANNEL: '#approvals' });
    cleanups.push(() => world.close());
    world.slack.setChannelMembers('C0APPROVALS', ['U0ALICE', 'U0BOB']);
    const fallback = (lines: string[]) => lines.find((l) => l.startsWith(`• *${FALLBACK_ROUTE_NAME}*`));

    const alice = linesOf((await commandAnswer(world, 'U0ALICE', 'whoami')).body);
    expect(fallback(alice)).toBe(
      `• *${FALLBACK_ROUTE_NAME}* in #approvals: you may decide: you are a member of its channel.`,
    );
    const frank = linesOf((await commandAnswer(world, 'U0FRANK', 'whoami')).body);
    expect(fallback(frank)).toBe(
      `• *${FALLBACK_ROUTE_NAME}* in #approvals: you may not decide: only members of #approvals may.`,
    );
    // Slack is never asked for the members of a name (it answers channel_not_found).
    expect(world.slack.callsOf('conversations.members').map((c) => c.args.channel)).not.toContain(
      '#approvals',
    );

    // Stats are the channel members'.
    const noStats = /there are none here you may see/;
    expect(JSON.stringify((await commandAnswer(world, 'U0ALICE', 'stats')).body)).not.toMatch(noStats);
    expect(JSON.stringify((await commandAnswer(world, 'U0FRANK', 'stats')).body)).toMatch(noStats);

    // A grant is kept under the channel's ID (the card's): a member's Home lists it.
    const grant = await storeOf(world).create({
      caller: `session:${SESSION}`,
      tool: 'shell',
      capabilities: ['exec:make test'],
      sandboxMode: 'workspace-write',
      holder: 'bot',
      grantedBy: 'U0BOB',
      approvalId: 'shell-1',
      hostId: 'main',
      route: FALLBACK_ROUTE_NAME,
      channel: 'C0APPROVALS',
      ttlMs: 3_600_000,
    });
    await openHome(world, 'U0ALICE');
    const home = await world.slack.waitFor('views.publish', (c) => c.args.user_id === 'U0ALICE');
    expect(JSON.stringify(home.args.view)).toContain(grant.grantId);
  }, 60_000);

  it("an answer the response_url refuses comes as an ephemeral message in the command's channel; neither, one warn line", async () => {
    const world = await teamWorld();
    const usual = await commandAnswer(world, 'U0ALICE', 'whoami', 'C0DEPLOYS');
    // The response_url refuses the next answer (expired, used up): the same answer comes, to
    // Alice alone, in the channel she typed the command in.
    world.slack.refuseResponses();
    const typed = await typeCommand(world, 'U0ALICE', 'whoami', 'C0DEPLOYS');
    expect({ status: typed.status, body: typed.body }).toEqual({ status: 200, body: '' });
    const told = await probeUntil('the ephemeral answer', () =>
      world.slack.ephemerals.find((e) => e.user === 'U0ALICE'),
    );
    expect(told).toMatchObject({ channel: 'C0DEPLOYS', text: usual.body.text, blocks: usual.body.blocks });
    expect(world.slack.refusedResponses.map((r) => r.id)).toEqual([typed.responseId]);
    expect(world.slack.responses.filter((r) => r.id === typed.responseId)).toEqual([]);
    await world.bot.waitForLog(
      (l) => l.msg?.startsWith('answered /countersign in an ephemeral message') === true,
    );

    // Neither way takes it (typed in a channel the bot cannot post in): one warn line says what
    // each said, with nothing of the answer or of the response_url.
    world.slack.refuseResponses();
    world.slack.failNext('chat.postEphemeral', 'channel_not_found');
    const lost = await typeCommand(world, 'U0EVE', 'pending', 'C0ELSEWHERE');
    expect(lost.status).toBe(200);
    const warned = await world.bot.waitForLog(
      (l) => l.msg?.startsWith('could not answer /countersign') === true,
    );
    expect(warned.level).toBe(40);
    expect(warned.json).toMatchObject({
      userId: 'U0EVE',
      channel: 'C0ELSEWHERE',
      subcommand: 'pending',
      responseUrl: 'http_404',
      ephemeral: { kind: 'notInChannel', error: 'channel_not_found' },
    });
    expect(warned.raw).not.toContain('/response/');
    expect(world.bot.logs.filter((l) => l.msg?.startsWith('could not answer /countersign'))).toHaveLength(1);
    expect(world.slack.ephemerals.filter((e) => e.user === 'U0EVE')).toEqual([]);
  }, 60_000);

  it('help lists the commands one line each, an unknown command says so first, and revoke without an id says how', async () => {
    const world = await teamWorld();
    const ackOf = async (text: string) => {
      const { status, body } = await typeCommand(world, 'U0EVE', text);
      expect(status).toBe(200);
      const json = JSON.parse(body) as { response_type: string; text: string; blocks: unknown[] };
      expect(json.response_type).toBe('ephemeral');
      return json;
    };
    // Help asks Slack who the user is (a stranger is told only that they have no access): it acks
    // at once and answers through the response_url.
    const answerOf = async (text: string) => (await commandAnswer(world, 'U0EVE', text)).body;
    const help = linesOf(await answerOf('help'));
    expect(help).toEqual([
      `Countersign is running. Approval cards are posted in <#${world.channel}>. Commands:`,
      '• `/countersign pending`: the approvals waiting for you to decide, with a link to each card',
      '• `/countersign whoami`: the routes where you may decide, and why',
      '• `/countersign grants`: the remembered approvals ("don\'t ask again") of this channel, each with a Revoke button',
      '• `/countersign revoke &lt;grant-id&gt;`: revoke a remembered approval: its requests are asked on their cards again',
      '• `/countersign stats [route] [7d|30d]`: how long decisions take on your routes, by whom or what, and what was asked most',
      '• `/countersign away until &lt;3d | 2026-12-24&gt; [delegate @user]`: you are away (at most 30 days): escalation passes you by, and your delegate is asked and may decide what you may',
      '• `/countersign back`: you are back: escalation reaches you again, and your delegate no longer stands in',
      '• `/countersign help`: this list',
    ]);
    // No subcommand is help too.
    expect(linesOf(await answerOf(''))).toEqual(help);
    const unknown = linesOf(await answerOf('frobnicate <!channel> now'));
    expect(unknown).toEqual(['Unknown command `frobnicate`.', ...help]);
    expect(linesOf(await answerOf('<!channel>'))[0]).toBe('Unknown command `&lt;!channel&gt;`.');
    // revoke without a grant id says how it is used, in the ack.
    const usage = await ackOf('revoke');
    expect(usage.text).toBe(
      'Say which grant to revoke: `/countersign revoke &lt;grant-id&gt;`. `/countersign grants` lists the grant ids of a channel.',
    );
  }, 60_000);
});
