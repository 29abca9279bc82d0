// "View full" end to end: a request whose text the card (or intake) had to shorten can be read
// whole in a modal, secrets masked, within Slack's modal limits; its choices decide from there
// with the same checks as on the card.

import { afterEach, describe, expect, it } from 'vitest';
import { checkViewLimits } from '../../src/cards/limits.js';
import { keys } from '../../src/store/keys.js';
import { SIGNING_SECRET } from '../support/bot.js';
import { approvalFromTranscript, shellApproval } from '../support/fakeHost.js';
import { FAKE_GITHUB_TOKEN } from '../support/fakeSecrets.js';
import type { SlackCall } from '../support/fakeSlack.js';
import { postInteraction, viewBlockActionsPayload, viewSubmissionPayload } from '../support/slackRequests.js';
import { configFile, type RouteSpec, route, users } from './fixtures/config.js';
import { buttonsOf, pressButtonAt, SESSION, textOf, viewFullButtonOf, World } from './world.js';

type Block = {
  type: string;
  block_id?: string;
  text?: { text: string };
  elements?: Array<Record<string, unknown>>;
};
interface View {
  callback_id: string;
  private_metadata: string;
  blocks: Block[];
}

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

/** One route in the tests' channel on which only alice decides; `more`: its other rules. */
async function startWorld(more: Partial<RouteSpec> = {}): Promise<World> {
  const config = configFile({ routes: [route('deploys', { approvers: users('U0ALICE'), ...more })] });
  cleanups.push(config.remove);
  const world = await World.start(
    { sessions: [{ sessionId: SESSION, title: 'Deploy' }] },
    { COUNTERSIGN_CONFIG: config.path },
  );
  cleanups.push(() => world.close());
  return world;
}

/** Presses the card's View full as `userId` and returns the modal the bot opened, as Slack took it. */
async function openFullView(world: World, approvalId: string, userId: string): Promise<SlackCall> {
  const card = await world.card(approvalId);
  const button = viewFullButtonOf(card);
  if (!button) throw new Error(`no View full on ${approvalId}: ${textOf(card).slice(0, 500)}`);
  const since = world.slack.calls.length;
  await pressButtonAt(world.bot.url, world.slack, { channel: card.channel, ts: card.ts }, button, userId);
  const call = await world.slack.waitFor(
    'views.open',
    (c) => (c.args.view as View).callback_id === 'cs_full_view',
    5_000,
    { since },
  );
  // The fake Slack refuses a modal over Slack's limits: this one was taken.
  expect(call.response).toMatchObject({ ok: true });
  expect(checkViewLimits(call.args.view)).toEqual([]);
  return call;
}

/** The code of the view's n-th part (its sections `cs_full_<n>_<i>`), fences taken off, joined. */
function partCode(view: View, n: number): string {
  return view.blocks
    .filter((b) => b.block_id?.startsWith(`cs_full_${n}_`))
    .map((b) => {
      const text = b.text!.text;
      const code = text.slice(text.indexOf('```\n') + 4);
      return code.slice(0, code.lastIndexOf('\n```'));
    })
    .join('');
}

function labelOf(view: View, n: number): string | undefined {
  return view.blocks.find((b) => b.block_id === `cs_full_${n}_0`)?.text?.text.split('\n')[0];
}

/** Presses the button labelled `label` inside the modal, as `userId`: a signed block_actions from a view. */
async function pressInModal(
  world: World,
  opened: SlackCall,
  label: string,
  userId: string,
  /** Sent without a trigger_id, as only a crafted payload is: no form can open from it. */
  how: { noTrigger?: boolean } = {},
): Promise<void> {
  const view = opened.args.view as View;
  const button = view.blocks
    .filter((b) => b.type === 'actions')
    .flatMap((b) => b.elements ?? [])
    .find((e) => (e.text as { text: string }).text === label);
  if (!button) throw new Error(`no "${label}" in the full view`);
  const response = await postInteraction(
    world.bot.url,
    SIGNING_SECRET,
    withoutTrigger(
      viewBlockActionsPayload({
        userId,
        viewId: (opened.response.view as { id: string }).id,
        callbackId: view.callback_id,
        privateMetadata: view.private_metadata,
        actionId: button.action_id as string,
        value: button.value as string,
      }),
      how.noTrigger === true,
    ),
  );
  expect(response.status).toBe(200);
}

function withoutTrigger(payload: Record<string, unknown>, drop: boolean): Record<string, unknown> {
  if (!drop) return payload;
  const { trigger_id: _trigger, ...rest } = payload;
  return rest;
}

/** A request long enough that its card has View full, open with its buttons live. */
async function openLong(world: World, approvalId: string): Promise<void> {
  const argv = ['deploy', ...Array.from({ length: 400 }, (_, i) => `--opt${i}`)];
  await world.host.open(shellApproval({ approvalId, sessionId: SESSION, stages: [argv] }), { via: 'both' });
  await world.waitForCard(approvalId, (m) => buttonsOf(m).length > 0);
}

/** Presses the card's View full as `userId`, whatever comes of it. */
async function pressViewFull(world: World, approvalId: string, userId: string): Promise<void> {
  const card = await world.card(approvalId);
  await pressButtonAt(
    world.bot.url,
    world.slack,
    { channel: card.channel, ts: card.ts },
    viewFullButtonOf(card)!,
    userId,
  );
}

/** The first ephemeral message to `userId` after the `since`-th Slack call. */
async function ephemeralAfter(world: World, userId: string, since: number): Promise<string> {
  const call = await world.slack.waitFor('chat.postEphemeral', (c) => c.args.user === userId, 8_000, {
    since,
  });
  return String(call.args.text);
}

/**
 * Submits the reason modal `pushed` on top of the full view `opened` with `reason`, as Slack
 * does (previous_view_id names the full view); returns the bot's answer body.
 */
async function submitPushedReason(
  world: World,
  opened: SlackCall,
  pushed: SlackCall,
  reason: string,
): Promise<Record<string, unknown>> {
  const view = pushed.args.view as View;
  const fullId = (opened.response.view as { id: string }).id;
  const response = await postInteraction(
    world.bot.url,
    SIGNING_SECRET,
    viewSubmissionPayload({
      userId: 'U0ALICE',
      callbackId: view.callback_id,
      privateMetadata: view.private_metadata,
      values: { cs_feedback_block: { cs_feedback_input: { type: 'plain_text_input', value: reason } } },
      viewId: (pushed.response.view as { id: string }).id,
      previousViewId: fullId,
    }),
  );
  expect(response.status).toBe(200);
  const body = await response.text();
  return body === '' ? {} : (JSON.parse(body) as Record<string, unknown>);
}

const settle = (ms = 300) => new Promise((r) => setTimeout(r, ms));

describe('View full', () => {
  it('a 50,000-character command opens whole in a modal, secret masked, and decides from there', async () => {
    const world = await startWorld();
    const filler = Array.from({ length: 6000 }, (_, i) => `--opt${i}`).join(' ');
    const head = `deploy --token ${FAKE_GITHUB_TOKEN} `;
    const argv = ['deploy', '--token', FAKE_GITHUB_TOKEN, filler.slice(0, 50_000 - head.length)];
    const approval = shellApproval({ approvalId: 'full-0001', sessionId: SESSION, stages: [argv] });
    const command = approval.subject.command!;
    expect(command.length).toBe(50_000);
    const masked = command.replace(FAKE_GITHUB_TOKEN, '[masked github-token]');
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('full-0001', (m) => buttonsOf(m).length > 0);

    // Anyone who sees the card may read it: eve is no approver.
    const opened = await openFullView(world, 'full-0001', 'U0EVE');
    const view = opened.args.view as View;
    expect(labelOf(view, 0)).toBe('*Command*');
    expect(partCode(view, 0)).toBe(masked);
    expect(JSON.stringify(view)).not.toContain(FAKE_GITHUB_TOKEN);
    // The stage and the arguments hold it too, as masked; none of it left out.
    expect(labelOf(view, 1)).toBe('*Stages*');
    // Its words as the card shows them: a word holding spaces (the masked token, the filler) quoted.
    const words = ['deploy', '--token', '"[masked github-token]"', JSON.stringify(argv[3])];
    expect(partCode(view, 1)).toBe(`1/1  ${words.join(' ')}`);
    expect(labelOf(view, 3)).toBe('*Arguments*');
    expect(partCode(view, 3)).toBe(JSON.stringify({ command: masked }, null, 2));
    expect(JSON.stringify(view)).not.toContain('not shown');

    // From the modal, an outsider's press is refused in the card's channel and decides nothing.
    await pressInModal(world, opened, 'Allow once', 'U0EVE');
    expect(await world.ephemeralTo('U0EVE')).toBe('Only <@U0ALICE> can decide on deploys.');
    expect(world.host.decides()).toHaveLength(0);

    // A choice that asks for a reason opens the reason modal on top of this one.
    const before = world.slack.calls.length;
    await pressInModal(world, opened, 'Reject', 'U0ALICE');
    const pushed = await world.slack.waitFor('views.push', () => true, 5_000, { since: before });
    expect(pushed.response).toMatchObject({ ok: true });
    expect((pushed.args.view as View).callback_id).toBe('cs_feedback');
    expect(world.host.decides()).toHaveLength(0);

    // An approver's press is the card's click: exactly one decision reaches the host.
    const since = world.slack.calls.length;
    await pressInModal(world, opened, 'Allow once', 'U0ALICE');
    const decide = await world.host.waitForDecide();
    expect(decide.frame.params).toMatchObject({
      approvalId: 'full-0001',
      requirementId: { approvalId: 'full-0001', sourceIndex: 0 },
      choiceId: 'allow_once',
    });
    const sent = await world.slack.waitFor('views.update', () => true, 5_000, { since });
    expect(sent.args.view_id).toBe((opened.response.view as { id: string }).id);
    expect(JSON.stringify(sent.args.view)).toContain('You chose *Allow once*');
    await world.waitForCard('full-0001', (m) => textOf(m).includes('Approved'));
    expect(world.host.decides()).toHaveLength(1);
  });

  it('opens for a card whose message key was lost, found through the record that names it', async () => {
    // A crash between the card's two writes (its record, its message key: two slots) leaves the
    // record alone; the record naming this very message is as good as the key, written back.
    const world = await startWorld();
    await openLong(world, 'vf-lost-key');
    const card = await world.card('vf-lost-key');
    expect(await world.redis.del(keys.message(card.channel, card.ts))).toBe(1);
    await openFullView(world, 'vf-lost-key', 'U0ALICE');
    expect(await world.redis.get(keys.message(card.channel, card.ts))).toBe('vf-lost-key');
  });

  it('a press from a full view the host outdated decides nothing, and the view says the question changed', async () => {
    const world = await startWorld();
    const argv = ['deploy', ...Array.from({ length: 400 }, (_, i) => `--opt${i}`)];
    const approval = shellApproval({ approvalId: 'full-0004', sessionId: SESSION, stages: [argv] });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('full-0004', (m) => buttonsOf(m).length > 0);
    const opened = await openFullView(world, 'full-0004', 'U0ALICE');
    const viewId = (opened.response.view as { id: string }).id;

    // The host asks the same command again, now a protected write: the card is redrawn with it.
    await world.host.open({ ...approval, protectedWrite: true }, { via: 'request' });
    await world.waitForCard('full-0004', (m) => buttonsOf(m).length > 0 && /Protected write/.test(textOf(m)));

    // Alice's open view still shows the old question: her press there is refused, and the view
    // gives up its buttons (each would be refused alike) for a word on what happened.
    const since = world.slack.calls.length;
    await pressInModal(world, opened, 'Allow once', 'U0ALICE');
    expect(await world.ephemeralTo('U0ALICE')).toMatch(/question changed/);
    const redrawn = await world.slack.waitFor('views.update', (c) => c.args.view_id === viewId, 5_000, {
      since,
    });
    expect(redrawn.response).toMatchObject({ ok: true });
    const view = redrawn.args.view as View;
    expect(view.blocks.filter((b) => b.type === 'actions')).toEqual([]);
    expect(JSON.stringify(view)).toContain('The question changed');
    await new Promise((r) => setTimeout(r, 300));
    expect(world.host.decides()).toHaveLength(0);

    // View full opened again shows the question as asked now, and decides it.
    const again = await openFullView(world, 'full-0004', 'U0ALICE');
    await pressInModal(world, again, 'Allow once', 'U0ALICE');
    const decide = await world.host.waitForDecide();
    expect(decide.frame.params).toMatchObject({ approvalId: 'full-0004', choiceId: 'allow_once' });
  });

  it('a full view, or a reason form on top of it, that Slack did not open decides nothing, and says to press again', async () => {
    const world = await startWorld({ rejectReason: 'required' });
    await openLong(world, 'full-0005');

    world.slack.failNext('views.open', 'expired_trigger_id');
    let since = world.slack.calls.length;
    await pressViewFull(world, 'full-0005', 'U0ALICE');
    expect(await ephemeralAfter(world, 'U0ALICE', since)).toBe(
      'Slack did not open the full request, so nothing was decided. Please press View full again.',
    );

    // Pressed again it opens; its Reject pushes the reason form, which Slack does not open either.
    const opened = await openFullView(world, 'full-0005', 'U0ALICE');
    world.slack.failNext('views.push', 'expired_trigger_id');
    since = world.slack.calls.length;
    await pressInModal(world, opened, 'Reject', 'U0ALICE');
    expect(await ephemeralAfter(world, 'U0ALICE', since)).toBe(
      'Slack did not open the form for your reason, so nothing was decided. Please press the button again.',
    );
    await settle();
    expect(world.host.decides()).toHaveLength(0);
  });

  it('a check of who may read the card that outlasts Slack’s trigger says so, and opens nothing', async () => {
    const world = await startWorld();
    await openLong(world, 'full-0006');
    // Eve is no approver: whether she is in the card's channel is asked of Slack, which makes
    // the bot wait 3 s; by then the trigger to open the modal would have expired.
    world.slack.rateLimit('conversations.members', { retryAfterSec: [3] });
    const since = world.slack.calls.length;
    await pressViewFull(world, 'full-0006', 'U0EVE');
    expect(await ephemeralAfter(world, 'U0EVE', since)).toBe(
      'Countersign could not tell in time whether you may read this request (Slack or its database answered slowly), and Slack gives only a few seconds to open it. Nothing was decided: please press View full again.',
    );
    await world.slack.waitFor('conversations.members', () => true, 5_000, {
      since: world.slack.calls.length,
    });
    await settle(500);
    expect(world.slack.callsOf('views.open')).toEqual([]);

    // Pressed again, with Slack answering at once, it opens.
    await openFullView(world, 'full-0006', 'U0EVE');
  });

  it('a reason sent from the full view closes it too: no live buttons are left behind the decision', async () => {
    const world = await startWorld({ rejectReason: 'required' });
    await openLong(world, 'full-0007');
    const opened = await openFullView(world, 'full-0007', 'U0ALICE');
    const since = world.slack.calls.length;
    await pressInModal(world, opened, 'Reject', 'U0ALICE');
    const pushed = await world.slack.waitFor('views.push', () => true, 5_000, { since });

    // Refused (no reason): said in the form, which stays open on top of the full view.
    const refused = await submitPushedReason(world, opened, pushed, '');
    expect(refused).toMatchObject({ response_action: 'errors' });
    await settle();
    expect(world.host.decides()).toHaveLength(0);

    // Taken: every view of the stack closes, the full view with its buttons; the card shows it.
    expect(await submitPushedReason(world, opened, pushed, 'Not today')).toEqual({
      response_action: 'clear',
    });
    const decide = await world.host.waitForDecide();
    expect(decide.frame.params).toMatchObject({ approvalId: 'full-0007', feedback: 'Not today' });
    await world.waitForCard('full-0007', (m) => textOf(m).includes('Rejected'));
  });

  it('a Reject in the full view sent without trigger_id, on a route that requires a reason, is refused, and the view never says it was sent', async () => {
    const world = await startWorld({ rejectReason: 'required' });
    await openLong(world, 'full-0009');
    const opened = await openFullView(world, 'full-0009', 'U0ALICE');
    const since = world.slack.calls.length;
    await pressInModal(world, opened, 'Reject', 'U0ALICE', { noTrigger: true });
    expect(await ephemeralAfter(world, 'U0ALICE', since)).toBe(
      'A reason is required to reject on deploys: type one. Nothing was decided: press the button again, and give the reason in the form it opens.',
    );
    await settle();
    expect(world.host.decides()).toHaveLength(0);
    // Nothing was sent, so the view keeps its buttons and says nothing of a choice made.
    expect(world.slack.calls.slice(since).filter((c) => c.method.startsWith('views.'))).toEqual([]);
  });

  it('a card that shows everything has no View full button', async () => {
    const world = await startWorld();
    await world.host.open(
      shellApproval({ approvalId: 'full-0002', sessionId: SESSION, stages: [['make', 'deploy']] }),
      { via: 'both' },
    );
    const card = await world.waitForCard('full-0002', (m) => buttonsOf(m).length > 0);
    expect(buttonsOf(card).map((b) => b.text)).toContain('Allow once');
    expect(viewFullButtonOf(card)).toBeUndefined();
  });

  it('text beyond what a modal holds: the modal says how many characters it left out', async () => {
    const world = await startWorld();
    const path = `/srv/data/${'p'.repeat(400_000)}`;
    const approval = approvalFromTranscript('approval-round-trip', {
      approvalId: 'full-0003',
      sessionId: SESSION,
      rawArgs: '',
    });
    approval.subject = { ...approval.subject, path };
    approval.currentRequirementId = { ...approval.currentRequirementId, approvalId: 'full-0003' };
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('full-0003', (m) => buttonsOf(m).length > 0, 15_000);

    const opened = await openFullView(world, 'full-0003', 'U0ALICE');
    const view = opened.args.view as View;
    expect(labelOf(view, 0)).toBe('*File*');
    const shown = partCode(view, 0);
    expect(shown.length).toBeGreaterThan(200_000);
    expect(path.startsWith(shown)).toBe(true);
    const note = view.blocks
      .filter((b) => b.type === 'context')
      .flatMap((b) => (b.elements ?? []).map((e) => String(e.text)))
      .find((t) => t.includes('not shown'));
    expect(note).toBe(
      `${path.length - shown.length} characters not shown: more than one Slack view can hold.`,
    );
  });
});
