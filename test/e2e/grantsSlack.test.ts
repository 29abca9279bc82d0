// Seeing and revoking remembered grants from Slack, end to end: the real bot with the team's
// routes, grants written into its Redis through the store itself, signed slash commands and
// Revoke presses (from the ephemeral list and from App Home), and what reaches Slack and Redis.

import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { REVOKE_GRANT_ACTION_ID } from '../../src/cards/ids.js';
import type { Grant, GrantStore } from '../../src/domain/grants/grant.js';
import { RedisGrantStore } from '../../src/store/grantStore.js';
import { keys } from '../../src/store/keys.js';
import { SIGNING_SECRET } from '../support/bot.js';
import type { ResponseUrlPost, SlackCall } from '../support/fakeSlack.js';
import { captureLogger } from '../support/logCapture.js';
import { blockActionsPayload, postInteraction } from '../support/slackRequests.js';
import { testRedisUrl } from '../support/testRedis.js';
import { probeUntil } from '../support/until.js';
import { commandAnswer, openHome, startTeamWorld } from './teamSetup.js';
import { SESSION, type World } from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

const HOUR = 3_600_000;

interface Team {
  world: World;
  store: GrantStore;
}

async function team(): Promise<Team> {
  const world = await startTeamWorld(cleanups);
  world.slack.setUsergroup('S0SRE', ['U0CAROL']);
  // The bot's own Redis database, through a store of the test's: what one replica writes, all read.
  const redis = new Redis(testRedisUrl(world.redisDb));
  cleanups.push(() => redis.quit());
  return { world, store: new RedisGrantStore(redis, { logger: captureLogger().logger, auditMaxLen: 1_000 }) };
}

type Input = Parameters<GrantStore['create']>[0];

function deployGrant(extra: Partial<Input> = {}): Input {
  return {
    caller: `session:${SESSION}`,
    tool: 'deploy',
    capabilities: ['exec:echo <!channel>'],
    sandboxMode: 'workspace-write',
    holder: 'bot',
    grantedBy: 'U0ALICE',
    approvalId: 'deploy-1',
    hostId: 'main',
    route: 'deploys',
    channel: 'C0DEPLOYS',
    ttlMs: 8 * HOUR,
    ...extra,
  };
}

function shellGrant(extra: Partial<Input> = {}): Input {
  return deployGrant({
    tool: 'shell',
    capabilities: ['exec:make test'],
    grantedBy: 'U0BOB',
    approvalId: 'shell-1',
    route: 'shell',
    channel: 'C0SHELL',
    ...extra,
  });
}

function hostGrant(): Input {
  return deployGrant({
    holder: 'host',
    approvalId: 'deploy-host',
    rulePreview: 'allow kubectl get <@U0BOSS>',
    scope: 'localPersistent',
    ttlMs: undefined,
  });
}

interface Entry {
  text: string;
  button?: { action_id: string; value: string; text: { text: string } };
}

/** The grant entries of a list: each section that names a grant id, with its button. */
function entries(blocks: unknown, grants: readonly Grant[]): Map<string, Entry> {
  const out = new Map<string, Entry>();
  for (const block of blocks as Array<{
    type: string;
    text?: { text: string };
    accessory?: Entry['button'];
  }>) {
    if (block.type !== 'section' || !block.text) continue;
    const grant = grants.find((g) => block.text!.text.includes(`\`${g.grantId}\``));
    if (grant)
      out.set(grant.grantId, {
        text: block.text.text,
        ...(block.accessory ? { button: block.accessory } : {}),
      });
  }
  return out;
}

async function live(store: GrantStore, grant: Grant): Promise<boolean> {
  const found = await store.candidates(grant, new Date());
  return found.some((g) => g.grantId === grant.grantId);
}

/** Presses a Revoke button in a message (the ephemeral /countersign grants answer). */
async function pressRevoke(
  world: World,
  userId: string,
  channel: string,
  grantId: string,
  responseId: string,
) {
  const response = await postInteraction(
    world.bot.url,
    SIGNING_SECRET,
    blockActionsPayload({
      userId,
      channel,
      ts: '1700000000.000100',
      ephemeral: true,
      actionId: REVOKE_GRANT_ACTION_ID,
      value: grantId,
      responseUrl: world.slack.responseUrl(responseId),
    }),
  );
  expect(response.status).toBe(200);
  return world.slack.waitForResponse((r) => r.id === responseId);
}

async function channelLine(world: World, channel: string, includes: string): Promise<string> {
  const call = await world.slack.waitFor(
    'chat.postMessage',
    (c) => c.args.channel === channel && String(c.args.text).includes(includes),
  );
  return String(call.args.text);
}

async function refusals(world: World): Promise<Array<Record<string, string>>> {
  const entries = await world.redis.xrange(keys.refusals, '-', '+');
  return entries
    .map(([, fields]) => {
      const entry: Record<string, string> = {};
      for (let i = 0; i + 1 < fields.length; i += 2) entry[fields[i]!] = fields[i + 1]!;
      return entry;
    })
    .filter((e) => e.kind === 'refusal');
}

function answerText(answer: ResponseUrlPost): string {
  return String(answer.body.text);
}

describe('grants in Slack', () => {
  it('/countersign grants lists the channel’s grants with a Revoke button each (host-kept: its rule, no button); an admin sees all', async () => {
    const { world, store } = await team();
    const deploy = await store.create(deployGrant());
    await store.recordUse(deploy, 'deploy-2', 0, new Date());
    const shell = await store.create(shellGrant());
    const host = await store.create(hostGrant());
    const all = [deploy, shell, host];

    // Bob may not decide on deploys: typed in its channel, the command shows him none of its grants.
    const bobThere = await commandAnswer(world, 'U0BOB', 'grants', 'C0DEPLOYS');
    expect(entries(bobThere.body.blocks, all).size).toBe(0);
    expect(answerText(bobThere)).toBe('No active grants in <#C0DEPLOYS>.');
    // Carol, in @sre, may: she sees them.
    const bob = await commandAnswer(world, 'U0CAROL', 'grants', 'C0DEPLOYS');
    const listed = entries(bob.body.blocks, all);
    expect([...listed.keys()].sort()).toEqual([deploy.grantId, host.grantId].sort());
    const line = listed.get(deploy.grantId)!;
    expect(line.text).toContain('*`deploy`*');
    expect(line.text).toContain('`echo &lt;!channel&gt;`');
    expect(line.text).toContain(`in session \`${SESSION}\``);
    expect(line.text).toContain('sandbox `workspace-write`');
    expect(line.text).toContain('granted by <@U0ALICE>');
    expect(line.text).toMatch(/until <!date\^\d+\^/);
    expect(line.text).toContain('used once');
    expect(line.button).toMatchObject({ action_id: REVOKE_GRANT_ACTION_ID, value: deploy.grantId });
    const kept = listed.get(host.grantId)!;
    expect(kept.button).toBeUndefined();
    expect(kept.text).toContain('Kept by the host (localPersistent)');
    expect(kept.text).toContain('`allow kubectl get &lt;@U0BOSS&gt;`');
    expect(kept.text).toContain('remove it on the host side');
    expect(JSON.stringify(bob.body)).not.toMatch(/<!channel>|<@U0BOSS>/);

    // In the shell channel, only the shell grant, to one who decides there; Eve sees none.
    const inShell = await commandAnswer(world, 'U0BOB', 'grants', 'C0SHELL');
    expect([...entries(inShell.body.blocks, all).keys()]).toEqual([shell.grantId]);
    const eveInShell = await commandAnswer(world, 'U0EVE', 'grants', 'C0SHELL');
    expect(entries(eveInShell.body.blocks, all).size).toBe(0);
    // The admin sees every grant, wherever they ask.
    const ada = await commandAnswer(world, 'U0ADA', 'grants', 'C0SHELL');
    expect([...entries(ada.body.blocks, all).keys()].sort()).toEqual(all.map((g) => g.grantId).sort());
    expect(JSON.stringify(ada.body.blocks)).toContain('you are an admin');
    // A channel without grants says so.
    expect(answerText(await commandAnswer(world, 'U0EVE', 'grants', 'C0OTHER'))).toBe(
      'No active grants in <#C0OTHER>.',
    );
  }, 60_000);

  it('the Revoke button revokes at once, tells the channel who revoked what and the person that it is done', async () => {
    const { world, store } = await team();
    const deploy = await store.create(deployGrant());
    expect(await live(store, deploy)).toBe(true);

    const listing = await commandAnswer(world, 'U0CAROL', 'grants', 'C0DEPLOYS');
    const button = entries(listing.body.blocks, [deploy]).get(deploy.grantId)!.button!;
    // Carol is in @sre, who may decide on deploys: she may revoke Alice's grant.
    const answer = await pressRevoke(world, 'U0CAROL', 'C0DEPLOYS', button.value, 'revoke-carol');
    expect(answer.body).toMatchObject({ response_type: 'ephemeral', replace_original: false });
    expect(answerText(answer)).toMatch(/^:white_check_mark: You revoked grant `/);
    expect(await live(store, deploy)).toBe(false);
    expect((await store.get(deploy.grantId))?.revokedBy).toBe('U0CAROL');
    const line = await channelLine(world, 'C0DEPLOYS', deploy.grantId);
    expect(line).toContain('was revoked by u0carol');
    expect(line).toContain('granted by u0alice');
    expect(line).toContain('`echo &lt;!channel&gt;`');
    expect(line).not.toContain('<!channel>');
    // Gone from the list; pressing again says it was already revoked, and by whom.
    const after = await commandAnswer(world, 'U0CAROL', 'grants', 'C0DEPLOYS');
    expect(entries(after.body.blocks, [deploy]).size).toBe(0);
    const again = await pressRevoke(world, 'U0ALICE', 'C0DEPLOYS', deploy.grantId, 'revoke-again');
    expect(answerText(again)).toContain('was already revoked by <@U0CAROL>');
  }, 60_000);

  it('a Revoke button whose response_url refuses the answer tells the person in an ephemeral message', async () => {
    const { world, store } = await team();
    const deploy = await store.create(deployGrant());
    world.slack.refuseResponses();
    const response = await postInteraction(
      world.bot.url,
      SIGNING_SECRET,
      blockActionsPayload({
        userId: 'U0CAROL',
        channel: 'C0DEPLOYS',
        ts: '1700000000.000100',
        ephemeral: true,
        actionId: REVOKE_GRANT_ACTION_ID,
        value: deploy.grantId,
        responseUrl: world.slack.responseUrl('revoke-refused'),
      }),
    );
    expect(response.status).toBe(200);
    const told = await probeUntil('the ephemeral answer', () =>
      world.slack.ephemerals.find((e) => e.user === 'U0CAROL'),
    );
    expect(told.channel).toBe('C0DEPLOYS');
    expect(told.text).toMatch(/^:white_check_mark: You revoked grant `/);
    expect(world.slack.refusedResponses.map((r) => r.id)).toEqual(['revoke-refused']);
    expect(await live(store, deploy)).toBe(false);
  }, 60_000);

  it('/countersign revoke <id> revokes for the granter; an unknown id and a host-kept grant get a clear answer', async () => {
    const { world, store } = await team();
    const shell = await store.create(shellGrant());
    const host = await store.create(hostGrant());

    const bob = await commandAnswer(world, 'U0BOB', `revoke ${shell.grantId}`, 'C0APPROVALS');
    expect(answerText(bob)).toMatch(/^:white_check_mark: You revoked grant `/);
    expect(await live(store, shell)).toBe(false);
    expect(await channelLine(world, 'C0SHELL', shell.grantId)).toContain('was revoked by u0bob');

    const unknown = await commandAnswer(world, 'U0BOB', 'revoke 0123456789-nosuchgrant');
    expect(answerText(unknown)).toMatch(/^There is no grant `0123456789-nosuchgrant`/);
    const kept = await commandAnswer(world, 'U0ADA', `revoke ${host.grantId}`);
    expect(answerText(kept)).toContain('is kept by the agent host');
    expect(answerText(kept)).toContain('Nothing was changed.');
    expect((await store.get(host.grantId))?.revokedAt).toBeUndefined();
  }, 60_000);

  it('someone who neither decides on its route nor is an admin is refused as for an unknown id, and audited', async () => {
    const { world, store } = await team();
    const deploy = await store.create(deployGrant());
    // A guest of the team and a user of another one, holding a leaked id.
    world.slack.setUser('U0GUEST', { team_id: 'T1', is_restricted: true, real_name: 'Guest' });
    world.slack.setUser('U0PARTNER', { team_id: 'T0PARTNER', real_name: 'Partner' });
    const unknownId = `${deploy.grantId.slice(0, -4)}zzzz`;
    /** The answer for an id that names no grant: a refusal must not be told from it. */
    const asUnknown = (text: string) => text.replace(deploy.grantId, unknownId);
    const unknown = answerText(await commandAnswer(world, 'U0EVE', `revoke ${unknownId}`, 'C0DEPLOYS'));
    expect(unknown).toMatch(/^There is no grant `/);

    const eve = answerText(await commandAnswer(world, 'U0EVE', `revoke ${deploy.grantId}`, 'C0DEPLOYS'));
    const guest = answerText(await commandAnswer(world, 'U0GUEST', `revoke ${deploy.grantId}`, 'C0DEPLOYS'));
    const partner = answerText(await commandAnswer(world, 'U0PARTNER', `revoke ${deploy.grantId}`));
    for (const text of [eve, guest, partner]) {
      expect(asUnknown(text)).toBe(unknown);
      // Nothing of the grant: not its route, who may decide on it, nor who granted it.
      expect(text).not.toMatch(/deploys|U0ALICE|S0SRE|C0DEPLOYS|subteam|<@/);
    }
    // Bob approves shell, not deploys: his button press is refused too.
    const bob = await pressRevoke(world, 'U0BOB', 'C0DEPLOYS', deploy.grantId, 'revoke-bob');
    expect(asUnknown(answerText(bob))).toBe(unknown);
    expect(await live(store, deploy)).toBe(true);
    await expect
      .poll(() => refusals(world))
      .toEqual([
        expect.objectContaining({
          userId: 'U0EVE',
          action: 'command',
          grantId: deploy.grantId,
          route: 'deploys',
          reason: 'notApprover',
        }),
        expect.objectContaining({ userId: 'U0GUEST', grantId: deploy.grantId, reason: 'guest' }),
        expect.objectContaining({ userId: 'U0PARTNER', grantId: deploy.grantId, reason: 'external' }),
        expect.objectContaining({ userId: 'U0BOB', action: 'revokeButton', grantId: deploy.grantId }),
      ]);
    // In their own stream: none in the decisions' audit stream.
    expect((await world.auditEntries()).filter((e) => e.kind === 'refusal')).toEqual([]);
    // The log line is written before the entry, but reaches the test through a pipe, later.
    await world.bot.waitForLog((l) => String(l.msg).startsWith('grant revoke refused'));
    // Nothing was said in the channel.
    expect(
      world.slack.callsOf('chat.postMessage').filter((c) => String(c.args.text).includes(deploy.grantId)),
    ).toEqual([]);
    // The admin may.
    const ada = await commandAnswer(world, 'U0ADA', `revoke ${deploy.grantId}`);
    expect(answerText(ada)).toMatch(/^:white_check_mark: You revoked/);
    expect(await live(store, deploy)).toBe(false);
  }, 60_000);

  it('App Home lists the grants of the routes where the user decides, with Revoke buttons; a press there revokes and says so on the Home', async () => {
    const { world, store } = await team();
    const deploy = await store.create(deployGrant());
    const shell = await store.create(shellGrant());
    // Granted by Alice on the shell route, where she may not decide (any more): not hers to see.
    const alicesShell = await store.create(
      shellGrant({ grantedBy: 'U0ALICE', approvalId: 'shell-2', capabilities: ['exec:ls'] }),
    );
    const all = [deploy, shell, alicesShell];

    await openHome(world, 'U0ALICE');
    const home = await world.slack.waitFor('views.publish', (c) => c.args.user_id === 'U0ALICE');
    const listed = entries(grantsSection(home), all);
    expect([...listed.keys()]).toEqual([deploy.grantId]);
    expect(listed.get(deploy.grantId)!.button).toMatchObject({
      action_id: REVOKE_GRANT_ACTION_ID,
      value: deploy.grantId,
    });

    // Bob (shell approver) sees the shell channel's grants, not deploys.
    await openHome(world, 'U0BOB');
    const bobHome = await world.slack.waitFor('views.publish', (c) => c.args.user_id === 'U0BOB');
    expect([...entries(grantsSection(bobHome), all).keys()].sort()).toEqual(
      [shell.grantId, alicesShell.grantId].sort(),
    );

    // A press on the Home: no channel, no response_url; the Home itself says what happened.
    const payload = blockActionsPayload({
      userId: 'U0ALICE',
      channel: 'none',
      ts: '0',
      actionId: REVOKE_GRANT_ACTION_ID,
      value: deploy.grantId,
      responseUrl: '',
    });
    const { channel: _channel, message: _message, response_url: _url, ...fromHome } = payload;
    const response = await postInteraction(world.bot.url, SIGNING_SECRET, {
      ...fromHome,
      container: { type: 'view', view_id: 'V0HOME' },
      view: { id: 'V0HOME', type: 'home' },
    });
    expect(response.status).toBe(200);
    const updated = await world.slack.waitFor(
      'views.publish',
      (c) => c.args.user_id === 'U0ALICE' && JSON.stringify(grantsSection(c)).includes('You revoked grant'),
    );
    expect(entries(grantsSection(updated), all).size).toBe(0);
    expect(await live(store, deploy)).toBe(false);
    expect(await channelLine(world, 'C0DEPLOYS', deploy.grantId)).toContain('was revoked by u0alice');
  }, 60_000);
});

/** The blocks after App Home's "Grants" header. */
function grantsSection(publish: SlackCall): unknown[] {
  const blocks = (publish.args.view as { blocks: Array<{ type: string; text?: { text: string } }> }).blocks;
  const start = blocks.findIndex((b) => b.type === 'header' && b.text?.text === 'Grants');
  expect(start).toBeGreaterThan(0);
  return blocks.slice(start + 1);
}
