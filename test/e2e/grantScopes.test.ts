// Grant scopes, end to end: the real bot, a fake host, the fake Slack and the tests' Redis. A
// card offers the route's `grants.choices` as one "don't ask again" button each; the scope pressed
// is the grant's. A grant by uses decides that many requests and the next one gets a card, even
// when requests arrive together; /countersign grants shows the uses left.

import { afterEach, describe, expect, it } from 'vitest';
import { decodeChoiceValue, encodeChoiceValue } from '../../src/cards/ids.js';
import { readGrantAudit } from '../../src/store/grantAudit.js';
import { type ApprovalRequestParams, shellApproval } from '../support/fakeHost.js';
import { configFile, configYaml, route } from './fixtures/config.js';
import { cardPostedFor, grantFrom, storeOf } from './grantSteps.js';
import { commandAnswer } from './teamSetup.js';
import { buttonsOf, rememberButtonsOf, SESSION, textOf, World } from './world.js';

const OTHER_SESSION = '0198f0aa-2222-7000-8000-0000000000bb';
const HOUR = 3_600_000;

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

/**
 * `scoped` offers an hour, three uses and the session, and binds its other grants to the host,
 * so a session grant is bound apart from them. `pairs` offers two uses, `single` one. Routed by
 * tool.
 */
const ROUTES = configYaml({
  routes: [
    route('scoped', {
      channel: 'C0SCOPED',
      match: { tools: ['scoped'] },
      grants: { caller: 'host', ttl: '2h', maxTtl: '1d', choices: ['1h', '3 uses', 'session'] },
    }),
    route('pairs', { channel: 'C0PAIRS', match: { tools: ['pairs'] }, grants: { choices: ['2 uses'] } }),
    route('single', { channel: 'C0SINGLE', match: { tools: ['single'] }, grants: { choices: ['1 uses'] } }),
  ],
});

async function startWorld(): Promise<World> {
  const config = configFile(ROUTES);
  cleanups.push(config.remove);
  const world = await World.start(
    {
      sessions: [
        { sessionId: SESSION, title: 'Bump the version' },
        { sessionId: OTHER_SESSION, title: 'Another session' },
      ],
    },
    { MSP_SANDBOX_MODE: 'workspace-write', COUNTERSIGN_CONFIG: config.path },
  );
  cleanups.push(() => world.close());
  return world;
}

function request(
  approvalId: string,
  tool: string,
  argv: string[],
  sessionId = SESSION,
): ApprovalRequestParams {
  return { ...shellApproval({ approvalId, sessionId, stages: [argv] }), toolName: tool };
}

function decidesOf(world: World, approvalIds: readonly string[]) {
  return world.host.decides().filter((d) => approvalIds.includes(d.frame.params.approvalId));
}

function grantLines(world: World, command: string): string[] {
  return world.slack
    .callsOf('chat.postMessage')
    .map((c) => String(c.args.text))
    .filter((t) => t.startsWith(':repeat: Approved by a remembered grant') && t.includes(command));
}

async function until(check: () => Promise<boolean> | boolean, what: string, timeoutMs = 5_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('grant scopes', () => {
  it('the card offers the route’s choices; the scope pressed is the grant’s (1 h, 3 uses, the session)', async () => {
    const world = await startWorld();
    await world.host.open(request('s-offer', 'scoped', ['make', 'offer']));
    const card = await world.waitForCard('s-offer', (m) => buttonsOf(m).length > 0);
    expect(rememberButtonsOf(card).map((b) => b.text)).toEqual([
      'For 1 h',
      'For the next 3 uses',
      'For this session',
    ]);
    expect(textOf(card)).toContain("*Approve and don't ask again:* `make offer` in `/srv/repo` on this host");

    const store = storeOf(world);
    const before = Date.now();
    const hourly = await store.get(
      await grantFrom(world, request('s-hour', 'scoped', ['make', 'hour']), 'For 1 h'),
    );
    expect(hourly).toMatchObject({ caller: 'host:default', lasts: { kind: 'time', ms: HOUR } });
    expect(hourly!.usesLeft).toBeUndefined();
    expect(Date.parse(hourly!.expiresAt!) - before).toBeGreaterThan(HOUR - 60_000);
    expect(Date.parse(hourly!.expiresAt!) - Date.now()).toBeLessThanOrEqual(HOUR);

    const counted = await store.get(
      await grantFrom(world, request('s-uses', 'scoped', ['make', 'uses']), 'For the next 3 uses'),
    );
    // Within the route's ttl (2 h) too.
    expect(counted).toMatchObject({ caller: 'host:default', maxUses: 3, usesLeft: 3 });
    expect(Date.parse(counted!.expiresAt!) - before).toBeGreaterThan(2 * HOUR - 60_000);
    expect(Date.parse(counted!.expiresAt!) - Date.now()).toBeLessThanOrEqual(2 * HOUR);

    // The session: bound to the session although the route binds grants to the host, until maxTtl.
    const session = await store.get(
      await grantFrom(world, request('s-session', 'scoped', ['make', 'session']), 'For this session'),
    );
    expect(session).toMatchObject({ caller: `session:${SESSION}`, lasts: { kind: 'session' } });
    expect(Date.parse(session!.expiresAt!) - before).toBeGreaterThan(24 * HOUR - 60_000);
    const events = await readGrantAudit(world.redis);
    expect(
      events.filter((e) => e.kind === 'created').map((e) => e.kind === 'created' && e.grant.lasts),
    ).toEqual([{ kind: 'time', ms: HOUR }, { kind: 'uses', uses: 3 }, { kind: 'session' }]);

    // The same session is answered by its grant; another session on the same host is asked.
    await world.host.open(request('s-session-again', 'scoped', ['make', 'session']));
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 's-session-again');
    await until(() => grantLines(world, 'make session').length === 1, 'the grant line');
    expect(cardPostedFor(world, 's-session-again')).toBe(false);
    await world.host.open(request('s-session-other', 'scoped', ['make', 'session'], OTHER_SESSION));
    await world.waitForCard('s-session-other', (m) => buttonsOf(m).length > 0);
    expect(decidesOf(world, ['s-session-other'])).toHaveLength(0);
  });

  it('a scope the route no longer offers is refused, with a word to the person, and nothing is decided', async () => {
    const world = await startWorld();
    await world.host.open(request('s-stale', 'scoped', ['make', 'stale']));
    const card = await world.waitForCard('s-stale', (m) => buttonsOf(m).length > 0);
    const [first] = rememberButtonsOf(card);
    const value = decodeChoiceValue(first!.value)!;
    await world.pressButton(
      card.ts,
      { ...first!, value: encodeChoiceValue({ ...value, k: 'u99' }) },
      'U0ALICE',
      card.channel,
    );
    expect(await world.ephemeralTo('U0ALICE')).toContain('can no longer be remembered');
    expect(decidesOf(world, ['s-stale'])).toHaveLength(0);
    expect(await storeOf(world).list({}, new Date())).toEqual([]);
  });

  it('a "don\'t ask again" that names no scope (the bare cs_remember of cards before scopes) is refused: nothing decided, no grant', async () => {
    const world = await startWorld();
    await world.host.open(request('s-bare', 'single', ['make', 'bare']));
    const card = await world.waitForCard('s-bare', (m) => buttonsOf(m).length > 0);
    const [once] = rememberButtonsOf(card);
    // The button as it is, naming the question it shows, without its scope: the route's ttl, which
    // answers any number of requests, was what such a press once got on a route offering one use.
    const { k: _scope, ...value } = decodeChoiceValue(once!.value)!;
    expect(value.d).toBeDefined();
    await world.pressButton(
      card.ts,
      { ...once!, actionId: 'cs_remember', value: encodeChoiceValue(value) },
      'U0ALICE',
      card.channel,
    );
    expect(await world.ephemeralTo('U0ALICE')).toContain('can no longer be remembered');
    expect(decidesOf(world, ['s-bare'])).toHaveLength(0);
    expect(await storeOf(world).list({}, new Date())).toEqual([]);
  });

  it('3 uses decide 3 requests, the 4th gets a card; /countersign grants shows the uses left', async () => {
    const world = await startWorld();
    const grantId = await grantFrom(
      world,
      request('u-grant', 'scoped', ['npm', 'publish']),
      'For the next 3 uses',
    );
    const store = storeOf(world);

    await world.host.open(request('u-1', 'scoped', ['npm', 'publish']));
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'u-1');
    await until(async () => (await store.get(grantId))?.uses === 1, 'the first use counted');
    expect(await store.get(grantId)).toMatchObject({ usesLeft: 2, maxUses: 3 });
    const listing = await commandAnswer(world, 'U0ALICE', 'grants', 'C0SCOPED');
    const listed = JSON.stringify(listing.body.blocks);
    expect(listed).toContain(grantId);
    expect(listed).toContain('2 uses left of 3');
    expect(listed).toMatch(/expires in (1 h 5\d min|2 h)/);
    await until(() => grantLines(world, 'npm publish').length === 1, 'the first grant line');
    expect(grantLines(world, 'npm publish')[0]).toContain('2 uses left');

    for (const id of ['u-2', 'u-3']) {
      await world.host.open(request(id, 'scoped', ['npm', 'publish']));
      await world.host.waitForDecide((d) => d.frame.params.approvalId === id);
    }
    await until(
      async () => (await readGrantAudit(world.redis)).some((e) => e.kind === 'exhausted'),
      'exhausted',
    );
    await world.host.open(request('u-4', 'scoped', ['npm', 'publish']));
    await world.waitForCard('u-4', (m) => buttonsOf(m).length > 0);
    expect(decidesOf(world, ['u-4'])).toHaveLength(0);
    for (const id of ['u-1', 'u-2', 'u-3']) {
      expect(decidesOf(world, [id])).toHaveLength(1);
      expect(cardPostedFor(world, id)).toBe(false);
    }
    const kinds = (await readGrantAudit(world.redis)).map((e) => e.kind);
    expect(kinds).toEqual(['created', 'used', 'used', 'used', 'exhausted']);
    // Spent: no longer listed.
    const after = await commandAnswer(world, 'U0ALICE', 'grants', 'C0SCOPED');
    expect(JSON.stringify(after.body)).not.toContain(grantId);
  });

  it('requests arriving together never overspend a grant by uses: exactly 2 of 6 are decided by it', async () => {
    const world = await startWorld();
    const grantId = await grantFrom(
      world,
      request('c-grant', 'pairs', ['cargo', 'build']),
      'For the next 2 uses',
    );
    const ids = ['c-1', 'c-2', 'c-3', 'c-4', 'c-5', 'c-6'];
    await Promise.all(ids.map((id) => world.host.open(request(id, 'pairs', ['cargo', 'build']))));

    // Every request is either decided by the grant or shown on a card, never both.
    await until(
      () => ids.every((id) => decidesOf(world, [id]).length > 0 || cardPostedFor(world, id)),
      'every request answered or shown',
      15_000,
    );
    const decided = ids.filter((id) => decidesOf(world, [id]).length > 0);
    expect(decided).toHaveLength(2);
    for (const id of decided) {
      expect(decidesOf(world, [id])).toHaveLength(1);
      expect(decidesOf(world, [id])[0]!.frame.params.choiceId).toBe('allow_once');
      expect(cardPostedFor(world, id)).toBe(false);
    }
    for (const id of ids.filter((i) => !decided.includes(i))) {
      await world.waitForCard(id, (m) => buttonsOf(m).length > 0);
    }
    await until(() => grantLines(world, 'cargo build').length === 2, 'two grant lines');
    await until(async () => (await storeOf(world).get(grantId))?.uses === 2, 'two uses counted');
    const grant = await storeOf(world).get(grantId);
    expect(grant).toMatchObject({ uses: 2, usesLeft: 0 });
    const events = await readGrantAudit(world.redis);
    expect(events.filter((e) => e.kind === 'used')).toHaveLength(2);
    expect(events.filter((e) => e.kind === 'exhausted')).toHaveLength(1);
    // Nothing was decided after the cards were shown: a grant line never follows a card.
    await new Promise((r) => setTimeout(r, 300));
    expect(grantLines(world, 'cargo build')).toHaveLength(2);
  });
});
