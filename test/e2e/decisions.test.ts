import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ACK_WAIT_MS } from '../../src/slack/listeners/choiceButton.js';
import { approvalFromTranscript, shellApproval } from '../support/fakeHost.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let world: World;
beforeEach(async () => {
  world = await World.start();
});
afterEach(async () => {
  await world.close();
});

describe('deciding from Slack', () => {
  it('1. allow once: one card with the host’s choices, one decide, then the resolved card', async () => {
    const approval = approvalFromTranscript('approval-round-trip');
    const id = approval.approvalId;
    await world.host.open(approval, { via: 'both' });

    const card = await world.waitForCard(id, (m) => buttonsOf(m).length > 0);
    const buttons = buttonsOf(card);
    expect(buttons.map((b) => b.text)).toEqual(['Allow once', 'Allow for this session', 'Reject']);
    expect(buttons.map((b) => b.style)).toEqual(['primary', 'primary', 'danger']);
    expect(buttons[2]?.confirm).toBeTruthy();
    expect(buttons[0]?.confirm).toBeUndefined();
    expect(textOf(card)).toContain('/home/me/src/proj/Cargo.toml');
    expect(textOf(card)).toContain('write_file');
    expect(textOf(card)).toContain('Bump the version'); // the session's title from session/list
    // The rule a session grant would create is shown verbatim.
    expect(textOf(card)).toContain('write /home/me/src/proj/Cargo.toml');

    // approval/request was answered with an empty receipt.
    const receipt = await world.host.waitForFrame(
      (f) => typeof f.frame === 'object' && 'result' in f.frame && JSON.stringify(f.frame.result) === '{}',
    );
    expect(receipt.frame).toMatchObject({ jsonrpc: '2.0', result: {} });

    await world.press(id, 'Allow once', 'U0ALICE');
    const decide = await world.host.waitForDecide();
    expect(decide.frame.params).toMatchObject({
      sessionId: SESSION,
      approvalId: id,
      requirementId: { approvalId: id, sourceIndex: 0 },
      choiceId: 'allow_once',
    });
    expect(decide.frame.params.commandId).toMatch(UUID_V7);
    expect(decide.frame.params).not.toHaveProperty('feedback');

    const final = await world.waitForCard(
      id,
      (m) => buttonsOf(m).length === 0 && textOf(m).includes('Approved'),
    );
    expect(textOf(final)).toContain('<@U0ALICE>');
    expect(world.host.decides()).toHaveLength(1);
    expect(world.slack.cardPosts()).toHaveLength(1);
  });

  it('2. reject with feedback through the modal', async () => {
    const approval = approvalFromTranscript('approval-deny-round-trip');
    const id = approval.approvalId;
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard(id, (m) => buttonsOf(m).length > 0);

    await world.press(id, 'Reject', 'U0BOB');
    // A choice that accepts feedback opens a modal instead of deciding at once.
    const opened = await world.slack.waitFor('views.open');
    expect(opened.args.trigger_id).toBeTruthy();
    expect(world.host.decides()).toHaveLength(0);

    await world.submitModal('U0BOB', 'Do not modify the manifest');
    const decide = await world.host.waitForDecide();
    expect(decide.frame.params).toMatchObject({
      approvalId: id,
      choiceId: 'abort',
      feedback: 'Do not modify the manifest',
      requirementId: { approvalId: id, sourceIndex: 0 },
    });
    const final = await world.waitForCard(id, (m) => textOf(m).includes('Rejected'));
    expect(buttonsOf(final)).toHaveLength(0);
    expect(textOf(final)).toContain('<@U0BOB>');
    expect(textOf(final)).toContain('Do not modify the manifest');
  });

  it('3. a two-stage shell command is decided stage by stage on one message', async () => {
    const approval = shellApproval({
      approvalId: 'shell-0001',
      sessionId: SESSION,
      stages: [
        ['npm', 'test'],
        ['git', 'push'],
      ],
    });
    await world.host.open(approval, { via: 'both' });
    const first = await world.waitForCard('shell-0001', (m) => buttonsOf(m).length > 0);
    expect(textOf(first)).toContain('npm test');
    expect(textOf(first)).toContain('git push');
    expect(buttonsOf(first).map((b) => b.text)).toEqual([
      'Allow once',
      'Always allow in this workspace: npm test ...',
      'Reject',
    ]);

    await world.press('shell-0001', 'Allow once', 'U0ALICE');
    const stage0 = await world.host.waitForDecide();
    expect(stage0.frame.params.requirementId).toEqual({ approvalId: 'shell-0001', sourceIndex: 0 });

    // The same message now asks about stage 2, with that stage's choices.
    const second = await world.waitForCard(
      'shell-0001',
      (m) => buttonsOf(m).length > 0 && JSON.parse(buttonsOf(m)[0]!.value).s === 1,
    );
    expect(second.ts).toBe(first.ts);

    await world.press('shell-0001', 'Allow once', 'U0CAROL', second);
    const stage1 = await world.host.waitForDecide((d) => d.frame.params.requirementId.sourceIndex === 1);
    expect(stage1.frame.params.commandId).not.toBe(stage0.frame.params.commandId);

    // The card names stage 1's decider while stage 2 is asked: wait for the decision itself.
    const final = await world.waitForCard('shell-0001', (m) => textOf(m).includes('*Decision:*'));
    expect(buttonsOf(final)).toHaveLength(0);
    expect(textOf(final)).toContain('Stage 1 of 2: *Approved (this request only)* by <@U0ALICE>');
    expect(textOf(final)).toContain('*Decided by:* <@U0CAROL>');
    expect(world.slack.cardPosts()).toHaveLength(1);
    expect(world.host.decides()).toHaveLength(2);
  });

  it('4. approval/request plus approval/requested give one card', async () => {
    const approval = approvalFromTranscript('approval-round-trip');
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard(approval.approvalId, (m) => buttonsOf(m).length === 3);
    // A redelivery of the same question changes nothing either.
    await world.host.notify('approval/requested', approval);
    await world.host.open(approval, { via: 'request' });
    const receipts = () =>
      world.host.frames.filter((f) => typeof f.frame === 'object' && 'result' in f.frame);
    await world.host.waitForFrame(() => receipts().length >= 2);
    // Let the bot handle those frames: a later, unrelated approval is posted after them.
    const marker = approvalFromTranscript('approval-round-trip', { approvalId: 'marker-0001' });
    await world.host.open(marker, { via: 'requested' });
    await world.tsOf('marker-0001');
    const posts = world.slack.cardPosts();
    expect(posts).toHaveLength(2);
  });

  it('7. an unknown subject kind is shown generically', async () => {
    const approval = approvalFromTranscript('approval-round-trip', {
      approvalId: 'weird-0001',
      toolName: 'teleport',
      rawArgs: '{"destination":"mars","payload":"<!channel> <https://evil.example|docs>"}',
      subject: { kind: 'quantumEntangle', toolName: 'teleport' },
    });
    await world.host.open(approval, { via: 'both' });
    const card = await world.waitForCard('weird-0001', (m) => buttonsOf(m).length > 0);
    const text = textOf(card);
    expect(text).toContain('quantumEntangle');
    expect(text).toContain('teleport');
    expect(text).toContain('mars');
    // Agent text is inert: no broadcast, no fake link.
    expect(text).not.toContain('<!channel>');
    expect(text).not.toContain('<https://evil');
    expect(text).toContain('&lt;!channel&gt;');
  });

  it('8. a protected write the host cannot take remotely: the clicker is told, nothing else changes', async () => {
    const approval = approvalFromTranscript('approval-round-trip', {
      approvalId: 'protected-0001',
      protectedWrite: true,
    });
    await world.host.open(approval, { via: 'both' });
    const card = await world.waitForCard('protected-0001', (m) => buttonsOf(m).length > 0);
    expect(textOf(card)).toMatch(/protected write/i);

    await world.host.failDecide({
      code: -32054,
      message: 'no reviewer',
      data: { kind: 'approvalReviewerUnavailable', approvalId: 'protected-0001' },
    });
    await world.press('protected-0001', 'Allow once', 'U0ALICE');
    const note = await world.ephemeralTo('U0ALICE');
    expect(note).toMatch(/cannot be approved from Slack/);
    expect(world.host.decides()).toHaveLength(1);

    // The question is given back: the buttons return and a later click decides.
    const again = await world.waitForCard(
      'protected-0001',
      (m) => buttonsOf(m).length > 0 && m.versions.length >= 3,
    );
    await world.press('protected-0001', 'Allow once', 'U0ALICE', again);
    await world.waitForCard('protected-0001', (m) => textOf(m).includes('Approved'));
    expect(world.host.decides()).toHaveLength(2);
  });
});

describe("Slack's answer to a press that decides nothing", () => {
  it('comes at once, before the ephemeral that says why, not at the press timeout', async () => {
    const approval = approvalFromTranscript('approval-round-trip');
    const id = approval.approvalId;
    await world.host.open(approval, { via: 'both' });
    const card = await world.waitForCard(id, (m) => buttonsOf(m).length > 0);
    await world.press(id, 'Allow once', 'U0ALICE', card);
    await world.waitForCard(id, (m) => textOf(m).includes('Approved'));

    // A second press on the old buttons: nothing to decide; the note why is held at Slack.
    let releaseNote!: () => void;
    world.slack.fault('chat.postEphemeral', { until: new Promise<void>((r) => (releaseNote = r)) });
    const pressedAt = Date.now();
    expect((await world.press(id, 'Allow once', 'U0BOB', card)).status).toBe(200);
    expect(Date.now() - pressedAt).toBeLessThan(ACK_WAIT_MS - 50);
    releaseNote();
    expect(await world.ephemeralTo('U0BOB', 3_000)).toBeTruthy();
    expect(world.host.decides()).toHaveLength(1);
  });
});

describe('a channel given by name', () => {
  it('posts to the ID #name was found as, updates the card there, and keeps it once another channel takes the name', async () => {
    await world.close();
    world = await World.start({}, { SLACK_CHANNEL: '#approvals' });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'named-0001' });
    await world.host.open(approval, { via: 'both' });
    const posted = await world.slack.waitFor('chat.postMessage');
    // Never by name: Slack would post to whichever channel has the name at the time.
    expect(posted.args.channel).toBe('C0APPROVALS');
    await world.waitForCard('named-0001', (m) => buttonsOf(m).length > 0);
    await world.press('named-0001', 'Allow once');
    await world.waitForCard('named-0001', (m) => textOf(m).includes('Approved'));
    expect(world.slack.callsOf('chat.update').every((c) => c.args.channel === 'C0APPROVALS')).toBe(true);

    // The channel renamed, and another the bot was invited to takes its old name.
    world.slack.channelNames.set('approvals-old', 'C0APPROVALS');
    world.slack.channelNames.set('approvals', 'C0OTHER');
    const since = world.slack.calls.length;
    await world.host.open(approvalFromTranscript('approval-round-trip', { approvalId: 'named-0002' }), {
      via: 'both',
    });
    const second = await world.slack.waitFor('chat.postMessage', () => true, 5_000, { since });
    expect(second.args.channel).toBe('C0APPROVALS');
    await world.waitForCard('named-0002', (m) => buttonsOf(m).length > 0);
    expect(world.slack.messagesIn('C0OTHER')).toEqual([]);
  });
});
