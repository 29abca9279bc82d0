// What a remembered grant belongs to, end to end: the real bot reading a config file with two
// routes, a fake host owned by Bob, the fake Slack and the tests' Redis. A grant answers only
// requests placed on the route it was made on: a lenient route's grant never decides what a
// stricter route would show to its own approvers. And it is the last presser's: "don't ask again"
// pressed for a key that has a grant replaces it with theirs, scope and all, and says so.

import { afterEach, describe, expect, it } from 'vitest';
import { readGrantAudit } from '../../src/store/grantAudit.js';
import { FakeHost, shellApproval } from '../support/fakeHost.js';
import { until } from '../support/until.js';
import { type ConfigSpec, configFile, mainHost, route, users } from './fixtures/config.js';
import { cardPostedFor, grantFrom, storeOf } from './grantSteps.js';
import { commandAnswer } from './teamSetup.js';
import { buttonsOf, rememberButtonsOf, SESSION, textOf, World } from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

/**
 * Bob owns the host's agent. `prod` places what runs in /srv/prod: only the SRE group decides,
 * and never the owner. `dev` places what runs in /srv/dev: Alice or Bob decide. Both bind their
 * grants to the host, so a grant's caller is the same on either route.
 */
function routes(hostCommand: string): ConfigSpec {
  return {
    hosts: [mainHost(hostCommand, { owner: 'U0BOB' })],
    routes: [
      route('prod', {
        channel: 'C0PROD',
        match: { workspaces: ['/srv/prod/**'] },
        approvers: { usergroups: ['S0SRE'] },
        allowSelfApproval: false,
        grants: { caller: 'host' },
      }),
      route('dev', {
        channel: 'C0DEV',
        match: { workspaces: ['/srv/dev/**'] },
        approvers: users('U0ALICE', 'U0BOB'),
        grants: { caller: 'host', ttl: '8h', maxTtl: '1d', choices: ['8h', '1h'] },
      }),
    ],
  };
}

async function startWorld(): Promise<World> {
  const seed = { sessions: [{ sessionId: SESSION, title: 'Ship it' }] };
  // The host is started first so that the file can name its command; World gets it via its seed.
  const probe = await FakeHost.start(seed);
  const command = probe.command;
  await probe.close();
  const config = configFile(routes(command));
  cleanups.push(config.remove);
  const world = await World.start(seed, { COUNTERSIGN_CONFIG: config.path, MSP_HOST_COMMAND: '' });
  cleanups.push(() => world.close());
  world.slack.setUsergroup('S0SRE', ['U0CAROL']);
  return world;
}

/** `argv` run in the workspace `workspaceRoot`, which picks its route. */
function inWorkspace(approvalId: string, workspaceRoot: string, argv: string[]) {
  return shellApproval({ approvalId, sessionId: SESSION, stages: [argv], workspaceRoot });
}

function decidesOf(world: World, approvalId: string) {
  return world.host.decides().filter((d) => d.frame.params.approvalId === approvalId);
}

describe('a grant answers only its own route', () => {
  it('a grant made on the lenient route never decides the same request placed by the strict one', async () => {
    const world = await startWorld();
    const grantId = await grantFrom(
      world,
      inWorkspace('r-dev-grant', '/srv/dev/app', ['make', 'migrate']),
      'For 8 h',
      'U0BOB',
    );
    expect(await storeOf(world).get(grantId)).toMatchObject({ caller: 'host:main', route: 'dev' });

    // On its own route it answers: the grant works, and the caller is the same on both routes.
    await world.host.open(inWorkspace('r-dev-again', '/srv/dev/app', ['make', 'migrate']));
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'r-dev-again');
    await until(async () => (await storeOf(world).get(grantId))?.uses === 1);
    expect(cardPostedFor(world, 'r-dev-again')).toBe(false);

    // The same command from a production workspace: the SREs are asked, on their own channel.
    await world.host.open(inWorkspace('r-prod', '/srv/prod/app', ['make', 'migrate']));
    const card = await world.waitForCard('r-prod', (m) => buttonsOf(m).length > 0);
    expect(card.channel).toBe('C0PROD');
    expect(decidesOf(world, 'r-prod')).toHaveLength(0);
    // Nor does the owner's grant let their own request through there (allowSelfApproval: false).
    await world.press('r-prod', 'Allow once', 'U0BOB', card);
    expect(await world.ephemeralTo('U0BOB')).toContain('own agent');
    expect(decidesOf(world, 'r-prod')).toHaveLength(0);
    expect((await storeOf(world).get(grantId))?.uses).toBe(1);

    // Its approvers still decide it.
    await world.press('r-prod', 'Allow once', 'U0CAROL', card);
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'r-prod');
    expect(decidesOf(world, 'r-prod')).toHaveLength(1);
  });
});

describe('granting the same request again', () => {
  it('a new "don\'t ask again" replaces the live grant: the presser\'s, with their shorter scope; the audit has both', async () => {
    const world = await startWorld();
    const store = storeOf(world);
    // Bob's card for the request is shown before Alice grants it from hers.
    const make = (id: string) => inWorkspace(id, '/srv/dev/app', ['make', 'seed']);
    await world.host.open(make('re-bob'));
    const bobCard = await world.waitForCard('re-bob', (m) => buttonsOf(m).length > 0);

    const alices = await grantFrom(world, make('re-alice'), 'For 8 h', 'U0ALICE');
    const before = Date.now();
    const button = rememberButtonsOf(bobCard).find((b) => b.text === 'For 1 h');
    await world.pressButton(bobCard.ts, button!, 'U0BOB', bobCard.channel);
    const done = await world.waitForCard('re-bob', (m) => textOf(m).includes('Remembered:'));
    const bobs = /revoke ([\w-]+)/.exec(textOf(done))?.[1];
    expect(bobs).toBeDefined();
    expect(bobs).not.toBe(alices);

    // Bob's, for an hour from his press, on his route and channel; Alice's ended then.
    const bobGrant = await store.get(bobs!);
    expect(bobGrant).toMatchObject({
      grantedBy: 'U0BOB',
      approvalId: 're-bob',
      route: 'dev',
      channel: 'C0DEV',
      lasts: { kind: 'time', ms: 3_600_000 },
    });
    expect(Date.parse(bobGrant!.expiresAt!)).toBeGreaterThanOrEqual(before + 3_600_000 - 1_000);
    expect(Date.parse(bobGrant!.expiresAt!)).toBeLessThanOrEqual(Date.now() + 3_600_000);
    expect(await store.get(alices)).toMatchObject({ revokedBy: 'U0BOB', replacedBy: bobs });

    // The channel's list shows Bob's grant, to expire within the hour, and not Alice's.
    const listing = JSON.stringify((await commandAnswer(world, 'U0BOB', 'grants', 'C0DEV')).body.blocks);
    expect(listing).toContain(bobs);
    expect(listing).not.toContain(alices);
    expect(listing).toMatch(/expires in (59 min|1 h)/);
    expect(listing).toMatch(/granted by (u0bob|<@U0BOB>)/);

    // The next such request is answered by Bob's grant.
    await world.host.open(make('re-next'));
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 're-next');
    await until(async () => (await store.get(bobs!))?.uses === 1);
    expect((await store.get(alices))?.uses).toBe(0);
    expect(cardPostedFor(world, 're-next')).toBe(false);

    // Alice's id now says what took its place.
    const revoke = await commandAnswer(world, 'U0ALICE', `revoke ${alices}`, 'C0DEV');
    expect(String(revoke.body.text)).toContain(`was replaced by grant \`${bobs}\` of <@U0BOB>`);

    // The "used" entry is written just after the use is counted.
    await until(async () => (await readGrantAudit(world.redis)).length >= 4);
    const audit = await readGrantAudit(world.redis);
    expect(audit.map((e) => e.kind)).toEqual(['created', 'created', 'replaced', 'used']);
    expect(audit[0]).toMatchObject({ kind: 'created', grant: { grantId: alices, grantedBy: 'U0ALICE' } });
    expect(audit[1]).toMatchObject({
      kind: 'created',
      grant: { grantId: bobs, grantedBy: 'U0BOB', expiresAt: bobGrant!.expiresAt },
      replaces: { grantId: alices, grantedBy: 'U0ALICE' },
    });
    expect(audit[2]).toMatchObject({ kind: 'replaced', grantId: alices, by: 'U0BOB', replacedBy: bobs });
    expect(audit[3]).toMatchObject({ kind: 'used', grantId: bobs, approvalId: 're-next' });
  });
});
