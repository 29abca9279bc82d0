import { afterEach, describe, expect, it } from 'vitest';
import type { ApprovalRequestParams } from '../../src/msp/protocol.js';
import { keys } from '../../src/store/keys.js';
import { SIGNING_SECRET, startBot } from '../support/bot.js';
import { approvalFromTranscript, shellApproval } from '../support/fakeHost.js';
import { postInteraction, viewSubmissionPayload } from '../support/slackRequests.js';
import { storeOf } from './grantSteps.js';
import { buttonsOf, pressButtonAt, rememberButtonOf, SESSION, textOf, World } from './world.js';

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe('keeping the card true to the approval’s life', () => {
  it('5. a stale click after a stage advanced decides nothing and says the question changed', async () => {
    world = await World.start();
    const approval = shellApproval({
      approvalId: 'stale-0001',
      sessionId: SESSION,
      stages: [
        ['npm', 'test'],
        ['git', 'push'],
      ],
    });
    await world.host.open(approval, { via: 'both' });
    const stage0Card = await world.waitForCard('stale-0001', (m) => buttonsOf(m).length > 0);
    const staleButton = buttonsOf(stage0Card)[0]!;

    await world.press('stale-0001', 'Allow once', 'U0ALICE', stage0Card);
    await world.host.waitForDecide();
    await world.waitForCard('stale-0001', (m) => buttonsOf(m).some((b) => JSON.parse(b.value).s === 1));

    // Bob still sees the stage-1 card and presses its button.
    await world.pressButton(stage0Card.ts, staleButton, 'U0BOB');
    expect(await world.ephemeralTo('U0BOB')).toMatch(/question changed/);
    expect(world.host.decides()).toHaveLength(1);

    // The host can also be the one to notice (its stage moved before our record did).
    await world.host.failDecide({
      code: -32053,
      message: 'requirement is stale',
      data: {
        kind: 'approvalRequirementStale',
        approvalId: 'stale-0001',
        currentRequirementId: { approvalId: 'stale-0001', sourceIndex: 1 },
      },
    });
    await world.press('stale-0001', 'Allow once', 'U0CAROL');
    expect(await world.ephemeralTo('U0CAROL')).toMatch(/question changed/);
    // The question goes back to people: the buttons of stage 2 are shown again.
    const card = await world.waitForCard(
      'stale-0001',
      (m) => buttonsOf(m).length > 0 && textOf(m).includes('git push'),
    );
    expect(JSON.parse(buttonsOf(card)[0]!.value).s).toBe(1);
  });

  it('5b. a press on a card the host outdated by asking the stage again with another command decides nothing', async () => {
    world = await World.start({}, { MSP_SANDBOX_MODE: 'workspace-write' });
    const id = 'reask-0001';
    await world.host.open(shellApproval({ approvalId: id, sessionId: SESSION, stages: [['npm', 'test']] }));
    const shown = await world.waitForCard(
      id,
      (m) => buttonsOf(m).length > 0 && textOf(m).includes('npm test'),
    );
    const allow = buttonsOf(shown).find((b) => b.text === 'Allow once')!;
    const remember = rememberButtonOf(shown)!;
    expect(remember).toBeDefined();

    // The host asks the same stage again, now as another command: same approval, stage and choices.
    const prod = shellApproval({ approvalId: id, sessionId: SESSION, stages: [['rm', '-rf', '/srv/prod']] });
    await world.host.update({
      approvalId: id,
      patch: { subject: prod.subject },
      change: { kind: 'subjectChanged' },
    });
    const now = await world.waitForCard(
      id,
      (m) => textOf(m).includes('/srv/prod') && buttonsOf(m).length > 0,
    );

    // Alice's Slack still shows `npm test` (as an escalation DM or the full view would): neither
    // "Allow once" nor "don't ask again" pressed there decides or remembers `rm -rf /srv/prod`.
    for (const button of [allow, remember]) {
      const since = world.slack.calls.length;
      await world.pressButton(shown.ts, button, 'U0ALICE', shown.channel);
      const told = await world.slack.waitFor('chat.postEphemeral', (c) => c.args.user === 'U0ALICE', 5_000, {
        since,
      });
      expect(String(told.args.text)).toMatch(/question changed .*command/);
    }

    // A button of a card posted before buttons named their question cannot say what it showed:
    // refused, and the card is re-rendered so that the next press carries it.
    const { d: _shown, ...unnamed } = JSON.parse(buttonsOf(now)[0]!.value) as Record<string, unknown>;
    const since = world.slack.calls.length;
    await world.pressButton(now.ts, { ...allow, value: JSON.stringify(unnamed) }, 'U0BOB', now.channel);
    const told = await world.slack.waitFor('chat.postEphemeral', (c) => c.args.user === 'U0BOB', 5_000, {
      since,
    });
    expect(String(told.args.text)).toContain('from a card posted before');
    await world.slack.waitFor('chat.update', (c) => c.args.ts === now.ts, 5_000, { since });

    await new Promise((r) => setTimeout(r, 300));
    expect(world.host.decides()).toHaveLength(0);
    expect(await storeOf(world).list({}, new Date())).toEqual([]);

    // The card as it stands now decides what it shows.
    await world.press(id, 'Allow once', 'U0BOB');
    const decide = await world.host.waitForDecide((d) => d.frame.params.approvalId === id);
    expect(decide.frame.params.choiceId).toBe('allow_once');
    expect(world.host.decides()).toHaveLength(1);
  });

  it('5d. a reason modal submitted without the question it showed decides nothing, whatever choice it names', async () => {
    world = await World.start({}, { MSP_SANDBOX_MODE: 'workspace-write' });
    const id = 'unnamed-modal-0001';
    await world.host.open(shellApproval({ approvalId: id, sessionId: SESSION, stages: [['npm', 'test']] }));
    await world.waitForCard(id, (m) => buttonsOf(m).length > 0 && textOf(m).includes('npm test'));
    // The reason modal the bot opens names the question it shows.
    await world.press(id, 'Reject', 'U0ALICE');
    const opened = await world.slack.waitFor('views.open', (c) =>
      JSON.stringify(c.args).includes('cs_feedback'),
    );
    const { private_metadata } = opened.args.view as { private_metadata: string };
    const { askedAs, ...unnamed } = JSON.parse(private_metadata) as Record<string, unknown>;
    expect(askedAs).toEqual(expect.any(String));

    // The host asks the same stage again, now as another command.
    const prod = shellApproval({ approvalId: id, sessionId: SESSION, stages: [['rm', '-rf', '/srv/prod']] });
    await world.host.update({
      approvalId: id,
      patch: { subject: prod.subject },
      change: { kind: 'subjectChanged' },
    });
    await world.waitForCard(id, (m) => textOf(m).includes('/srv/prod') && buttonsOf(m).length > 0);

    // A submit signed as Slack signs it, its metadata naming the approving choice and no question:
    // it cannot say what its person saw, so it is not counted on `rm -rf /srv/prod`, nor on anything.
    const since = world.slack.calls.length;
    const response = await postInteraction(
      world.bot.url,
      SIGNING_SECRET,
      viewSubmissionPayload({
        userId: 'U0ALICE',
        callbackId: 'cs_feedback',
        privateMetadata: JSON.stringify({ ...unnamed, choiceId: 'allow_once' }),
        values: {},
      }),
    );
    expect(response.status).toBe(200);
    const told = await world.slack.waitFor('chat.postEphemeral', (c) => c.args.user === 'U0ALICE', 5_000, {
      since,
    });
    expect(String(told.args.text)).toContain('cannot tell whether it is still the one asked');
    // Said of the form that was submitted, not of a card's button.
    expect(String(told.args.text)).toMatch(/^This form /);
    await new Promise((r) => setTimeout(r, 300));
    expect(world.host.decides()).toHaveLength(0);
  });

  it('5c. a press on a card from before the host marked the same question otherwise decides nothing', async () => {
    world = await World.start();
    // Same command, stage and choices each time: only what the card marks about it changes.
    const marked: Array<[string, Partial<ApprovalRequestParams>, RegExp]> = [
      ['mark-0001', { protectedWrite: true }, /Protected write/],
      ['mark-0002', { judgeEscalated: true }, /Escalated by the automated judge/],
      ['mark-0003', { cuaCardFacts: { page: { host: 'pay.example' } } }, /pay\.example/],
    ];
    for (const [id, mark, shows] of marked) {
      const approval = shellApproval({ approvalId: id, sessionId: SESSION, stages: [['make', 'deploy']] });
      await world.host.open(approval);
      const shown = await world.waitForCard(id, (m) => buttonsOf(m).length > 0);
      expect(textOf(shown)).not.toMatch(shows);

      await world.host.open({ ...approval, ...mark }, { via: 'request' });
      await world.waitForCard(id, (m) => buttonsOf(m).length > 0 && shows.test(textOf(m)));

      // Alice's Slack still shows the card without the mark: her press there decides nothing.
      const since = world.slack.calls.length;
      const allow = buttonsOf(shown).find((b) => b.text === 'Allow once')!;
      await world.pressButton(shown.ts, allow, 'U0ALICE', shown.channel);
      const told = await world.slack.waitFor('chat.postEphemeral', (c) => c.args.user === 'U0ALICE', 5_000, {
        since,
      });
      expect(String(told.args.text)).toMatch(/question changed/);
    }
    await new Promise((r) => setTimeout(r, 300));
    expect(world.host.decides()).toHaveLength(0);

    // The card as it stands now decides what it shows.
    await world.press('mark-0001', 'Allow once', 'U0ALICE');
    const decide = await world.host.waitForDecide((d) => d.frame.params.approvalId === 'mark-0001');
    expect(decide.frame.params.choiceId).toBe('allow_once');
  });

  it('6. resolved elsewhere (policy) while the card is open: final card, and a late click is told who won', async () => {
    world = await World.start();
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'policy-0001' });
    await world.host.open(approval, { via: 'both' });
    const open = await world.waitForCard('policy-0001', (m) => buttonsOf(m).length > 0);

    await world.host.resolve({
      approvalId: 'policy-0001',
      decision: 'denied',
      resolvedBy: 'policy',
      policyResult: 'deny',
    });
    const final = await world.waitForCard(
      'policy-0001',
      (m) => buttonsOf(m).length === 0 && textOf(m).includes('Denied'),
    );
    expect(textOf(final)).toContain('policy');

    await world.pressButton(open.ts, buttonsOf(open)[0]!, 'U0ALICE');
    expect(await world.ephemeralTo('U0ALICE')).toMatch(/already decided: Denied by policy/);
    expect(world.host.decides()).toHaveLength(0);
  });

  it('6b. another client won the race: approvalAlreadyResolved shows the winner', async () => {
    world = await World.start();
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'race-0001' });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('race-0001', (m) => buttonsOf(m).length > 0);
    await world.host.failDecide({
      code: -32051,
      message: 'approval already resolved',
      data: {
        kind: 'approvalAlreadyResolved',
        approvalId: 'race-0001',
        resolution: { decision: 'approvedForSession', resolvedBy: 'llmJudge', viewCursor: 'v:x:9' },
      },
    });
    await world.press('race-0001', 'Reject', 'U0ALICE');
    await world.submitModal('U0ALICE', 'no');
    expect(await world.ephemeralTo('U0ALICE')).toMatch(
      /already decided: Approved for the rest of the session by the automated reviewer/,
    );
    const final = await world.waitForCard(
      'race-0001',
      (m) => buttonsOf(m).length === 0 && textOf(m).includes('automated reviewer'),
    );
    expect(textOf(final)).toContain('Approved for the rest of the session');
  });

  it('an automated reviewer holds it: no buttons until it hands it to a person', async () => {
    world = await World.start();
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'review-0001' });
    await world.host.open(approval, { via: 'reviewing-then-request' });
    const held = await world.waitForCard('review-0001', (m) => textOf(m).includes('automated reviewer'));
    expect(buttonsOf(held)).toHaveLength(0);

    await world.host.escalate('review-0001');
    const asked = await world.waitForCard('review-0001', (m) => buttonsOf(m).length === 3);
    expect(asked.ts).toBe(held.ts);
    expect(textOf(asked)).toMatch(/judge/i);
    expect(world.slack.cardPosts()).toHaveLength(1);
  });

  it('9. the host crashes and is respawned: the old card is superseded, the re-asked approval gets a new card', async () => {
    world = await World.start({ recovery: 'newId' });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'crash-0001' });
    await world.host.open(approval, { via: 'both' });
    const before = await world.waitForCard('crash-0001', (m) => buttonsOf(m).length > 0);

    await world.host.crash(1);
    await world.host.waitForIncarnation(2, 15_000);

    const superseded = await world.waitForCard(
      'crash-0001',
      (m) => textOf(m).includes('Superseded') && textOf(m).includes('restarted and closed this request'),
      10_000,
    );
    expect(textOf(superseded)).not.toContain('Rejected');
    expect(buttonsOf(superseded)).toHaveLength(0);
    const renewed = await world.waitForCard('crash-0001-r2', (m) => buttonsOf(m).length === 3, 10_000);
    expect(renewed.ts).not.toBe(before.ts);

    // A click on the old card is never carried over to the new approval.
    await world.pressButton(before.ts, buttonsOf(before)[0]!, 'U0ALICE');
    expect(await world.ephemeralTo('U0ALICE')).toMatch(/closed by the agent host without a decision/);
    expect(world.host.decides()).toHaveLength(0);

    await world.press('crash-0001-r2', 'Allow once', 'U0ALICE');
    const decide = await world.host.waitForDecide();
    expect(decide.frame.params.approvalId).toBe('crash-0001-r2');
    expect(decide.incarnation).toBe(2);
    await world.waitForCard('crash-0001-r2', (m) => textOf(m).includes('Approved'));
    expect(world.slack.cardPosts()).toHaveLength(2);
  });

  it('10. the bot is killed and restarted: the old card still works and is not posted again', async () => {
    world = await World.start({ recovery: 'sameId' });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'restart-0001' });
    await world.host.open(approval, { via: 'both' });
    const card = await world.waitForCard('restart-0001', (m) => buttonsOf(m).length > 0);

    const exit = await world.bot.kill();
    expect(exit.signal).toBe('SIGKILL');
    await world.restartBot();
    await world.host.waitForIncarnation(2, 15_000);
    // The restarted bot has found the approval again (the host re-asked it) before we click.
    await world.host.waitForMethod('approval/listPending', (f) => f.incarnation === 2);

    await world.pressButton(card.ts, buttonsOf(card)[0]!, 'U0ALICE');
    const decide = await world.host.waitForDecide();
    expect(decide.frame.params).toMatchObject({ approvalId: 'restart-0001', choiceId: 'allow_once' });
    expect(decide.incarnation).toBe(2);
    const final = await world.waitForCard('restart-0001', (m) => textOf(m).includes('Approved'));
    expect(final.ts).toBe(card.ts);
    expect(world.slack.cardPosts()).toHaveLength(1);
  });

  it('10c. a card whose message key was lost (a crash between its two writes) still decides', async () => {
    // The card's place is written to its record and, beside it, to the message's own key: two
    // slots, so on a Cluster two masters, and a process killed between them leaves the record
    // naming the card with no key pointing back. Here the key is taken away by hand, and the
    // press reaches a replica that has not read the record (a restarted one, before it has).
    world = await World.start({}, { COUNTERSIGN_REPLICA_ID: 'first' });
    await world.host.open(
      shellApproval({ approvalId: 'lost-key-0001', sessionId: SESSION, stages: [['make', 'ship']] }),
    );
    const card = await world.waitForCard('lost-key-0001', (m) => buttonsOf(m).length > 0);
    expect(await world.redis.del(keys.message(card.channel, card.ts))).toBe(1);
    const second = await startBot({
      host: world.host,
      slack: world.slack,
      redisDb: world.redisDb,
      env: { COUNTERSIGN_REPLICA_ID: 'second' },
    });
    try {
      await second.waitReady(20_000);
      // The button alone never names the approval: on another message, the record's own place
      // does not match, and nothing is decided.
      const elsewhere = { channel: card.channel, ts: '1700000000.000100' };
      await pressButtonAt(second.url, world.slack, elsewhere, buttonsOf(card)[0]!, 'U0BOB');
      expect(await world.ephemeralTo('U0BOB')).toContain('no approval behind this message');
      expect(await world.redis.exists(keys.message(elsewhere.channel, elsewhere.ts))).toBe(0);
      await pressButtonAt(second.url, world.slack, card, buttonsOf(card)[0]!, 'U0ALICE');
      const decide = await world.host.waitForDecide();
      expect(decide.frame.params).toMatchObject({ approvalId: 'lost-key-0001' });
      await world.waitForCard('lost-key-0001', (m) => textOf(m).includes('Approved'));
      expect(world.slack.ephemerals.filter((e) => e.user === 'U0ALICE')).toEqual([]);
      // Found again through the record that names this message, the key is written back.
      expect(await world.redis.get(keys.message(card.channel, card.ts))).toBe('lost-key-0001');
    } finally {
      await second.stop();
    }
  });

  it('a non-durable host dies: its open cards say the request died with it', async () => {
    world = await World.start({ durability: 'ephemeral' });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'ephemeral-0001' });
    await world.host.open(approval, { via: 'both' });
    const open = await world.waitForCard('ephemeral-0001', (m) => buttonsOf(m).length > 0);

    await world.host.crash(1);
    const orphaned = await world.waitForCard('ephemeral-0001', (m) =>
      textOf(m).includes('could not keep this request'),
    );
    expect(buttonsOf(orphaned)).toHaveLength(0);
    expect(orphaned.ts).toBe(open.ts);

    await world.host.waitForIncarnation(2, 15_000);
    await world.pressButton(open.ts, buttonsOf(open)[0]!, 'U0ALICE');
    expect(await world.ephemeralTo('U0ALICE')).toMatch(/died with it/);
    expect(world.host.decides()).toHaveLength(0);
  });

  it('a non-durable host dies with a decide it applied but never reported: the trail names who pressed it', async () => {
    world = await World.start({ durability: 'ephemeral' });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'eph-applied-0001' });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('eph-applied-0001', (m) => buttonsOf(m).length > 0);

    // The host takes the decision into its ledger, says nothing of it, and dies.
    await world.host.applySilently(1);
    await world.press('eph-applied-0001', 'Allow once', 'U0ALICE');
    const decide = await world.host.waitForDecide();
    await world.host.crash(1);

    const orphaned = await world.waitForCard('eph-applied-0001', (m) =>
      textOf(m).includes('could not keep this request'),
    );
    expect(buttonsOf(orphaned)).toHaveLength(0);
    expect(textOf(orphaned)).toContain('<@U0ALICE>');
    expect(textOf(orphaned)).toContain('is not known');

    // Whether the host applied it nobody can say now: the entry says so, and who pressed what.
    const deadline = Date.now() + 5_000;
    let mine: Array<Record<string, string>> = [];
    while (mine.length === 0 && Date.now() < deadline) {
      const entries = await world.redis.xrange(keys.audit, '-', '+');
      mine = entries
        .map(([, f]) => Object.fromEntries(f.flatMap((v, i) => (i % 2 === 0 ? [[v, f[i + 1]!]] : []))))
        .filter((e) => e.approvalId === 'eph-applied-0001');
      if (mine.length === 0) await new Promise((r) => setTimeout(r, 100));
    }
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({
      kind: 'decision',
      via: 'click',
      userId: 'U0ALICE',
      choiceId: decide.frame.params.choiceId,
      commandId: decide.frame.params.commandId,
      decision: 'unknown',
      unsettled: 'hostLost',
    });
    expect(mine[0]!.resolvedBy).toBeUndefined();
  });

  it('10b. the bot is killed mid-decision: the restarted bot replays it with the same commandId', async () => {
    world = await World.start({ recovery: 'sameId' });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'midway-0001' });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('midway-0001', (m) => buttonsOf(m).length > 0);

    await world.host.holdDecide(1);
    await world.press('midway-0001', 'Allow once', 'U0ALICE');
    const lost = await world.host.waitForDecide();
    await world.waitForCard('midway-0001', (m) => textOf(m).includes('Being decided'));
    await world.bot.kill();

    await world.restartBot();
    const replayed = await world.host.waitForDecide((d) => d.incarnation === 2, 10_000);
    expect(replayed.frame.params.commandId).toBe(lost.frame.params.commandId);
    expect(replayed.frame.params).toMatchObject({ approvalId: 'midway-0001', choiceId: 'allow_once' });
    const final = await world.waitForCard('midway-0001', (m) => textOf(m).includes('Approved'));
    expect(textOf(final)).toContain('<@U0ALICE>');
    expect(world.host.decides()).toHaveLength(2);
    expect(world.slack.cardPosts()).toHaveLength(1);
  });

  it('10d. a decision cut short is not replayed once the host asked its stage otherwise', async () => {
    world = await World.start({ recovery: 'sameId' });
    const id = 'midway-reask-0001';
    await world.host.open(shellApproval({ approvalId: id, sessionId: SESSION, stages: [['npm', 'test']] }));
    await world.waitForCard(id, (m) => buttonsOf(m).length > 0 && textOf(m).includes('npm test'));

    await world.host.holdDecide(1);
    await world.press(id, 'Allow once', 'U0ALICE');
    await world.host.waitForDecide();
    // Before the host applied it, it asks the same approval and stage about another command.
    const prod = shellApproval({ approvalId: id, sessionId: SESSION, stages: [['rm', '-rf', '/srv/prod']] });
    await world.host.update({
      approvalId: id,
      patch: { subject: prod.subject },
      change: { kind: 'subjectChanged' },
    });
    await world.waitForCard(id, (m) => textOf(m).includes('the request changed after that choice was made'));
    await world.bot.kill();

    // The restarted bot finds the claim on a question nobody pressed it on: it is given back, and
    // the card asks `rm -rf /srv/prod` with its own buttons.
    await world.restartBot();
    await world.host.waitForIncarnation(2, 15_000);
    await world.host.waitForMethod('approval/listPending', (f) => f.incarnation === 2, 10_000);
    const card = await world.waitForCard(
      id,
      (m) => buttonsOf(m).length > 0 && textOf(m).includes('/srv/prod'),
      10_000,
    );
    expect(textOf(card)).not.toContain('Being decided');
    await new Promise((r) => setTimeout(r, 500));
    expect(world.host.decides().filter((d) => d.incarnation === 2)).toEqual([]);
    expect(world.host.decides()).toHaveLength(1);
  });
});
