// When a rule cannot be found, the strictest reading applies, end to end: a card whose route was
// taken out of the file keeps its quorum and bars the host's owner; a decision word the bot does
// not know needs the quorum like an approval; a user group Slack will not list lets nobody in.

import { afterEach, describe, expect, it } from 'vitest';
import { type ApprovalRequestParams, shellApproval } from '../support/fakeHost.js';
import { type ConfigSpec, configFile, mainHost, route, users } from './fixtures/config.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

/** A config file whose hosts list names the fake host's command (`spec` is given that command). */
function file(spec: ConfigSpec): string {
  const config = configFile(spec);
  cleanups.push(config.remove);
  return config.path;
}

async function startWorld(spec: (command: string) => ConfigSpec): Promise<World> {
  // A host that, respawned, asks again what was pending under the same ids (as a durable one does).
  const world = await World.start({ recovery: 'sameId' }, (host) => ({
    COUNTERSIGN_CONFIG: file(spec(host.command)),
    MSP_HOST_COMMAND: '',
  }));
  cleanups.push(() => world.close());
  return world;
}

/**
 * Kills the bot and starts it again with another file; resolves once the host, respawned, has
 * listed its pending approvals to it (they come back to the same cards).
 */
async function restartWith(world: World, spec: (command: string) => ConfigSpec): Promise<void> {
  await world.bot.kill();
  await world.restartBot({ COUNTERSIGN_CONFIG: file(spec(world.host.command)), MSP_HOST_COMMAND: '' });
  await world.host.waitForIncarnation(2, 15_000);
  await world.host.waitForMethod('approval/listPending', (f) => f.incarnation === 2);
}

async function open(world: World, approval: ApprovalRequestParams): Promise<void> {
  await world.host.open(approval, { via: 'both' });
  await world.waitForCard(approval.approvalId, (m) => buttonsOf(m).length > 0);
}

function shell(approvalId: string): ApprovalRequestParams {
  return shellApproval({ approvalId, sessionId: SESSION, stages: [['make', 'deploy']] });
}

describe('fail closed', () => {
  it('a route taken out of the file, no admins: the new route’s approvers decide, with the old quorum, never the owner', async () => {
    const world = await startWorld((command) => ({
      hosts: [mainHost(command, { owner: 'U0DAVE' })],
      routes: [route('deploys', { approvers: users('U0ALICE', 'U0CAROL'), quorum: 2 })],
    }));
    await open(world, shell('gone-0001'));
    await restartWith(world, (command) => ({
      hosts: [mainHost(command, { owner: 'U0DAVE' })],
      routes: [
        route('deploys-v2', {
          match: { tools: ['bash'], workspaces: ['/srv/**'] },
          approvers: users('U0ALICE', 'U0DAVE', 'U0FRANK'),
          allowSelfApproval: true,
        }),
        route('everything-else', { approvers: users('U0CAROL') }),
      ],
    }));
    // Dave owns the agent: the route that would place it now lets owners decide, the gone one may not have.
    await world.press('gone-0001', 'Allow once', 'U0DAVE');
    expect(await world.ephemeralTo('U0DAVE')).toBe(
      "You cannot approve your own agent's request on deploys: someone else must decide it.",
    );
    // Carol was an approver of the route that is gone, not of the one that would place it now
    // (matched on the record's tool and workspace; she decides everything else).
    await world.press('gone-0001', 'Allow once', 'U0CAROL');
    expect(await world.ephemeralTo('U0CAROL')).toContain('can decide on deploys');
    // The quorum the card was placed with holds, though the new route has none.
    await world.press('gone-0001', 'Allow once', 'U0ALICE');
    expect(await world.ephemeralTo('U0ALICE')).toMatch(/^Your approval is counted: 1 of 2\./);
    expect(world.host.decides()).toHaveLength(0);
    await world.press('gone-0001', 'Allow once', 'U0FRANK');
    const decide = await world.host.waitForDecide((d) => d.frame.params.approvalId === 'gone-0001');
    expect(decide.frame.params.choiceId).toBe('allow_once');
    expect(world.host.decides()).toHaveLength(1);
  });

  it('a route taken out of the file, with admins: only they decide, and the owner rule binds them', async () => {
    const world = await startWorld((command) => ({
      hosts: [mainHost(command, { owner: 'U0ADA' })],
      routes: [route('deploys', { approvers: users('U0ALICE'), allowSelfApproval: true })],
      admins: ['U0ADA', 'U0ADMIN'],
    }));
    await open(world, shell('gone-0002'));
    await restartWith(world, (command) => ({
      hosts: [mainHost(command, { owner: 'U0ADA' })],
      routes: [route('renamed', { approvers: users('U0ALICE'), allowSelfApproval: true })],
      admins: ['U0ADA', 'U0ADMIN'],
    }));
    await world.press('gone-0002', 'Allow once', 'U0ALICE');
    expect(await world.ephemeralTo('U0ALICE')).toBe(
      'The route this card was posted by (deploys) is no longer configured, so only admins can decide on it.',
    );
    await world.press('gone-0002', 'Allow once', 'U0ADA');
    expect(await world.ephemeralTo('U0ADA')).toBe(
      "You cannot approve your own agent's request on deploys: someone else must decide it.",
    );
    expect(world.host.decides()).toHaveLength(0);
    await world.press('gone-0002', 'Allow once', 'U0ADMIN');
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'gone-0002');
    expect(world.host.decides()).toHaveLength(1);
  });

  it('a decision word the bot does not know needs the quorum, like an approval', async () => {
    const world = await startWorld((command) => ({
      hosts: [mainHost(command)],
      routes: [route('pairs', { approvers: users('U0ALICE', 'U0BOB'), quorum: 2 })],
    }));
    const approval = shell('word-0001');
    approval.availableChoices = [
      { choiceId: 'go_ahead', label: 'Go ahead', decision: 'proceedUnchecked', scope: 'once' },
      { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once' },
    ];
    await open(world, approval);
    expect(textOf(await world.card('word-0001'))).toContain('Needs 2 approvals');
    await world.press('word-0001', 'Go ahead', 'U0ALICE');
    expect(await world.ephemeralTo('U0ALICE')).toMatch(/^Your approval is counted: 1 of 2\./);
    expect(world.host.decides()).toHaveLength(0);
    await world.press('word-0001', 'Go ahead', 'U0BOB');
    const decide = await world.host.waitForDecide((d) => d.frame.params.approvalId === 'word-0001');
    expect(decide.frame.params.choiceId).toBe('go_ahead');
  });

  it('a user group Slack will not list lets none of its members decide', async () => {
    const world = await startWorld((command) => ({
      hosts: [mainHost(command)],
      routes: [route('sre', { approvers: { usergroups: ['S0SRE'] } })],
    }));
    world.slack.setUsergroup('S0SRE', ['U0CAROL']);
    world.slack.failNext('usergroups.users.list', 'missing_scope', Number.POSITIVE_INFINITY);
    await open(world, shell('grp-0001'));
    await world.press('grp-0001', 'Allow once', 'U0CAROL');
    expect(await world.ephemeralTo('U0CAROL')).toBe('Only members of <!subteam^S0SRE> can decide on sre.');
    expect(world.host.decides()).toHaveLength(0);
    expect(world.slack.callsOf('usergroups.users.list').length).toBeGreaterThan(0);
    await world.bot.waitForLog((l) => l.msg === 'could not read user group members');
    // Once Slack answers again, the same member decides.
    world.slack.heal('usergroups.users.list');
    await world.press('grp-0001', 'Allow once', 'U0CAROL');
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'grp-0001');
  });

  it('choices under one id are not offered, and a label that misleads is said in the bot’s words', async () => {
    const world = await startWorld((command) => ({
      hosts: [mainHost(command)],
      routes: [route('deploys', { approvers: users('U0ALICE') })],
    }));
    const approval = shell('menu-0001');
    approval.availableChoices = [
      { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
      { choiceId: 'allow_once', label: 'Allow once', decision: 'approvedPolicyAmendment', scope: 'once' },
      { choiceId: 'keep', label: 'Deny', decision: 'approvedPolicyAmendment', scope: 'localPersistent' },
      { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once' },
    ];
    await open(world, approval);
    const card = await world.card('menu-0001');
    const text = textOf(card);
    expect(text).toContain('2 choices the host offered under a shared id are not offered here');
    expect(text).toContain('“Deny” approves, and the host keeps it as a rule for good');
    const buttons = buttonsOf(card);
    expect(buttons.map((b) => b.text)).toEqual(['Deny', 'Reject']);
    expect(JSON.stringify(buttons[0]!.confirm)).toContain('Allow this for good?');
    await world.press('menu-0001', 'Reject', 'U0ALICE');
    const decide = await world.host.waitForDecide((d) => d.frame.params.approvalId === 'menu-0001');
    expect(decide.frame.params.choiceId).toBe('abort');
  });
});
