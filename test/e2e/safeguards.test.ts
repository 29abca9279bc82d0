// Safer approvals, end to end: quorums and risk rules with the real bot, a fake host, the fake
// Slack and the tests' Redis. Every click is a signed request; what reaches the host is counted
// from the frames it received.

import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { findGrant, grantQuestion } from '../../src/domain/grants/match.js';
import type { ApprovalRecord } from '../../src/domain/record.js';
import { RedisGrantStore } from '../../src/store/grantStore.js';
import { keys } from '../../src/store/keys.js';
import { type ApprovalRequestParams, fileWriteApproval, shellApproval } from '../support/fakeHost.js';
import type { SlackMessage } from '../support/fakeSlack.js';
import { until } from '../support/until.js';
import { type ConfigSpec, configFile, issueRisks, mainHost, route, users } from './fixtures/config.js';
import { buttonsOf, rememberButtonOf, SESSION, textOf, World } from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

const APPROVERS = users('U0ALICE', 'U0BOB', 'U0CAROL', 'U0OWNER');

/**
 * U0OWNER's agent asks. `two-person` (tool "twoperson") needs two approvers; `everyday` one, with
 * grants on. The risk rules are the issue's example.
 */
function config(hostCommand: string): ConfigSpec {
  return {
    hosts: [mainHost(hostCommand, { owner: 'U0OWNER' })],
    routes: [
      route('two-person', { match: { tools: ['twoperson'] }, approvers: APPROVERS, quorum: 2 }),
      route('everyday', { approvers: APPROVERS }),
    ],
    admins: ['U0ADMIN'],
    risks: issueRisks(),
  };
}

async function startWorld(): Promise<World> {
  const world = await World.start({ sessions: [{ sessionId: SESSION, title: 'Release' }] }, (host) => {
    const file = configFile(config(host.command));
    cleanups.push(file.remove);
    return { COUNTERSIGN_CONFIG: file.path, MSP_HOST_COMMAND: '' };
  });
  cleanups.push(() => world.close());
  world.slack.setUsergroup('S0SECURITY', ['U0SEC']);
  return world;
}

function shell(approvalId: string, stages: string[][], toolName = 'bash'): ApprovalRequestParams {
  return { ...shellApproval({ approvalId, sessionId: SESSION, stages }), toolName };
}

function fileWrite(approvalId: string, path: string): ApprovalRequestParams {
  return fileWriteApproval(shell(approvalId, [['true']]), path);
}

function connect(approvalId: string, host: string, toolName: string): ApprovalRequestParams {
  return {
    ...shell(approvalId, [['true']]),
    toolName,
    rawArgs: JSON.stringify({ url: `https://${host}/` }),
    subject: { kind: 'network', host, port: 443, protocol: 'https' },
  };
}

async function openCard(world: World, approval: ApprovalRequestParams): Promise<SlackMessage> {
  await world.host.open(approval);
  return world.waitForCard(approval.approvalId, (m) => buttonsOf(m).length > 0);
}

/** Every ephemeral sent to `userId` so far, once there are at least `count`. */
async function ephemeralsTo(world: World, userId: string, count: number): Promise<string[]> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const texts = world.slack
      .callsOf('chat.postEphemeral')
      .filter((c) => c.args.user === userId)
      .map((c) => String(c.args.text));
    if (texts.length >= count) return texts;
    if (Date.now() > deadline)
      throw new Error(`${texts.length} of ${count} ephemerals to ${userId}: ${texts.join(' | ')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function decidesOf(world: World, approvalId: string) {
  return world.host.decides().filter((d) => d.frame.params.approvalId === approvalId);
}

async function recordOf(world: World, approvalId: string): Promise<ApprovalRecord> {
  const raw = await world.redis.hget(keys.approval(approvalId), 'd');
  if (!raw) throw new Error(`no record of ${approvalId}`);
  return JSON.parse(raw) as ApprovalRecord;
}

/** Long enough for a decide that should not happen to have reached the host. */
const settle = () => new Promise((r) => setTimeout(r, 400));

const COUNTED_1_OF_2 = 'Your approval is counted: 1 of 2.';

describe('quorum', () => {
  it('one vote keeps the buttons and sends nothing; the same user twice counts once; a second approver sends one decide', async () => {
    const world = await startWorld();
    const id = 'q-two';
    await openCard(world, shell(id, [['make', 'release']], 'twoperson'));

    await world.press(id, 'Allow once', 'U0ALICE');
    expect((await ephemeralsTo(world, 'U0ALICE', 1))[0]).toContain(COUNTED_1_OF_2);
    const oneVote = await world.waitForCard(id, (m) => textOf(m).includes('1 of 2 approvals'));
    expect(textOf(oneVote)).toContain('<@U0ALICE>');
    expect(buttonsOf(oneVote).map((b) => b.text)).toContain('Allow once');

    await world.press(id, 'Allow once', 'U0ALICE', oneVote);
    expect((await ephemeralsTo(world, 'U0ALICE', 2))[1]).toContain(COUNTED_1_OF_2);
    await settle();
    expect(decidesOf(world, id)).toHaveLength(0);
    expect((await recordOf(world, id)).votes?.map((v) => v.userId)).toEqual(['U0ALICE']);

    await world.press(id, 'Allow once', 'U0BOB');
    const decide = await world.host.waitForDecide((d) => d.frame.params.approvalId === id);
    expect(decide.frame.params.choiceId).toBe('allow_once');
    const done = await world.waitForCard(id, (m) => textOf(m).includes('<@U0ALICE> and <@U0BOB>'));
    expect(buttonsOf(done)).toHaveLength(0);
    await settle();
    expect(decidesOf(world, id)).toHaveLength(1);

    const audit = await world.auditEntries();
    // Alice's second press changed nothing, and is not audited again.
    expect(audit.filter((e) => e.kind === 'vote')).toEqual([
      expect.objectContaining({ kind: 'vote', approvalId: id, userId: 'U0ALICE', votes: '1', quorum: '2' }),
    ]);
    expect(audit).toContainEqual(
      expect.objectContaining({
        kind: 'decision',
        approvalId: id,
        userId: 'U0BOB',
        voters: '["U0ALICE","U0BOB"]',
      }),
    );
  });

  it('a reject by any one allowed user decides at once', async () => {
    const world = await startWorld();
    const id = 'q-reject';
    await openCard(world, shell(id, [['make', 'release']], 'twoperson'));
    await world.press(id, 'Reject', 'U0CAROL');
    await world.submitModal('U0CAROL', 'not today');
    const decide = await world.host.waitForDecide((d) => d.frame.params.approvalId === id);
    expect(decide.frame.params).toMatchObject({ choiceId: 'abort', feedback: 'not today' });
  });

  it('a Reject the host turns into a rule kept for good while it is in flight credits nobody: card, audit, grants', async () => {
    const world = await startWorld();
    const id = 'q-swapped';
    await openCard(world, shell(id, [['make', 'release']], 'twoperson'));
    // The host holds Bob's decide, asks the stage again with Reject's id now approving for good,
    // then applies the choiceId it was sent as it means now, naming Bob's commandId.
    // Held 4 s: the in-flight card below must be drawn before the host applies it, on a loaded
    // CI machine too.
    await world.host.delayDecide(4_000);
    await world.press(id, 'Reject', 'U0BOB');
    await world.submitModal('U0BOB', 'not today');
    const decide = await world.host.waitForDecide((d) => d.frame.params.approvalId === id);
    expect(decide.frame.params.choiceId).toBe('abort');
    await world.host.update({
      approvalId: id,
      change: { kind: 'choicesRefreshed' },
      patch: {
        availableChoices: [
          {
            choiceId: 'abort',
            label: 'Allow',
            decision: 'approvedPolicyAmendment',
            scope: 'localPersistent',
            rulePreview: 'Always allow: make release',
            acceptsFeedback: true,
          },
        ],
      },
    });
    // While it is in flight, the card names Bob without the label his choice was given since.
    const inFlight = await world.waitForCard(id, (m) =>
      textOf(m).includes('the request changed after that choice was made'),
    );
    expect(textOf(inFlight)).toContain('Being decided by <@U0BOB>…');
    await until(async () => (await recordOf(world, id)).phase === 'resolved', 10_000);
    const card = await world.waitForCard(
      id,
      (m) =>
        buttonsOf(m).length === 0 && textOf(m).includes('Approved') && !textOf(m).includes('Being decided'),
    );
    expect(textOf(card)).not.toContain('U0BOB');
    const record = await recordOf(world, id);
    expect(record.resolution).toMatchObject({ decision: 'approvedPolicyAmendment', resolvedBy: 'user' });
    expect(record.resolution?.slackUserId).toBeUndefined();
    expect(record.stageDecisions).toBeUndefined();
    await settle();
    const { channel, ts } = await world.postedAt(id);
    for (const line of world.slack.repliesTo(channel, ts)) expect(textOf(line)).not.toContain('U0BOB');
    // No render of the card ever put "Allow" next to him.
    const renders = world.slack.callsOf('chat.update').filter((c) => c.args.ts === ts);
    expect(renders.length).toBeGreaterThan(0);
    for (const render of renders) expect(JSON.stringify(render.args)).not.toContain('<@U0BOB>… (Allow)');
    // Bob approved nothing: no entry credits him with the approval, and no rule is listed as his.
    const entries = (await world.auditEntries()).filter((e) => e.approvalId === id);
    expect(entries.filter((e) => JSON.stringify(e).includes('U0BOB'))).toEqual([]);
    const grants = new RedisGrantStore(world.redis, {
      logger: pino({ level: 'silent' }),
      auditMaxLen: 1_000,
    });
    expect(await grants.list({}, new Date())).toEqual([]);
    expect(
      world.bot.logs.some(
        (l) =>
          l.json?.approvalId === id && l.msg?.startsWith('the host asked again what our decide was sent for'),
      ),
    ).toBe(true);
  });

  it('the owner’s vote does not count, even where self-approval is allowed', async () => {
    const world = await startWorld();
    const id = 'q-owner';
    await openCard(world, shell(id, [['make', 'release']], 'twoperson'));

    await world.press(id, 'Allow once', 'U0OWNER');
    expect((await ephemeralsTo(world, 'U0OWNER', 1))[0]).toBe(
      'This request needs 2 approvers other than the one whose agent asks, so your approval does not count toward it. Nothing was sent; you can still reject it.',
    );
    expect((await recordOf(world, id)).votes).toBeUndefined();

    await world.press(id, 'Allow once', 'U0ALICE');
    expect((await ephemeralsTo(world, 'U0ALICE', 1))[0]).toContain(COUNTED_1_OF_2);
    await settle();
    expect(decidesOf(world, id)).toHaveLength(0);

    await world.press(id, 'Allow once', 'U0BOB');
    await world.host.waitForDecide((d) => d.frame.params.approvalId === id);
  });

  it('two last votes arriving together send one decide', async () => {
    const world = await startWorld();
    for (const id of ['q-race-1', 'q-race-2', 'q-race-3']) {
      await openCard(world, shell(id, [['make', id]], 'twoperson'));
      await world.press(id, 'Allow once', 'U0ALICE');
      const card = await world.waitForCard(id, (m) => textOf(m).includes('1 of 2 approvals'));
      await Promise.all([
        world.press(id, 'Allow once', 'U0BOB', card),
        world.press(id, 'Allow once', 'U0CAROL', card),
      ]);
      await world.host.waitForDecide((d) => d.frame.params.approvalId === id);
      await world.waitForCard(id, (m) => buttonsOf(m).length === 0 && textOf(m).includes('Approved'));
    }
    await settle();
    for (const id of ['q-race-1', 'q-race-2', 'q-race-3']) expect(decidesOf(world, id)).toHaveLength(1);
  });

  it('a stage advance clears the votes: an earlier stage’s approval does not count toward the next', async () => {
    const world = await startWorld();
    const id = 'q-stages';
    const approval = shell(
      id,
      [
        ['make', 'build'],
        ['make', 'release'],
      ],
      'twoperson',
    );
    const first = await openCard(world, approval);
    await world.press(id, 'Allow once', 'U0ALICE', first);
    await world.waitForCard(id, (m) => textOf(m).includes('1 of 2 approvals'));

    await world.host.update({
      approvalId: id,
      patch: { currentRequirementId: { approvalId: id, sourceIndex: 1 } },
      change: { kind: 'stageAdvanced', requirementId: { approvalId: id, sourceIndex: 0 } },
    });
    const second = await world.waitForCard(id, (m) => textOf(m).includes('Needs 2 approvals'));
    expect((await recordOf(world, id)).votes).toBeUndefined();

    // A press on the first stage's button is for a question no longer asked.
    await world.press(id, 'Allow once', 'U0BOB', first);
    expect((await ephemeralsTo(world, 'U0BOB', 1))[0]).toContain('The question changed');

    await world.press(id, 'Allow once', 'U0ALICE', second);
    expect((await ephemeralsTo(world, 'U0ALICE', 2))[1]).toContain(COUNTED_1_OF_2);
    await settle();
    expect(decidesOf(world, id)).toHaveLength(0);
  });
});

describe('risk rules', () => {
  it('commands: the warning above the buttons names the rule, the quorum is raised, no remember button, and the audit says so', async () => {
    const world = await startWorld();
    // The same route without a risk offers "don't ask again": the rule is what takes it away.
    const plain = await openCard(world, shell('r-plain', [['git', 'push', 'origin', 'main']]));
    expect(rememberButtonOf(plain)).toBeDefined();
    expect(textOf(plain)).not.toContain('risk rule');

    const id = 'r-force';
    const card = await openCard(
      world,
      shell(id, [
        ['npm', 'test'],
        ['git', 'push', '--force', 'origin', 'main'],
      ]),
    );
    expect(textOf(card)).toContain(':warning: *Rewrites shared history* (risk rule `force-push`)');
    const warningAt = card.blocks.findIndex((b) => JSON.stringify(b).includes('Rewrites shared history'));
    const buttonsAt = card.blocks.findIndex((b) => (b as { type?: string }).type === 'actions');
    expect(warningAt).toBeGreaterThan(-1);
    expect(warningAt).toBeLessThan(buttonsAt);
    expect(rememberButtonOf(card)).toBeUndefined();

    await world.press(id, 'Allow once', 'U0ALICE', card);
    expect((await ephemeralsTo(world, 'U0ALICE', 1))[0]).toContain(COUNTED_1_OF_2);
    await settle();
    expect(decidesOf(world, id)).toHaveLength(0);
    await world.press(id, 'Allow once', 'U0BOB');
    await world.host.waitForDecide((d) => d.frame.params.approvalId === id);

    expect(await world.auditEntries()).toContainEqual(
      expect.objectContaining({
        kind: 'risk',
        approvalId: id,
        rule: 'force-push',
        quorum: '2',
        grantsOff: 'true',
      }),
    );
    expect(await world.auditEntries()).toContainEqual(
      expect.objectContaining({ kind: 'vote', approvalId: id, risks: '["force-push"]' }),
    );
  });

  it('paths: the rule’s approvers replace the route’s, admins included; the path is normalized first', async () => {
    const world = await startWorld();
    const id = 'r-env';
    const card = await openCard(world, fileWrite(id, '/srv/app/config/../.env'));
    expect(textOf(card)).toContain('Touches secrets');
    // The rule's approvers replace the route's on the card too (names are read at start-up; the
    // group was made after it, so the card names it by ID).
    expect(textOf(card)).toContain('Approvers: S0SECURITY');
    expect(textOf(card)).not.toContain('U0ALICE');

    await world.press(id, 'Allow once', 'U0ALICE', card);
    expect((await ephemeralsTo(world, 'U0ALICE', 1))[0]).toBe(
      'This request matches the risk rule secrets: only members of <!subteam^S0SECURITY> can decide it.',
    );
    await world.press(id, 'Allow once', 'U0ADMIN', card);
    expect((await ephemeralsTo(world, 'U0ADMIN', 1))[0]).toContain('risk rule secrets');
    await settle();
    expect(decidesOf(world, id)).toHaveLength(0);

    await world.press(id, 'Allow once', 'U0SEC', card);
    const decide = await world.host.waitForDecide((d) => d.frame.params.approvalId === id);
    expect(decide.frame.params.choiceId).toBe('allow_once');
    expect(await world.auditEntries()).toContainEqual(
      expect.objectContaining({
        kind: 'risk',
        approvalId: id,
        rule: 'secrets',
        approvers: '{"users":[],"usergroups":["S0SECURITY"]}',
      }),
    );
  });

  it('targets and tools: a rule with both matches only when both do', async () => {
    const world = await startWorld();
    const prod = await openCard(world, connect('r-prod', 'api.prod.example.com', 'deploy_api'));
    expect(textOf(prod)).toContain(':warning: *Production* (risk rule `production`)');
    const fetch = await openCard(world, connect('r-fetch', 'api.prod.example.com', 'fetch'));
    expect(textOf(fetch)).not.toContain('risk rule');
    const staging = await openCard(world, connect('r-staging', 'api.staging.example.com', 'deploy_api'));
    expect(textOf(staging)).not.toContain('risk rule');
  });

  it('a remembered grant that would match a risky request is not used: people are asked', async () => {
    const world = await startWorld();
    const stages = [['kubectl', 'delete', 'pod', 'web-1']];
    await openCard(world, shell('r-first', stages));
    const first = await recordOf(world, 'r-first');
    const question = grantQuestion({ ...first, risks: undefined });
    expect(question).toBeDefined();
    const grants = new RedisGrantStore(world.redis, {
      logger: pino({ level: 'silent' }),
      auditMaxLen: 1_000,
    });
    const grant = await grants.create({
      caller: question!.caller,
      tool: question!.tool,
      capabilities: question!.capabilities,
      sandboxMode: question!.sandboxMode,
      holder: 'bot',
      grantedBy: 'U0ALICE',
      approvalId: 'r-first',
      hostId: 'main',
      route: 'everyday',
      channel: 'C0APPROVALS',
      ttlMs: 3_600_000,
    });

    const card = await openCard(world, shell('r-second', stages));
    expect(textOf(card)).toContain('risk rule `force-push`');
    const second = await recordOf(world, 'r-second');
    // Without its risk rule the same request would be answered by this grant.
    expect(findGrant([grant], grantQuestion({ ...second, risks: undefined })!, new Date())?.grantId).toBe(
      grant.grantId,
    );
    await settle();
    expect(decidesOf(world, 'r-second')).toHaveLength(0);
    expect((await grants.get(grant.grantId))?.uses).toBe(0);
  });
});
