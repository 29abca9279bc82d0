import { afterEach, describe, expect, it } from 'vitest';
import { keys } from '../../src/store/keys.js';
import { approvalFromTranscript, shellApproval } from '../support/fakeHost.js';
import { until } from '../support/until.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

// What the host does that the happy path never shows: restarts that re-ask under new ids,
// sessions another client holds, lost events, vanished sessions, slow or forgetful answers.

let world: World | undefined;

/** The view cursor the bot remembered for SESSION, once it has. */
async function storedCursor(w: World): Promise<string> {
  const deadline = Date.now() + 5_000;
  for (;;) {
    const stored = await w.redis.hget(keys.sessions('default'), SESSION);
    const cursor = stored ? (JSON.parse(stored) as { viewCursor?: string }).viewCursor : undefined;
    if (cursor) return cursor;
    if (Date.now() > deadline) throw new Error(`no view cursor stored for ${SESSION}: ${stored}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe('host restarts and sessions', () => {
  it('1. a recovery that closes the old id only at resume reads as superseded, never as a rejection', async () => {
    world = await World.start({ recovery: 'newIdOnResume' });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'recover-0001' });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('recover-0001', (m) => buttonsOf(m).length > 0);

    // The next host process cannot resume the session at first: it lists the old id as pending,
    // and the bot shows that listing (the approval now looks asked by the new process).
    await world.host.failRequest('session/resume', { code: -32603, message: 'still loading' });
    await world.host.crash(1);
    await world.host.waitForIncarnation(2, 15_000);
    const listed = await world.host.waitForMethod('approval/listPending', (f) => f.incarnation === 2);
    await world.host.waitForMethod('session/resume', (f) => f.incarnation === 2);
    expect(world.host.state().approvals['recover-0001']?.resolved).toBeUndefined();

    // The session changes; this time the resume recovers it: the old id is closed with an abort.
    await world.host.notify('session/statusChanged', {
      sessionId: SESSION,
      status: 'idle',
      attention: ['approvalPending'],
      viewCursor: null,
    });
    const resumed = await world.host.waitForMethod(
      'session/resume',
      (f) => f.incarnation === 2 && f.index > listed.index,
      10_000,
    );
    expect(resumed.index).toBeGreaterThan(listed.index);
    const old = await world.waitForCard(
      'recover-0001',
      (m) => buttonsOf(m).length === 0 && textOf(m).includes('restarted and closed this request'),
      10_000,
    );
    expect(old.versions.some((v) => JSON.stringify(v.blocks).includes('Rejected'))).toBe(false);
    const renewed = await world.waitForCard('recover-0001-r2', (m) => buttonsOf(m).length > 0, 10_000);
    expect(renewed.ts).not.toBe(old.ts);
  });

  it('2. a session another client holds: no live buttons until it lets go, then the card can be decided', async () => {
    // The other client (a user's TUI) loaded the session on its own host: when it lets go, our
    // host sends nothing at all about it, so the bot must try again by itself.
    world = await World.start({
      sessions: [
        { sessionId: SESSION, title: 'Bump the version' },
        { sessionId: 'held-s', title: 'In a terminal', status: 'notLoaded', heldElsewhere: true },
      ],
      approvals: [
        approvalFromTranscript('approval-round-trip', { approvalId: 'held-0001', sessionId: 'held-s' }),
      ],
    });
    const held = await world.waitForCard('held-0001', (m) => textOf(m).includes('holds this session'));
    expect(buttonsOf(held)).toHaveLength(0);
    // Never, not even for a moment, did the card offer buttons that could not work.
    expect(held.versions.every((v) => buttonsOf(v).length === 0)).toBe(true);

    await world.host.holdSession('held-s', false);
    const open = await world.waitForCard('held-0001', (m) => buttonsOf(m).length > 0, 15_000);
    expect(open.ts).toBe(held.ts);
    await world.press('held-0001', 'Allow once', 'U0ALICE', open);
    const decide = await world.host.waitForDecide();
    expect(decide.frame.params.approvalId).toBe('held-0001');
    await world.waitForCard('held-0001', (m) => textOf(m).includes('Approved'));
  });

  it('3. view/gap: the session is read again and a card missed in the gap is posted', async () => {
    world = await World.start();
    // The host stores an approval but its frames are lost in a gap: only listPending knows it.
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'gap-0001' });
    await world.host.open(approval, { via: 'none' });
    await world.host.notify('view/gap', { sessionId: SESSION, after: 'v:a:1', next: 'v:a:9' });
    const card = await world.waitForCard('gap-0001', (m) => buttonsOf(m).length > 0);
    expect(card.channel).toBe(world.channel);
    await world.press('gap-0001', 'Allow once', 'U0ALICE', card);
    await world.waitForCard('gap-0001', (m) => textOf(m).includes('Approved'));
  });

  it('4a. the bot crashes with a non-durable host: the old cards end orphaned when the new host is up', async () => {
    world = await World.start({ durability: 'ephemeral' });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'lost-0001' });
    await world.host.open(approval, { via: 'both' });
    const open = await world.waitForCard('lost-0001', (m) => buttonsOf(m).length > 0);

    // The bot dies first; its host goes with it (end of input), and nobody saw the host die.
    await world.bot.kill();
    await world.restartBot();
    await world.host.waitForIncarnation(2, 15_000);
    const orphaned = await world.waitForCard('lost-0001', (m) =>
      textOf(m).includes('could not keep this request'),
    );
    expect(buttonsOf(orphaned)).toHaveLength(0);
    expect(orphaned.ts).toBe(open.ts);
  });

  it('4b. a session that is no longer on the host has its cards closed after a respawn', async () => {
    world = await World.start({
      sessions: [
        { sessionId: SESSION, title: 'Bump the version' },
        { sessionId: 'gone-s', title: 'Gone soon' },
      ],
    });
    const approval = approvalFromTranscript('approval-round-trip', {
      approvalId: 'gone-0001',
      sessionId: 'gone-s',
    });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('gone-0001', (m) => buttonsOf(m).length > 0);

    await world.host.dropSession('gone-s');
    await world.host.crash(1);
    await world.host.waitForIncarnation(2, 15_000);
    await world.host.waitForMethod(
      'approval/listPending',
      (f) => f.incarnation === 2 && f.frame.params?.sessionId === 'gone-s',
    );
    const closed = await world.waitForCard('gone-0001', (m) =>
      textOf(m).includes('no longer has this request pending'),
    );
    expect(buttonsOf(closed)).toHaveLength(0);
  });

  it('4c. the running host process: a session read again closes what it no longer has, without a restart', async () => {
    world = await World.start({
      sessions: [
        { sessionId: SESSION, title: 'Bump the version' },
        { sessionId: 'gone-s', title: 'Gone soon' },
      ],
    });
    const lost = approvalFromTranscript('approval-round-trip', { approvalId: 'lost-0001' });
    const gone = approvalFromTranscript('approval-round-trip', {
      approvalId: 'gone-0002',
      sessionId: 'gone-s',
    });
    await world.host.open(lost, { via: 'both' });
    await world.host.open(gone, { via: 'both' });
    await world.waitForCard('lost-0001', (m) => buttonsOf(m).length > 0);
    await world.waitForCard('gone-0002', (m) => buttonsOf(m).length > 0);

    // No frame says so, as when approval/resolved was dropped: one approval and one whole session
    // vanish from the same host process, and gaps have both sessions read again.
    await world.host.forget('lost-0001');
    await world.host.dropSession('gone-s');
    await world.host.notify('view/gap', { sessionId: SESSION, after: 'v:a:1', next: 'v:a:9' });
    await world.host.notify('view/gap', { sessionId: 'gone-s', after: 'v:b:1', next: 'v:b:9' });
    for (const approvalId of ['lost-0001', 'gone-0002']) {
      const closed = await world.waitForCard(approvalId, (m) =>
        textOf(m).includes('no longer has this request pending'),
      );
      expect(buttonsOf(closed)).toHaveLength(0);
    }
    expect(world.host.incarnation).toBe(1);
  });

  it('an approval that vanishes from listPending across a restart loses its buttons, and a click sends nothing', async () => {
    world = await World.start();
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'vanish-0001' });
    await world.host.open(approval, { via: 'both' });
    const open = await world.waitForCard('vanish-0001', (m) => buttonsOf(m).length > 0);

    await world.host.forget('vanish-0001');
    await world.host.crash(1);
    await world.host.waitForIncarnation(2, 15_000);
    const closed = await world.waitForCard('vanish-0001', (m) => buttonsOf(m).length === 0, 10_000);
    expect(textOf(closed)).toContain('Superseded');

    await world.pressButton(open.ts, buttonsOf(open)[0]!, 'U0ALICE');
    expect(await world.ephemeralTo('U0ALICE')).toMatch(/closed by the agent host/);
    expect(world.host.decides()).toHaveLength(0);
  });

  it('5. followed sessions live in Redis: a restarted bot resumes from the last view cursor', async () => {
    world = await World.start({
      sessions: [{ sessionId: SESSION, title: 'Bump', status: 'notLoaded' }],
      recovery: 'sameId',
    });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'cursor-0001' });
    await world.host.open(approval, { via: 'none' });
    await world.host.notify('session/statusChanged', {
      sessionId: SESSION,
      status: 'idle',
      attention: ['approvalPending'],
      viewCursor: null,
    });
    await world.waitForCard('cursor-0001', (m) => buttonsOf(m).length > 0);
    await world.host.waitForMethod('session/resume');
    const viewCursor = await storedCursor(world);
    expect(viewCursor).toMatch(/^v:/);

    await world.bot.kill();
    await world.restartBot();
    const again = await world.host.waitForMethod('session/resume', (f) => f.incarnation === 2, 10_000);
    expect(again.frame.params).toMatchObject({ sessionId: SESSION, cursor: viewCursor });
    await world.press('cursor-0001', 'Allow once');
    await world.waitForCard('cursor-0001', (m) => textOf(m).includes('Approved'));
  });
});

describe('decisions the host answers badly', () => {
  it('6. an unanswered decide is asked again with the same commandId while the host is up, and the card says so', async () => {
    world = await World.start({}, { MSP_REQUEST_TIMEOUT: '1s' });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'silent-0001' });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('silent-0001', (m) => buttonsOf(m).length > 0);

    await world.host.holdDecide(2);
    await world.press('silent-0001', 'Allow once', 'U0ALICE');
    const waiting = await world.waitForCard(
      'silent-0001',
      (m) => textOf(m).includes('has not answered yet'),
      10_000,
    );
    expect(buttonsOf(waiting)).toHaveLength(0);
    await world.waitForCard('silent-0001', (m) => textOf(m).includes('Approved'), 15_000);
    const decides = world.host.decides();
    expect(decides).toHaveLength(3);
    expect(new Set(decides.map((d) => d.frame.params.commandId)).size).toBe(1);
    expect(world.host.incarnations).toHaveLength(1);
  });

  it('8a. approvalNotFound: the buttons go, the session is read again, and what the host still has comes back', async () => {
    world = await World.start();
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'unknown-0001' });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('unknown-0001', (m) => buttonsOf(m).length > 0);
    const listsBefore = world.host.framesOf('approval/listPending').length;

    await world.host.failDecide({
      code: -32050,
      message: 'approval not found',
      data: { kind: 'approvalNotFound', approvalId: 'unknown-0001' },
    });
    // The session's re-read is answered late: a quick answer would bring the buttons back before
    // the card without them was sent, and the two renders would rightly coalesce into one.
    await world.host.delayRequest('approval/listPending', 500);
    await world.press('unknown-0001', 'Allow once', 'U0ALICE');
    expect(await world.ephemeralTo('U0ALICE')).toMatch(/does not know this request/);
    const decide = await world.host.waitForDecide();
    const reread = await world.host.waitForMethod('approval/listPending', (f) => f.index > decide.index);
    expect(world.host.framesOf('approval/listPending').length).toBeGreaterThan(listsBefore);
    expect(reread.frame.params?.sessionId).toBe(SESSION);
    // The card had buttons before the press too: wait for them to come back after the version
    // that took them away, which may land after the host was asked again.
    const saysUnknown = (v: { blocks: unknown[] }) =>
      JSON.stringify(v.blocks).includes('does not know this request');
    const card = await world.waitForCard(
      'unknown-0001',
      (m) => buttonsOf(m).length > 0 && m.versions.some(saysUnknown),
    );
    const unknown = card.versions.find(saysUnknown)!;
    expect(JSON.stringify(unknown.blocks)).not.toContain('"type":"button"');
    expect(card.versions.indexOf(unknown)).toBeLessThan(card.versions.length - 1);
  });

  it('8b. approvalRequirementStale: the card offers no choice for the stage the host names until it is read again', async () => {
    world = await World.start();
    const approval = shellApproval({
      approvalId: 'moved-0001',
      sessionId: SESSION,
      stages: [
        ['npm', 'test'],
        ['git', 'push'],
      ],
    });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('moved-0001', (m) => buttonsOf(m).length > 0);

    // The host moves to stage 2 without telling us, and cannot list the session just now.
    await world.host.advanceSilently('moved-0001');
    await world.host.failRequest('approval/listPending', { code: -32603, message: 'busy' });
    const listsBefore = world.host.framesOf('approval/listPending').length;
    await world.press('moved-0001', 'Allow once', 'U0ALICE');
    expect(await world.ephemeralTo('U0ALICE')).toMatch(/question changed/);
    // Stage 1's choices (the prefix rule among them) are not stage 2's: none are offered meanwhile.
    const waiting = await world.waitForCard('moved-0001', (m) =>
      textOf(m).includes('moved on to another stage'),
    );
    expect(buttonsOf(waiting)).toEqual([]);
    expect(world.host.decides()).toHaveLength(1);

    // The reading the host could not answer is tried again on its own (no frame asks for it): it
    // asks stage 2 with its own choices.
    const card = await world.waitForCard('moved-0001', (m) =>
      buttonsOf(m).some((b) => (JSON.parse(b.value) as { s: number }).s === 1),
    );
    expect(world.host.framesOf('approval/listPending').length).toBeGreaterThanOrEqual(listsBefore + 2);
    await world.press('moved-0001', 'Allow once', 'U0BOB', card);
    const second = await world.host.waitForDecide((d) => d.frame.params.requirementId.sourceIndex === 1);
    expect(second.frame.params.approvalId).toBe('moved-0001');
    await world.waitForCard('moved-0001', (m) => textOf(m).includes('Approved'));
  });

  it('a reject still in flight when the host restarts and closes the request reads superseded, not rejected', async () => {
    world = await World.start();
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'inflight-0001' });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('inflight-0001', (m) => buttonsOf(m).length > 0);

    await world.host.holdDecide(1);
    await world.press('inflight-0001', 'Reject', 'U0ALICE');
    await world.submitModal('U0ALICE', 'not now');
    await world.host.waitForDecide();
    await world.waitForCard('inflight-0001', (m) => textOf(m).includes('Being decided'));
    // The host dies with the reject unapplied; its restart closes the old id with an abort.
    await world.host.crash(1);
    await world.host.waitForIncarnation(2, 15_000);
    const closed = await world.waitForCard('inflight-0001', (m) => textOf(m).includes('Superseded'), 10_000);
    expect(textOf(closed)).not.toMatch(/Rejected|<@U0ALICE>/);
    await world.waitForCard('inflight-0001-r2', (m) => buttonsOf(m).length > 0, 10_000);
  });

  it('a decision the host applied just before the bot died is shown as decided after the restart, not superseded', async () => {
    world = await World.start({ recovery: 'sameId' });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'applied-0001' });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('applied-0001', (m) => buttonsOf(m).length > 0);

    await world.host.applySilently(1);
    await world.press('applied-0001', 'Allow once', 'U0ALICE');
    const sent = await world.host.waitForDecide();
    await world.waitForCard('applied-0001', (m) => textOf(m).includes('Being decided'));
    // The host writes its state file after it read the decide: give the write its moment.
    const host = world.host;
    await until(() => host.state().approvals['applied-0001']?.resolved !== undefined, 5_000);
    expect(world.host.state().approvals['applied-0001']?.resolved?.decision).toBe('approved');
    await world.bot.kill();

    await world.restartBot();
    // The restarted host no longer lists it; asked again with the same commandId, it answers
    // with the original acknowledgement, so the card ends as Alice's approval.
    const asked = await world.host.waitForDecide((d) => d.incarnation === 2, 10_000);
    expect(asked.frame.params.commandId).toBe(sent.frame.params.commandId);
    const final = await world.waitForCard('applied-0001', (m) => textOf(m).includes('Approved'), 10_000);
    expect(textOf(final)).toContain('<@U0ALICE>');
    expect(textOf(final)).not.toContain('Superseded');
  });

  it('9. a failed rule save that arrives after the resolution still reaches the card', async () => {
    world = await World.start();
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'rule-0001' });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('rule-0001', (m) => buttonsOf(m).length > 0);
    await world.host.resolve({
      approvalId: 'rule-0001',
      decision: 'approvedPolicyAmendment',
      resolvedBy: 'user',
      amendment: { durability: 'localPersistent', rulePreview: 'Always allow writes to README.md' },
    });
    await world.waitForCard('rule-0001', (m) => textOf(m).includes('Rule saved'));
    await world.host.update({
      approvalId: 'rule-0001',
      change: { kind: 'policyPersistence', status: 'failed', reason: 'policy store is read-only' },
    });
    const final = await world.waitForCard('rule-0001', (m) => textOf(m).includes('Rule not saved'));
    expect(textOf(final)).toContain('policy store is read-only');
    expect(textOf(final)).not.toContain('Rule saved');
  });
});
