// Remembered grants, end to end: the real bot, a fake host, the fake Slack and the tests' Redis.
// A person presses "Don't ask again" on a card; the same request later is decided by the bot with
// the host's approved-once choice and no card, only a line in the channel. Anything that is not
// exactly what was granted (another sandbox mode, caller, command, path, an unknown kind, a
// protected write, a revoked or expired grant) gets its card.

import { afterEach, describe, expect, it } from 'vitest';
import { readGrantAudit } from '../../src/store/grantAudit.js';
import { keys } from '../../src/store/keys.js';
import { type ApprovalRequestParams, fileWriteApproval, shellApproval } from '../support/fakeHost.js';
import { until } from '../support/until.js';
import { configFile, configYaml, route, users } from './fixtures/config.js';
import { cardPostedFor, grantFrom, storeOf } from './grantSteps.js';
import { buttonsOf, rememberButtonOf, SESSION, textOf, World } from './world.js';

const OTHER_SESSION = '0198f0aa-2222-7000-8000-0000000000bb';
/** The first scope a route offers by default: an hour, or a shorter COUNTERSIGN_GRANT_TTL. */
const REMEMBER = /^For (1 h|\d+ min|\d+ s)$/;

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

/** Alice approves on `guarded`; `nogrants` has grants switched off. Routed by tool. */
const ROUTES = configYaml({
  routes: [
    route('guarded', { channel: 'C0GUARDED', match: { tools: ['guarded'] }, approvers: users('U0ALICE') }),
    route('nogrants', { channel: 'C0NOGRANTS', match: { tools: ['nogrants'] }, grants: { enabled: false } }),
  ],
});

async function startWorld(env: Record<string, string> = {}): Promise<World> {
  const world = await World.start(
    {
      sessions: [
        { sessionId: SESSION, title: 'Bump the version' },
        { sessionId: OTHER_SESSION, title: 'Another session' },
      ],
    },
    { MSP_SANDBOX_MODE: 'workspace-write', ...env },
  );
  cleanups.push(() => world.close());
  return world;
}

function shell(
  approvalId: string,
  stages: string[][],
  opts: { sessionId?: string; protectedWrite?: boolean; workspaceRoot?: string } = {},
) {
  return shellApproval({
    approvalId,
    sessionId: opts.sessionId ?? SESSION,
    stages,
    ...(opts.protectedWrite ? { protectedWrite: true } : {}),
    ...(opts.workspaceRoot ? { workspaceRoot: opts.workspaceRoot } : {}),
  });
}

/** A shell request whose host did not say which directory it runs in. */
function shellWithNoRoot(approvalId: string, stages: string[][]): ApprovalRequestParams {
  const approval = shell(approvalId, stages);
  const { workspaceRoot: _root, ...subject } = approval.subject;
  return { ...approval, subject };
}

/** A request to write `path`, exactly as the agent sent it. */
function fileWrite(approvalId: string, path: string): ApprovalRequestParams {
  return fileWriteApproval(shell(approvalId, [['true']]), path);
}

/** The line the bot leaves in the channel when a grant decides `approvalId`'s stage. */
async function grantLine(world: World, command: string): Promise<string> {
  const line = await world.slack.waitFor(
    'chat.postMessage',
    (c) =>
      String(c.args.text).startsWith(':repeat: Approved by a remembered grant') &&
      String(c.args.text).includes(command),
  );
  return String(line.args.text);
}

/** The lines the bot left for decisions by grant, so far. */
function grantLines(world: World) {
  return world.slack
    .callsOf('chat.postMessage')
    .filter((c) => String(c.args.text).startsWith(':repeat: Approved by a remembered grant'));
}

/** The approval's phase once it is final (resolved, superseded, orphaned), waiting for it. */
async function phaseOf(world: World, approvalId: string, timeoutMs = 5_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const raw = await world.redis.hget(keys.approval(approvalId), 'd');
    const phase = raw ? (JSON.parse(raw) as { phase: string }).phase : undefined;
    if (phase === 'resolved' || phase === 'superseded' || phase === 'orphaned') return phase;
    if (Date.now() > deadline) throw new Error(`${approvalId} is still ${phase ?? 'unknown'}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** How many times the approval's record was written (its version). */
async function versionOf(world: World, approvalId: string): Promise<number> {
  return Number(await world.redis.hget(keys.approval(approvalId), 'v'));
}

/** Opens the request and expects its card, not a decision by grant: the bot asked people. */
async function expectPeopleAsked(world: World, approval: ApprovalRequestParams): Promise<void> {
  await world.host.open(approval);
  await world.waitForCard(approval.approvalId, (m) => buttonsOf(m).length > 0);
  expect(world.host.decides().some((d) => d.frame.params.approvalId === approval.approvalId)).toBe(false);
}

describe('remembered grants', () => {
  it('1. a grant made on a card decides the same request again with no card, once, and leaves a line naming it', async () => {
    const world = await startWorld();
    const grantId = await grantFrom(world, shell('g1-first', [['git', 'push']]), REMEMBER);
    const card = await world.card('g1-first');
    expect(textOf(card)).toContain('Remembered:');
    expect(textOf(card)).toContain(`/countersign revoke ${grantId}`);

    await world.host.open(shell('g1-again', [['git', 'push']]));
    const decide = await world.host.waitForDecide((d) => d.frame.params.approvalId === 'g1-again');
    expect(decide.frame.params).toMatchObject({ choiceId: 'allow_once', requirementId: { sourceIndex: 0 } });
    const line = await grantLine(world, 'git push');
    expect(line).toContain(grantId);
    expect(line).toContain('/countersign revoke');
    expect(line).toContain('granted by');
    // Resolved by the host, and still no card: the line took its place.
    await world.bot.waitForLog((l) => l.msg === 'grant used');
    expect(await phaseOf(world, 'g1-again')).toBe('resolved');
    expect(cardPostedFor(world, 'g1-again')).toBe(false);
    expect(world.host.decides().filter((d) => d.frame.params.approvalId === 'g1-again')).toHaveLength(1);

    const grant = await storeOf(world).get(grantId);
    expect(grant).toMatchObject({
      uses: 1,
      grantedBy: 'U0ALICE',
      caller: `session:${SESSION}`,
      tool: 'bash',
    });
    // The "grant used" line is logged once its audit entry is stored (once per approval stage).
    await until(async () => (await readGrantAudit(world.redis)).length >= 2);
    const events = await readGrantAudit(world.redis);
    expect(events.map((e) => e.kind)).toEqual(['created', 'used']);
    // The decision's own audit entry says a grant made it.
    const entries = await world.redis.xrange(keys.audit, '-', '+');
    const decision = entries.map(([, f]) => f.join(' ')).find((f) => f.includes('g1-again'));
    expect(decision).toContain('grant');
    expect(decision).toContain(grantId);
  });

  it('2. the same request under another sandbox mode gets a card', async () => {
    const world = await startWorld();
    await grantFrom(world, shell('g2-first', [['make', 'build']]), REMEMBER);
    await world.bot.stop(5_000);
    await world.restartBot({ MSP_SANDBOX_MODE: 'danger-full-access' });
    await expectPeopleAsked(world, shell('g2-other-mode', [['make', 'build']]));
  });

  it('3. another caller (another session) gets a card', async () => {
    const world = await startWorld();
    await grantFrom(world, shell('g3-first', [['make', 'build']]), REMEMBER);
    await expectPeopleAsked(
      world,
      shell('g3-other-session', [['make', 'build']], { sessionId: OTHER_SESSION }),
    );
  });

  it('4. more than was granted gets a card: a longer command, another stage', async () => {
    const world = await startWorld();
    await grantFrom(world, shell('g4-first', [['git', 'push']]), REMEMBER);
    await expectPeopleAsked(world, shell('g4-force', [['git', 'push', '--force']]));
  });

  it('5. after a revoke, the same request gets a card again', async () => {
    const world = await startWorld();
    const grantId = await grantFrom(world, shell('g5-first', [['npm', 'publish']]), REMEMBER);
    expect(await storeOf(world).revoke(grantId, 'U0ADA', new Date())).toBe(true);
    await expectPeopleAsked(world, shell('g5-after-revoke', [['npm', 'publish']]));
  });

  it('6. after expiry, the same request gets a card again', async () => {
    const world = await startWorld({ COUNTERSIGN_GRANT_TTL: '2s' });
    const grantId = await grantFrom(world, shell('g6-first', [['npm', 'publish']]), REMEMBER);
    const grant = await storeOf(world).get(grantId);
    const left = Date.parse(grant!.expiresAt!) - Date.now();
    expect(left).toBeLessThanOrEqual(2_000);
    await new Promise((r) => setTimeout(r, Math.max(0, left) + 50));
    await expectPeopleAsked(world, shell('g6-after-expiry', [['npm', 'publish']]));
  });

  it('7. a protected write and an unknown subject kind are never decided by a grant, and never offer one', async () => {
    const world = await startWorld();
    await grantFrom(world, shell('g7-first', [['make', 'deploy']]), REMEMBER);
    await world.host.open(shell('g7-protected', [['make', 'deploy']], { protectedWrite: true }));
    const protectedCard = await world.waitForCard('g7-protected', (m) => buttonsOf(m).length > 0);
    expect(rememberButtonOf(protectedCard)).toBeUndefined();

    // A grant for this very caller and tool, covering anything a takeover could be called.
    const unknown: ApprovalRequestParams = {
      ...shell('g7-unknown', [['x']]),
      toolName: 'computer',
      subject: { kind: 'computerUseTakeover', toolName: 'computer' },
    };
    await storeOf(world).create({
      caller: `session:${SESSION}`,
      tool: 'computer',
      capabilities: ['tool:computer', 'computerUseTakeover', 'computerUseTakeover:computer'],
      sandboxMode: 'workspace-write',
      holder: 'bot',
      grantedBy: 'U0ALICE',
      approvalId: 'seeded',
      hostId: 'default',
      route: '(SLACK_CHANNEL)',
      channel: world.channel,
      ttlMs: 3_600_000,
    });
    await world.host.open(unknown);
    const unknownCard = await world.waitForCard('g7-unknown', (m) => buttonsOf(m).length > 0);
    expect(rememberButtonOf(unknownCard)).toBeUndefined();
    const decided = world.host.decides().map((d) => d.frame.params.approvalId);
    expect(decided).not.toContain('g7-protected');
    expect(decided).not.toContain('g7-unknown');
  });

  it('8. a two-stage command with one stage covered: that stage is decided by the grant, the other gets a card', async () => {
    const world = await startWorld();
    const grantId = await grantFrom(world, shell('g8-first', [['npm', 'test']]), REMEMBER);
    await world.host.open(
      shell('g8-two', [
        ['npm', 'test'],
        ['git', 'push'],
      ]),
    );
    const first = await world.host.waitForDecide((d) => d.frame.params.approvalId === 'g8-two');
    expect(first.frame.params).toMatchObject({ choiceId: 'allow_once', requirementId: { sourceIndex: 0 } });
    const card = await world.waitForCard('g8-two', (m) => buttonsOf(m).length > 0);
    expect(textOf(card)).toContain('Stage 1 of 2 was approved by a remembered grant');
    expect(textOf(card)).toContain(grantId);
    expect(world.host.decides().filter((d) => d.frame.params.approvalId === 'g8-two')).toHaveLength(1);
    // The card asks about the second stage only: pressing it decides stage 2.
    await world.press('g8-two', 'Allow once', 'U0ALICE', card);
    const second = await world.host.waitForDecide(
      (d) => d.frame.params.approvalId === 'g8-two' && d.frame.params.requirementId.sourceIndex === 1,
    );
    expect(second.frame.params.choiceId).toBe('allow_once');
  });

  it('9. a host choice that leaves a rule at the host is listed as host-held, with its rulePreview', async () => {
    const world = await startWorld();
    await world.host.open(shell('g9-rule', [['cargo', 'build']]));
    await world.waitForCard('g9-rule', (m) => buttonsOf(m).length > 0);
    await world.press('g9-rule', 'Always allow in this workspace: cargo build ...', 'U0ALICE');
    const card = await world.waitForCard('g9-rule', (m) => textOf(m).includes('Rule saved'));
    expect(textOf(card)).toContain('can only be removed on the host side');
    const deadline = Date.now() + 5_000;
    let listed = await storeOf(world).list({}, new Date());
    while (listed.length === 0 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
      listed = await storeOf(world).list({}, new Date());
    }
    expect(listed).toHaveLength(1);
    expect(listed[0]).toMatchObject({
      holder: 'host',
      rulePreview: 'Always allow in this workspace: cargo build ...',
      scope: 'localPersistent',
      grantedBy: 'U0ALICE',
      approvalId: 'g9-rule',
    });
    // The bot never answers with what the host keeps.
    expect(
      await storeOf(world).candidates(
        {
          caller: `session:${SESSION}`,
          tool: 'bash',
          sandboxMode: 'workspace-write',
          route: '(SLACK_CHANNEL)',
        },
        new Date(),
      ),
    ).toEqual([]);
  });

  it('9b. a host-held grant whose rule the host then says it could not save leaves the listings, audited', async () => {
    const world = await startWorld();
    await world.host.open(shell('g9-unsaved', [['cargo', 'build']]));
    await world.waitForCard('g9-unsaved', (m) => buttonsOf(m).length > 0);
    await world.press('g9-unsaved', 'Always allow in this workspace: cargo build ...', 'U0ALICE');
    await world.waitForCard('g9-unsaved', (m) => textOf(m).includes('Rule saved'));
    await until(async () => (await storeOf(world).list({}, new Date())).length === 1);
    const [grant] = await storeOf(world).list({}, new Date());
    await world.host.update({
      approvalId: 'g9-unsaved',
      change: { kind: 'policyPersistence', status: 'failed', reason: 'policy store is read-only' },
    });
    await world.waitForCard('g9-unsaved', (m) => textOf(m).includes('Rule not saved'));
    await until(async () => (await storeOf(world).list({}, new Date())).length === 0);
    await until(async () => (await readGrantAudit(world.redis)).some((e) => e.kind === 'revoked'));
    const revoked = (await readGrantAudit(world.redis)).filter((e) => e.kind === 'revoked');
    expect(revoked).toEqual([
      expect.objectContaining({
        grantId: grant!.grantId,
        by: expect.stringMatching(/^host:/),
        reason: expect.stringContaining('did not save the rule'),
      }),
    ]);
  });

  it('10. a path with . or .. is another file than the one granted: it gets a card, and offers no grant', async () => {
    const world = await startWorld();
    const grantId = await grantFrom(world, fileWrite('g10-first', '/srv/repo/notes.txt'), REMEMBER);
    expect(await storeOf(world).get(grantId)).toMatchObject({
      capabilities: ['file-write:/srv/repo/notes.txt'],
    });
    // When x is a symlink to /elsewhere/dir, the kernel writes /elsewhere/notes.txt: read by hand,
    // the path would seem to name the granted file.
    for (const [approvalId, path] of [
      ['g10-dotdot', '/srv/repo/x/../notes.txt'],
      ['g10-dot', '/srv/repo/./notes.txt'],
      ['g10-slashes', '/srv/repo//notes.txt'],
      ['g10-trailing', '/srv/repo/notes.txt/'],
    ] as const) {
      await expectPeopleAsked(world, fileWrite(approvalId, path));
      expect(rememberButtonOf(await world.card(approvalId)), path).toBeUndefined();
    }

    // The path as granted is still answered by its grant.
    await world.host.open(fileWrite('g10-again', '/srv/repo/notes.txt'));
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'g10-again');
    const line = await grantLine(world, '/srv/repo/notes.txt');
    expect(line).toContain(grantId);
    expect(cardPostedFor(world, 'g10-again')).toBe(false);
    expect(world.host.decides().map((d) => d.frame.params.approvalId)).toEqual(['g10-first', 'g10-again']);
  });

  it('11. a command granted in one workspace is asked again in another, or after a cd, and answered in its own', async () => {
    const world = await startWorld();
    const grantId = await grantFrom(
      world,
      shell('g11-first', [['make', 'install']], { workspaceRoot: '/srv/a' }),
      REMEMBER,
    );
    expect(await storeOf(world).get(grantId)).toMatchObject({
      capabilities: ['exec:make install', 'in:/srv/a'],
    });
    expect(textOf(await world.card('g11-first'))).toContain('`make install` in `/srv/a`');

    // The same words in another directory are another command: people are asked.
    await expectPeopleAsked(
      world,
      shell('g11-elsewhere', [['make', 'install']], { workspaceRoot: '/srv/b' }),
    );
    // A host that does not say where the command runs: asked, and no grant offered.
    await expectPeopleAsked(world, shellWithNoRoot('g11-no-root', [['make', 'install']]));
    expect(rememberButtonOf(await world.card('g11-no-root'))).toBeUndefined();
    // In /srv/a, but after a cd, or zsh's chdir (a cd by another name): the stage runs in /srv/b.
    for (const [approvalId, first] of [
      ['g11-cd', ['cd', '/srv/b']],
      ['g11-chdir', ['chdir', '/srv/b']],
    ] as const) {
      await world.host.open(
        shell(approvalId, [[...first], ['make', 'install']], { workspaceRoot: '/srv/a' }),
      );
      const firstCard = await world.waitForCard(approvalId, (m) => buttonsOf(m).length > 0);
      await world.press(approvalId, 'Allow once', 'U0ALICE', firstCard);
      await until(async () => {
        const raw = await world.redis.hget(keys.approval(approvalId), 'd');
        const record = raw
          ? (JSON.parse(raw) as { phase: string; currentRequirementId: { sourceIndex: number } })
          : undefined;
        return record?.phase === 'pending' && record.currentRequirementId.sourceIndex === 1;
      });
      const afterMove = await world.waitForCard(
        approvalId,
        (m) => buttonsOf(m).length > 0 && textOf(m).includes('Stage 1 of 2'),
      );
      expect(rememberButtonOf(afterMove), first.join(' ')).toBeUndefined();
      expect(
        world.host
          .decides()
          .filter(
            (d) => d.frame.params.approvalId === approvalId && d.frame.params.requirementId.sourceIndex === 1,
          ),
        first.join(' '),
      ).toHaveLength(0);
    }

    // In the workspace it was granted in, the grant answers.
    await world.host.open(shell('g11-again', [['make', 'install']], { workspaceRoot: '/srv/a' }));
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'g11-again');
    const line = await grantLine(world, 'make install');
    expect(line).toContain(grantId);
    expect(line).toContain('`make install` in `/srv/a`');
    expect(cardPostedFor(world, 'g11-again')).toBe(false);
    const decided = world.host.decides().map((d) => d.frame.params.approvalId);
    expect(decided).not.toContain('g11-elsewhere');
    expect(decided).not.toContain('g11-no-root');
  });

  it('a request like one a grant just answered is created already claimed: decided once, no card', async () => {
    const world = await startWorld();
    const grantId = await grantFrom(world, shell('gf-first', [['git', 'status']]), REMEMBER);
    for (const id of ['gf-2', 'gf-3']) {
      await world.host.open(shell(id, [['git', 'status']]));
      await world.host.waitForDecide((d) => d.frame.params.approvalId === id);
      expect(await phaseOf(world, id)).toBe('resolved');
    }
    // gf-2, the first request after the grant was made, was answered after its create: written
    // created, deferred and claimed before its decide. gf-3, like a request a grant had just
    // answered, was looked up first and created claimed: two writes fewer. Both were then written
    // as often as the host's answers asked.
    expect(await versionOf(world, 'gf-2')).toBe(5);
    expect(await versionOf(world, 'gf-3')).toBe(3);
    for (const id of ['gf-2', 'gf-3']) {
      expect(cardPostedFor(world, id)).toBe(false);
      expect(world.host.decides().filter((d) => d.frame.params.approvalId === id)).toHaveLength(1);
    }
    const lines = () =>
      world.slack
        .callsOf('chat.postMessage')
        .filter((c) => String(c.args.text).startsWith(':repeat: Approved by a remembered grant'));
    await until(() => lines().length === 2);
    await until(async () => (await storeOf(world).get(grantId))?.uses === 2);
    await until(async () => (await readGrantAudit(world.redis)).length >= 3);
    const events = await readGrantAudit(world.redis);
    expect(events.map((e) => [e.kind, 'approvalId' in e ? e.approvalId : undefined])).toEqual([
      ['created', undefined],
      ['used', 'gf-2'],
      ['used', 'gf-3'],
    ]);
    // Its decision is audited as a grant's, as any other.
    const entries = await world.redis.xrange(keys.audit, '-', '+');
    const decision = entries.map(([, f]) => f.join(' ')).find((f) => f.includes('gf-3'));
    expect(decision).toContain(grantId);
  });

  it('a request created claimed whose decide the bot never heard back on is replayed by the next bot', async () => {
    const world = await World.start(
      { sessions: [{ sessionId: SESSION, title: 'Bump the version' }], recovery: 'sameId' },
      { MSP_SANDBOX_MODE: 'workspace-write' },
    );
    cleanups.push(() => world.close());
    const grantId = await grantFrom(world, shell('gr-first', [['git', 'fetch']]), REMEMBER);
    await world.host.open(shell('gr-2', [['git', 'fetch']]));
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'gr-2');
    expect(await phaseOf(world, 'gr-2')).toBe('resolved');

    // gr-3 is created claimed (as gr-2 was just answered); its decide is read, never answered.
    await world.host.holdDecide(1);
    await world.host.open(shell('gr-3', [['git', 'fetch']]));
    const lost = await world.host.waitForDecide((d) => d.frame.params.approvalId === 'gr-3');
    expect(await versionOf(world, 'gr-3')).toBe(1);
    await world.bot.kill();

    await world.restartBot();
    const replayed = await world.host.waitForDecide(
      (d) => d.frame.params.approvalId === 'gr-3' && d.incarnation === 2,
      10_000,
    );
    expect(replayed.frame.params.commandId).toBe(lost.frame.params.commandId);
    expect(replayed.frame.params).toMatchObject({
      choiceId: 'allow_once',
      requirementId: { sourceIndex: 0 },
    });
    expect(await phaseOf(world, 'gr-3', 10_000)).toBe('resolved');
    expect(cardPostedFor(world, 'gr-3')).toBe(false);
    expect(world.host.decides().filter((d) => d.frame.params.approvalId === 'gr-3')).toHaveLength(2);
    // The replay that went through counts the use and leaves the line the first bot never did.
    await until(async () => (await storeOf(world).get(grantId))?.uses === 2);
    await until(async () => (await readGrantAudit(world.redis)).length >= 3);
    expect(
      (await readGrantAudit(world.redis)).map((e) => ('approvalId' in e ? e.approvalId : e.kind)),
    ).toEqual(['created', 'gr-2', 'gr-3']);
    const lines = () =>
      world.slack
        .callsOf('chat.postMessage')
        .filter((c) => String(c.args.text).startsWith(':repeat: Approved by a remembered grant'));
    await until(() => lines().length === 2);
  });

  it('a decision by a grant revoked before its replay is not sent again: the question goes to people', async () => {
    const world = await World.start(
      { sessions: [{ sessionId: SESSION, title: 'Bump the version' }], recovery: 'sameId' },
      { MSP_SANDBOX_MODE: 'workspace-write' },
    );
    cleanups.push(() => world.close());
    const grantId = await grantFrom(world, shell('gr-rv-first', [['git', 'pull']]), REMEMBER);
    await world.host.open(shell('gr-rv-2', [['git', 'pull']]));
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'gr-rv-2');
    expect(await phaseOf(world, 'gr-rv-2')).toBe('resolved');

    // gr-rv-3's decide is read, never answered; the grant is revoked while the bot is down.
    await world.host.holdDecide(1);
    await world.host.open(shell('gr-rv-3', [['git', 'pull']]));
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'gr-rv-3');
    await world.bot.kill();
    expect(await storeOf(world).revoke(grantId, 'U0ADA', new Date())).toBe(true);

    await world.restartBot();
    // The host still asks it: people decide it now, on its card.
    await world.waitForCard('gr-rv-3', (m) => buttonsOf(m).length > 0, 10_000);
    expect(
      world.host.decides().filter((d) => d.frame.params.approvalId === 'gr-rv-3' && d.incarnation === 2),
    ).toEqual([]);
    expect((await storeOf(world).get(grantId))?.uses).toBe(1);
  });

  it('a replayed decision by a grant by uses that the host no longer takes gives its use back', async () => {
    const config = configFile(
      configYaml({
        routes: [
          route('counted', {
            channel: 'C0COUNTED',
            match: { tools: ['counted'] },
            grants: { choices: ['3 uses'] },
          }),
        ],
      }),
    );
    cleanups.push(config.remove);
    const env = { MSP_SANDBOX_MODE: 'workspace-write', COUNTERSIGN_CONFIG: config.path };
    const world = await World.start(
      { sessions: [{ sessionId: SESSION, title: 'Bump the version' }], recovery: 'sameId' },
      env,
    );
    cleanups.push(() => world.close());
    const counted = (approvalId: string) => ({
      ...shell(approvalId, [['git', 'push']]),
      toolName: 'counted',
    });
    const grantId = await grantFrom(world, counted('gu-first'), 'For the next 3 uses');
    await world.host.open(counted('gu-2'));
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'gu-2');
    await until(async () => (await storeOf(world).get(grantId))?.uses === 1);

    // gu-3's decide takes a use and is read, never answered; the bot dies.
    await world.host.holdDecide(1);
    await world.host.open(counted('gu-3'));
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'gu-3');
    expect(await storeOf(world).get(grantId)).toMatchObject({ uses: 1, usesLeft: 1 });
    // The next host process answers the replay: policy resolved gu-3 meanwhile. Set now, while
    // this host is up, because the restarted bot replays the decision as soon as it sees it.
    await world.host.failRequest('approval/decide', {
      code: -32051,
      message: 'approval already resolved',
      data: {
        kind: 'approvalAlreadyResolved',
        approvalId: 'gu-3',
        resolution: { decision: 'denied', resolvedBy: 'policy', viewCursor: 'v:replay:900' },
      },
    });
    await world.bot.kill();

    await world.restartBot(env);
    await world.host.waitForDecide(
      (d) => d.frame.params.approvalId === 'gu-3' && d.incarnation === 2,
      10_000,
    );
    expect(await phaseOf(world, 'gu-3', 10_000)).toBe('resolved');
    // The host never took the grant's decision: the use it took comes back, and is not counted.
    await until(async () => (await storeOf(world).get(grantId))?.usesLeft === 2);
    expect(await storeOf(world).get(grantId)).toMatchObject({ uses: 1, usesLeft: 2 });
    expect((await readGrantAudit(world.redis)).map((e) => e.kind)).toEqual(['created', 'used']);
  });

  it('two approvals matching one grant at the same time are both decided, each exactly once', async () => {
    const world = await startWorld();
    const grantId = await grantFrom(world, shell('g10-first', [['make', 'lint']]), REMEMBER);
    await Promise.all([
      world.host.open(shell('g10-a', [['make', 'lint']])),
      world.host.open(shell('g10-b', [['make', 'lint']])),
    ]);
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'g10-a');
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'g10-b');
    const deadline = Date.now() + 5_000;
    while ((await storeOf(world).get(grantId))!.uses < 2 && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await storeOf(world).get(grantId))!.uses).toBe(2);
    for (const id of ['g10-a', 'g10-b']) {
      expect(await phaseOf(world, id)).toBe('resolved');
      expect(world.host.decides().filter((d) => d.frame.params.approvalId === id)).toHaveLength(1);
      expect(cardPostedFor(world, id)).toBe(false);
    }
  });

  it('only someone who may decide may grant: anyone else is refused, and nothing is decided or remembered', async () => {
    const config = configFile(ROUTES);
    cleanups.push(config.remove);
    const world = await startWorld({ COUNTERSIGN_CONFIG: config.path });
    await world.host.open({ ...shell('g11-guarded', [['make', 'release']]), toolName: 'guarded' });
    const card = await world.waitForCard('g11-guarded', (m) => buttonsOf(m).length > 0);
    await world.pressButton(card.ts, rememberButtonOf(card)!, 'U0EVE', card.channel);
    expect(await world.ephemeralTo('U0EVE')).toContain('Only <@U0ALICE> can decide on guarded');
    expect(world.host.decides()).toHaveLength(0);
    expect(await storeOf(world).list({}, new Date())).toEqual([]);
  });

  it('a grant answers nothing once its granter is deactivated, even for a request created claimed: a card, no line, the grant kept', async () => {
    // What Slack says of people is kept one second here, so that the change below is seen.
    const world = await startWorld({ COUNTERSIGN_MEMBERSHIP_CACHE_TTL: '1s' });
    const grantId = await grantFrom(world, shell('gd-first', [['make', 'lint']]), REMEMBER);
    // Answered by the grant: the next like request is looked up first and created claimed.
    await world.host.open(shell('gd-2', [['make', 'lint']]));
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'gd-2');
    await grantLine(world, 'make lint');
    // Alice's account is taken over, and deactivated.
    world.slack.setUser('U0ALICE', { deleted: true });
    await new Promise((r) => setTimeout(r, 1_100));
    await expectPeopleAsked(world, shell('gd-3', [['make', 'lint']]));
    await world.bot.waitForLog(
      (l) =>
        String(l.msg).startsWith('a grant’s granter may no longer decide') && l.json?.why === 'deactivated',
    );
    expect(world.host.decides().some((d) => d.frame.params.approvalId === 'gd-3')).toBe(false);
    expect(grantLines(world)).toHaveLength(1);
    // Not revoked: restored, Alice's grant answers again; a revocation is a person's act.
    expect(await storeOf(world).get(grantId)).toMatchObject({ uses: 1 });
    expect((await storeOf(world).get(grantId))?.revokedAt).toBeUndefined();
  });

  it("a grant answers nothing once its granter leaves the route's approvers' user group: the request gets its card", async () => {
    const config = configFile(
      configYaml({ routes: [route(undefined, { approvers: { usergroups: ['S0OPS'] } })] }),
    );
    cleanups.push(config.remove);
    const world = await startWorld({
      COUNTERSIGN_CONFIG: config.path,
      COUNTERSIGN_USERGROUP_CACHE_TTL: '1s',
    });
    world.slack.setUsergroup('S0OPS', ['U0ALICE', 'U0BOB']);
    await grantFrom(world, shell('gu-first', [['make', 'docs']]), REMEMBER);
    world.slack.setUsergroup('S0OPS', ['U0BOB']);
    await new Promise((r) => setTimeout(r, 1_100));
    await expectPeopleAsked(world, shell('gu-2', [['make', 'docs']]));
    expect(grantLines(world)).toHaveLength(0);
  });

  it('a route with grants switched off offers no "don\'t ask again", and a grant never answers there', async () => {
    const config = configFile(ROUTES);
    cleanups.push(config.remove);
    const world = await startWorld({ COUNTERSIGN_CONFIG: config.path });
    await storeOf(world).create({
      caller: `session:${SESSION}`,
      tool: 'nogrants',
      capabilities: ['exec:make release'],
      sandboxMode: 'workspace-write',
      holder: 'bot',
      grantedBy: 'U0ALICE',
      approvalId: 'seeded',
      hostId: 'default',
      route: 'nogrants',
      channel: 'C0NOGRANTS',
      ttlMs: 3_600_000,
    });
    await world.host.open({ ...shell('g12-off', [['make', 'release']]), toolName: 'nogrants' });
    const card = await world.waitForCard('g12-off', (m) => buttonsOf(m).length > 0);
    expect(rememberButtonOf(card)).toBeUndefined();
    expect(world.host.decides()).toHaveLength(0);
  });
});
