// Who may decide, end to end: the real bot reads a config file with route rules, hosts and admins,
// and every click, modal open and modal submit is checked against the rules of the route stored on
// the approval's record, before anything is claimed or sent to the host. A refusal is an
// ephemeral sentence naming who may decide (or, at modal submit, an error in the modal itself).

import { afterEach, describe, expect, it } from 'vitest';
import { SIGNING_SECRET } from '../support/bot.js';
import { FakeHost, shellApproval } from '../support/fakeHost.js';
import type { SlackCall } from '../support/fakeSlack.js';
import { blockActionsPayload, postInteraction, viewSubmissionPayload } from '../support/slackRequests.js';
import { mainHost, route, tempConfig, users } from './fixtures/config.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

const REFUSED_LOG = 'decision refused: user may not decide on this route';
const QUICK_REASONS = ['Use a PR instead', 'Not during a freeze'];

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

/**
 * The issue's example, shrunk to one route in the tests' channel: alice, bob and the sre group
 * approve; carol alone decides protected writes; bob owns the host's agent and may not approve
 * its requests; U0ADMIN is an admin.
 */
function configFile(hostCommand: string): string {
  return tempConfig(cleanups, {
    hosts: [mainHost(hostCommand, { owner: 'U0BOB' })],
    routes: [
      route('deploys', {
        approvers: { users: ['U0ALICE', 'U0BOB'], usergroups: ['S0SRE'] },
        protectedWriteApprovers: users('U0CAROL'),
        allowSelfApproval: false,
        rejectReason: 'required',
        quickReasons: QUICK_REASONS,
      }),
    ],
    admins: ['U0ADMIN'],
  });
}

interface AuthzWorld {
  world: World;
  env: Record<string, string>;
}

async function startWorld(env: Record<string, string> = {}): Promise<AuthzWorld> {
  // The host is started first so that the file can name its command; World gets it via its seed.
  const probe = await FakeHost.start({ sessions: [{ sessionId: SESSION, title: 'Deploy' }] });
  const command = probe.command;
  await probe.close();
  const botEnv = { COUNTERSIGN_CONFIG: configFile(command), MSP_HOST_COMMAND: '', ...env };
  const world = await World.start({ sessions: [{ sessionId: SESSION, title: 'Deploy' }] }, botEnv);
  cleanups.push(() => world.close());
  return { world, env: botEnv };
}

async function openShell(world: World, approvalId: string, protectedWrite = false): Promise<void> {
  await world.host.open(
    shellApproval({ approvalId, sessionId: SESSION, stages: [['make', 'deploy']], protectedWrite }),
    { via: 'both' },
  );
  await world.waitForCard(approvalId, (m) => buttonsOf(m).length > 0);
}

/** The reject modal the bot opened for the n-th time (0-based), as Slack received it. */
async function nthModal(world: World, n: number): Promise<SlackCall> {
  const calls = await world.slack.waitForCount('views.open', n + 1);
  return calls[n]!;
}

/** Submits a reject modal as `userId`, with a typed reason and/or a quick reason; returns Slack's answer body. */
async function submit(
  world: World,
  modal: SlackCall,
  userId: string,
  reason: { typed?: string; quick?: string },
): Promise<Record<string, unknown>> {
  const view = modal.args.view as { callback_id: string; private_metadata: string };
  const values: Record<string, Record<string, Record<string, unknown>>> = {
    cs_feedback_block: { cs_feedback_input: { type: 'plain_text_input', value: reason.typed ?? null } },
  };
  if (reason.quick !== undefined) {
    values.cs_quick_reason_block = {
      cs_quick_reason: {
        type: 'radio_buttons',
        selected_option: { text: { type: 'plain_text', text: reason.quick }, value: reason.quick },
      },
    };
  }
  const response = await postInteraction(
    world.bot.url,
    SIGNING_SECRET,
    viewSubmissionPayload({
      userId,
      callbackId: view.callback_id,
      privateMetadata: view.private_metadata,
      values,
    }),
  );
  expect(response.status).toBe(200);
  const body = await response.text();
  return body === '' ? {} : (JSON.parse(body) as Record<string, unknown>);
}

/** A refusal leaves one log line, naming the user and the route, and nothing reaches the host. */
async function expectRefusalLogged(world: World, userId: string, reason: string, action: string) {
  const line = await world.bot.waitForLog((l) => l.msg === REFUSED_LOG && l.json?.userId === userId);
  expect(line.json).toMatchObject({ kind: 'refusal', route: 'deploys', hostId: 'main', reason, action });
}

describe('who may decide', () => {
  it('an approver decides; an outsider is refused with an ephemeral naming who may, and nothing is sent to the host', async () => {
    const { world } = await startWorld();
    await openShell(world, 'appr-outsider');

    await world.press('appr-outsider', 'Allow once', 'U0EVE');
    expect(await world.ephemeralTo('U0EVE')).toBe(
      'Only <@U0ALICE>, <@U0BOB> or members of <!subteam^S0SRE> can decide on deploys.',
    );
    await expectRefusalLogged(world, 'U0EVE', 'notApprover', 'click');
    expect(world.host.decides()).toHaveLength(0);
    // Nothing was claimed either: the card still offers its buttons.
    expect(buttonsOf(await world.card('appr-outsider')).map((b) => b.text)).toContain('Allow once');

    await world.press('appr-outsider', 'Allow once', 'U0ALICE');
    const decide = await world.host.waitForDecide();
    expect(decide.frame.params).toMatchObject({ approvalId: 'appr-outsider', choiceId: 'allow_once' });
    await world.waitForCard('appr-outsider', (m) => textOf(m).includes('Approved'));
    expect(world.host.decides()).toHaveLength(1);
  });

  it('a member of an approving user group decides; a non-member is refused', async () => {
    const { world } = await startWorld();
    world.slack.setUsergroup('S0SRE', ['U0DAVE']);
    await openShell(world, 'appr-group');

    await world.press('appr-group', 'Allow once', 'U0FRANK');
    expect(await world.ephemeralTo('U0FRANK')).toContain('members of <!subteam^S0SRE>');
    expect(world.host.decides()).toHaveLength(0);

    await world.press('appr-group', 'Allow once', 'U0DAVE');
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'appr-group');
    const final = await world.waitForCard('appr-group', (m) => textOf(m).includes('Approved'));
    expect(textOf(final)).toContain('<@U0DAVE>');
  });

  it('a burst of clicks by group members costs one usergroups.users.list call', async () => {
    const { world } = await startWorld();
    const members = ['U0M1', 'U0M2', 'U0M3', 'U0M4', 'U0M5', 'U0M6'];
    world.slack.setUsergroup('S0SRE', members);
    const ids = ['appr-burst-1', 'appr-burst-2', 'appr-burst-3'];
    for (const id of ids) await openShell(world, id);
    const cards = await Promise.all(ids.map((id) => world.card(id)));

    // Two members on each card at once: one decides it, the other hears it is being decided.
    await Promise.all(
      members.map((userId, i) =>
        world.press(ids[i % ids.length]!, 'Allow once', userId, cards[i % ids.length]),
      ),
    );
    for (const id of ids) await world.host.waitForDecide((f) => f.frame.params.approvalId === id);
    await world.slack.waitForCount('chat.postEphemeral', ids.length);

    expect(world.slack.callsOf('usergroups.users.list')).toHaveLength(1);
    expect(world.host.decides()).toHaveLength(ids.length);
    // None of the six was refused for who they are.
    expect(world.bot.logs.filter((l) => l.msg === REFUSED_LOG)).toHaveLength(0);
  });

  it('the host’s owner may not approve their own agent’s request on a route with allowSelfApproval: false', async () => {
    const { world } = await startWorld();
    await openShell(world, 'appr-self');

    await world.press('appr-self', 'Allow once', 'U0BOB');
    expect(await world.ephemeralTo('U0BOB')).toBe(
      "You cannot approve your own agent's request on deploys: someone else must decide it.",
    );
    await expectRefusalLogged(world, 'U0BOB', 'selfApproval', 'click');
    expect(world.host.decides()).toHaveLength(0);
  });

  it('protected writes are decided only by protectedWriteApprovers', async () => {
    const { world } = await startWorld();
    await openShell(world, 'appr-protected', true);

    await world.press('appr-protected', 'Allow once', 'U0ALICE');
    expect(await world.ephemeralTo('U0ALICE')).toBe(
      'This is a protected write: only <@U0CAROL> can decide protected writes on deploys.',
    );
    expect(world.host.decides()).toHaveLength(0);

    await world.press('appr-protected', 'Allow once', 'U0CAROL');
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'appr-protected');
    expect(world.host.decides()).toHaveLength(1);
  });

  it('an admin decides anywhere, protected writes included', async () => {
    const { world } = await startWorld();
    await openShell(world, 'appr-admin');
    await openShell(world, 'appr-admin-protected', true);

    await world.press('appr-admin', 'Allow once', 'U0ADMIN');
    await world.press('appr-admin-protected', 'Allow once', 'U0ADMIN');
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'appr-admin');
    await world.host.waitForDecide((f) => f.frame.params.approvalId === 'appr-admin-protected');
    expect(world.bot.logs.filter((l) => l.msg === REFUSED_LOG)).toHaveLength(0);
  });

  it('an outsider pressing Reject gets no modal, only the refusal', async () => {
    const { world } = await startWorld();
    await openShell(world, 'appr-modal-open');

    await world.press('appr-modal-open', 'Reject', 'U0EVE');
    expect(await world.ephemeralTo('U0EVE')).toContain('can decide on deploys');
    await expectRefusalLogged(world, 'U0EVE', 'notApprover', 'modalOpen');
    expect(world.slack.callsOf('views.open')).toHaveLength(0);
    expect(world.host.decides()).toHaveLength(0);
  });

  it('the check is made again at modal submit: a member who left the group meanwhile is refused in the modal', async () => {
    const { world } = await startWorld({ COUNTERSIGN_USERGROUP_CACHE_TTL: '1s' });
    world.slack.setUsergroup('S0SRE', ['U0DAVE']);
    await openShell(world, 'appr-resubmit');

    await world.press('appr-resubmit', 'Reject', 'U0DAVE');
    const modal = await nthModal(world, 0);
    world.slack.setUsergroup('S0SRE', []);
    // Past the cache's lifetime, the bot must ask Slack again.
    await new Promise((r) => setTimeout(r, 1_300));

    const answer = await submit(world, modal, 'U0DAVE', { typed: 'Not now' });
    expect(answer).toEqual({
      response_action: 'errors',
      errors: {
        cs_feedback_block:
          'You are not among those who can decide on deploys (any more): Countersign sent you a message naming them.',
      },
    });
    expect(await world.ephemeralTo('U0DAVE')).toContain('members of <!subteam^S0SRE>');
    await expectRefusalLogged(world, 'U0DAVE', 'notApprover', 'modalSubmit');
    expect(world.slack.callsOf('usergroups.users.list')).toHaveLength(2);
    expect(world.host.decides()).toHaveLength(0);
  });

  it('the reject modal shows the command and the quick reasons; a required reason left empty is refused in the modal; a quick reason alone is sent', async () => {
    const { world } = await startWorld();
    await openShell(world, 'appr-reason');

    await world.press('appr-reason', 'Reject', 'U0ALICE');
    const modal = await nthModal(world, 0);
    const view = modal.args.view as { blocks: Array<Record<string, unknown>>; private_metadata: string };
    expect(JSON.stringify(view.blocks)).toContain('make deploy');
    const quick = view.blocks.find((b) => b.block_id === 'cs_quick_reason_block') as {
      element: { type: string; options: Array<{ value: string }> };
    };
    expect(quick.element.type).toBe('radio_buttons');
    expect(quick.element.options.map((o) => o.value)).toEqual(QUICK_REASONS);
    expect(JSON.stringify(view.blocks)).toContain('Reason (required)');
    expect(JSON.parse(view.private_metadata)).toMatchObject({ approvalId: 'appr-reason', choiceId: 'abort' });

    const empty = await submit(world, modal, 'U0ALICE', { typed: '   ' });
    expect(empty).toEqual({
      response_action: 'errors',
      errors: {
        cs_feedback_block: 'A reason is required to reject on deploys: type one or pick a quick reason.',
      },
    });
    expect(world.host.decides()).toHaveLength(0);

    const sent = await submit(world, modal, 'U0ALICE', { quick: 'Not during a freeze' });
    expect(sent).toEqual({});
    const decide = await world.host.waitForDecide((f) => f.frame.params.approvalId === 'appr-reason');
    expect(decide.frame.params).toMatchObject({ choiceId: 'abort', feedback: 'Not during a freeze' });
  });

  it('a Reject press sent without trigger_id, so opening no modal, is refused on a route that requires a reason: nothing is sent', async () => {
    const { world } = await startWorld();
    await openShell(world, 'appr-no-trigger');
    const card = await world.card('appr-no-trigger');
    const reject = buttonsOf(card).find((b) => b.text === 'Reject')!;
    // Signed as Slack signs it, by an approver, but without the trigger a modal needs.
    const { trigger_id: _trigger, ...press } = blockActionsPayload({
      userId: 'U0ALICE',
      channel: card.channel,
      ts: card.ts,
      actionId: reject.actionId,
      value: reject.value,
      responseUrl: world.slack.responseUrl('r-no-trigger'),
    });
    const response = await postInteraction(world.bot.url, SIGNING_SECRET, press);
    expect(response.status).toBe(200);
    expect(await world.ephemeralTo('U0ALICE')).toBe(
      'A reason is required to reject on deploys: type one or pick a quick reason. Nothing was decided: press the button again, and give the reason in the form it opens.',
    );
    expect(world.host.decides()).toHaveLength(0);
    expect(world.slack.callsOf('views.open')).toHaveLength(0);
    // Nothing was claimed: the card still offers Reject, whose press opens the reason modal.
    expect(buttonsOf(await world.card('appr-no-trigger')).map((b) => b.text)).toContain('Reject');
  });

  it('the card names who may decide, by name and without mentions', async () => {
    const started = await startWorld();
    const { world, env } = started;
    world.slack.setUser('U0ALICE', { profile: { display_name: 'alice' } });
    world.slack.setUser('U0BOB', { profile: { display_name: 'bob' } });
    world.slack.setUser('U0CAROL', { profile: { display_name: '<!channel> carol' } });
    world.slack.setUsergroup('S0SRE', [], 'sre');
    // Names are read at start-up: start again with Slack knowing them.
    await world.bot.stop();
    await world.restartBot(env);

    await openShell(world, 'appr-names');
    const card = await world.card('appr-names');
    expect(textOf(card)).toContain('Approvers: alice, bob, sre · not the requester (bob)');
    await openShell(world, 'appr-names-protected', true);
    const protectedCard = await world.card('appr-names-protected');
    expect(textOf(protectedCard)).toContain('Approvers: &lt;!channel&gt; carol · not the requester (bob)');
    for (const shown of [card, protectedCard]) {
      expect(textOf(shown)).not.toMatch(/<@|<!subteam|<!channel>/);
    }
  });
});
