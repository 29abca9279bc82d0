// A question asked again on another route, end to end: the real bot reading a config file with a
// lax dev route and a strict prod route (its own approvers, a quorum of 2), the fake host and the
// fake Slack. The host asks an approvalId with a harmless command in a dev workspace, then asks
// the same approvalId again (approval/requested) or updates it (approval/updated) with `rm -rf` in
// production. The card stays in the dev channel, before the dev approvers: their click must not
// decide the production request.

import { afterEach, describe, expect, it } from 'vitest';
import { FakeHost, shellApproval } from '../support/fakeHost.js';
import { FakePagerDuty } from '../support/fakePagerDuty.js';
import {
  type ConfigSpec,
  configFile,
  ladder,
  mainHost,
  type RouteSpec,
  route,
  users,
} from './fixtures/config.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

function routes(hostCommand: string, dev: Partial<RouteSpec> = {}): ConfigSpec {
  return {
    hosts: [mainHost(hostCommand, { owner: 'U0BOB' })],
    routes: [
      route('prod', {
        channel: 'C0PROD',
        match: { workspaces: ['/srv/prod/**'] },
        approvers: { usergroups: ['S0SRE'] },
        allowSelfApproval: false,
        quorum: 2,
      }),
      route('dev', {
        channel: 'C0DEV',
        match: { workspaces: ['/srv/dev/**'] },
        approvers: users('U0ALICE'),
        ...dev,
      }),
    ],
  };
}

/** `dev`: more of the dev route (its escalation); `pd`: the PagerDuty the bot pages. */
async function startWorld(dev: Partial<RouteSpec> = {}, pd?: FakePagerDuty): Promise<World> {
  const seed = { sessions: [{ sessionId: SESSION, title: 'Ship it' }] };
  const probe = await FakeHost.start(seed);
  const command = probe.command;
  await probe.close();
  const config = configFile(routes(command, dev));
  cleanups.push(config.remove);
  const world = await World.start(seed, {
    COUNTERSIGN_CONFIG: config.path,
    MSP_HOST_COMMAND: '',
    ...(pd ? pd.env() : {}),
  });
  cleanups.push(() => world.close());
  world.slack.setUsergroup('S0SRE', ['U0CAROL', 'U0DAVE']);
  return world;
}

function inWorkspace(approvalId: string, workspaceRoot: string, argv: string[]) {
  return shellApproval({ approvalId, sessionId: SESSION, stages: [argv], workspaceRoot });
}

const PROD_DELETE = ['rm', '-rf', '/srv/prod/data'];

function decidesOf(world: World, approvalId: string) {
  return world.host.decides().filter((d) => d.frame.params.approvalId === approvalId);
}

const settle = () => new Promise((r) => setTimeout(r, 300));

/** The dev card of `approvalId`, asked with a harmless command, with its buttons. */
async function devCard(world: World, approvalId: string) {
  await world.host.open(inWorkspace(approvalId, '/srv/dev/app', ['ls']));
  const card = await world.waitForCard(approvalId, (m) => buttonsOf(m).length > 0);
  expect(card.channel).toBe('C0DEV');
  return card;
}

/** After the change: the card has no buttons, says why, and a dev approver's click decides nothing. */
async function notDecidedOnDev(world: World, approvalId: string, shown: Awaited<ReturnType<typeof devCard>>) {
  // The dev card now shows the production command.
  const now = await world.waitForCard(approvalId, (m) => textOf(m).includes('rm -rf /srv/prod/data'));
  expect(now.channel).toBe('C0DEV');
  // Alice, a dev approver, presses "Allow once": on the card as it is, or, with no buttons
  // there, on the one shown before the change.
  await world.press(approvalId, 'Allow once', 'U0ALICE', buttonsOf(now).length > 0 ? now : shown);
  await settle();
  expect(decidesOf(world, approvalId)).toEqual([]);
  expect(await world.ephemeralTo('U0ALICE')).toContain('changed route');
  const changed = await world.waitForCard(approvalId, (m) => textOf(m).includes('changed route'));
  expect(buttonsOf(changed)).toEqual([]);
  expect(textOf(changed)).toContain('from route dev to prod');
  // The host's approval is still pending there: nothing was decided for it.
  expect(world.host.pendingApprovals(SESSION).map((a) => a.approvalId)).toContain(approvalId);
  const warned = world.bot.logs.filter(
    (l) => l.json?.approvalId === approvalId && l.json.routeNow === 'prod' && l.json.route === 'dev',
  );
  expect(warned.length).toBeGreaterThan(0);
  expect(warned[0]!.json).toMatchObject({ hostId: 'main', level: 40 });
}

describe('an approval asked again on another route', () => {
  it('re-asked (approval/requested) in production: the dev approvers do not decide it', async () => {
    const world = await startWorld();
    const shown = await devCard(world, 'rr-requested');
    await world.host.open(inWorkspace('rr-requested', '/srv/prod', PROD_DELETE), { via: 'requested' });
    await notDecidedOnDev(world, 'rr-requested', shown);
  });

  it('updated (approval/updated) to production: the dev approvers do not decide it', async () => {
    const world = await startWorld();
    const shown = await devCard(world, 'rr-updated');
    const prod = inWorkspace('rr-updated', '/srv/prod', PROD_DELETE);
    await world.host.update({
      approvalId: 'rr-updated',
      patch: { subject: prod.subject, rawArgs: prod.rawArgs },
      change: { kind: 'subjectChanged' },
    });
    await notDecidedOnDev(world, 'rr-updated', shown);
  });

  it('escalated on dev, re-asked in production: the dev on-call is not paged, its timeout not tried again', async () => {
    const pd = await FakePagerDuty.start();
    cleanups.push(() => pd.close());
    const world = await startWorld(
      { escalation: ladder(['3s', 'page', undefined, { includeRequest: true }], ['4s', 'timeout']) },
      pd,
    );
    const shown = await devCard(world, 'rr-paged');
    await world.host.open(inWorkspace('rr-paged', '/srv/prod', PROD_DELETE), { via: 'requested' });
    await notDecidedOnDev(world, 'rr-paged', shown);
    // Past both steps' times, and a timeout's first retries.
    await new Promise((r) => setTimeout(r, 6_000));
    expect(pd.eventsOf('trigger')).toEqual([]);
    expect(decidesOf(world, 'rr-paged')).toEqual([]);
    const timeouts = world.bot.logs.filter((l) => String(l.json?.msg).startsWith('escalation timeout'));
    expect(timeouts).toEqual([]);
  });
});
