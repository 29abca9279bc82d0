// Typed confirmation, end to end: a risk rule with `confirm: type` makes an approving press open a
// modal that asks for the request's target; only its submit, checked like a click against what
// Redis holds at that moment plus the text typed, decides. The real bot (HTTP mode), the fake
// host, the fake Slack and real Redis; two replicas on one Redis for the modal opened on one and
// submitted to the other.

import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { keys } from '../../src/store/keys.js';
import { freshRedisDb, SIGNING_SECRET } from '../support/bot.js';
import { type ApprovalRequestParams, FakeHost, shellApproval } from '../support/fakeHost.js';
import { FakeSlack, type SlackCall } from '../support/fakeSlack.js';
import { replicaRunning, startReplicas } from '../support/replicas.js';
import { postInteraction, viewBlockActionsPayload, viewSubmissionPayload } from '../support/slackRequests.js';
import { testRedisUrl } from '../support/testRedis.js';
import { route, tempConfig, users } from './fixtures/config.js';
import { buttonsOf, pressButtonAt, SESSION, textOf, viewFullButtonOf, World } from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

type Block = { type: string; elements?: Array<Record<string, unknown>> };

/** Not among the route's approvers. */
const EVE = 'U0EVE';
/** Of another workspace: a stranger. */
const PARTNER = 'U0PARTNER';

const RISKS = [
  {
    name: 'force-push',
    match: { programs: [{ program: 'git', subcommand: 'push', flags: ['--force', '-f'] }] },
    warning: 'Rewrites shared history',
    confirm: 'type',
  },
  { name: 'production', match: { targets: ['*.prod.example.com'] }, warning: 'Production', confirm: 'type' },
  { name: 'secrets', match: { paths: ['**/.env'] }, warning: 'Touches secrets', confirm: 'type' },
];

function config(): string {
  return tempConfig(cleanups, {
    routes: [route('deploys', { approvers: users('U0ALICE', 'U0BOB') })],
    risks: RISKS,
  });
}

async function startWorld(): Promise<World> {
  const world = await World.start({}, { COUNTERSIGN_CONFIG: config() });
  cleanups.push(() => world.close());
  world.slack.setUser(PARTNER, { team_id: 'T0PARTNER', real_name: 'Partner' });
  return world;
}

/** A shell request with the host's choices and a plain Deny that takes no reason. */
function shell(approvalId: string, argv: string[]): ApprovalRequestParams {
  const approval = shellApproval({ approvalId, sessionId: SESSION, stages: [argv] });
  approval.availableChoices.push({ choiceId: 'deny', label: 'Deny', decision: 'denied', scope: 'once' });
  return approval;
}

function withSubject(approvalId: string, subject: ApprovalRequestParams['subject']): ApprovalRequestParams {
  return { ...shell(approvalId, ['true']), toolName: 'connect', subject };
}

async function open(world: World, approval: ApprovalRequestParams): Promise<void> {
  await world.host.open(approval);
  await world.waitForCard(approval.approvalId, (m) => buttonsOf(m).length > 0);
}

function isConfirmModal(call: SlackCall): boolean {
  return (call.args.view as { callback_id?: string } | undefined)?.callback_id === 'cs_confirm';
}

/** The n-th (0-based) confirmation modal the bot opened. */
async function nthConfirmModal(slack: FakeSlack, n: number): Promise<SlackCall> {
  await slack.waitFor('views.open', () => slack.callsOf('views.open').filter(isConfirmModal).length > n);
  return slack.callsOf('views.open').filter(isConfirmModal)[n]!;
}

/**
 * Submits a confirmation modal as `userId` with `typed`, to `botUrl`; returns Slack's answer body.
 * `on`: the full view the modal was pushed on top of (views.push), which Slack names in the submit.
 */
async function submit(
  botUrl: string,
  modal: SlackCall,
  userId: string,
  typed: string,
  on?: SlackCall,
): Promise<Record<string, unknown>> {
  const view = modal.args.view as { callback_id: string; private_metadata: string };
  const stacked = on
    ? {
        viewId: (modal.response.view as { id: string }).id,
        previousViewId: (on.response.view as { id: string }).id,
      }
    : {};
  const response = await postInteraction(
    botUrl,
    SIGNING_SECRET,
    viewSubmissionPayload({
      userId,
      callbackId: view.callback_id,
      privateMetadata: view.private_metadata,
      values: { cs_confirm_block: { cs_confirm_input: { type: 'plain_text_input', value: typed } } },
      ...(userId === PARTNER ? { teamId: 'T0PARTNER' } : {}),
      ...stacked,
    }),
  );
  expect(response.status).toBe(200);
  const body = await response.text();
  return body === '' ? {} : (JSON.parse(body) as Record<string, unknown>);
}

function blocksOf(modal: SlackCall): string {
  return JSON.stringify((modal.args.view as { blocks: unknown }).blocks);
}

function decidesOf(world: Pick<World, 'host'>, approvalId: string) {
  return world.host.decides().filter((d) => d.frame.params.approvalId === approvalId);
}

/** Waits until Redis holds the approval as resolved (the host reported its decision). */
async function resolved(world: World, approvalId: string): Promise<void> {
  for (const deadline = Date.now() + 5_000; Date.now() < deadline; ) {
    const raw = await world.redis.hget(keys.approval(approvalId), 'd');
    if (raw && (JSON.parse(raw) as { phase?: string }).phase === 'resolved') return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${approvalId} not resolved`);
}

/** Lets anything already on its way reach the host before "nothing more was sent" is asserted. */
const settle = () => new Promise((r) => setTimeout(r, 300));

describe('typed confirmation (risks[].confirm: type)', { timeout: 60_000 }, () => {
  it('approving opens a modal naming the risk and the branch; a wrong text decides nothing and says why; the right one decides once', async () => {
    const world = await startWorld();
    await open(world, shell('tc-push', ['git', 'push', '--force', 'origin', 'main']));
    // The card says so before anyone presses.
    expect(textOf(await world.card('tc-push'))).toContain(
      '*Rewrites shared history* (risk rule `force-push`: approving asks you to type its target)',
    );

    await world.press('tc-push', 'Allow once', 'U0ALICE');
    const modal = await nthConfirmModal(world.slack, 0);
    expect(blocksOf(modal)).toContain('Rewrites shared history');
    expect(blocksOf(modal)).toContain('force-push');
    expect(blocksOf(modal)).toContain('```\\nmain\\n```');
    // Only what finds the card again, and a digest of the question shown: the rest is read from
    // Redis on submit, and must still be what the modal showed.
    expect(
      Object.keys(JSON.parse((modal.args.view as { private_metadata: string }).private_metadata)).sort(),
    ).toEqual(['approvalId', 'askedAs', 'channel', 'choiceId', 'sourceIndex', 'ts']);
    await settle();
    expect(decidesOf(world, 'tc-push')).toHaveLength(0);

    for (const wrong of ['mian', 'Main', '', 'origin main']) {
      expect(await submit(world.bot.url, modal, 'U0ALICE', wrong)).toEqual({
        response_action: 'errors',
        errors: {
          cs_confirm_block:
            'That is not the command’s target (main): nothing was approved. Type it exactly as shown.',
        },
      });
    }
    await settle();
    expect(decidesOf(world, 'tc-push')).toHaveLength(0);

    expect(await submit(world.bot.url, modal, 'U0ALICE', ' main ')).toEqual({});
    const decide = await world.host.waitForDecide((f) => f.frame.params.approvalId === 'tc-push');
    expect(decide.frame.params).toMatchObject({ choiceId: 'allow_once' });
    await resolved(world, 'tc-push');
    // The same modal submitted again finds the approval decided.
    expect(await submit(world.bot.url, modal, 'U0ALICE', 'main')).toEqual({});
    expect(await world.ephemeralTo('U0ALICE')).toContain('already decided');
    await settle();
    expect(decidesOf(world, 'tc-push')).toHaveLength(1);
  });

  it('every approving choice asks; rejecting never does: Deny decides at once, Reject opens only the reason modal', async () => {
    const world = await startWorld();
    await open(world, shell('tc-amend', ['git', 'push', '-f', 'origin', 'dev']));
    const amend = buttonsOf(await world.card('tc-amend')).find((b) => b.text.startsWith('Always allow'))!;
    const card = await world.card('tc-amend');
    await world.pressButton(card.ts, amend, 'U0ALICE', card.channel);
    expect(blocksOf(await nthConfirmModal(world.slack, 0))).toContain('```\\ndev\\n```');

    await open(world, shell('tc-deny', ['git', 'push', '-f', 'origin', 'main']));
    await world.press('tc-deny', 'Deny', 'U0ALICE');
    const denied = await world.host.waitForDecide((f) => f.frame.params.approvalId === 'tc-deny');
    expect(denied.frame.params).toMatchObject({ choiceId: 'deny' });

    await open(world, shell('tc-reject', ['git', 'push', '-f', 'origin', 'main']));
    await world.press('tc-reject', 'Reject', 'U0ALICE');
    await world.submitModal('U0ALICE', 'Use a PR');
    const rejected = await world.host.waitForDecide((f) => f.frame.params.approvalId === 'tc-reject');
    expect(rejected.frame.params).toMatchObject({ choiceId: 'abort', feedback: 'Use a PR' });
    // One confirmation modal in all: the approving press's.
    expect(world.slack.callsOf('views.open').filter(isConfirmModal)).toHaveLength(1);
    expect(decidesOf(world, 'tc-amend')).toHaveLength(0);
  });

  it('a non-approver and a stranger: their press opens nothing, their submit of an open modal is refused in it', async () => {
    const world = await startWorld();
    await open(world, shell('tc-who', ['git', 'push', '--force', 'origin', 'main']));

    await world.press('tc-who', 'Allow once', EVE);
    expect(await world.ephemeralTo(EVE)).toContain('can decide on deploys');
    await world.press('tc-who', 'Allow once', PARTNER);
    expect(await world.ephemeralTo(PARTNER)).toBeTruthy();
    await settle();
    expect(world.slack.callsOf('views.open')).toHaveLength(0);

    // An approver's modal, its private_metadata replayed by others with the right text.
    await world.press('tc-who', 'Allow once', 'U0ALICE');
    const modal = await nthConfirmModal(world.slack, 0);
    for (const outsider of [EVE, PARTNER]) {
      const answer = await submit(world.bot.url, modal, outsider, 'main');
      expect(answer.response_action).toBe('errors');
      expect(String((answer.errors as Record<string, string>).cs_confirm_block)).not.toContain('main');
    }
    await settle();
    expect(decidesOf(world, 'tc-who')).toHaveLength(0);
    const refusals = world.bot.logs.filter(
      (l) => l.msg === 'decision refused: user may not decide on this route',
    );
    expect(refusals.map((l) => [l.json?.userId, l.json?.action])).toEqual(
      expect.arrayContaining([
        [EVE, 'click'],
        [EVE, 'modalSubmit'],
        [PARTNER, 'modalSubmit'],
      ]),
    );
  });

  it('decided elsewhere while the modal was open: the submit is refused with the reason, and nothing more is sent', async () => {
    const world = await startWorld();
    await open(world, shell('tc-late', ['git', 'push', '--force', 'origin', 'main']));
    await world.press('tc-late', 'Allow once', 'U0ALICE');
    const modal = await nthConfirmModal(world.slack, 0);

    await world.press('tc-late', 'Deny', 'U0BOB');
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'tc-late');
    await resolved(world, 'tc-late');

    expect(await submit(world.bot.url, modal, 'U0ALICE', 'main')).toEqual({});
    expect(await world.ephemeralTo('U0ALICE')).toContain('already decided');
    await settle();
    expect(decidesOf(world, 'tc-late').map((d) => d.frame.params.choiceId)).toEqual(['deny']);
  });

  it('asked again while the modal was open, with another command and the same target: the submit decides nothing', async () => {
    const world = await startWorld();
    await open(world, shell('tc-reasked', ['git', 'push', '--force', 'origin', 'main']));
    await world.press('tc-reasked', 'Allow once', 'U0ALICE');
    const modal = await nthConfirmModal(world.slack, 0);
    // The host asks the same stage again: now it deletes the branch. The word to type is the same.
    await world.host.open(shell('tc-reasked', ['git', 'push', '--force', '--delete', 'origin', 'main']));
    await world.waitForCard('tc-reasked', (m) => textOf(m).includes('--delete'));

    expect(await submit(world.bot.url, modal, 'U0ALICE', 'main')).toEqual({});
    expect(await world.ephemeralTo('U0ALICE')).toMatch(/changed/i);
    await settle();
    expect(decidesOf(world, 'tc-reasked')).toEqual([]);
    // Pressed again, the modal shows the new question, and its submit decides.
    await world.press('tc-reasked', 'Allow once', 'U0ALICE');
    expect(blocksOf(await nthConfirmModal(world.slack, 1))).toContain('--delete');
    expect(await submit(world.bot.url, await nthConfirmModal(world.slack, 1), 'U0ALICE', 'main')).toEqual({});
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'tc-reasked');
  });

  it('a host, the last segment of a path; agent text in the modal is escaped', async () => {
    const world = await startWorld();
    await open(world, withSubject('tc-net', { kind: 'network', host: 'db.prod.example.com', port: 5432 }));
    await world.press('tc-net', 'Allow once', 'U0ALICE');
    const net = await nthConfirmModal(world.slack, 0);
    expect(blocksOf(net)).toContain('```\\ndb.prod.example.com\\n```');
    expect(await submit(world.bot.url, net, 'U0ALICE', 'DB.prod.example.com')).toEqual({});
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'tc-net');

    await open(world, withSubject('tc-env', { kind: 'fileAccess', path: '/srv/app/.env', access: 'write' }));
    await world.press('tc-env', 'Allow once', 'U0ALICE');
    const env = await nthConfirmModal(world.slack, 1);
    expect(blocksOf(env)).toContain('```\\n.env\\n```');
    expect((await submit(world.bot.url, env, 'U0ALICE', '/srv/app/.env')).response_action).toBe('errors');
    expect(await submit(world.bot.url, env, 'U0ALICE', '.env')).toEqual({});
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'tc-env');

    await open(world, shell('tc-esc', ['git', 'push', '-f', 'origin', '<!channel>']));
    await world.press('tc-esc', 'Allow once', 'U0ALICE');
    const esc = await nthConfirmModal(world.slack, 2);
    expect(blocksOf(esc)).not.toContain('<!channel>');
    expect(blocksOf(esc)).toContain('&lt;!channel&gt;');
    expect(await submit(world.bot.url, esc, 'U0ALICE', '<!channel>')).toEqual({});
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'tc-esc');
  });

  it('a command with bidi overrides: the card shows them as markers, and the tool’s name is typed', async () => {
    const world = await startWorld();
    const approval = shell('tc-bidi', ['git', 'push', '-f', 'origin', '\u202Eniam\u202C']);
    await world.host.open(approval);
    const card = await world.waitForCard('tc-bidi', (m) => buttonsOf(m).length > 0);
    expect(textOf(card)).toContain('origin ⟨U+202E⟩niam⟨U+202C⟩');
    expect(textOf(card)).not.toMatch(/[\u202C\u202E]/);
    await world.press('tc-bidi', 'Allow once', 'U0ALICE', card);
    const modal = await nthConfirmModal(world.slack, 0);
    expect(blocksOf(modal)).toContain('To approve, type the tool’s name:\\n```\\nbash\\n```');
    expect(blocksOf(modal)).not.toMatch(/[\u202C\u202E]/);
    expect((await submit(world.bot.url, modal, 'U0ALICE', 'niam')).response_action).toBe('errors');
    expect(await submit(world.bot.url, modal, 'U0ALICE', 'bash')).toEqual({});
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'tc-bidi');
  });

  it('with a quorum, each approver confirms their own pick: the first is counted, the second decides', async () => {
    const world = await World.start(
      {},
      {
        COUNTERSIGN_CONFIG: tempConfig(cleanups, {
          routes: [route('deploys', { approvers: users('U0ALICE', 'U0BOB') })],
          risks: [{ ...RISKS[0], quorum: 2 }],
        }),
      },
    );
    cleanups.push(() => world.close());
    await open(world, shell('tc-two', ['git', 'push', '--force', 'origin', 'main']));

    await world.press('tc-two', 'Allow once', 'U0ALICE');
    expect(await submit(world.bot.url, await nthConfirmModal(world.slack, 0), 'U0ALICE', 'main')).toEqual({});
    expect(await world.ephemeralTo('U0ALICE')).toContain('Your approval is counted: 1 of 2');
    await settle();
    expect(decidesOf(world, 'tc-two')).toHaveLength(0);

    // Bob's press opens his own modal: Alice's confirmation does not stand for his.
    await world.press('tc-two', 'Allow once', 'U0BOB');
    const bobs = await nthConfirmModal(world.slack, 1);
    expect((await submit(world.bot.url, bobs, 'U0BOB', 'origin')).response_action).toBe('errors');
    expect(await submit(world.bot.url, bobs, 'U0BOB', 'main')).toEqual({});
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'tc-two');
    await settle();
    expect(decidesOf(world, 'tc-two')).toHaveLength(1);
  });

  it('with a quorum, a vote counts for the question it confirmed: asked again with another target, it is dropped', async () => {
    const world = await World.start(
      {},
      {
        COUNTERSIGN_CONFIG: tempConfig(cleanups, {
          routes: [route('deploys', { approvers: users('U0ALICE', 'U0BOB') })],
          risks: [{ ...RISKS[0], quorum: 2 }],
        }),
      },
    );
    cleanups.push(() => world.close());
    const id = 'tc-reask';
    const approval = shell(id, ['git', 'push', '--force', 'origin', 'main']);
    await open(world, approval);
    await world.press(id, 'Allow once', 'U0ALICE');
    expect(await submit(world.bot.url, await nthConfirmModal(world.slack, 0), 'U0ALICE', 'main')).toEqual({});
    expect(await world.ephemeralTo('U0ALICE')).toContain('Your approval is counted: 1 of 2');

    // The host asks the same stage again, now pushing to prod: Alice confirmed main, not this.
    const prod = shell(id, ['git', 'push', '--force', 'origin', 'prod']);
    await world.host.update({
      approvalId: id,
      patch: { subject: prod.subject },
      change: { kind: 'subjectChanged' },
    });
    await world.waitForCard(id, (m) => textOf(m).includes('prod') && !textOf(m).includes('1 of 2'));

    await world.press(id, 'Allow once', 'U0BOB');
    expect(await submit(world.bot.url, await nthConfirmModal(world.slack, 1), 'U0BOB', 'prod')).toEqual({});
    expect(await world.ephemeralTo('U0BOB')).toContain('Your approval is counted: 1 of 2');
    await settle();
    expect(decidesOf(world, id)).toHaveLength(0);

    // Alice confirms prod herself: that is the second.
    await world.press(id, 'Allow once', 'U0ALICE');
    expect(await submit(world.bot.url, await nthConfirmModal(world.slack, 2), 'U0ALICE', 'prod')).toEqual({});
    await world.host.waitForDecide((f) => f.frame.params.approvalId === id);
    await settle();
    expect(decidesOf(world, id)).toHaveLength(1);
  });

  it('from the full view, the confirmation modal goes on top of it (views.push)', async () => {
    const world = await startWorld();
    const long = ['git', 'push', '--force', '-o', `note=${'x'.repeat(4_000)}`, 'origin', 'main'];
    await open(world, shell('tc-full', long));
    const card = await world.card('tc-full');
    const viewFull = viewFullButtonOf(card)!;
    await pressButtonAt(
      world.bot.url,
      world.slack,
      { channel: card.channel, ts: card.ts },
      viewFull,
      'U0ALICE',
    );
    const full = await world.slack.waitFor(
      'views.open',
      (c) => (c.args.view as { callback_id: string }).callback_id === 'cs_full_view',
    );
    const view = full.args.view as { callback_id: string; private_metadata: string; blocks: Block[] };
    const allow = view.blocks
      .filter((b) => b.type === 'actions')
      .flatMap((b) => b.elements ?? [])
      .find((e) => (e.text as { text: string }).text === 'Allow once')!;
    await postInteraction(
      world.bot.url,
      SIGNING_SECRET,
      viewBlockActionsPayload({
        userId: 'U0ALICE',
        viewId: (full.response.view as { id: string }).id,
        callbackId: view.callback_id,
        privateMetadata: view.private_metadata,
        actionId: allow.action_id as string,
        value: allow.value as string,
      }),
    );
    const pushed = await world.slack.waitFor('views.push', isConfirmModal);
    expect(blocksOf(pushed)).toContain('```\\nmain\\n```');
    await settle();
    expect(decidesOf(world, 'tc-full')).toHaveLength(0);
    // A wrong text is said in the modal, which stays open on top of the full view.
    expect(await submit(world.bot.url, pushed, 'U0ALICE', 'mian', full)).toMatchObject({
      response_action: 'errors',
    });
    // The right one decides and closes both: the full view's buttons are not left live behind it.
    expect(await submit(world.bot.url, pushed, 'U0ALICE', 'main', full)).toEqual({
      response_action: 'clear',
    });
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'tc-full');
  });

  it('the modal opened from a click on one replica, submitted to the other: checked there, decided once', async () => {
    const slack = await FakeSlack.start();
    cleanups.push(() => slack.close());
    const host = await FakeHost.start({
      sessions: [{ sessionId: SESSION, title: 'Push' }],
      recovery: 'sameId',
    });
    cleanups.push(() => host.close());
    const redisDb = await freshRedisDb();
    const file = config();
    const bots = await startReplicas(
      ['r1', 'r2'],
      { host, slack, redisDb, env: { COUNTERSIGN_CONFIG: file } },
      cleanups,
    );
    await host.waitForIncarnation(1);
    // r1 runs the host, r2 stands by: a submit to r2 is forwarded to r1, which checks it again.
    const r1 = await replicaRunning(bots);
    const r2 = bots.find((bot) => bot !== r1)!;

    await host.open(shell('tc-rep', ['git', 'push', '--force', 'origin', 'main']));
    const redis = new Redis(testRedisUrl(redisDb));
    cleanups.push(() => redis.quit());
    const card = await (async () => {
      for (const deadline = Date.now() + 10_000; Date.now() < deadline; ) {
        const raw = await redis.hget(keys.approval('tc-rep'), 'd');
        const at = raw ? (JSON.parse(raw) as { slack?: { channel: string; ts?: string } }).slack : undefined;
        const message = at?.ts ? slack.message(at.channel, at.ts) : undefined;
        if (message && buttonsOf(message).length > 0) return message;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error(`no card for tc-rep\n${slack.summary()}`);
    })();
    const allow = buttonsOf(card).find((b) => b.text === 'Allow once')!;

    // Opened on the owner, submitted wrong then right to the standby, and then replayed to the owner.
    await pressButtonAt(r1.url, slack, { channel: card.channel, ts: card.ts }, allow, 'U0ALICE');
    const modal = await nthConfirmModal(slack, 0);
    expect((await submit(r2.url, modal, 'U0ALICE', 'master')).response_action).toBe('errors');
    await pressButtonAt(r2.url, slack, { channel: card.channel, ts: card.ts }, allow, EVE);
    await settle();
    expect(decidesOf({ host }, 'tc-rep')).toHaveLength(0);
    expect(await submit(r2.url, modal, EVE, 'main')).toMatchObject({ response_action: 'errors' });

    expect(await submit(r2.url, modal, 'U0ALICE', 'main')).toEqual({});
    await host.waitForDecide((f) => f.frame.params.approvalId === 'tc-rep', 10_000);
    expect(await submit(r1.url, modal, 'U0ALICE', 'main')).toEqual({});
    await settle();
    expect(decidesOf({ host }, 'tc-rep')).toHaveLength(1);
  });
});
