// COUNTERSIGN_CONFIG routes, end to end: the real bot reads a routes file, and each approval's
// card lands in the channel of the first route that matches it (by host, tool, the session's
// workspaceRoot or title, subject kind and protectedWrite), else in SLACK_CHANNEL. Posts are queued per channel, so a channel held back by
// Slack's rate limit does not hold back another.

import { afterEach, describe, expect, it } from 'vitest';
import { keys } from '../../src/store/keys.js';
import { freshRedisDb, SIGNING_SECRET, startBot } from '../support/bot.js';
import {
  type ApprovalRequestParams,
  approvalFromTranscript,
  FakeHost,
  shellApproval,
} from '../support/fakeHost.js';
import { FakeSlack, type SlackCall, type SlackMessage } from '../support/fakeSlack.js';
import { blockActionsPayload, postInteraction } from '../support/slackRequests.js';
import { type ConfigSpec, route, tempConfig } from './fixtures/config.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

const PAYMENTS_SESSION = '0198f0aa-2222-7000-8000-0000000000bb';
const LEDGER_SESSION = '0198f0aa-3333-7000-8000-0000000000cc';
const DEPLOY_SESSION = '0198f0aa-4444-7000-8000-0000000000dd';
const NAMED_SESSION = '0198f0aa-5555-7000-8000-0000000000ee';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

/** Writes a COUNTERSIGN_CONFIG file into a fresh temp dir (removed after the test). */
function configFile(config: ConfigSpec | string): string {
  return tempConfig(cleanups, config);
}

async function startWorld(...args: Parameters<typeof World.start>): Promise<World> {
  const world = await World.start(...args);
  cleanups.push(() => world.close());
  return world;
}

/** A file-access approval (toolName `write_file` in the transcript) under another id, tool or session. */
function fileApproval(approvalId: string, overrides: Partial<ApprovalRequestParams> = {}) {
  return approvalFromTranscript('approval-round-trip', { approvalId, ...overrides });
}

/** A one-stage shell approval whose tool is called `toolName`. */
function toolApproval(approvalId: string, toolName: string, sessionId = SESSION): ApprovalRequestParams {
  return { ...shellApproval({ approvalId, sessionId, stages: [['make', 'deploy']] }), toolName };
}

/** Presses a button of `card` as Slack would: a signed block_actions naming the card's own channel and ts. */
async function press(world: World, card: SlackMessage, label: string, userId = 'U0ALICE'): Promise<void> {
  const button = buttonsOf(card).find((b) => b.text === label);
  if (!button)
    throw new Error(
      `no button "${label}": ${buttonsOf(card)
        .map((b) => b.text)
        .join(', ')}`,
    );
  const response = await postInteraction(
    world.bot.url,
    SIGNING_SECRET,
    blockActionsPayload({
      userId,
      channel: card.channel,
      ts: card.ts,
      actionId: button.actionId,
      value: button.value,
      responseUrl: world.slack.responseUrl(`r-${userId}-${Date.now()}`),
    }),
  );
  expect(response.status).toBe(200);
}

/** Which of `ids` each message shows (every card names its approvalId), in the same order. */
function approvalIdsShown(messages: Array<{ blocks: unknown }>, ids: string[]): string[] {
  return messages.map((m, i) => {
    const blocks = JSON.stringify(m.blocks);
    const found = ids.filter((id) => blocks.includes(id));
    expect(found, `message ${i} names exactly one approval`).toHaveLength(1);
    return found[0]!;
  });
}

/** approvalIdsShown for chat.postMessage calls, in the order Slack answered them. */
function postedIds(calls: SlackCall[], ids: string[]): string[] {
  return approvalIdsShown(
    calls.map((c) => ({ blocks: c.args.blocks })),
    ids,
  );
}

/** chat.postMessage calls Slack answered ok, per requested channel. */
function okPostsTo(slack: FakeSlack, channel: string): SlackCall[] {
  return slack.cardPosts().filter((c) => c.args.channel === channel && c.response.ok === true);
}

describe('routing cards with COUNTERSIGN_CONFIG', () => {
  it('posts each card to the first matching route (tool, then workspace), the rest to SLACK_CHANNEL, and routed cards still decide', async () => {
    const config = configFile({
      routes: [
        route('shell', { channel: 'C0SHELL', match: { tools: ['shell'] } }),
        route('payments', { channel: 'C0PAYMENTS', match: { workspaces: ['/srv/payments/**'] } }),
        route('other-host', { channel: 'C0OTHERHOST', match: { hosts: ['ci'] } }),
      ],
    });
    const world = await startWorld(
      {
        sessions: [
          { sessionId: SESSION, title: 'Bump the version' },
          { sessionId: PAYMENTS_SESSION, title: 'Fix refunds', workspaceRoot: '/srv/payments/api' },
        ],
      },
      { COUNTERSIGN_CONFIG: config },
    );
    // A session that starts while the bot runs is routed on its workspaceRoot too.
    await world.host.startSession({
      sessionId: LEDGER_SESSION,
      title: 'Ledger export',
      workspaceRoot: '/srv/payments/ledger',
    });

    const expected: Record<string, string> = {};
    const open = async (approval: ApprovalRequestParams, channel: string) => {
      expected[approval.approvalId] = channel;
      await world.host.open(approval);
    };
    // Tool `shell`, workspace /srv/repo → the shell route.
    await open(toolApproval('route-shell-repo', 'shell'), 'C0SHELL');
    // write_file in /srv/payments/api → the payments route.
    await open(fileApproval('route-file-payments', { sessionId: PAYMENTS_SESSION }), 'C0PAYMENTS');
    // shell in /srv/payments/api matches both routes: the first one wins.
    await open(toolApproval('route-shell-payments', 'shell', PAYMENTS_SESSION), 'C0SHELL');
    // `bash` is not `shell`, and /srv/repo is not under /srv/payments → SLACK_CHANNEL.
    await open(toolApproval('route-bash-repo', 'bash'), world.channel);
    // write_file in /srv/repo, host `default` (not `ci`) → SLACK_CHANNEL.
    await open(fileApproval('route-file-repo'), world.channel);
    // The session started after start-up is under /srv/payments → the payments route.
    await open(fileApproval('route-file-ledger', { sessionId: LEDGER_SESSION }), 'C0PAYMENTS');
    // A shell request names its own working directory, which wins over its session's (/srv/repo).
    const bashInPayments = toolApproval('route-bash-subject', 'bash');
    bashInPayments.subject = { ...bashInPayments.subject, workspaceRoot: '/srv/payments/tools' };
    await open(bashInPayments, 'C0PAYMENTS');

    const ids = Object.keys(expected);
    for (const id of ids) {
      const card = await world.waitForCard(id, (m) => buttonsOf(m).length > 0);
      expect({ id, channel: card.channel }).toEqual({ id, channel: expected[id] });
    }
    // Exactly one post per approval, each to its route's channel, and nothing to the unmatched route.
    const posts = world.slack.cardPosts();
    expect(posts).toHaveLength(ids.length);
    const postedTo = Object.fromEntries(
      postedIds(posts, ids).map((id, i) => [id, String(posts[i]!.args.channel)]),
    );
    expect(postedTo).toEqual(expected);
    expect(world.slack.messagesIn('C0OTHERHOST')).toHaveLength(0);

    // A click on a card in a routed channel decides that approval.
    const shellCard = await world.card('route-shell-repo');
    await press(world, shellCard, 'Allow once');
    const shellDecide = await world.host.waitForDecide(
      (d) => d.frame.params.approvalId === 'route-shell-repo',
    );
    expect(shellDecide.frame.params).toMatchObject({
      approvalId: 'route-shell-repo',
      choiceId: 'allow_once',
    });
    const shellFinal = await world.waitForCard('route-shell-repo', (m) => textOf(m).includes('Approved'));
    expect(shellFinal).toMatchObject({ channel: 'C0SHELL', ts: shellCard.ts });
    expect(buttonsOf(shellFinal)).toHaveLength(0);

    const paymentsCard = await world.card('route-file-payments');
    await press(world, paymentsCard, 'Allow once', 'U0BOB');
    const paymentsDecide = await world.host.waitForDecide(
      (d) => d.frame.params.approvalId === 'route-file-payments',
    );
    expect(paymentsDecide.frame.params.choiceId).toBe('allow_once');
    const paymentsFinal = await world.waitForCard('route-file-payments', (m) =>
      textOf(m).includes('Approved'),
    );
    expect(paymentsFinal).toMatchObject({ channel: 'C0PAYMENTS', ts: paymentsCard.ts });
    expect(textOf(paymentsFinal)).toContain('<@U0BOB>');

    // The card is known by its real (channel, ts): the same ts under SLACK_CHANNEL is no card.
    const ledgerCard = await world.card('route-file-ledger');
    await press(world, { ...ledgerCard, channel: world.channel }, 'Allow once', 'U0CAROL');
    expect(await world.ephemeralTo('U0CAROL')).toMatch(/no approval behind this message/);
    expect(world.host.decides().map((d) => d.frame.params.approvalId)).toEqual([
      'route-shell-repo',
      'route-file-payments',
    ]);
  });

  it('routes by session title (or name), subject kind and protectedWrite, the first matching route winning', async () => {
    const config = configFile({
      routes: [
        route('deploys', {
          channel: 'C0DEPLOYS',
          match: { sessionTitles: ['*deploy*'], subjects: ['shell'] },
        }),
        route('protected', { channel: 'C0PROTECTED', match: { protectedWrite: true } }),
        route('files', { channel: 'C0FILES', match: { subjects: ['fileAccess'] } }),
        route('rest', { channel: 'C0REST' }),
      ],
    });
    const world = await startWorld(
      {
        sessions: [
          { sessionId: SESSION, title: 'Bump the version' },
          { sessionId: DEPLOY_SESSION, title: 'Nightly Deploy / prod' },
          // No title: the session's name is matched instead.
          { sessionId: NAMED_SESSION, name: 'deploy-hotfix' },
        ],
      },
      { COUNTERSIGN_CONFIG: config },
    );

    const expected: Record<string, string> = {};
    const open = async (approval: ApprovalRequestParams, route: string) => {
      expected[approval.approvalId] = route;
      await world.host.open(approval);
    };
    // A shell command in a session titled "…Deploy…" (globs ignore case, `*` crosses "/").
    await open(toolApproval('by-title-shell', 'shell', DEPLOY_SESSION), 'deploys');
    // The session's name stands in for its missing title.
    await open(toolApproval('by-name-shell', 'shell', NAMED_SESSION), 'deploys');
    // The title matches but the subject is a file access: on to the next routes.
    await open(fileApproval('by-subject-file', { sessionId: DEPLOY_SESSION }), 'files');
    // A protected write matches both `protected` and `files`: the first one wins.
    await open(fileApproval('by-protected-file', { protectedWrite: true }), 'protected');
    // A protected shell command in a deploy session matches `deploys` and `protected`: the first wins.
    await open(
      { ...toolApproval('first-wins-shell', 'shell', DEPLOY_SESSION), protectedWrite: true },
      'deploys',
    );
    // A shell command in a session whose title says nothing of deploys: only the catch-all.
    await open(toolApproval('unmatched-shell', 'shell'), 'rest');

    const channels: Record<string, string> = {
      deploys: 'C0DEPLOYS',
      protected: 'C0PROTECTED',
      files: 'C0FILES',
      rest: 'C0REST',
    };
    for (const [id, route] of Object.entries(expected)) {
      const card = await world.waitForCard(id, (m) => buttonsOf(m).length > 0);
      const raw = await world.redis.hget(keys.approval(id), 'd');
      const stored = JSON.parse(raw!) as { route?: string };
      expect({ id, channel: card.channel, route: stored.route }).toEqual({
        id,
        channel: channels[route],
        route,
      });
      // One host: the card does not name it.
      expect(textOf(card)).not.toContain('Host:');
    }
    expect(world.slack.cardPosts()).toHaveLength(Object.keys(expected).length);
    // The two alike deploy commands also share a batch summary (docs/slack.md#batch-triage),
    // posted once they have waited together for a moment.
    await world.slack.waitFor('chat.postMessage', (c) => world.slack.summaryPosts().includes(c));
    expect(world.slack.summaryPosts().map((c) => c.args.channel)).toEqual(['C0DEPLOYS']);
    expect(world.slack.messagesIn(world.channel)).toHaveLength(0);
  });

  it('without SLACK_CHANNEL, cards no route matches go to the catch-all route', async () => {
    const config = configFile({
      routes: [
        route(undefined, { channel: 'C0SHELL', match: { tools: ['shell'] } }),
        route('everything-else', { channel: 'C0CATCHALL' }),
      ],
    });
    const world = await startWorld({}, { COUNTERSIGN_CONFIG: config, SLACK_CHANNEL: '' });
    await world.host.open(fileApproval('catchall-file'));
    await world.host.open(toolApproval('catchall-shell', 'shell'));

    const file = await world.waitForCard('catchall-file', (m) => buttonsOf(m).length > 0);
    expect(file.channel).toBe('C0CATCHALL');
    const shell = await world.waitForCard('catchall-shell', (m) => buttonsOf(m).length > 0);
    expect(shell.channel).toBe('C0SHELL');
    const channels = world.slack.cardPosts().map((c) => c.args.channel);
    expect(channels.sort()).toEqual(['C0CATCHALL', 'C0SHELL']);

    await press(world, file, 'Allow once');
    const decide = await world.host.waitForDecide();
    expect(decide.frame.params).toMatchObject({ approvalId: 'catchall-file', choiceId: 'allow_once' });
  });

  describe('a bad config stops start-up with one line naming the variable', () => {
    const cases: Array<{
      what: string;
      yaml?: string;
      path?: string;
      env?: Record<string, string>;
      line: RegExp;
    }> = [
      {
        what: 'a file that is not there',
        path: '/nonexistent/countersign-routes.yml',
        line: /COUNTERSIGN_CONFIG.*\/nonexistent\/countersign-routes\.yml/,
      },
      {
        what: 'invalid YAML',
        yaml: 'routes:\n  - channel: C0SHELL\n    match: {tools: [shell\n',
        line: /COUNTERSIGN_CONFIG .*invalid YAML/,
      },
      {
        what: 'a misspelt key',
        yaml: 'routes:\n  - chanel: C0SHELL\n',
        line: /COUNTERSIGN_CONFIG .*routes\[0\].*"chanel".*not supported/,
      },
      {
        what: 'a channel that is not a channel ID',
        yaml: 'routes:\n  - channel: payments\n    match:\n      tools: [shell]\n',
        line: /COUNTERSIGN_CONFIG .*routes\[0\]\.channel must be a channel ID/,
      },
      {
        what: 'an empty pattern list',
        yaml: 'routes:\n  - channel: C0SHELL\n    match:\n      tools: []\n',
        line: /COUNTERSIGN_CONFIG .*routes\[0\]\.match\.tools must list at least one value/,
      },
      {
        what: 'hosts in the file while MSP_HOST_COMMAND is set',
        yaml: 'hosts:\n  - id: main\n    command: muse serve\n',
        line: /^countersign: MSP_HOST_COMMAND is set and COUNTERSIGN_CONFIG \(.+\) lists hosts: unset MSP_HOST_COMMAND, or remove hosts from the file$/,
      },
      {
        what: 'routes but no SLACK_CHANNEL and no catch-all',
        yaml: 'routes:\n  - channel: C0SHELL\n    match:\n      tools: [shell]\n',
        env: { SLACK_CHANNEL: '' },
        line: /SLACK_CHANNEL.*COUNTERSIGN_CONFIG/,
      },
    ];

    it.each(cases)('$what', async ({ yaml, path, env, line }) => {
      const slack = await FakeSlack.start();
      const host = await FakeHost.start();
      cleanups.push(
        () => slack.close(),
        () => host.close(),
      );
      const configPath = path ?? configFile(yaml ?? '');
      const bot = await startBot({
        host,
        slack,
        redisDb: await freshRedisDb(),
        env: { COUNTERSIGN_CONFIG: configPath, ...env },
      });
      cleanups.push(() => bot.kill());
      const exit = await bot.exited;
      expect(exit.code).toBe(1);
      const stderr = bot.logs.filter((l) => l.stream === 'stderr').map((l) => l.raw);
      expect(stderr).toHaveLength(1);
      expect(stderr[0]).toMatch(line);
      expect(bot.logs.filter((l) => l.stream === 'stdout')).toHaveLength(0);
      // Nothing was started: no host process, no Slack call.
      expect(host.incarnations).toHaveLength(0);
      expect(slack.calls).toHaveLength(0);
    });
  });

  it('a rate-limited channel does not hold back another, and its own cards arrive once each, in order', async () => {
    const config = configFile({
      routes: [
        route(undefined, { channel: 'C0BUSY', match: { tools: ['shell'] } }),
        route(undefined, { channel: 'C0QUIET', match: { tools: ['write_*'] } }),
      ],
    });
    const world = await startWorld({}, { COUNTERSIGN_CONFIG: config });
    world.slack.rateLimitPerChannel('chat.postMessage', 1);

    const busyIds = ['busy-0001', 'busy-0002', 'busy-0003', 'busy-0004'];
    // Each asks something else: alike pending requests would also get a batch summary card
    // (docs/slack.md#batch-triage), a post of its own this test of card pacing does not count.
    for (const id of busyIds)
      await world.host.open({
        ...shellApproval({ approvalId: id, sessionId: SESSION, stages: [['make', id]] }),
        toolName: 'shell',
      });
    await world.host.open(fileApproval('quiet-0001'));

    // At one post per second, the busy channel needs about 3 s for its 4 cards.
    await world.slack.waitForCount('chat.postMessage', busyIds.length + 1, 10_000);
    const quiet = okPostsTo(world.slack, 'C0QUIET');
    const busy = okPostsTo(world.slack, 'C0BUSY');
    expect(quiet).toHaveLength(1);
    expect(busy).toHaveLength(busyIds.length);

    // The quiet channel's card did not wait behind the busy channel's queue.
    expect(quiet[0]!.hr).toBeLessThan(busy.at(-1)!.hr);
    expect(quiet[0]!.index).toBeLessThan(busy.at(-1)!.index);

    // Every busy card once, in the order the host opened them.
    expect(postedIds(busy, busyIds)).toEqual(busyIds);
    expect(approvalIdsShown(world.slack.messagesIn('C0BUSY'), busyIds)).toEqual(busyIds);
    for (const id of busyIds) expect((await world.postedAt(id)).channel).toBe('C0BUSY');
    expect((await world.postedAt('quiet-0001')).channel).toBe('C0QUIET');

    // Slack pushed back on the busy channel only. Posts waited their turn: one 429 for each card
    // after the first (posts racing each other would collect about twice as many).
    const limited = (channel: string) =>
      world.slack.rateLimited.filter((c) => c.method === 'chat.postMessage' && c.args.channel === channel);
    expect(limited('C0BUSY').length).toBeGreaterThanOrEqual(1);
    expect(limited('C0BUSY').length).toBeLessThanOrEqual(busyIds.length);
    expect(limited('C0QUIET')).toHaveLength(0);

    // Nothing more is posted later (no duplicate from a retry).
    await new Promise((r) => setTimeout(r, 1_200));
    expect(world.slack.cardPosts()).toHaveLength(busyIds.length + 1);
  });
});
