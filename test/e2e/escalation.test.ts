// On-call escalation, end to end: the real bot, a fake host, the fake Slack, a fake PagerDuty
// (the bot is another process, so nock cannot reach it) and the tests' Redis. Ladders of a few
// seconds; every step is counted where it lands (the fake Slack, the fake PagerDuty, the host).

import { afterEach, describe, expect, it } from 'vitest';
import { startBot } from '../support/bot.js';
import { shellApproval } from '../support/fakeHost.js';
import { FakePagerDuty } from '../support/fakePagerDuty.js';
import type { SlackMessage } from '../support/fakeSlack.js';
import { seriesValue } from '../support/metricSeries.js';
import { PrivateRedis } from '../support/privateRedis.js';
import { keysHolding } from '../support/redisHolding.js';
import { startMonitor } from '../support/redisMonitor.js';
import { type ConfigSpec, configFile, ladder, mainHost, rotation, route, users } from './fixtures/config.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The bot's environment for a ladder, kept for a restart or a second process. */
let lastEnv: Record<string, string> = {};

async function startWorld(spec: ConfigSpec, pd?: FakePagerDuty): Promise<World> {
  const config = configFile(spec);
  cleanups.push(config.remove);
  lastEnv = { COUNTERSIGN_CONFIG: config.path, ...(pd ? pd.env() : {}) };
  const world = await World.start({}, lastEnv);
  cleanups.push(() => world.close());
  return world;
}

async function startPagerDuty(): Promise<FakePagerDuty> {
  const pd = await FakePagerDuty.start();
  cleanups.push(() => pd.close());
  return pd;
}

function approval(approvalId: string) {
  return shellApproval({ approvalId, sessionId: SESSION, stages: [['make', 'deploy']] });
}

/** Thread replies under a card, in order. */
function replies(world: World, card: { channel: string; ts: string }): SlackMessage[] {
  return world.slack.repliesTo(card.channel, card.ts);
}

async function until<T>(what: string, probe: () => T | undefined, timeoutMs = 8_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

function postsTo(world: World, channel: string) {
  return world.slack
    .callsOf('chat.postMessage')
    .filter((c) => c.args.channel === channel && !c.args.thread_ts);
}

describe('escalation', () => {
  it('fires every step once, in order, at its time: remind, mention (a user group, broadcast), DM to its first member, page', async () => {
    const pd = await startPagerDuty();
    const world = await startWorld(
      {
        routes: [
          route('default', {
            // The on-call group may decide: a DM goes only to one who may.
            approvers: { users: ['U0ALICE'], usergroups: ['S0ONCALL'] },
            oncall: { usergroup: 'S0ONCALL' },
            escalation: ladder(
              ['1s', 'remind'],
              ['2s', 'mention', 'oncall', { broadcast: true }],
              ['3s', 'dm', 'oncall'],
              ['4s', 'page'],
            ),
          }),
        ],
      },
      pd,
    );
    world.slack.setUsergroup('S0ONCALL', ['U0BOB', 'U0CAROL']);
    await world.host.open(approval('esc-all-1'));
    const card = await world.postedAt('esc-all-1');
    const postedAt = Date.now();
    // The card names the first step before anything fired.
    await world.waitForCard('esc-all-1', (m) => textOf(m).includes('next: reminder'));

    const dm = await world.slack.waitFor('chat.postMessage', (c) => c.args.channel === 'DU0BOB', 6_000);
    const page = await pd.waitForEvent('trigger', 'esc-all-1', 6_000);
    await sleep(1_500);

    const thread = replies(world, card);
    expect(thread).toHaveLength(2);
    expect(thread[0]!.text).toMatch(/waited \d+s for a decision/);
    expect(thread[1]!.text).toContain('<!subteam^S0ONCALL>');
    const mentionCall = world.slack
      .callsOf('chat.postMessage')
      .find((c) => String(c.args.text).includes('subteam'));
    expect(String(mentionCall?.args.reply_broadcast)).toBe('true');
    // Only the group's first member is DMed, once, with the card's buttons and a link.
    expect(postsTo(world, 'DU0BOB')).toHaveLength(1);
    expect(postsTo(world, 'DU0CAROL')).toHaveLength(0);
    expect(buttonsOf({ blocks: dm.args.blocks as unknown[] }).map((b) => b.text)).toContain('Allow once');
    expect(JSON.stringify(dm.args.blocks)).toContain('Open the card');
    expect(pd.eventsOf('trigger')).toHaveLength(1);
    expect(page.routing_key).toBe('R0UTINGKEY0000000000000000000000');
    // The page says which approval waits, where and how long, nothing of what it asks: PagerDuty's
    // on-call and whoever reads its incidents are nobody Countersign has checked.
    expect(page.payload?.summary).toMatch(/^Approval waiting on route default: bash, \d+s$/);
    expect(page.payload?.custom_details).toMatchObject({
      approvalId: 'esc-all-1',
      route: 'default',
      host: 'default',
    });
    expect(page.payload?.custom_details).not.toHaveProperty('sessionTitle');
    expect(page.payload?.custom_details).not.toHaveProperty('sessionId');
    expect(JSON.stringify(page)).not.toContain('make deploy');
    expect(JSON.stringify(page)).not.toContain('Bump the version');

    // In order, each at its time (within the poll's granularity and some slack).
    const times = [thread[0]!.versions[0]!.at, thread[1]!.versions[0]!.at, dm.at, page.at].map(
      (t) => t - postedAt,
    );
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    times.forEach((t, i) => {
      expect(t).toBeGreaterThanOrEqual((i + 1) * 1_000 - 150);
      expect(t).toBeLessThan((i + 1) * 1_000 + 1_200);
    });
    const shown = textOf(await world.waitForCard('esc-all-1', (m) => textOf(m).includes('paged')));
    expect(shown).toContain('reminded at 1s');
    expect(shown).toContain('mentioned @S0ONCALL at 2s');
    expect(shown).toContain('DMed @u0bob at 3s');
    expect(shown).toContain('paged PagerDuty at 4s');
    // /metrics counts each step fired, by its action.
    const metrics = await (await fetch(`${world.bot.metricsUrl}/metrics`)).text();
    for (const action of ['remind', 'mention', 'dm', 'page']) {
      expect(seriesValue(metrics, `countersign_escalation_steps_total{action="${action}"}`), action).toBe(1);
    }
    expect(seriesValue(metrics, 'countersign_escalation_steps_total{action="timeout"}')).toBe(0);
  });

  it('a page step with includeRequest carries the command and the session title, hidden characters marked', async () => {
    const pd = await startPagerDuty();
    const world = await startWorld(
      {
        routes: [
          route('default', { escalation: ladder(['1s', 'page', undefined, { includeRequest: true }]) }),
        ],
      },
      pd,
    );
    await world.host.open(
      shellApproval({ approvalId: 'esc-req-1', sessionId: SESSION, stages: [['make', 'de\u202Eploy']] }),
    );
    const page = await pd.waitForEvent('trigger', 'esc-req-1', 6_000);
    expect(page.payload?.summary).toMatch(
      /^Approval waiting on route default: bash, \d+s — make de⟨U\+202E⟩ploy$/,
    );
    expect(page.payload?.custom_details).toMatchObject({
      approvalId: 'esc-req-1',
      sessionId: SESSION,
      sessionTitle: 'Bump the version',
    });
  });

  it('a decision cancels the rest, and resolves the page', async () => {
    const pd = await startPagerDuty();
    const world = await startWorld(
      {
        routes: [
          route('default', { escalation: ladder(['1s', 'page'], ['3s', 'remind'], ['4s', 'dm', 'U0BOB']) }),
        ],
      },
      pd,
    );
    await world.host.open(approval('esc-cancel-1'));
    const card = await world.postedAt('esc-cancel-1');
    await pd.waitForEvent('trigger', 'esc-cancel-1', 4_000);
    await world.waitForCard('esc-cancel-1', (m) => textOf(m).includes('paged'));
    await world.press('esc-cancel-1', 'Allow once', 'U0ALICE');
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'esc-cancel-1');
    const resolve = await pd.waitForEvent('resolve', 'esc-cancel-1', 4_000);
    expect(resolve.routing_key).toBe('R0UTINGKEY0000000000000000000000');
    await sleep(4_000);
    expect(replies(world, card).filter((m) => m.text.includes('waited'))).toHaveLength(0);
    expect(postsTo(world, 'DU0BOB')).toHaveLength(0);
    expect(pd.eventsOf('trigger')).toHaveLength(1);
    expect(pd.eventsOf('resolve')).toHaveLength(1);
  });

  it("keeps no routing key in Redis: the pages on PAGERDUTY_ROUTING_KEY and on a step's own key are resolved with the config's keys", async () => {
    const pd = await startPagerDuty();
    const envKey = pd.env().PAGERDUTY_ROUTING_KEY!;
    const stepKey = 'STEPR0UTINGKEY000000000000000000';
    const world = await startWorld(
      {
        routes: [
          route('default', {
            escalation: ladder(['1s', 'page'], ['1s', 'page', undefined, { routingKey: stepKey }]),
          }),
        ],
      },
      pd,
    );
    await world.host.open(approval('esc-keys-1'));
    await world.postedAt('esc-keys-1');
    await until('both pages', () => pd.eventsOf('trigger', 'esc-keys-1').length === 2 || undefined, 6_000);
    expect(await keysHolding(world.redis, envKey)).toEqual([]);
    expect(await keysHolding(world.redis, stepKey)).toEqual([]);
    await world.press('esc-keys-1', 'Allow once', 'U0ALICE');
    await until('both resolves', () => pd.eventsOf('resolve', 'esc-keys-1').length === 2 || undefined, 6_000);
    expect(
      pd
        .eventsOf('resolve', 'esc-keys-1')
        .map((event) => event.routing_key)
        .sort(),
    ).toEqual([envKey, stepKey].sort());
    expect(await keysHolding(world.redis, envKey)).toEqual([]);
    expect(await keysHolding(world.redis, stepKey)).toEqual([]);
  });

  it('a timeout rejects with its feedback through the Decider, and the card says so', async () => {
    const world = await startWorld({ routes: [route('default', { escalation: ladder(['1s', 'timeout']) })] });
    await world.host.open(approval('esc-timeout-1'));
    const decide = await world.host.waitForDecide(
      (f) => f.frame.params.approvalId === 'esc-timeout-1',
      5_000,
    );
    expect(decide.frame.params.choiceId).toBe('abort');
    expect(String(decide.frame.params.feedback)).toContain('Nobody answered');
    const card = await world.waitForCard('esc-timeout-1', (m) => textOf(m).includes('Timed out after'));
    expect(textOf(card)).toContain('Timed out after 1s — rejected');
    expect(world.host.decides().filter((d) => d.frame.params.approvalId === 'esc-timeout-1')).toHaveLength(1);
    // /metrics: the step fired, and the decision is timed as a timeout's on its route.
    const metric = async (series: string) =>
      seriesValue(await (await fetch(`${world.bot.metricsUrl}/metrics`)).text(), series);
    expect(await metric('countersign_escalation_steps_total{action="timeout"}')).toBe(1);
    expect(
      await metric('countersign_time_to_decision_seconds_count{route="default",outcome="timeout"}'),
    ).toBe(1);
    expect(
      await metric('countersign_time_to_decision_seconds_bucket{le="1",route="default",outcome="timeout"}'),
    ).toBe(0);
    expect(await metric('countersign_time_to_decision_seconds_count{route="default",outcome="person"}')).toBe(
      0,
    );
  });

  it('a timeout due while a click is being sent, which the host then refuses, is tried again and rejects', async () => {
    const world = await startWorld({ routes: [route('default', { escalation: ladder(['1s', 'timeout']) })] });
    await world.host.open(approval('esc-timeout-retry-1'));
    await world.postedAt('esc-timeout-retry-1');
    // The click's decide is still with the host when the timeout falls due (the record is
    // `deciding`); the host then refuses it, and the claim is given back: `pending` again.
    await world.host.delayDecide(2_500);
    await world.host.failDecide({ code: -32052, data: { kind: 'approvalChoiceInvalid' } });
    await world.press('esc-timeout-retry-1', 'Allow once', 'U0ALICE');
    const mine = (f: { frame: { params: Record<string, unknown> } }) =>
      f.frame.params.approvalId === 'esc-timeout-retry-1';
    await world.host.waitForDecide((f) => mine(f) && f.frame.params.choiceId === 'allow_once', 3_000);
    const timedOut = await world.host.waitForDecide(
      (f) => mine(f) && f.frame.params.choiceId === 'abort',
      15_000,
    );
    expect(String(timedOut.frame.params.feedback)).toContain('Nobody answered');
    const card = await world.waitForCard('esc-timeout-retry-1', (m) => textOf(m).includes('Timed out after'));
    expect(textOf(card)).not.toContain('timeout failed');
    expect(world.host.decides().filter(mine)).toHaveLength(2);
  }, 30_000);

  it('a timeout the host refuses logs what came of it, not "decided", and decides when tried again', async () => {
    const world = await startWorld({ routes: [route('default', { escalation: ladder(['1s', 'timeout']) })] });
    await world.host.failDecide({ code: -32603, message: 'internal error', data: { kind: 'internal' } });
    await world.host.open(approval('esc-timeout-log-1'));
    const mine = (f: { frame: { params: Record<string, unknown> } }) =>
      f.frame.params.approvalId === 'esc-timeout-log-1';
    await world.waitForCard('esc-timeout-log-1', (m) => textOf(m).includes('Timed out after'), 15_000);
    expect(world.host.decides().filter(mine)).toHaveLength(2);
    // The card may be updated before the line that says so reaches the test through the pipe.
    await world.bot.waitForLog(
      (l) => l.json?.approvalId === 'esc-timeout-log-1' && l.msg === 'escalation timeout decided',
    );
    const timeoutLines = world.bot.logs
      .filter(
        (l) => l.json?.approvalId === 'esc-timeout-log-1' && String(l.msg).startsWith('escalation timeout'),
      )
      .map((l) => ({ level: l.level, msg: l.msg, outcome: l.json?.outcome, errorKind: l.json?.errorKind }));
    expect(timeoutLines).toEqual([
      {
        level: 40,
        msg: 'escalation timeout could not decide; trying again',
        outcome: 'refused',
        errorKind: 'internal',
      },
      { level: 30, msg: 'escalation timeout decided', outcome: 'decided', errorKind: undefined },
    ]);
  }, 30_000);

  it('the DM buttons decide with the card’s authorization', async () => {
    const world = await startWorld({
      routes: [
        route('default', {
          approvers: users('U0ALICE'),
          oncall: rotation(['U0ALICE'], '2026-01-01T00:00:00Z', '7d'),
          escalation: ladder(['1s', 'dm', 'oncall']),
        }),
      ],
    });
    await world.host.open(approval('esc-dm-1'));
    const dm = await world.slack.waitFor('chat.postMessage', (c) => c.args.channel === 'DU0ALICE', 5_000);
    const ts = String((await until('the DM posted', () => world.slack.messagesIn('DU0ALICE')[0]))?.ts);
    const allow = buttonsOf({ blocks: dm.args.blocks as unknown[] }).find((b) => b.text === 'Allow once')!;
    // Someone who may not decide is refused, and nothing reaches the host.
    await world.pressButton(ts, allow, 'U0EVE', 'DU0ALICE');
    expect(await world.ephemeralTo('U0EVE')).toBe('Only <@U0ALICE> can decide on default.');
    await sleep(300);
    expect(world.host.decides()).toHaveLength(0);
    // The approver decides from the DM, exactly as from the card.
    await world.pressButton(ts, allow, 'U0ALICE', 'DU0ALICE');
    const decide = await world.host.waitForDecide((f) => f.frame.params.approvalId === 'esc-dm-1');
    expect(decide.frame.params.choiceId).toBe('allow_once');
    await world.waitForCard('esc-dm-1', (m) => textOf(m).includes('Approved'));
  });

  it('a protected write is DMed to its own approvers: not to the on-call route approver who may not see it', async () => {
    const world = await startWorld({
      routes: [
        route('prod', {
          channel: 'C0PRIVATE',
          approvers: users('U0BOB'),
          protectedWriteApprovers: users('U0ALICE'),
          oncall: rotation(['U0BOB'], '2026-01-01T00:00:00Z', '7d'),
          escalation: ladder(['1s', 'dm', 'oncall']),
        }),
      ],
    });
    // Bob approves the route's ordinary requests, but is not in its private channel.
    world.slack.setChannelMembers('C0PRIVATE', ['U0ALICE']);
    await world.host.open(
      shellApproval({
        approvalId: 'esc-pw-0001',
        sessionId: SESSION,
        stages: [['write', '/etc/protected-secret-path']],
        protectedWrite: true,
      }),
    );
    await world.waitForCard('esc-pw-0001', (m) => buttonsOf(m).length > 0);
    // Bob may not see it, so the DM goes to the protected write's approver, not to the route's.
    const dm = await world.slack.waitFor('chat.postMessage', (c) => c.args.channel === 'DU0ALICE', 8_000);
    expect(JSON.stringify(dm.args)).toContain('protected-secret-path');
    expect(postsTo(world, 'DU0BOB')).toHaveLength(0);
    const passed = await world.bot.waitForLog(
      (l) => l.msg === 'escalation DM passed by people who may not see the approval',
    );
    expect(passed.json?.refused).toEqual([{ userId: 'U0BOB', why: 'notApprover' }]);
    await world.waitForCard('esc-pw-0001', (m) => textOf(m).includes('DMed @u0alice'));

    // An ordinary request of the same route is Bob's to decide: the DM goes to him.
    await world.host.open(approval('esc-pw-0002'));
    const his = await world.slack.waitFor('chat.postMessage', (c) => c.args.channel === 'DU0BOB', 8_000);
    expect(JSON.stringify(his.args.blocks)).toContain('esc-pw-0002');
    expect(JSON.stringify(his.args)).not.toContain('protected-secret-path');
  });

  it('a request a risk rule names approvers for is DMed to them, not to the on-call channel member who may only read it', async () => {
    const world = await startWorld({
      routes: [
        route('prod', {
          channel: 'C0PRIVATE',
          oncall: { usergroup: 'S0ONCALL' },
          escalation: ladder(['1s', 'dm', 'oncall']),
        }),
      ],
      risks: [
        {
          name: 'force-push',
          match: { programs: [{ program: 'git', subcommand: 'push', flags: ['--force'] }] },
          warning: 'Rewrites shared history',
          approvers: { usergroups: ['S0SECURITY'] },
        },
      ],
    });
    // Bob is on call and in the channel, so he may read the card; only security may decide it.
    world.slack.setUsergroup('S0ONCALL', ['U0BOB']);
    world.slack.setUsergroup('S0SECURITY', ['U0ALICE']);
    world.slack.setChannelMembers('C0PRIVATE', ['U0ALICE', 'U0BOB']);
    await world.host.open(
      shellApproval({
        approvalId: 'esc-risk-0001',
        sessionId: SESSION,
        stages: [['git', 'push', '--force']],
      }),
    );
    await world.waitForCard('esc-risk-0001', (m) => buttonsOf(m).length > 0);
    const dm = await world.slack.waitFor('chat.postMessage', (c) => c.args.channel === 'DU0ALICE', 8_000);
    expect(JSON.stringify(dm.args.blocks)).toContain('esc-risk-0001');
    expect(postsTo(world, 'DU0BOB')).toHaveLength(0);
    const passed = await world.bot.waitForLog(
      (l) => l.msg === 'escalation DM passed by people who may not see the approval',
    );
    expect(passed.json?.refused).toEqual([{ userId: 'U0BOB', why: 'notRiskApprover' }]);
    await world.waitForCard('esc-risk-0001', (m) => textOf(m).includes('DMed @u0alice'));
  });

  it("a DM never asks the host's owner to decide their own agent's request where the route forbids it", async () => {
    const world = await World.start({}, (host) => {
      const config = configFile({
        hosts: [mainHost(host.command, { owner: 'U0ALICE' })],
        routes: [
          route('builds', {
            // Alice is on call and comes first among the approvers: without the owner rule she
            // would be the one DMed.
            approvers: users('U0ALICE', 'U0BOB'),
            allowSelfApproval: false,
            oncall: rotation(['U0ALICE'], '2026-01-01T00:00:00Z', '7d'),
            escalation: ladder(['1s', 'dm', 'oncall']),
          }),
        ],
      });
      cleanups.push(config.remove);
      return { COUNTERSIGN_CONFIG: config.path, MSP_HOST_COMMAND: '' };
    });
    cleanups.push(() => world.close());
    await world.host.open(approval('esc-own-0001'));
    await world.waitForCard('esc-own-0001', (m) => buttonsOf(m).length > 0);
    const dm = await world.slack.waitFor('chat.postMessage', (c) => c.args.channel === 'DU0BOB', 8_000);
    expect(JSON.stringify(dm.args.blocks)).toContain('esc-own-0001');
    expect(postsTo(world, 'DU0ALICE')).toHaveLength(0);
    const passed = await world.bot.waitForLog(
      (l) => l.msg === 'escalation DM passed by people who may not see the approval',
    );
    expect(passed.json?.refused).toEqual([{ userId: 'U0ALICE', why: 'selfApproval' }]);
  });

  it('survives a kill between steps: after the restart the next step fires once, late, and the fired ones do not repeat', async () => {
    const world = await startWorld({
      routes: [
        route('default', {
          escalation: ladder(['1s', 'remind'], ['3s', 'mention', 'U0BOB'], ['30s', 'remind']),
        }),
      ],
    });
    // The last step is only there to be "next": far enough out that a slow restart cannot reach it.
    await world.host.open(approval('esc-restart-1'));
    const card = await world.postedAt('esc-restart-1');
    await until('the reminder', () => replies(world, card).length === 1 || undefined, 4_000);
    await world.bot.kill();
    // The mention falls due while no bot runs.
    await sleep(3_000);
    await world.restartBot(lastEnv);
    // The host restarted with the bot and asks the same tool call again, on a successor card.
    const all = () => world.slack.callsOf('chat.postMessage').filter((c) => c.args.thread_ts !== undefined);
    // A restart under a loaded test run can take seconds; the 30 s step stays out of reach.
    await until('the mention', () => all().find((c) => String(c.args.text).includes('<@U0BOB>')), 10_000);
    await sleep(1_500);
    const texts = all().map((c) => (String(c.args.text).includes('<@U0BOB>') ? 'mention' : 'remind'));
    expect(texts).toEqual(['remind', 'mention']);
    const successor = await until('the successor card', () =>
      world.slack.cardPosts().find((c) => !JSON.stringify(c.args.metadata).includes('"esc-restart-1"')),
    );
    const successorId = (successor.args.metadata as { event_payload: { approval_id: string } }).event_payload
      .approval_id;
    const shown = textOf(await world.waitForCard(successorId, (m) => textOf(m).includes('mentioned')));
    expect(shown).toContain('reminded at 1s');
    expect(shown).toContain('mentioned @u0bob at 3s');
    expect(shown).toMatch(/next: reminder in \d+s/);
  });

  it('a page cut short by SIGTERM is put back: the next bot sends it, and the card shows it', async () => {
    const pd = await startPagerDuty();
    // PagerDuty takes the trigger in and never answers, for longer than the stop's drain.
    pd.holdEvents = true;
    const world = await startWorld(
      { routes: [route('default', { escalation: ladder(['1s', 'page'], ['60s', 'remind']) })] },
      pd,
    );
    await world.host.open(approval('esc-sigterm-1'));
    await world.postedAt('esc-sigterm-1');
    await until('the trigger on its way', () => pd.held.length > 0 || undefined, 5_000);
    const first = world.bot;
    const exit = await first.stop(15_000);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(first.logs.map((l) => l.msg)).toContain(
      'escalation step cut short by the stop; put back for another process',
    );
    // PagerDuty answers again; the next bot finds the page due, sends it, and shows it.
    pd.holdEvents = false;
    await world.restartBot(lastEnv);
    await pd.waitForEvent('trigger', 'esc-sigterm-1', 10_000);
    const shown = await until(
      'a card showing the page',
      () => world.slack.messagesIn(world.channel).find((m) => textOf(m).includes('paged PagerDuty at 1s')),
      5_000,
    );
    expect(textOf(shown)).not.toContain('could not');
    await sleep(1_000);
    expect(pd.eventsOf('trigger')).toHaveLength(1);
  });

  it('two bot processes on one Redis fire every step exactly once (fake Slack and PagerDuty count)', async () => {
    const pd = await startPagerDuty();
    const world = await startWorld(
      {
        routes: [
          route('default', {
            escalation: ladder(['1s', 'remind'], ['1500ms', 'mention', 'U0BOB'], ['2s', 'page']),
          }),
        ],
      },
      pd,
    );
    // A second replica sharing the Slack, Redis, host command and PagerDuty: it stands by for the
    // host (the first holds its lease) but polls the same escalation schedule.
    const bot2 = await startBot({
      host: world.host,
      slack: world.slack,
      redisDb: world.redisDb,
      env: { ...lastEnv, COUNTERSIGN_REPLICA_ID: 'second' },
    });
    cleanups.push(() => bot2.stop(5_000).catch(() => undefined));
    await bot2.waitReady(15_000);
    const ids = ['esc-two-0001', 'esc-two-0002', 'esc-two-0003', 'esc-two-0004', 'esc-two-0005'];
    // Each asks something else: alike pending requests would also get a batch summary card
    // (docs/slack.md#batch-triage), a post of its own this count of cards does not take in.
    for (const id of ids)
      await world.host.open(shellApproval({ approvalId: id, sessionId: SESSION, stages: [['make', id]] }));
    const cards = await Promise.all(ids.map((id) => world.postedAt(id)));
    await until(
      'every page',
      () => ids.every((id) => pd.eventsOf('trigger', id).length > 0) || undefined,
      8_000,
    );
    await sleep(1_500);
    for (const [i, id] of ids.entries()) {
      const thread = replies(world, cards[i]!);
      expect(thread.filter((m) => m.text.includes('waited') && !m.text.includes('<@'))).toHaveLength(1);
      expect(thread.filter((m) => m.text.includes('<@U0BOB>'))).toHaveLength(1);
      expect(pd.eventsOf('trigger', id)).toHaveLength(1);
    }
    expect(world.slack.cardPosts()).toHaveLength(ids.length);
  });

  it('the PagerDuty on-call source names who to mention, and a failing source falls back to the approvers', async () => {
    const pd = await startPagerDuty();
    pd.oncalls = [{ escalation_level: 1, user: { id: 'PBOB', summary: 'Bob', email: 'bob@example.com' } }];
    const world = await startWorld(
      {
        routes: [
          route('pd', {
            match: { tools: ['bash'] },
            approvers: users('U0CAROL'),
            oncall: { pagerduty: { scheduleId: 'P123ABC' } },
            escalation: ladder(['1s', 'mention', 'oncall']),
          }),
        ],
      },
      pd,
    );
    world.slack.setUser('U0BOB', { profile: { email: 'bob@example.com', display_name: 'bob' } });
    await world.host.open(approval('esc-pd-0001'));
    const card = await world.postedAt('esc-pd-0001');
    const mention = await until('the mention', () => replies(world, card)[0], 5_000);
    expect(mention.text).toContain('<@U0BOB>');
    expect(pd.oncallRequests[0]).toContain('schedule_ids%5B%5D=P123ABC');

    // PagerDuty fails (and its cached answer has expired): the route's approvers are mentioned.
    pd.oncalls = 500;
    // Only the cached on-call answer goes: the rest (the host's lease among it) is the bot's.
    const cached = await world.redis.keys('cs:oncall:*');
    expect(cached.length).toBeGreaterThan(0);
    await world.redis.del(...cached);
    await world.host.open(approval('esc-pd-0002'));
    const card2 = await world.postedAt('esc-pd-0002');
    const fallback = await until('the fallback mention', () => replies(world, card2)[0], 8_000);
    expect(fallback.text).toContain('<@U0CAROL>');
    expect(fallback.text).not.toContain('<@U0BOB>');
    await world.bot.waitForLog(
      (l) => l.msg === 'on-call source failed; reaching the route approvers instead',
    );
  });

  it('a superseded approval carries its clock and fired steps over to its successor card', async () => {
    const pd = await startPagerDuty();
    const world = await startWorld(
      { routes: [route('default', { escalation: ladder(['1s', 'page'], ['3s', 'mention', 'U0BOB']) })] },
      pd,
    );
    const first = approval('esc-sup-0001');
    await world.host.open(first);
    const card1 = await world.postedAt('esc-sup-0001');
    const openedAt = Date.now();
    await pd.waitForEvent('trigger', 'esc-sup-0001', 4_000);
    // The host restarts and closes the request, then asks the same tool call again under a new id.
    await world.host.resolve({ approvalId: 'esc-sup-0001', decision: 'abort', resolvedBy: 'user' });
    await world.waitForCard('esc-sup-0001', (m) => textOf(m).includes('Superseded'));
    const again = { ...approval('esc-sup-0002'), toolCallId: first.toolCallId, itemId: first.itemId };
    await world.host.open(again);
    const card2 = await world.postedAt('esc-sup-0002');
    // The successor's card shows what already fired, and the mention comes at 3s from the first card.
    await world.waitForCard('esc-sup-0002', (m) => textOf(m).includes('paged PagerDuty at 1s'));
    const mention = await until(
      'the mention',
      () => replies(world, card2).find((m) => m.text.includes('<@U0BOB>')),
      5_000,
    );
    expect(mention.versions[0]!.at - openedAt).toBeLessThan(3_000 + 1_200);
    await sleep(1_500);
    expect(pd.eventsOf('trigger')).toHaveLength(1);
    expect(pd.eventsOf('resolve')).toHaveLength(0);
    expect(replies(world, card1).filter((m) => m.text.includes('<@U0BOB>'))).toHaveLength(0);
    // Deciding the successor resolves the one page, under the first card's dedup_key.
    await world.press('esc-sup-0002', 'Allow once', 'U0ALICE');
    await pd.waitForEvent('resolve', 'esc-sup-0001', 5_000);
  });

  it('a rotation hands over at the boundary: DMs before it go to one person, after it to the next', async () => {
    // A daily rotation whose next handover is 8 s from now.
    const boundary = Date.now() + 8_000;
    const start = new Date(boundary - 86_400_000).toISOString();
    const world = await startWorld({
      routes: [
        route('default', {
          oncall: rotation(['U0ANA', 'U0BEN'], start, '1d', 'UTC'),
          escalation: ladder(['500ms', 'dm', 'oncall']),
        }),
      ],
    });
    // Both are in the approvals channel: the route names no approvers, so its members decide (and
    // only those who may see the approval are DMed).
    world.slack.setChannelMembers('C0APPROVALS', ['U0ANA', 'U0BEN']);
    await world.host.open(approval('esc-rot-0001'));
    const before = await world.slack.waitFor('chat.postMessage', (c) => c.args.channel === 'DU0ANA', 3_000);
    expect(JSON.stringify(before.args.blocks)).toContain('esc-rot-0001');
    expect(Date.now()).toBeLessThan(boundary);
    await sleep(boundary - Date.now() + 200);
    await world.host.open(approval('esc-rot-0002'));
    const after = await world.slack.waitFor('chat.postMessage', (c) => c.args.channel === 'DU0BEN', 3_000);
    expect(JSON.stringify(after.args.blocks)).toContain('esc-rot-0002');
    expect(postsTo(world, 'DU0BEN')).toHaveLength(1);
    expect(postsTo(world, 'DU0ANA')).toHaveLength(1);
  });

  it('an idle bot looks at the schedule about once a second, and still fires a step on time', async () => {
    // A redis-server of its own: MONITOR sees every client, and other test files poll theirs.
    const server = await PrivateRedis.start();
    cleanups.push(() => server.stop());
    const config = configFile({
      routes: [route('default', { approvers: users('U0ALICE'), escalation: ladder(['1s', 'remind']) })],
    });
    cleanups.push(config.remove);
    const world = await World.start({}, { COUNTERSIGN_CONFIG: config.path }, { redisUrl: server.url });
    cleanups.push(() => world.close());
    const monitor = await startMonitor(server.url);
    cleanups.push(() => monitor.disconnect());
    const looks: number[] = [];
    monitor.on('monitor', (_time: string, args: string[]) => {
      if (args[0]?.toLowerCase() === 'zrangebyscore' && args[1]?.endsWith('{esc}:due'))
        looks.push(Date.now());
    });
    await sleep(4_000);
    // Five times a second before: the loop now sleeps until the next step or for a second.
    expect(looks.length).toBeGreaterThanOrEqual(3);
    expect(looks.length).toBeLessThanOrEqual(5);

    // The process that starts a clock wakes at its step's time, not at its next idle look.
    await world.host.open(approval('esc-idle-1'));
    const card = await world.postedAt('esc-idle-1');
    const postedAt = Date.now();
    await until('the reminder', () => replies(world, card)[0]);
    const firedAfter = replies(world, card)[0]!.versions[0]!.at - postedAt;
    expect(firedAfter).toBeGreaterThanOrEqual(1_000 - 150);
    expect(firedAfter).toBeLessThan(1_000 + 500);
  });
});
