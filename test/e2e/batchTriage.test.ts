// Batch triage, end to end (docs/slack.md#batch-triage): alike pending approvals in one channel get
// one summary card; "Approve all once" and "Reject all" decide each of them as a click on its own
// card would (its own check, claim, commandId and audit entry); what changed since the summary was
// drawn is skipped and named. Real bot, fake host, fake Slack, real Redis; every press is signed.

import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { BATCH_REJECT_VIEW_CALLBACK_ID } from '../../src/cards/ids.js';
import {
  BATCH_GROUP_ID_TOO_LONG_TEXT,
  BATCH_TOO_MANY_MEMBERS_TEXT,
} from '../../src/cards/renderBatchSummary.js';
import { BATCH_GROUP_ID_MAX_CHARS, BATCH_MAX_MEMBERS } from '../../src/domain/batchGroup.js';
import { readGrantAudit } from '../../src/store/grantAudit.js';
import { keys } from '../../src/store/keys.js';
import { freshRedisDb, SIGNING_SECRET } from '../support/bot.js';
import { type ApprovalRequestParams, FakeHost, shellApproval } from '../support/fakeHost.js';
import { FakeSlack, type SlackMessage } from '../support/fakeSlack.js';
import { standingOf, startReplicas } from '../support/replicas.js';
import { postInteraction, viewSubmissionPayload } from '../support/slackRequests.js';
import { testRedisUrl } from '../support/testRedis.js';
import { APPROVALS, configFile, issueRisks, mainHost, route, users } from './fixtures/config.js';
import { type Button, buttonsOf, pressButtonAt, SESSION, textOf, World } from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

const WORKTREES = '0198f0aa-7777-7000-8000-0000000000f1';
const FANOUT = '0198f0aa-8888-7000-8000-0000000000f2';
/** Slack Connect: a user whose home team is another organisation's. */
const PARTNER = 'U0PARTNER';

/**
 * `builds` (everything but the tools below): Alice and Bob decide, Eve is nobody in particular.
 * `two-person` (tool "twoperson") needs two approvers. The issue's risk rules apply.
 */
async function startWorld(): Promise<World> {
  const file = configFile({
    routes: [
      route('two-person', {
        match: { tools: ['twoperson'] },
        approvers: users('U0ALICE', 'U0BOB'),
        quorum: 2,
      }),
      route('builds', {
        approvers: users('U0ALICE', 'U0BOB'),
        protectedWriteApprovers: users('U0ALICE', 'U0BOB'),
      }),
    ],
    risks: issueRisks(),
  });
  cleanups.push(file.remove);
  const world = await World.start(
    {
      sessions: [
        { sessionId: SESSION, title: 'Bump the version' },
        { sessionId: WORKTREES, title: 'Worktree sweep' },
        { sessionId: FANOUT, title: 'Fan-out tests' },
      ],
    },
    { COUNTERSIGN_CONFIG: file.path },
  );
  cleanups.push(() => world.close());
  world.slack.setUser(PARTNER, { team_id: 'T0PARTNER', real_name: 'Partner' });
  return world;
}

const SESSIONS = [SESSION, WORKTREES, FANOUT];

/** `npm test` in worktree `i`: alike requests from three sessions. */
function npmTest(
  approvalId: string,
  i: number,
  argv = ['npm', 'test'],
  toolName = 'bash',
): ApprovalRequestParams {
  return {
    ...shellApproval({
      approvalId,
      sessionId: SESSIONS[i % SESSIONS.length]!,
      stages: [argv],
      workspaceRoot: `/srv/wt-${i}`,
    }),
    toolName,
  };
}

/** Opens the approvals at once (a fan-out burst) and waits for every card. */
async function burst(world: World, approvals: ApprovalRequestParams[]): Promise<void> {
  await Promise.all(approvals.map((a) => world.host.open(a)));
  for (const a of approvals) await world.waitForCard(a.approvalId, (m) => buttonsOf(m).length > 0, 10_000);
}

function isSummary(message: Pick<SlackMessage, 'text' | 'blocks'>): boolean {
  return /alike request|Batch closed/.test(textOf(message));
}

/** Every summary card in the channel, in posting order. */
function summaries(world: World): SlackMessage[] {
  return world.slack.messagesIn(world.channel).filter(isSummary);
}

/** The one summary, once it satisfies `predicate`; fails if there is ever more than one. */
async function summaryWhen(
  world: World,
  predicate: (m: SlackMessage) => boolean,
  timeoutMs = 10_000,
): Promise<SlackMessage> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const all = summaries(world);
    expect(all.length).toBeLessThanOrEqual(1);
    if (all[0] && predicate(all[0])) return structuredClone(all[0]);
    if (Date.now() > deadline) {
      throw new Error(
        `no summary matched; summaries: ${all.map((m) => m.text).join(' | ')}\n${world.bot.tail(20)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 25));
  }
}

function batchButton(summary: SlackMessage, actionId: string): Button {
  const blocks = summary.blocks as Array<{ type: string; elements?: Array<Record<string, unknown>> }>;
  for (const block of blocks) {
    for (const el of block.elements ?? []) {
      if (el.action_id === actionId) {
        return { actionId, value: el.value as string, text: (el.text as { text: string }).text };
      }
    }
  }
  throw new Error(`no ${actionId} on the summary: ${textOf(summary).slice(0, 500)}`);
}

async function pressSummary(world: World, summary: SlackMessage, actionId: string, userId: string) {
  await world.pressButton(summary.ts, batchButton(summary, actionId), userId, summary.channel);
}

/** The next ephemeral to `userId` after call index `since`. */
async function ephemeralAfter(world: World, userId: string, since: number): Promise<string> {
  const call = await world.slack.waitFor('chat.postEphemeral', (c) => c.args.user === userId, 10_000, {
    since,
  });
  return String(call.args.text);
}

async function settle(ms = 600): Promise<void> {
  await new Promise((r) => setTimeout(r, ms));
}

/**
 * Two hosts on one route that bars self-approval: `main` is Alice's own agent, `other` is not.
 * Each asks two alike requests (`<prefix>-0`, `<prefix>-1`), whose cards are up on return.
 */
async function phaseOf(world: World, approvalId: string): Promise<string | undefined> {
  const raw = await world.redis.hget(keys.approval(approvalId), 'd');
  return raw ? (JSON.parse(raw) as { phase: string }).phase : undefined;
}

async function untilPhase(world: World, approvalId: string, phase: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await phaseOf(world, approvalId)) !== phase) {
    if (Date.now() > deadline)
      throw new Error(`${approvalId} never ${phase}: ${await phaseOf(world, approvalId)}`);
    await settle(25);
  }
}

/** Bob presses on `approvalId`; the host holds the decide 2.5 s, then refuses it (no reviewer). */
/**
 * A test with two hosts, a decide the host holds 2.5 s then refuses (beingDecidedThenRefused),
 * and a form opened and submitted takes about 10 s alone, twice that on a loaded machine.
 */
const HELD_DECIDE_TEST_MS = 40_000;

async function beingDecidedThenRefused(world: World, host: FakeHost, approvalId: string): Promise<void> {
  await host.delayDecide(2_500);
  await host.failDecide({
    code: -32054,
    message: 'no reviewer',
    data: { kind: 'approvalReviewerUnavailable', approvalId },
  });
  await world.press(approvalId, 'Allow once', 'U0BOB');
  await untilPhase(world, approvalId, 'deciding');
}

async function ownAndTheirs(ownPrefix: string, theirPrefix: string, toolName?: string) {
  const hostA = await FakeHost.start({ sessions: [{ sessionId: SESSION, title: 'Bump the version' }] });
  const hostB = await FakeHost.start({ sessions: [{ sessionId: WORKTREES, title: 'Worktree sweep' }] });
  cleanups.push(
    () => hostA.close(),
    () => hostB.close(),
  );
  const file = configFile({
    hosts: [
      mainHost(hostA.command, { owner: 'U0ALICE' }),
      { id: 'other', command: hostB.command, env: { ...hostB.env } },
    ],
    routes: [route('builds', { approvers: users('U0ALICE', 'U0BOB'), allowSelfApproval: false })],
  });
  cleanups.push(file.remove);
  const world = await World.start(
    {},
    { COUNTERSIGN_CONFIG: file.path, MSP_HOST_COMMAND: '' },
    { host: hostA },
  );
  cleanups.push(() => world.close());
  await hostB.waitForIncarnation(1, 20_000);
  const request = (id: string, session: number) => ({
    ...npmTest(id, session),
    ...(toolName ? { toolName } : {}),
  });
  const own = [0, 1].map((i) => request(`${ownPrefix}-${i}`, 0));
  const theirs = [0, 1].map((i) => request(`${theirPrefix}-${i}`, 1));
  await Promise.all([...own.map((a) => hostA.open(a)), ...theirs.map((a) => hostB.open(a))]);
  for (const a of [...own, ...theirs]) {
    await world.waitForCard(a.approvalId, (m) => buttonsOf(m).length > 0, 10_000);
  }
  return { world, hostA, hostB, own, theirs };
}

describe('batch triage', () => {
  it('a burst of 8 alike requests gives one summary; "Approve all once" sends exactly 8 decides, each its own, each audited', async () => {
    const world = await startWorld();
    const approvals = Array.from({ length: 8 }, (_, i) => npmTest(`batch-ok-${i}`, i));
    await burst(world, approvals);

    const summary = await summaryWhen(world, (m) => textOf(m).includes('8 alike requests waiting'));
    const text = textOf(summary);
    expect(text).toContain('`exec:npm test`');
    expect(text).toContain('Bump the version ×3');
    expect(text).toContain('Worktree sweep ×3');
    expect(text).toContain('Fan-out tests ×2');
    // A link to each card.
    for (const a of approvals) {
      const { channel, ts } = await world.postedAt(a.approvalId);
      expect(text).toContain(world.slack.permalink(channel, ts));
    }
    expect(batchButton(summary, 'cs_batch_approve').text).toBe('Approve all 8 once');

    const since = world.slack.calls.length;
    await pressSummary(world, summary, 'cs_batch_approve', 'U0ALICE');
    expect(await ephemeralAfter(world, 'U0ALICE', since)).toContain('You approved once 8 requests');
    for (const a of approvals) await world.waitForCard(a.approvalId, (m) => buttonsOf(m).length === 0);

    const decides = world.host.decides();
    expect(decides).toHaveLength(8);
    expect(new Set(decides.map((d) => d.frame.params.approvalId))).toEqual(
      new Set(approvals.map((a) => a.approvalId)),
    );
    expect(new Set(decides.map((d) => d.frame.params.commandId)).size).toBe(8);
    expect(decides.every((d) => d.frame.params.choiceId === 'allow_once')).toBe(true);

    // One audit entry per approval, each naming Alice; no grant was made.
    const deadline = Date.now() + 10_000;
    while ((await world.auditEntries()).length < 8 && Date.now() < deadline) await settle(50);
    const entries = await world.auditEntries();
    expect(entries.filter((e) => e.kind === 'decision')).toHaveLength(8);
    expect(entries.every((e) => e.userId === 'U0ALICE' && e.choiceId === 'allow_once')).toBe(true);
    // No grant row stored, none audited.
    expect(await world.redis.keys(keys.grantTag('*'))).toEqual([]);
    expect(await readGrantAudit(world.redis)).toEqual([]);

    // The group emptied: the one summary says so, without buttons.
    const closed = await summaryWhen(
      world,
      (m) => textOf(m).includes('Batch closed') && textOf(m).includes('approved once 8 together'),
    );
    expect(buttonsOf(closed)).toEqual([]);
    expect(world.slack.callsOf('chat.postMessage').filter((c) => isSummary(c.args as never))).toHaveLength(1);
  });

  it('an approval decided elsewhere after the summary was drawn is skipped and named, on the summary and to the clicker', async () => {
    const world = await startWorld();
    const approvals = Array.from({ length: 3 }, (_, i) => npmTest(`batch-race-${i}`, i));
    await burst(world, approvals);
    const drawn = await summaryWhen(world, (m) => textOf(m).includes('3 alike requests waiting'));

    // Bob decides one on its own card; the summary shrinks, but Alice presses the one she saw.
    await world.press('batch-race-1', 'Reject', 'U0BOB');
    await world.submitModal('U0BOB', 'not this one');
    await world.waitForCard('batch-race-1', (m) => textOf(m).includes('Rejected'));
    await summaryWhen(world, (m) => textOf(m).includes('2 alike requests waiting'));

    const since = world.slack.calls.length;
    await pressSummary(world, drawn, 'cs_batch_approve', 'U0ALICE');
    const answer = await ephemeralAfter(world, 'U0ALICE', since);
    expect(answer).toContain('You approved once 2 requests');
    expect(answer).toContain('Skipped 1');
    expect(answer).toContain('batch-race-1');
    expect(answer).toContain('already decided');

    const decides = world.host.decides();
    expect(decides.map((d) => d.frame.params.approvalId).sort()).toEqual([
      'batch-race-0',
      'batch-race-1',
      'batch-race-2',
    ]);
    expect(decides.find((d) => d.frame.params.approvalId === 'batch-race-1')!.frame.params.choiceId).not.toBe(
      'allow_once',
    );
    const closed = await summaryWhen(
      world,
      (m) => textOf(m).includes('Batch closed') && textOf(m).includes('Skipped 1'),
    );
    expect(textOf(closed)).toContain('(already decided)');
  });

  it('a request whose stage moved on since the summary was drawn is skipped, never approved at its new stage', async () => {
    const world = await startWorld();
    const twoStage = (approvalId: string, i: number) => ({
      ...shellApproval({
        approvalId,
        sessionId: SESSIONS[i]!,
        stages: [
          ['npm', 'test'],
          ['git', 'push', 'origin', `wt-${i}`],
        ],
        workspaceRoot: `/srv/wt-${i}`,
      }),
      toolName: 'bash',
    });
    await burst(world, [twoStage('batch-st-0', 0), twoStage('batch-st-1', 1)]);
    const drawn = await summaryWhen(world, (m) => textOf(m).includes('2 alike requests waiting'));

    // Bob allows stage 1 of one of them on its card: it now asks about the push.
    await world.press('batch-st-1', 'Allow once', 'U0BOB');
    const stageDeadline = Date.now() + 10_000;
    for (;;) {
      const raw = await world.redis.hget(keys.approval('batch-st-1'), 'd');
      const record = raw
        ? (JSON.parse(raw) as { phase: string; currentRequirementId: { sourceIndex: number } })
        : undefined;
      if (record?.phase === 'pending' && record.currentRequirementId.sourceIndex === 1) break;
      if (Date.now() > stageDeadline) throw new Error(`batch-st-1 never reached stage 2: ${raw}`);
      await settle(25);
    }
    const decidedBefore = world.host.decides().length;

    const since = world.slack.calls.length;
    await pressSummary(world, drawn, 'cs_batch_approve', 'U0ALICE');
    const answer = await ephemeralAfter(world, 'U0ALICE', since);
    expect(answer).toContain('You approved once 1 request,');
    expect(answer).toContain('batch-st-1');
    await settle();
    const after = world.host.decides().slice(decidedBefore);
    expect(after.map((d) => [d.frame.params.approvalId, d.frame.params.requirementId.sourceIndex])).toEqual([
      ['batch-st-0', 0],
    ]);
    // The push is still waiting for a person, on its own card.
    expect(buttonsOf(await world.card('batch-st-1')).length).toBeGreaterThan(0);
  });

  it('a non-approver and a stranger decide nothing with any summary button, get no Reject all form, and are told why', async () => {
    const world = await startWorld();
    const approvals = Array.from({ length: 3 }, (_, i) => npmTest(`batch-eve-${i}`, i));
    await burst(world, approvals);
    const summary = await summaryWhen(world, (m) => textOf(m).includes('3 alike requests waiting'));

    for (const userId of ['U0EVE', PARTNER]) {
      let since = world.slack.calls.length;
      await pressSummary(world, summary, 'cs_batch_approve', userId);
      expect(await ephemeralAfter(world, userId, since)).toContain(
        'Nothing was decided: you may not decide these requests.',
      );

      since = world.slack.calls.length;
      await pressSummary(world, summary, 'cs_batch_reject', userId);
      expect(await ephemeralAfter(world, userId, since)).toContain(
        'Nothing was decided: you may not decide these requests.',
      );
      // As a card's Reject, no form opens for someone who may not submit it.
      expect(world.slack.calls.slice(since).filter((c) => c.method === 'views.open')).toEqual([]);

      since = world.slack.calls.length;
      await pressSummary(world, summary, 'cs_batch_review', userId);
      expect(await ephemeralAfter(world, userId, since)).toContain('Nothing was decided.');
    }
    await settle();
    expect(world.host.decides()).toEqual([]);
    for (const a of approvals) expect(buttonsOf(await world.card(a.approvalId)).length).toBeGreaterThan(0);
    // Each refused decision is audited as a refused click on that card would be.
    const refusals = await world.refusalEntries();
    expect(refusals.filter((r) => r.userId === 'U0EVE')).toHaveLength(6);
    expect(refusals.filter((r) => r.userId === PARTNER)).toHaveLength(6);
    // Nothing about who was refused shows on the summary.
    expect(textOf(await summaryWhen(world, () => true))).not.toContain('U0EVE');
  });

  /**
   * Two alike requests and their summary, whose button value `craft` rewrites (the summary's own
   * group id and members in): both of its buttons pressed with it are refused with `text`, and
   * nothing is decided, opened or audited. The world and the crafted value, for more checks.
   */
  async function craftedSummaryPressRefused(
    prefix: string,
    craft: (drawn: { g: string; m: Array<[string, number]> }) => { g: string; m: Array<[string, number]> },
    text: string,
  ) {
    const world = await startWorld();
    const approvals = Array.from({ length: 2 }, (_, i) => npmTest(`${prefix}-${i}`, i));
    await burst(world, approvals);
    const summary = await summaryWhen(world, (m) => textOf(m).includes('2 alike requests waiting'));
    const crafted = craft(JSON.parse(batchButton(summary, 'cs_batch_approve').value));
    for (const actionId of ['cs_batch_approve', 'cs_batch_reject']) {
      const since = world.slack.calls.length;
      const button = { ...batchButton(summary, actionId), value: JSON.stringify(crafted) };
      await world.pressButton(summary.ts, button, 'U0ALICE', summary.channel);
      expect(await ephemeralAfter(world, 'U0ALICE', since)).toBe(text);
      expect(world.slack.calls.slice(since).filter((c) => c.method === 'views.open')).toEqual([]);
    }
    await settle();
    expect(world.host.decides()).toEqual([]);
    for (const a of approvals) expect(buttonsOf(await world.card(a.approvalId)).length).toBeGreaterThan(0);
    // No member was checked: none refused, so none audited.
    expect(await world.refusalEntries()).toEqual([]);
    return { world, crafted };
  }

  it('a press whose value lists more members than a summary carries is refused, said to its presser, and decides nothing', async () => {
    // The summary's own members first, padded past the cap with ids of nothing.
    const padding = Array.from({ length: BATCH_MAX_MEMBERS }, (_, i): [string, number] => [
      `batch-cap-none-${i}`,
      0,
    ]);
    await craftedSummaryPressRefused(
      'batch-cap',
      (drawn) => ({ g: drawn.g, m: [...drawn.m, ...padding] }),
      BATCH_TOO_MANY_MEMBERS_TEXT,
    );
  });

  it('a press naming a group id longer than Countersign makes is refused, said to its presser, and decides nothing', async () => {
    // The summary's own members, its group id padded past the longest Countersign makes.
    const { world, crafted } = await craftedSummaryPressRefused(
      'batch-gid',
      (drawn) => ({ g: drawn.g.padEnd(BATCH_GROUP_ID_MAX_CHARS + 1, '0'), m: drawn.m }),
      BATCH_GROUP_ID_TOO_LONG_TEXT,
    );
    // The long id is part of no Redis key.
    const digest = crafted.g.slice(crafted.g.lastIndexOf(':') + 1);
    expect((await world.redis.keys('*')).filter((k) => k.includes(digest))).toEqual([]);
  });

  it('a presser refused some of a group is told so alone: the summary never names what was not theirs', async () => {
    const { world, hostA, hostB } = await ownAndTheirs('batch-own', 'batch-theirs', 'bash');
    const summary = await summaryWhen(world, (m) => textOf(m).includes('4 alike requests waiting'));

    const since = world.slack.calls.length;
    await pressSummary(world, summary, 'cs_batch_approve', 'U0ALICE');
    const answer = await ephemeralAfter(world, 'U0ALICE', since);
    expect(answer).toContain('You approved once 2 requests');
    // Alice alone learns which were not hers to decide, and why.
    expect(answer).toContain('batch-own-0');
    expect(answer).toContain('batch-own-1');
    expect(answer).toMatch(/own agent|requester|your own/i);
    const noted = await summaryWhen(world, (m) => textOf(m).includes('approved once 2 together'));
    expect(textOf(noted)).not.toContain('not theirs');
    expect(textOf(noted)).not.toContain('Skipped');
    // The note says who decided how many, and nothing of the two left to someone else.
    const lines = (noted.blocks as Array<{ type: string; elements?: Array<{ text?: string }> }>)
      .filter((b) => b.type === 'context')
      .flatMap((b) => (b.elements ?? []).map((e) => e.text ?? ''));
    expect(lines.filter((l) => l.includes('together'))).toEqual(['<@U0ALICE> approved once 2 together.']);
    expect(
      hostB
        .decides()
        .map((d) => d.frame.params.approvalId)
        .sort(),
    ).toEqual(['batch-theirs-0', 'batch-theirs-1']);
    expect(hostA.decides()).toEqual([]);
  });

  it('"Reject all" over requests a presser may decide only some of audits each once: one decision entry per rejected request, one refusal per refused one', async () => {
    const { world, hostA, own, theirs } = await ownAndTheirs('batch-rown', 'batch-rtheirs');
    const summary = await summaryWhen(world, (m) => textOf(m).includes('4 alike requests waiting'));

    const since = world.slack.calls.length;
    await pressSummary(world, summary, 'cs_batch_reject', 'U0ALICE');
    await world.submitModal('U0ALICE', 'not now', { view: BATCH_REJECT_VIEW_CALLBACK_ID, since });
    const answer = await ephemeralAfter(world, 'U0ALICE', since);
    expect(answer).toContain('You rejected 2 requests');
    // Still told, at submit, which were not hers to decide.
    expect(answer).toContain('batch-rown-0');
    expect(answer).toContain('batch-rown-1');
    for (const a of theirs) await world.waitForCard(a.approvalId, (m) => textOf(m).includes('Rejected'));
    await settle(1_000);

    const decisions = (await world.auditEntries()).filter((e) => e.kind === 'decision');
    expect(decisions.map((e) => e.approvalId).sort()).toEqual(theirs.map((a) => a.approvalId).sort());
    // One attempt on each of Alice's own requests, refused once: when the form was opened for
    // the others, not again when it was submitted.
    const refused = await world.refusalEntries();
    expect(refused.map((r) => r.approvalId).sort()).toEqual(own.map((a) => a.approvalId).sort());
    expect(hostA.decides()).toEqual([]);
  });

  it(
    '"Reject all" audits, at submit, a refusal of a request that was being decided when the form opened',
    async () => {
      const { world, hostA, own } = await ownAndTheirs('batch-busy-own', 'batch-busy-theirs');
      const summary = await summaryWhen(world, (m) => textOf(m).includes('4 alike requests waiting'));
      const [busy, refused] = own.map((a) => a.approvalId) as [string, string];
      // Bob's click on one of Alice's own requests is with the host, which then refuses it: the
      // claim is given back and the request waits again.
      await beingDecidedThenRefused(world, hostA, busy);

      // Alice's form opens while it is being decided: that skip is no refusal of hers.
      const since = world.slack.calls.length;
      await pressSummary(world, summary, 'cs_batch_reject', 'U0ALICE');
      await world.slack.waitFor('views.open', () => true, 5_000, { since });
      await untilPhase(world, busy, 'pending');
      await world.submitModal('U0ALICE', 'not now', { view: BATCH_REJECT_VIEW_CALLBACK_ID, since });
      const answer = await ephemeralAfter(world, 'U0ALICE', since);
      expect(answer).toContain('You rejected 2 requests');
      expect(answer).toContain(busy);
      await settle(1_000);

      // Each of her own requests refused once in this press: the one decidable at the opening
      // then, the one busy then at the submit.
      const refusals = (await world.refusalEntries()).map((r) => [
        r.approvalId,
        r.userId,
        r.action,
        r.reason,
      ]);
      expect(refusals.sort()).toEqual(
        [
          [refused, 'U0ALICE', 'modalOpen', 'selfApproval'],
          [busy, 'U0ALICE', 'modalSubmit', 'selfApproval'],
        ].sort(),
      );
    },
    HELD_DECIDE_TEST_MS,
  );

  it('"Reject all" submitted with metadata claiming every member was refused at opening still audits each refusal', async () => {
    const world = await startWorld();
    const approvals = Array.from({ length: 3 }, (_, i) => npmTest(`batch-forged-${i}`, i));
    await burst(world, approvals);
    const summary = await summaryWhen(world, (m) => textOf(m).includes('3 alike requests waiting'));
    // Eve never had a form (no form opens for someone who may decide none): she submits one
    // herself, as a replayed view or edited metadata would, saying each was refused at opening.
    const value = JSON.parse(batchButton(summary, 'cs_batch_reject').value) as { m: unknown[] };
    const forged = JSON.stringify({ c: summary.channel, ...value, r: value.m.map((_, i) => i) });
    const response = await postInteraction(
      world.bot.url,
      SIGNING_SECRET,
      viewSubmissionPayload({
        userId: 'U0EVE',
        callbackId: BATCH_REJECT_VIEW_CALLBACK_ID,
        privateMetadata: forged,
        values: { cs_feedback_block: { cs_feedback_input: { type: 'plain_text_input', value: 'no' } } },
      }),
    );
    expect(response.status).toBe(200);
    await settle(1_000);
    expect(world.host.decides()).toEqual([]);
    // Nothing audited these when a form opened: each refusal is this submit's, audited once.
    const refusals = (await world.refusalEntries()).map((r) => [r.approvalId, r.userId, r.action]);
    expect(refusals.sort()).toEqual(approvals.map((a) => [a.approvalId, 'U0EVE', 'modalSubmit']).sort());
  });

  it('"Reject all" whose form the server no longer holds decides nothing from its metadata, and asks to press again', async () => {
    const world = await startWorld();
    const approvals = Array.from({ length: 2 }, (_, i) => npmTest(`batch-unkept-${i}`, i));
    await burst(world, approvals);
    const summary = await summaryWhen(world, (m) => textOf(m).includes('2 alike requests waiting'));
    const since = world.slack.calls.length;
    await pressSummary(world, summary, 'cs_batch_reject', 'U0ALICE');
    const opened = await world.slack.waitFor('views.open', () => true, 5_000, { since });
    const metadata = JSON.parse((opened.args.view as { private_metadata: string }).private_metadata) as {
      f?: string;
      g: string;
    };
    expect(metadata.f).toBeDefined();
    // Her form, without the server's id: once as it was, once naming another channel and group.
    const { f: _dropped, ...unkept } = metadata;
    const elsewhere = { ...unkept, c: 'C0ELSEWHERE', g: `C0ELSEWHERE:${metadata.g.split(':').at(-1)}` };
    for (const sent of [unkept, elsewhere]) {
      const response = await postInteraction(
        world.bot.url,
        SIGNING_SECRET,
        viewSubmissionPayload({
          userId: 'U0ALICE',
          callbackId: BATCH_REJECT_VIEW_CALLBACK_ID,
          privateMetadata: JSON.stringify(sent),
          values: { cs_feedback_block: { cs_feedback_input: { type: 'plain_text_input', value: 'no' } } },
        }),
      );
      expect(response.status).toBe(200);
      expect(JSON.stringify(await response.json())).toContain('Please press Reject all again');
    }
    await settle(1_000);
    expect(world.host.decides()).toEqual([]);
    expect(world.slack.calls.slice(since).filter((c) => c.method === 'chat.postEphemeral')).toEqual([]);
  });

  it('"Reject all" whose form lists more members than a summary carries (opened before the cap) decides nothing, and asks to press again', async () => {
    const world = await startWorld();
    const approvals = Array.from({ length: 2 }, (_, i) => npmTest(`batch-old-${i}`, i));
    await burst(world, approvals);
    const summary = await summaryWhen(world, (m) => textOf(m).includes('2 alike requests waiting'));
    const since = world.slack.calls.length;
    await pressSummary(world, summary, 'cs_batch_reject', 'U0ALICE');
    const opened = await world.slack.waitFor('views.open', () => true, 5_000, { since });
    const metadata = JSON.parse((opened.args.view as { private_metadata: string }).private_metadata) as {
      c: string;
      g: string;
      m: Array<[string, number]>;
      f: string;
    };
    // As a release before the cap kept it, and drew its metadata: its real members, padded past it.
    const padding = Array.from({ length: BATCH_MAX_MEMBERS }, (_, i): [string, number] => [
      `batch-old-none-${i}`,
      0,
    ]);
    const m = [...metadata.m, ...padding];
    const key = keys.batchRejectForm('U0ALICE', metadata.f);
    const kept = { c: metadata.c, g: metadata.g, m, r: [] };
    expect(await world.redis.set(key, JSON.stringify(kept), 'PX', 60_000, 'XX')).toBe('OK');
    const submit = async (privateMetadata: unknown) => {
      const response = await postInteraction(
        world.bot.url,
        SIGNING_SECRET,
        viewSubmissionPayload({
          userId: 'U0ALICE',
          callbackId: BATCH_REJECT_VIEW_CALLBACK_ID,
          privateMetadata: JSON.stringify(privateMetadata),
          values: { cs_feedback_block: { cs_feedback_input: { type: 'plain_text_input', value: 'no' } } },
        }),
      );
      expect(response.status).toBe(200);
      // Empty when the submit is acknowledged without a word.
      return response.text();
    };
    // The form as Slack sent it back, the one kept over the cap; then its metadata over it too.
    expect(await submit(metadata)).toContain('Please press Reject all again');
    expect(await world.redis.exists(key)).toBe(0);
    expect(await submit({ ...metadata, m })).toContain('Please press Reject all again');
    await settle(1_000);
    expect(world.host.decides()).toEqual([]);
    for (const a of approvals) expect(buttonsOf(await world.card(a.approvalId)).length).toBeGreaterThan(0);
    expect(world.slack.calls.slice(since).filter((c) => c.method === 'chat.postEphemeral')).toEqual([]);
  });

  it(
    '"Reject all" ignores a refused-at-opening list edited into its form: a refusal new at submit is audited',
    async () => {
      const { world, hostA, own } = await ownAndTheirs('batch-edit-own', 'batch-edit-theirs');
      const summary = await summaryWhen(world, (m) => textOf(m).includes('4 alike requests waiting'));
      const [busy, refused] = own.map((a) => a.approvalId) as [string, string];
      // One of Alice's own is being decided (Bob's click, which the host then refuses) when her form
      // opens: skipped then, and no refusal of hers; it waits again by her submit.
      await beingDecidedThenRefused(world, hostA, busy);
      const since = world.slack.calls.length;
      await pressSummary(world, summary, 'cs_batch_reject', 'U0ALICE');
      const opened = await world.slack.waitFor('views.open', () => true, 5_000, { since });
      await untilPhase(world, busy, 'pending');
      // Her form, its metadata edited to say every member was refused when it opened.
      const metadata = JSON.parse((opened.args.view as { private_metadata: string }).private_metadata) as {
        m: unknown[];
      };
      const response = await postInteraction(
        world.bot.url,
        SIGNING_SECRET,
        viewSubmissionPayload({
          userId: 'U0ALICE',
          callbackId: BATCH_REJECT_VIEW_CALLBACK_ID,
          privateMetadata: JSON.stringify({ ...metadata, r: metadata.m.map((_, i) => i) }),
          values: { cs_feedback_block: { cs_feedback_input: { type: 'plain_text_input', value: 'no' } } },
        }),
      );
      expect(response.status).toBe(200);
      expect(await ephemeralAfter(world, 'U0ALICE', since)).toContain('You rejected 2 requests');
      await settle(1_000);
      // Each of her own refused once in this press, whatever the form says: the busy one at submit.
      const refusals = (await world.refusalEntries()).map((r) => [r.approvalId, r.userId, r.action]);
      expect(refusals.sort()).toEqual(
        [
          [refused, 'U0ALICE', 'modalOpen'],
          [busy, 'U0ALICE', 'modalSubmit'],
        ].sort(),
      );
    },
    HELD_DECIDE_TEST_MS,
  );

  it('"Reject all" sends the one reason with each rejection; "Review one by one" keeps the cards', async () => {
    const world = await startWorld();
    const approvals = Array.from({ length: 4 }, (_, i) => npmTest(`batch-no-${i}`, i));
    await burst(world, approvals);
    const summary = await summaryWhen(world, (m) => textOf(m).includes('4 alike requests waiting'));

    let since = world.slack.calls.length;
    await pressSummary(world, summary, 'cs_batch_review', 'U0BOB');
    expect(await ephemeralAfter(world, 'U0BOB', since)).toContain('The cards stay as they are');
    await settle(300);
    expect(world.host.decides()).toEqual([]);

    since = world.slack.calls.length;
    await pressSummary(world, summary, 'cs_batch_reject', 'U0BOB');
    await world.submitModal('U0BOB', 'flaky suite, rerun after the fix <!channel>', {
      view: BATCH_REJECT_VIEW_CALLBACK_ID,
      since,
    });
    expect(await ephemeralAfter(world, 'U0BOB', since)).toContain('You rejected 4 requests');
    for (const a of approvals) await world.waitForCard(a.approvalId, (m) => textOf(m).includes('Rejected'));

    const decides = world.host.decides();
    expect(decides).toHaveLength(4);
    for (const d of decides) {
      expect(d.frame.params.choiceId).not.toBe('allow_once');
      expect(d.frame.params.feedback).toBe('flaky suite, rerun after the fix <!channel>');
    }
    await summaryWhen(world, (m) => textOf(m).includes('Batch closed') && textOf(m).includes('rejected 4'));

    // One decision entry per approval, each naming Bob and the reason; nothing else was audited
    // (the modal's check and its submit's refuse nothing here). Settled first: a second entry
    // would follow the first.
    const deadline = Date.now() + 10_000;
    while ((await world.auditEntries()).length < 4 && Date.now() < deadline) await settle(50);
    await settle(1_000);
    const entries = await world.auditEntries();
    expect(entries.map((e) => [e.kind, e.approvalId]).sort()).toEqual(
      approvals.map((a) => ['decision', a.approvalId]).sort(),
    );
    expect(entries.every((e) => e.userId === 'U0BOB' && e.decision !== 'approved')).toBe(true);
    expect(await world.refusalEntries()).toEqual([]);
  });

  it('"Reject all" asks for a reason as a card does: its quick reasons, a required one refused in the form, and whom it reaches', async () => {
    const file = configFile({
      routes: [
        route('builds', {
          approvers: users('U0ALICE', 'U0BOB'),
          rejectReason: 'required',
          quickReasons: ['Flaky suite', 'Not during a freeze'],
        }),
      ],
    });
    cleanups.push(file.remove);
    const world = await World.start(
      { sessions: SESSIONS.map((sessionId, i) => ({ sessionId, title: `Session ${i}` })) },
      { COUNTERSIGN_CONFIG: file.path },
    );
    cleanups.push(() => world.close());
    // One whose Reject takes no reason: it is rejected without one, as its card would.
    const plain = npmTest('batch-why-2', 2);
    plain.availableChoices = plain.availableChoices.map((c) =>
      c.choiceId === 'abort' ? { ...c, acceptsFeedback: false } : c,
    );
    await burst(world, [npmTest('batch-why-0', 0), npmTest('batch-why-1', 1), plain]);
    const summary = await summaryWhen(world, (m) => textOf(m).includes('3 alike requests waiting'));

    const since = world.slack.calls.length;
    await pressSummary(world, summary, 'cs_batch_reject', 'U0BOB');
    const opened = await world.slack.waitFor('views.open', () => true, 5_000, { since });
    const view = opened.args.view as { blocks: Array<Record<string, unknown>>; private_metadata: string };
    const shown = JSON.stringify(view.blocks);
    expect(shown).toContain(
      'The agent sees the reason you give on 2 of them; the other 1 takes no reason and is rejected without it.',
    );
    expect(shown).not.toContain('on each');
    expect(shown).toContain('Reason (required)');
    const quick = view.blocks.find((b) => b.block_id === 'cs_quick_reason_block') as {
      element: { options: Array<{ value: string }> };
    };
    expect(quick.element.options.map((o) => o.value)).toEqual(['Flaky suite', 'Not during a freeze']);

    const submit = async (values: Record<string, Record<string, Record<string, unknown>>>) => {
      const response = await postInteraction(
        world.bot.url,
        SIGNING_SECRET,
        viewSubmissionPayload({
          userId: 'U0BOB',
          callbackId: BATCH_REJECT_VIEW_CALLBACK_ID,
          privateMetadata: view.private_metadata,
          values,
        }),
      );
      expect(response.status).toBe(200);
      const body = await response.text();
      return body === '' ? {} : (JSON.parse(body) as Record<string, unknown>);
    };
    const typed = (value: string | null) => ({
      cs_feedback_block: { cs_feedback_input: { type: 'plain_text_input', value } },
    });
    const required = {
      response_action: 'errors',
      errors: {
        cs_feedback_block: 'A reason is required to reject on builds: type one or pick a quick reason.',
      },
    };
    expect(await submit(typed('   '))).toEqual(required);
    expect(await submit(typed(null))).toEqual(required);
    await settle(300);
    expect(world.host.decides()).toEqual([]);

    // A quick reason alone is a reason.
    const answered = world.slack.calls.length;
    const sent = await submit({
      ...typed(null),
      cs_quick_reason_block: {
        cs_quick_reason: {
          type: 'radio_buttons',
          selected_option: { text: { type: 'plain_text', text: 'Flaky suite' }, value: 'Flaky suite' },
        },
      },
    });
    expect(sent).toEqual({});
    expect(await ephemeralAfter(world, 'U0BOB', answered)).toContain('You rejected 3 requests');
    for (const id of ['batch-why-0', 'batch-why-1', 'batch-why-2']) {
      await world.waitForCard(id, (m) => textOf(m).includes('Rejected'));
    }
    const feedback = Object.fromEntries(
      world.host.decides().map((d) => [d.frame.params.approvalId, d.frame.params.feedback]),
    );
    expect(feedback).toEqual({
      'batch-why-0': 'Flaky suite',
      'batch-why-1': 'Flaky suite',
      'batch-why-2': undefined,
    });
  });

  it('"Reject all" whose form Slack did not open rejects nothing, and says so', async () => {
    const world = await startWorld();
    await burst(world, [npmTest('batch-nf-0', 0), npmTest('batch-nf-1', 1)]);
    const summary = await summaryWhen(world, (m) => textOf(m).includes('2 alike requests waiting'));
    world.slack.failNext('views.open', 'expired_trigger_id');
    const since = world.slack.calls.length;
    await pressSummary(world, summary, 'cs_batch_reject', 'U0ALICE');
    expect(await ephemeralAfter(world, 'U0ALICE', since)).toContain('Nothing was rejected');
    await settle(300);
    expect(world.host.decides()).toEqual([]);
  });

  it('no summary for a quorum route, a risk rule or a protected write; alike plain requests still get one', async () => {
    const world = await startWorld();
    await burst(world, [
      npmTest('batch-q-0', 0, ['npm', 'test'], 'twoperson'),
      npmTest('batch-q-1', 1, ['npm', 'test'], 'twoperson'),
      npmTest('batch-r-0', 0, ['git', 'push', '--force', 'origin', 'main']),
      npmTest('batch-r-1', 1, ['git', 'push', '--force', 'origin', 'main']),
      { ...npmTest('batch-p-0', 0, ['make', 'install']), protectedWrite: true },
      { ...npmTest('batch-p-1', 1, ['make', 'install']), protectedWrite: true },
    ]);
    await settle(1_000);
    expect(summaries(world)).toEqual([]);
    expect(await world.redis.keys('cs:batch*')).toEqual([]);

    // The control: two plain alike requests do get one.
    await burst(world, [
      npmTest('batch-c-0', 0, ['make', 'lint']),
      npmTest('batch-c-1', 1, ['make', 'lint']),
    ]);
    const summary = await summaryWhen(world, (m) => textOf(m).includes('2 alike requests waiting'));
    expect(textOf(summary)).toContain('`exec:make lint`');
    expect(textOf(summary)).not.toContain('batch-q-');
  });
});

describe('batch triage across two replicas', () => {
  it('alike requests of two hosts run by two replicas get one summary, and "Approve all" at either decides each once', async () => {
    const slack = await FakeSlack.start();
    cleanups.push(() => slack.close());
    const hosts = await Promise.all(
      ['a', 'b'].map(() =>
        FakeHost.start({ sessions: [{ sessionId: SESSION, title: 'Fan-out' }], recovery: 'sameId' }),
      ),
    );
    for (const host of hosts) cleanups.push(() => host.close());
    const [hostA, hostB] = hosts as [FakeHost, FakeHost];
    const file = configFile({
      hosts: [
        { id: 'a', command: hostA.command, env: { ...hostA.env } },
        { id: 'b', command: hostB.command, env: { ...hostB.env } },
      ],
      routes: [route('builds', { approvers: users('U0ALICE', 'U0BOB') })],
    });
    cleanups.push(file.remove);
    const redisDb = await freshRedisDb();
    const redis = new Redis(testRedisUrl(redisDb));
    cleanups.push(() => redis.quit());
    // Started together, so that each takes its share: one host each.
    const bots = await startReplicas(
      ['r1', 'r2'],
      {
        host: hostA,
        slack,
        redisDb,
        env: {
          COUNTERSIGN_CONFIG: file.path,
          MSP_HOST_COMMAND: '',
          FAKE_HOST_CONTROL: '',
          FAKE_HOST_STATE: '',
        },
        together: true,
      },
      cleanups,
    );
    await Promise.all(hosts.map((host) => host.waitForIncarnation(1, 20_000)));
    const owned = await Promise.all(bots.map(async (bot) => (await standingOf(bot)).owns));
    expect(owned.flat().sort()).toEqual(['a', 'b']);

    // Both hosts fan out the same command at once: each replica relays its host's half.
    const approvals = Array.from({ length: 6 }, (_, i) => ({
      ...shellApproval({ approvalId: `rep-${i}`, sessionId: SESSION, stages: [['npm', 'test']] }),
      toolName: 'bash',
    }));
    await Promise.all(approvals.map((a, i) => (i % 2 === 0 ? hostA : hostB).open(a)));
    const posted = async (id: string) => {
      const raw = await redis.hget(keys.approval(id), 'd');
      return raw ? (JSON.parse(raw) as { slack: { ts?: string } }).slack.ts : undefined;
    };
    const deadline = Date.now() + 15_000;
    const summaryOf = () => slack.messagesIn(APPROVALS).filter(isSummary);
    while (!summaryOf()[0] || !textOf(summaryOf()[0]!).includes('6 alike requests waiting')) {
      expect(summaryOf().length).toBeLessThanOrEqual(1);
      if (Date.now() > deadline) throw new Error(`no summary of 6: ${summaryOf().map((m) => m.text)}`);
      await settle(25);
    }
    for (const a of approvals) expect(await posted(a.approvalId)).toBeDefined();
    const summary = structuredClone(summaryOf()[0]!);

    // Pressed at each replica in turn: the first decides all six, the second finds them decided.
    const since = slack.calls.length;
    await pressButtonAt(bots[1]!.url, slack, summary, batchButton(summary, 'cs_batch_approve'), 'U0ALICE');
    const first = await slack.waitFor('chat.postEphemeral', (c) => c.args.user === 'U0ALICE', 15_000, {
      since,
    });
    expect(String(first.args.text)).toMatch(/You approved once 6 requests/);
    const decidesDone = Date.now() + 10_000;
    while (hostA.decides().length + hostB.decides().length < 6 && Date.now() < decidesDone) await settle(25);
    await pressButtonAt(bots[0]!.url, slack, summary, batchButton(summary, 'cs_batch_approve'), 'U0BOB');
    const second = await slack.waitFor('chat.postEphemeral', (c) => c.args.user === 'U0BOB', 15_000, {
      since,
    });
    expect(String(second.args.text)).toMatch(/^Nothing was decided\. Skipped 6, which changed since/);
    expect(String(second.args.text)).toContain('This approval was already decided');
    expect(String(second.args.text)).toContain('by <@U0ALICE>');
    await settle();

    const decides = [...hostA.decides(), ...hostB.decides()];
    expect(decides.map((d) => d.frame.params.approvalId).sort()).toEqual(
      approvals.map((a) => a.approvalId).sort(),
    );
    expect(new Set(decides.map((d) => d.frame.params.commandId)).size).toBe(6);
    // One summary ever posted, closed once the group emptied.
    expect(slack.callsOf('chat.postMessage').filter((c) => isSummary(c.args as never))).toHaveLength(1);
    const closeBy = Date.now() + 10_000;
    while (!textOf(summaryOf()[0]!).includes('Batch closed') && Date.now() < closeBy) await settle(25);
    expect(textOf(summaryOf()[0]!)).toContain('Batch closed');
  });
  it('a batch the owner refuses is audited once per request, as a refused click or submit on its card is', async () => {
    const slack = await FakeSlack.start();
    cleanups.push(() => slack.close());
    const host = await FakeHost.start({
      sessions: [{ sessionId: SESSION, title: 'Fan-out' }],
      recovery: 'sameId',
    });
    cleanups.push(() => host.close());
    const approversFile = (approvers: string[]) => {
      const file = configFile({ routes: [route('builds', { approvers: users(...approvers) })] });
      cleanups.push(file.remove);
      return file.path;
    };
    const redisDb = await freshRedisDb();
    const redis = new Redis(testRedisUrl(redisDb));
    cleanups.push(() => redis.quit());
    // The owner's file lets only Alice decide; the standby's, not yet rolled out to, lets Eve too:
    // the standby lets Eve's presses through, and the owner refuses each decision it is handed.
    const start = (name: string, approvers: string[]) =>
      startReplicas(
        [name],
        { host, slack, redisDb, env: { COUNTERSIGN_CONFIG: approversFile(approvers) } },
        cleanups,
      ).then(([bot]) => bot!);
    const owner = await start('r1', ['U0ALICE']);
    const standby = await start('r2', ['U0ALICE', 'U0EVE']);
    expect((await standingOf(owner)).owns).toEqual(['default']);
    expect((await standingOf(standby)).standby).toEqual(['default']);
    await host.waitForIncarnation(1, 20_000);

    const approvals = Array.from({ length: 3 }, (_, i) => ({
      ...shellApproval({ approvalId: `rep-refused-${i}`, sessionId: SESSION, stages: [['npm', 'test']] }),
      toolName: 'bash',
    }));
    await Promise.all(approvals.map((a) => host.open(a)));
    const deadline = Date.now() + 15_000;
    const summaryOf = () => slack.messagesIn(APPROVALS).filter(isSummary);
    while (!summaryOf()[0] || !textOf(summaryOf()[0]!).includes('3 alike requests waiting')) {
      if (Date.now() > deadline) throw new Error(`no summary of 3: ${summaryOf().map((m) => m.text)}`);
      await settle(25);
    }
    const summary = structuredClone(summaryOf()[0]!);
    const refusals = async () =>
      (await redis.xrange(keys.refusals, '-', '+')).map(([, fields]) => {
        const entry: Record<string, string> = {};
        for (let i = 0; i < fields.length; i += 2) entry[fields[i]!] = fields[i + 1]!;
        return [entry.approvalId, entry.userId, entry.action, entry.reason].join(' ');
      });
    const refusedAs = (action: string) =>
      approvals.map((a) => `${a.approvalId} U0EVE ${action} notApprover`).sort();
    /** The refusals once `count` are in, and nothing more after a while. */
    const settledRefusals = async (count: number) => {
      const by = Date.now() + 10_000;
      while ((await refusals()).length < count && Date.now() < by) await settle(50);
      await settle(1_000);
      return (await refusals()).sort();
    };

    let since = slack.calls.length;
    await pressButtonAt(standby.url, slack, summary, batchButton(summary, 'cs_batch_approve'), 'U0EVE');
    const approved = await slack.waitFor('chat.postEphemeral', (c) => c.args.user === 'U0EVE', 15_000, {
      since,
    });
    expect(String(approved.args.text)).toMatch(/^Nothing was decided/);
    // Each refused where it was claimed, audited once, as a refused click on its card.
    expect(await settledRefusals(3)).toEqual(refusedAs('click'));

    since = slack.calls.length;
    await pressButtonAt(standby.url, slack, summary, batchButton(summary, 'cs_batch_reject'), 'U0EVE');
    const opened = await slack.waitFor('views.open', () => true, 10_000, { since });
    const view = opened.args.view as { callback_id: string; private_metadata: string };
    const response = await postInteraction(
      standby.url,
      SIGNING_SECRET,
      viewSubmissionPayload({
        userId: 'U0EVE',
        callbackId: view.callback_id,
        privateMetadata: view.private_metadata,
        values: { cs_feedback_block: { cs_feedback_input: { type: 'plain_text_input', value: 'not now' } } },
      }),
    );
    expect(response.status).toBe(200);
    const rejected = await slack.waitFor('chat.postEphemeral', (c) => c.args.user === 'U0EVE', 15_000, {
      since,
    });
    expect(String(rejected.args.text)).toMatch(/^Nothing was decided/);
    // The form's own check let her through at the standby, so the only refusals are the submit's.
    expect(await settledRefusals(6)).toEqual([...refusedAs('click'), ...refusedAs('modalSubmit')].sort());
    const metrics = await (await fetch(`${standby.metricsUrl}/metrics`)).text();
    expect(metrics).toMatch(/^countersign_refusals_total\{reason="notApprover"\} 6$/m);
    expect(host.decides()).toEqual([]);
  });
});
