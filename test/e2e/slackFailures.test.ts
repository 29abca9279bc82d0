import { afterEach, describe, expect, it } from 'vitest';
import { freePort } from '../support/bot.js';
import { approvalFromTranscript, shellApproval } from '../support/fakeHost.js';
import type { SlackFault, SlackRequest } from '../support/fakeSlack.js';
import { configFile, route, users } from './fixtures/config.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

// What Slack does wrong, the bot survives: a post whose answer is lost leaves one card, a
// rate-limited or failing update lands once Slack lets it, a resolved card never keeps live
// buttons, and no failed Slack call stops the process.

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

const FOREVER = Number.POSITIVE_INFINITY;

/** Milliseconds from each 429 to the next attempt of the same call. */
function waitsAfter429(requests: SlackRequest[]): number[] {
  const waits: number[] = [];
  requests.forEach((r, i) => {
    const next = requests[i + 1];
    if (r.outcome === 'rateLimited' && next) waits.push(Number(next.hr - r.hr) / 1e6);
  });
  return waits;
}

/** The bot is still running and never began to shut down. */
function expectStillUp(w: World): void {
  expect(w.bot.proc.exitCode).toBeNull();
  expect(w.bot.logs.filter((l) => l.msg === 'unhandled rejection' || l.msg === 'shutting down')).toEqual([]);
}

describe('Slack failures', () => {
  it.each<[string, SlackFault, Record<string, string>]>([
    ['HTTP 500 after posting', { status: 500, applied: true }, {}],
    ['a dropped connection after posting', { reset: true }, {}],
    ['an answer later than the client waits', { delayMs: 2_500 }, { SLACK_API_TIMEOUT: '1s' }],
  ])(
    'a post whose answer was lost (%s) leaves exactly one card, and it decides',
    async (_name, fault, env) => {
      world = await World.start({}, env);
      world.slack.fault('chat.postMessage', fault);
      const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'lost-post-0001' });
      await world.host.open(approval, { via: 'both' });

      const { channel, ts } = await world.postedAt('lost-post-0001', 10_000);
      const cards = world.slack.messagesIn(world.channel);
      expect(cards.map((m) => m.ts)).toEqual([ts]);
      expect(channel).toBe(world.channel);
      expect(world.slack.cardPosts()).toHaveLength(1);
      expect(world.slack.callsOf('conversations.history').length).toBeGreaterThanOrEqual(1);

      await world.press('lost-post-0001', 'Allow once');
      const decide = await world.host.waitForDecide();
      expect(decide.frame.params).toMatchObject({ approvalId: 'lost-post-0001', choiceId: 'allow_once' });
      const final = await world.waitForCard('lost-post-0001', (m) => textOf(m).includes('Approved'));
      expect(final.ts).toBe(ts);
      expect(world.slack.messagesIn(world.channel)).toHaveLength(1);
    },
  );

  it('a post that failed before Slack carried it out is posted again, once', async () => {
    world = await World.start();
    world.slack.fault('chat.postMessage', { status: 503 }, { times: 2 });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'failed-post-0001' });
    await world.host.open(approval, { via: 'both' });
    const card = await world.waitForCard('failed-post-0001', (m) => buttonsOf(m).length > 0, 10_000);
    expect(world.slack.httpFailed.map((c) => c.method)).toEqual(['chat.postMessage', 'chat.postMessage']);
    expect(world.slack.messagesIn(world.channel).map((m) => m.ts)).toEqual([card.ts]);
  });

  it('chat.update 429s are waited out for their own Retry-After (2 s, then 3 s), and the card lands', async () => {
    world = await World.start();
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'limited-update-0001' });
    await world.host.open(approval, { via: 'both' });
    const open = await world.waitForCard('limited-update-0001', (m) => buttonsOf(m).length > 0);

    world.slack.rateLimit('chat.update', { retryAfterSec: [2, 3] });
    await world.host.resolve({
      approvalId: 'limited-update-0001',
      decision: 'denied',
      resolvedBy: 'policy',
      policyResult: 'deny',
    });
    const final = await world.waitForCard(
      'limited-update-0001',
      (m) => textOf(m).includes('Denied') && buttonsOf(m).length === 0,
      15_000,
    );
    expect(final.ts).toBe(open.ts);
    const attempts = world.slack.requests.filter((r) => r.method === 'chat.update' && r.args.ts === open.ts);
    expect(attempts.map((r) => r.outcome)).toEqual(['rateLimited', 'rateLimited', 'answered']);
    const [first, second] = waitsAfter429(attempts);
    expect(first).toBeGreaterThanOrEqual(2_000);
    expect(second).toBeGreaterThanOrEqual(3_000);
    // Each wait follows its own Retry-After, not one fixed pause.
    expect(second! - first!).toBeGreaterThan(500);
  }, 30_000);

  it('a storm of 5xx on chat.update: the bot keeps trying, and the resolved card lands without buttons', async () => {
    world = await World.start();
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'storm-0001' });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('storm-0001', (m) => buttonsOf(m).length > 0);

    world.slack.fault('chat.update', { status: 503 }, { times: FOREVER });
    await world.host.resolve({ approvalId: 'storm-0001', decision: 'denied', resolvedBy: 'policy' });
    // Five failed tries: more than the Web API client's own retries ever made (one and three more).
    await world.slack.waitForRequests(
      (r) => r.method === 'chat.update' && r.outcome === 'httpFailed',
      5,
      15_000,
    );
    expectStillUp(world);
    world.slack.heal();
    const final = await world.waitForCard(
      'storm-0001',
      (m) => textOf(m).includes('Denied') && buttonsOf(m).length === 0,
      15_000,
    );
    expect(final.versions.at(-1)!.text).toMatch(/^Rejected/);
    expectStillUp(world);
  }, 40_000);

  it('a resolved card Slack refuses as too big still loses its buttons', async () => {
    world = await World.start();
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'too-big-0001' });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('too-big-0001', (m) => buttonsOf(m).length > 0);

    // Slack refuses the final render with any blocks at all: only its text alone gets through.
    world.slack.fault(
      'chat.update',
      { error: 'invalid_blocks' },
      {
        times: FOREVER,
        match: (a) => String(a.text).startsWith('Rejected') && Array.isArray(a.blocks) && a.blocks.length > 0,
      },
    );
    await world.host.resolve({ approvalId: 'too-big-0001', decision: 'denied', resolvedBy: 'policy' });
    const final = await world.waitForCard('too-big-0001', (m) => m.text.startsWith('Rejected'), 10_000);
    expect(buttonsOf(final)).toEqual([]);
    expect(final.blocks).toEqual([]);
    await world.bot.waitForLog((l) => l.msg === 'slack refused the card; sending its text alone');
  });

  /**
   * Kills the bot while a decision is on its way to the host, and restarts it with the replayed
   * decide refused as already resolved: the card's update to the winner's result is the one under
   * test. The restarted bot's first card update (the re-opened approval) is held until the host
   * has been told to refuse, so the replay cannot overtake the test.
   */
  async function replayRefusedAsResolved(w: World, approvalId: string, finalUpdateFault: SlackFault) {
    const approval = approvalFromTranscript('approval-round-trip', { approvalId });
    await w.host.open(approval, { via: 'both' });
    await w.waitForCard(approvalId, (m) => buttonsOf(m).length > 0);
    await w.host.holdDecide(1);
    await w.press(approvalId, 'Allow once', 'U0ALICE');
    await w.host.waitForDecide();
    await w.waitForCard(approvalId, (m) => textOf(m).includes('Being decided'));
    // The next host process answers the replay: policy resolved it meanwhile. Set now, while
    // this host is up, because the restarted bot replays the decision as soon as it sees it.
    await w.host.failRequest('approval/decide', {
      code: -32051,
      message: 'approval already resolved',
      data: {
        kind: 'approvalAlreadyResolved',
        approvalId,
        // The winning resolution, as the schema has it (ApprovalResolutionSummary).
        resolution: { decision: 'denied', resolvedBy: 'policy', viewCursor: 'v:replay:900' },
      },
    });
    await w.bot.kill();

    let release: () => void = () => undefined;
    const refusalSet = new Promise<void>((resolve) => {
      release = resolve;
    });
    w.slack.fault('chat.update', { until: refusalSet });
    w.slack.fault('chat.update', finalUpdateFault, {
      times: FOREVER,
      match: (a) => String(a.text).startsWith('Rejected'),
    });
    await w.restartBot();
    await w.host.waitForIncarnation(2, 15_000);
    release();
    await w.host.waitForDecide((d) => d.incarnation === 2, 10_000);
  }

  it('a replayed decision whose card update meets a 5xx storm: the bot stays up, the card lands after', async () => {
    world = await World.start({ recovery: 'sameId' });
    await replayRefusedAsResolved(world, 'replay-storm-0001', { status: 503 });
    const failed = (r: SlackRequest) =>
      r.method === 'chat.update' && r.outcome === 'httpFailed' && String(r.args.text).startsWith('Rejected');
    await world.slack.waitForRequests(failed, 5, 15_000);
    expectStillUp(world);

    world.slack.heal();
    const final = await world.waitForCard(
      'replay-storm-0001',
      (m) => textOf(m).includes('Denied') && buttonsOf(m).length === 0,
      15_000,
    );
    expect(textOf(final)).toContain('policy');
    expectStillUp(world);
  }, 40_000);

  it('a replayed decision whose card update Slack refuses for good: logged once, and the bot stays up', async () => {
    world = await World.start({ recovery: 'sameId' });
    await replayRefusedAsResolved(world, 'replay-refused-0001', { error: 'message_not_found' });
    const logged = await world.bot.waitForLog((l) => l.msg === 'card update failed', 10_000);
    expect(logged.json).toMatchObject({ failure: { kind: 'refused', error: 'message_not_found' } });

    // The bot carries on: the next approval gets its card.
    const next = approvalFromTranscript('approval-round-trip', { approvalId: 'replay-refused-0002' });
    await world.host.open(next, { via: 'both' });
    await world.waitForCard('replay-refused-0002', (m) => buttonsOf(m).length > 0);
    expectStillUp(world);
    expect(world.bot.logs.filter((l) => l.msg === 'card update failed')).toHaveLength(1);
  });
});

// The Slack app has no chat:write.public (docs/slack.md, "Inviting the bot"): the fake Slack
// answers not_in_channel to posts and history reads in a channel the bot is not in.
describe('a bot that is not in the channel', () => {
  const NOT_IN_CHANNEL =
    'the bot cannot use this channel: invite it with /invite @countersign, or check SLACK_CHANNEL';

  /** The bot's line saying it cannot use the channel for `approvalId`'s card. */
  function notInChannelLine(w: World, approvalId: string) {
    return w.bot.waitForLog((l) => l.msg === NOT_IN_CHANNEL && l.json?.approvalId === approvalId, 10_000);
  }

  it('never invited: no card, a line saying to invite it (not blaming scopes); once invited, one card', async () => {
    const w = await World.start();
    world = w;
    w.slack.setBotChannels([]);
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'uninvited-0001' });
    await w.host.open(approval, { via: 'both' });
    const said = await notInChannelLine(w, 'uninvited-0001');
    expect(said.json).toMatchObject({
      level: 50,
      method: 'chat.postMessage',
      channel: w.channel,
      error: 'not_in_channel',
    });
    expect(w.slack.messagesIn(w.channel)).toEqual([]);
    // Trying again, the bot first looks for the card, which it cannot either: it says to invite
    // it, not that it lacks a scope, and posts nothing.
    const since = w.slack.calls.length;
    await w.slack.waitFor('conversations.history', (c) => c.response.error === 'not_in_channel', 25_000);
    await w.bot.waitForLog(
      (l) => l.msg === NOT_IN_CHANNEL && l.index > said.index && l.json?.approvalId === 'uninvited-0001',
    );
    expect(w.slack.callsOf('chat.postMessage').filter((c) => c.index >= since)).toEqual([]);
    expect(w.bot.logs.filter((l) => l.raw.includes('channels:history'))).toEqual([]);

    // One line a minute for the channel, at error, without a stack trace; each try in between
    // says it at debug only. Nothing else about the approval is logged at warn or above.
    const told = w.bot.logs.filter((l) => l.msg === NOT_IN_CHANNEL);
    expect(told.map((l) => l.level)).toEqual([50, ...told.slice(1).map(() => 20)]);
    expect(told.length).toBeGreaterThan(1);
    expect(w.bot.logs.filter((l) => l.json?.approvalId === 'uninvited-0001' && (l.level ?? 0) >= 40)).toEqual(
      told.slice(0, 1),
    );
    expect(w.bot.logs.some((l) => l.raw.includes('"stack"'))).toBe(false);

    w.slack.inviteBot(w.channel);
    // The bot tries again (the host asks again, or its post lease runs out), looks first, and posts once.
    await w.postedAt('uninvited-0001', 30_000);
    const card = await w.waitForCard('uninvited-0001', (m) => buttonsOf(m).length > 0);
    expect(w.slack.messagesIn(w.channel).map((m) => m.ts)).toEqual([card.ts]);
    expect(w.bot.logs.filter((l) => l.raw.includes('channels:history'))).toEqual([]);
    expectStillUp(w);
  }, 45_000);

  it('a post that landed with its answer lost, then the bot removed from the channel: never a second card, even for an app still granted chat:write.public', async () => {
    const w = await World.start();
    world = w;
    w.slack.setBotChannels([w.channel]);
    // An app installed from an older manifest: its posts land where its history reads cannot.
    w.slack.chatWritePublic = true;
    w.slack.fault('chat.postMessage', { status: 500, applied: true });
    void w.slack
      .waitFor('chat.postMessage', (c) => c.args.channel === w.channel && c.lost === 'status', 10_000)
      .then(() => w.slack.removeBot(w.channel));
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'removed-0001' });
    await w.host.open(approval, { via: 'both' });

    await notInChannelLine(w, 'removed-0001');
    // The lookup could not tell whether the card landed, so nothing was posted again.
    expect(w.slack.callsOf('conversations.history').map((c) => c.response.error)).toContain('not_in_channel');
    expect(w.slack.callsOf('chat.postMessage')).toHaveLength(1);
    expect(w.slack.messagesIn(w.channel)).toHaveLength(1);

    w.slack.inviteBot(w.channel);
    const { ts } = await w.postedAt('removed-0001', 30_000);
    expect(w.slack.messagesIn(w.channel).map((m) => m.ts)).toEqual([ts]);
    expect(w.slack.callsOf('chat.postMessage')).toHaveLength(1);
    await w.press('removed-0001', 'Allow once');
    await w.host.waitForDecide();
    const final = await w.waitForCard('removed-0001', (m) => textOf(m).includes('Approved'));
    expect(final.ts).toBe(ts);
    expectStillUp(w);
  }, 45_000);
});

describe('a card call Slack refused for the token or its scopes', () => {
  it('takes the replica out of readiness only until a card call lands again', async () => {
    // METRICS_PORT: where /readyz says which part is down (PORT's says ready or not alone).
    world = await World.start({}, { METRICS_PORT: String(await freePort()) });
    const w = world;
    const readyz = async () => {
      const answer = await fetch(`${w.bot.metricsUrl}/readyz`);
      return { status: answer.status, body: (await answer.json()) as Record<string, unknown> };
    };
    expect((await readyz()).status).toBe(200);
    // A scope taken away (or an app reinstalled without it): the card's post is refused.
    w.slack.failNext('chat.postMessage', 'missing_scope', 1, { needed: 'chat:write' });
    await w.host.open(approvalFromTranscript('approval-round-trip', { approvalId: 'scope-0001' }), {
      via: 'both',
    });
    await w.bot.waitForLog((l) => l.msg === 'slack refused the bot token or its scopes', 10_000);
    const refused = await readyz();
    expect(refused.status).toBe(503);
    expect(refused.body).toMatchObject({ slack: false });
    // The scope is given back (reinstalled, the same token): the next card posts, and the replica
    // is ready again, without a restart.
    await w.host.open(approvalFromTranscript('approval-round-trip', { approvalId: 'scope-0002' }), {
      via: 'both',
    });
    await w.postedAt('scope-0002', 10_000);
    const deadline = Date.now() + 5_000;
    let again = await readyz();
    while (again.status !== 200 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      again = await readyz();
    }
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ slack: true });
  });
});

// A press whose form Slack did not open (a trigger past its 3 s, Slack away) decided nothing: the
// presser is told so, and to press again, as "Reject all" does (batchTriage.test.ts).
describe('a form Slack did not open', () => {
  let removeConfig: (() => void) | undefined;
  afterEach(() => {
    removeConfig?.();
    removeConfig = undefined;
  });

  /** Alice decides; a reason is required to reject; a force push asks its branch typed. */
  async function formsWorld(): Promise<World> {
    const config = configFile({
      routes: [route('deploys', { approvers: users('U0ALICE'), rejectReason: 'required' })],
      risks: [
        {
          name: 'force-push',
          match: { programs: [{ program: 'git', subcommand: 'push', flags: ['--force'] }] },
          warning: 'Rewrites shared history',
          confirm: 'type',
        },
      ],
    });
    removeConfig = config.remove;
    world = await World.start({}, { COUNTERSIGN_CONFIG: config.path });
    return world;
  }

  async function openShell(w: World, approvalId: string, argv: string[]): Promise<void> {
    await w.host.open(shellApproval({ approvalId, sessionId: SESSION, stages: [argv] }), { via: 'both' });
    await w.waitForCard(approvalId, (m) => buttonsOf(m).length > 0);
  }

  async function ephemeralAfter(w: World, userId: string, since: number): Promise<string> {
    const call = await w.slack.waitFor('chat.postEphemeral', (c) => c.args.user === userId, 5_000, { since });
    return String(call.args.text);
  }

  it('a Reject whose reason form Slack did not open decides nothing, and says to press again', async () => {
    const w = await formsWorld();
    await openShell(w, 'form-0001', ['make', 'deploy']);
    w.slack.failNext('views.open', 'expired_trigger_id');
    const since = w.slack.calls.length;
    await w.press('form-0001', 'Reject', 'U0ALICE');
    expect(await ephemeralAfter(w, 'U0ALICE', since)).toBe(
      'Slack did not open the form for your reason, so nothing was decided. Please press the button again.',
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(w.host.decides()).toEqual([]);

    // Pressed again, the form opens and its submit decides.
    const again = w.slack.calls.length;
    await w.press('form-0001', 'Reject', 'U0ALICE');
    await w.submitModal('U0ALICE', 'Not today', { since: again });
    const decide = await w.host.waitForDecide();
    expect(decide.frame.params).toMatchObject({ approvalId: 'form-0001', feedback: 'Not today' });
    expectStillUp(w);
  });

  it('an approval whose typed-confirmation form Slack did not open decides nothing, and says so', async () => {
    const w = await formsWorld();
    await openShell(w, 'form-0002', ['git', 'push', '--force', 'origin', 'main']);
    w.slack.failNext('views.open', 'expired_trigger_id');
    const since = w.slack.calls.length;
    await w.press('form-0002', 'Allow once', 'U0ALICE');
    expect(await ephemeralAfter(w, 'U0ALICE', since)).toBe(
      'Slack did not open the form to type the confirmation in, so nothing was decided. Please press the button again.',
    );
    await new Promise((r) => setTimeout(r, 300));
    expect(w.host.decides()).toEqual([]);
    expectStillUp(w);
  });
});
