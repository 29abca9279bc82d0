// The audit of each resolved approval, end to end: one line in the card's thread, one entry in
// the audit stream (decisions made through Countersign), and one DM to the host's owner, however
// often the resolution is seen again (the host repeating it, a re-sync, a change after it, a
// restart of the bot).

import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { REFUSALS_PER_USER_PER_MINUTE } from '../../src/store/auditStream.js';
import { DecisionStatsReader } from '../../src/store/decisionStatsReader.js';
import { keys } from '../../src/store/keys.js';
import { freePort, PROJECT_ROOT } from '../support/bot.js';
import {
  type ApprovalRequestParams,
  approvalFromTranscript,
  FakeHost,
  shellApproval,
} from '../support/fakeHost.js';
import { FAKE_GITHUB_TOKEN } from '../support/fakeSecrets.js';
import type { SlackCall } from '../support/fakeSlack.js';
import { PrivateRedis } from '../support/privateRedis.js';
import { testRedisUrl } from '../support/testRedis.js';
import { until } from '../support/until.js';
import { ladder, mainHost, route, tempConfig, users } from './fixtures/config.js';
import { grantFrom } from './grantSteps.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

const OWNER = 'U0OWNER';
const OWNER_DM = `D${OWNER}`;

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

async function startWorld(env: Record<string, string> = {}, host?: FakeHost): Promise<World> {
  const world = await World.start({}, env, host ? { host } : {});
  cleanups.push(() => world.close());
  return world;
}

/**
 * A COUNTERSIGN_CONFIG whose one host, `main`, is the fake host with `owner` set. The fake host
 * is started first, since the file names its command.
 */
async function ownedHostEnv(owner: string): Promise<{ env: Record<string, string>; host: FakeHost }> {
  const host = await FakeHost.start({ sessions: [{ sessionId: SESSION, title: 'Bump the version' }] });
  const path = tempConfig(cleanups, { hosts: [mainHost(host.command, { owner })] });
  return { env: { COUNTERSIGN_CONFIG: path, MSP_HOST_COMMAND: '' }, host };
}

function dmsTo(world: World, channel: string): SlackCall[] {
  return world.slack.callsOf('chat.postMessage').filter((c) => c.args.channel === channel);
}

/** Waits until the bot has logged that `notice` of `approvalId` ended (sent or already claimed) `times` times. */
async function noticeSettled(world: World, approvalId: string, notice: string, times = 1): Promise<void> {
  const deadline = Date.now() + 10_000;
  const matches = () =>
    world.bot.logs.filter(
      (l) =>
        l.json?.approvalId === approvalId &&
        l.json?.notice === notice &&
        (l.msg === 'decision notice sent' || l.msg?.startsWith('decision notice already claimed')),
    ).length;
  while (matches() < times) {
    if (Date.now() > deadline)
      throw new Error(
        `${notice} notice of ${approvalId} settled ${matches()} of ${times} times\n${world.bot.tail(30)}`,
      );
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function thread(world: World, approvalId: string) {
  const { channel, ts } = await world.postedAt(approvalId);
  return world.slack.repliesTo(channel, ts);
}

describe('the audit line in the card’s thread and the audit stream', () => {
  it('a click decision: one thread line naming who, the choice and the feedback, and one stream entry', async () => {
    const world = await startWorld();
    world.slack.setUser('U0BOB', { profile: { display_name: 'Bob', real_name: 'Bob Builder' } });
    const approval = approvalFromTranscript('approval-deny-round-trip');
    const id = approval.approvalId;
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard(id, (m) => buttonsOf(m).length > 0);

    await world.press(id, 'Reject', 'U0BOB');
    await world.submitModal('U0BOB', 'Not on <!channel> main, see <https://evil.example|docs>');
    await world.waitForCard(id, (m) => textOf(m).includes('Rejected'));
    await noticeSettled(world, id, 'thread');
    await noticeSettled(world, id, 'audit');

    const replies = await thread(world, id);
    expect(replies).toHaveLength(1);
    const line = replies[0]!.text;
    expect(line).toContain('*Rejected* by Bob, choosing *Reject*');
    expect(line).toMatch(/<!date\^\d+\^/);
    expect(line).toContain('*Feedback:* Not on &lt;!channel&gt; main, see &lt;https://evil.example|docs&gt;');
    expect(line).not.toContain('<@U0BOB>');
    expect(line).not.toContain('<!channel>');

    const entries = await world.auditEntries();
    expect(entries).toHaveLength(1);
    expect(entries[0]).toEqual({
      kind: 'decision',
      approvalId: id,
      hostId: 'default',
      route: '(SLACK_CHANNEL)',
      tool: approval.toolName,
      userId: 'U0BOB',
      via: 'click',
      resolvedBy: 'user',
      choiceId: 'abort',
      decision: 'abort',
      feedback: 'Not on <!channel> main, see <https://evil.example|docs>',
      argsSha256: createHash('sha256').update(approval.rawArgs, 'utf8').digest('hex'),
      // From the card to the click, for /countersign stats.
      waitedMs: expect.stringMatching(/^\d+$/),
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    // No owner for the one host of MSP_HOST_COMMAND: no DM.
    expect(world.slack.callsOf('conversations.open')).toHaveLength(0);
    expect(
      world.slack.callsOf('chat.postMessage').filter((c) => String(c.args.channel).startsWith('D')),
    ).toEqual([]);

    // npm run audit:export writes the same entry as one NDJSON line.
    const out = execFileSync(process.execPath, ['dist/auditExport.js'], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env.PATH ?? '', REDIS_URL: testRedisUrl(world.redisDb) },
      encoding: 'utf8',
    });
    const lines = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, string>);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ ...entries[0], id: expect.stringMatching(/^\d+-\d+$/) });
  });

  it('arguments with a masked secret: the hash is of them as masked, so it cannot confirm a guess of the secret', async () => {
    const world = await startWorld();
    const id = 'hash-masked-0001';
    const approval = shellApproval({
      approvalId: id,
      sessionId: SESSION,
      stages: [['mysql', '-u', 'root', '-pWinter2024', 'prod']],
    });
    approval.rawArgs = JSON.stringify({ command: 'mysql -u root -pWinter2024 prod' });
    await world.host.open(approval, { via: 'both' });
    const card = await world.waitForCard(id, (m) => buttonsOf(m).length > 0);
    // The card shows all of the command but the password.
    expect(textOf(card)).toContain('mysql -u root');
    expect(textOf(card)).not.toContain('Winter2024');
    await world.press(id, 'Allow once', 'U0ALICE', card);
    await world.host.waitForDecide();
    await noticeSettled(world, id, 'audit');

    // Anyone reading the trail can hash the command line with each guess of the password.
    const asSent = sha256(approval.rawArgs);
    expect(sha256(JSON.stringify({ command: 'mysql -u root -pWinter2024 prod' }))).toBe(asSent);
    const record = await world.redis.hgetall(keys.approval(id));
    const stored = JSON.parse(record.d!) as { rawArgs: string; argsSha256: string; argsSha256Of?: string };
    expect(stored.rawArgs).not.toContain('Winter2024');
    expect(stored).toMatchObject({ argsSha256: sha256(stored.rawArgs), argsSha256Of: 'masked' });
    const [entry] = await world.auditEntries();
    expect(entry).toMatchObject({
      approvalId: id,
      argsSha256: sha256(stored.rawArgs),
      argsSha256Of: 'masked',
    });
    const exported = execFileSync(process.execPath, ['dist/auditExport.js'], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env.PATH ?? '', REDIS_URL: testRedisUrl(world.redisDb) },
      encoding: 'utf8',
    });
    expect(JSON.parse(exported.trim())).toMatchObject({
      argsSha256: entry!.argsSha256,
      argsSha256Of: 'masked',
    });
    for (const text of [JSON.stringify(record), JSON.stringify(entry), exported, world.bot.tail(1000)]) {
      expect(text).not.toContain(asSent);
    }
  });

  it('a policy resolution: a thread line saying policy, and a stream entry saying policy decided it', async () => {
    const world = await startWorld();
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'policy-0001' });
    await world.host.open(approval, { via: 'both' });
    await world.waitForCard('policy-0001', (m) => buttonsOf(m).length > 0);
    await world.host.resolve({ approvalId: 'policy-0001', decision: 'denied', resolvedBy: 'policy' });
    await noticeSettled(world, 'policy-0001', 'thread');

    const replies = await thread(world, 'policy-0001');
    expect(replies).toHaveLength(1);
    expect(replies[0]!.text).toMatch(/^:no_entry: \*Denied\* by policy, <!date\^/);
    expect(replies[0]!.text).not.toContain('choosing');
    await noticeSettled(world, 'policy-0001', 'audit');
    expect(await world.redis.xlen(keys.audit)).toBe(1);
    const [[, fields]] = (await world.redis.xrange(keys.audit, '-', '+')) as [[string, string[]]];
    expect(fields).toEqual(
      expect.arrayContaining([
        'approvalId',
        'policy-0001',
        'via',
        'policy',
        'resolvedBy',
        'policy',
        'decision',
        'denied',
      ]),
    );
    expect(fields).not.toContain('userId');
  });

  it('a refused click is not posted in the thread', async () => {
    const world = await startWorld();
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'late-0001' });
    await world.host.open(approval, { via: 'both' });
    const open = await world.waitForCard('late-0001', (m) => buttonsOf(m).length > 0);
    await world.press('late-0001', 'Allow once', 'U0ALICE');
    await noticeSettled(world, 'late-0001', 'thread');
    // A second click on the old card is refused with an ephemeral note, and the card re-synced.
    await world.press('late-0001', 'Allow once', 'U0CAROL', open);
    await world.ephemeralTo('U0CAROL');
    expect(await thread(world, 'late-0001')).toHaveLength(1);
    expect(await world.redis.xlen(keys.audit)).toBe(1);
  });
});

/**
 * A COUNTERSIGN_CONFIG whose route in the tests' channel only U0ALICE may decide, and whose one
 * host, `main`, is the fake host (started first, since the file names its command).
 */
async function guardedRouteEnv(): Promise<{ env: Record<string, string>; host: FakeHost }> {
  const host = await FakeHost.start({ sessions: [{ sessionId: SESSION, title: 'Deploy' }] });
  const path = tempConfig(cleanups, {
    hosts: [mainHost(host.command)],
    routes: [route('deploys', { approvers: users('U0ALICE') })],
  });
  return { env: { COUNTERSIGN_CONFIG: path, MSP_HOST_COMMAND: '' }, host };
}

/** A counter of GET /metrics by its whole series name (labels included); NaN when absent. */
async function metric(world: World, series: string): Promise<number> {
  const text = await (await fetch(`${world.bot.metricsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return Number(line?.split(' ')[1]);
}

/** `npm run audit:export` with `args`, against the world's Redis: its lines as objects. */
function exportedLines(world: World, args: string[] = []): Array<Record<string, string>> {
  const out = execFileSync(process.execPath, ['dist/auditExport.js', ...args], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH ?? '', REDIS_URL: testRedisUrl(world.redisDb) },
    encoding: 'utf8',
  });
  return out
    .trim()
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, string>);
}

describe('refused attempts', () => {
  it('a refused user clicking on and on trims no decision from the audit stream, and /metrics counts every refusal', async () => {
    const { env, host } = await guardedRouteEnv();
    // The smallest cap the configuration allows: Redis then trims as soon as a node (100 entries)
    // fills up, so about a hundred refusals in the same stream would push the decision out.
    const world = await startWorld({ ...env, COUNTERSIGN_AUDIT_MAXLEN: '1' }, host);
    const clicks = 150;

    await world.host.open(
      shellApproval({ approvalId: 'kept-0001', sessionId: SESSION, stages: [['make']] }),
      {
        via: 'both',
      },
    );
    await world.waitForCard('kept-0001', (m) => buttonsOf(m).length > 0);
    await world.press('kept-0001', 'Allow once', 'U0ALICE');
    await world.host.waitForDecide();
    await noticeSettled(world, 'kept-0001', 'audit');
    const decision = (await world.auditEntries()).find((e) => e.approvalId === 'kept-0001');
    expect(decision).toMatchObject({ kind: 'decision', userId: 'U0ALICE', via: 'click' });

    await world.host.open(shellApproval({ approvalId: 'spam-0001', sessionId: SESSION, stages: [['ls']] }), {
      via: 'both',
    });
    const card = await world.waitForCard('spam-0001', (m) => buttonsOf(m).length > 0);
    const allow = buttonsOf(card).find((b) => b.text === 'Allow once')!;
    // U0EVE may not decide on deploys, and clicks away, ten at a time.
    for (let sent = 0; sent < clicks; sent += 10) {
      await Promise.all(
        Array.from({ length: 10 }, () => world.pressButton(card.ts, allow, 'U0EVE', card.channel)),
      );
    }
    await expect
      .poll(() => metric(world, 'countersign_refusals_total{reason="notApprover"}'), { timeout: 15_000 })
      .toBe(clicks);
    // The first of the minute are written to the refusal stream; the rest are counted only.
    const limit = REFUSALS_PER_USER_PER_MINUTE;
    await expect.poll(() => world.redis.xlen(keys.refusals), { timeout: 5_000 }).toBe(limit);
    expect(await metric(world, 'countersign_refusals_over_limit_total{reason="notApprover"}')).toBe(
      clicks - limit,
    );
    expect(await metric(world, 'countersign_refusals_total{reason="selfApproval"}')).toBe(0);
    expect(world.host.decides()).toHaveLength(1);

    // The decision is still in the audit stream, which holds no refusal.
    const entries = await world.auditEntries();
    expect(entries).toContainEqual(decision);
    expect(entries.filter((e) => e.kind === 'refusal')).toEqual([]);

    // The export still has both, merged by time; or the refusals alone.
    const all = exportedLines(world);
    expect(all.filter((e) => e.kind === 'decision')).toEqual([{ ...decision, id: expect.any(String) }]);
    const refusals = exportedLines(world, ['--kind', 'refusal']);
    expect(refusals).toHaveLength(limit);
    expect(refusals[0]).toMatchObject({
      kind: 'refusal',
      approvalId: 'spam-0001',
      userId: 'U0EVE',
      action: 'click',
      reason: 'notApprover',
      route: 'deploys',
    });
    expect(all.filter((e) => e.kind === 'refusal')).toEqual(refusals);
    // The flags --kind replaced still write what they did.
    expect(exportedLines(world, ['--refusals'])).toEqual(refusals);
    expect(exportedLines(world, ['--no-refusals'])).toEqual(all.filter((e) => e.kind !== 'refusal'));
    // Time bounds read the stream ids: everything lies within the last hour, nothing before 2000.
    expect(exportedLines(world, ['--since', '1h', '--kind', 'decision'])).toEqual(
      all.filter((e) => e.kind === 'decision'),
    );
    expect(exportedLines(world, ['--until', '2000-01-01'])).toEqual([]);
    // A misspelt flag is refused in one line, not taken for the whole trail.
    const wrong = spawnSync(process.execPath, ['dist/auditExport.js', '--refusal'], {
      cwd: PROJECT_ROOT,
      env: { PATH: process.env.PATH ?? '', REDIS_URL: testRedisUrl(world.redisDb) },
      encoding: 'utf8',
    });
    expect(wrong.status).toBe(1);
    expect(wrong.stdout).toBe('');
    expect(wrong.stderr).toBe(
      'countersign: unknown option --refusal: the export takes --since, --until and --kind (docs/operations.md, "Exporting the trail")\n',
    );
  }, 60_000);
});

describe('the requester DM', () => {
  it('goes to the host’s owner once per approval: not again when the resolution is repeated, re-synced, changed, or replayed after a restart', async () => {
    const { env, host } = await ownedHostEnv(OWNER);
    const world = await startWorld(env, host);
    world.slack.setUser('U0ALICE', { profile: { display_name: 'Alice', real_name: 'Alice A' } });

    // A: decided by a click.
    const clicked = approvalFromTranscript('approval-round-trip', { approvalId: 'dm-click-0001' });
    await world.host.open(clicked, { via: 'both' });
    const open = await world.waitForCard('dm-click-0001', (m) => buttonsOf(m).length > 0);
    await world.press('dm-click-0001', 'Allow once', 'U0ALICE');
    const decide = await world.host.waitForDecide();
    await noticeSettled(world, 'dm-click-0001', 'dm');

    const card = await world.postedAt('dm-click-0001');
    const [dm] = dmsTo(world, OWNER_DM);
    expect(world.slack.callsOf('conversations.open').map((c) => c.args.users)).toEqual([OWNER]);
    const text = String(dm!.args.text);
    expect(text).toContain(
      "Your agent's request `write_file` on host `main` was decided: *Approved (this request only)*",
    );
    expect(text).toContain('*Decided by:* Alice (*Allow once*)');
    expect(text).toContain(
      `<https://test.slack.com/archives/${card.channel}/p${card.ts.replace('.', '')}|Open the card>`,
    );

    // The host says it again; a stale click re-syncs the card.
    const repeatResolution = async () => {
      const again = await world.host.redeliverResolved('dm-click-0001');
      expect(again).toMatchObject({
        decision: 'approved',
        decidedByCommandId: decide.frame.params.commandId,
      });
    };
    await repeatResolution();
    await world.press('dm-click-0001', 'Allow once', 'U0CAROL', open);
    await world.ephemeralTo('U0CAROL');

    // B: settled by the host's policy with a rule, whose save is reported after the resolution:
    // a second stored change of the resolved record, which must not send a second DM.
    const ruled = approvalFromTranscript('approval-round-trip', { approvalId: 'dm-rule-0001' });
    await world.host.open(ruled, { via: 'both' });
    await world.waitForCard('dm-rule-0001', (m) => buttonsOf(m).length > 0);
    await world.host.resolve({
      approvalId: 'dm-rule-0001',
      decision: 'approvedPolicyAmendment',
      resolvedBy: 'policy',
      amendment: { durability: 'localPersistent', rulePreview: 'Always allow writes to Cargo.toml' },
    });
    await world.host.update({
      approvalId: 'dm-rule-0001',
      change: { kind: 'policyPersistence', status: 'failed', reason: 'policy store is read-only' },
    });
    await world.waitForCard('dm-rule-0001', (m) => textOf(m).includes('Rule not saved'));
    await noticeSettled(world, 'dm-rule-0001', 'dm', 2);
    expect(dmsTo(world, OWNER_DM)).toHaveLength(2);
    expect(String(dmsTo(world, OWNER_DM)[1]!.args.text)).toContain('*Decided by:* policy');

    // The bot restarts on the same Redis, and the host replays the resolution.
    await world.bot.stop(5_000);
    await world.restartBot(env);
    await repeatResolution();
    await world.press('dm-click-0001', 'Allow once', 'U0CAROL', open);
    await world.slack.waitFor('chat.postEphemeral', (c) => c.args.user === 'U0CAROL', 5_000, {
      since: world.slack.calls.length,
    });
    await world.bot.waitForLog((l) => l.msg === 'card updated' && l.json?.approvalId === 'dm-click-0001');

    expect(dmsTo(world, OWNER_DM)).toHaveLength(2);
    expect(world.slack.callsOf('conversations.open')).toHaveLength(2);
    expect(await thread(world, 'dm-click-0001')).toHaveLength(1);
    expect(await thread(world, 'dm-rule-0001')).toHaveLength(1);
    expect(await world.redis.get(keys.notice('dm-click-0001', 'dm'))).toBe('sent');
  });
});

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** The bot's audit lines (`audit: "decision"`) for `approvalId`, as it logged them. */
function decisionLines(world: World, approvalId: string) {
  return world.bot.logs.filter((l) => l.json?.audit === 'decision' && l.json.approvalId === approvalId);
}

/** Waits for the one audit line of `approvalId`, then checks it says nothing of the arguments. */
async function decisionLineOf(
  world: World,
  approval: ApprovalRequestParams,
  secretWords: string[],
): Promise<Record<string, unknown>> {
  await noticeSettled(world, approval.approvalId, 'audit');
  const lines = decisionLines(world, approval.approvalId);
  expect(lines).toHaveLength(1);
  const line = lines[0]!;
  expect(line.msg).toBe('decision');
  expect(line.level).toBe(30);
  // The SHA-256 of the arguments exactly as the host sent them when masking hid nothing in them;
  // when it hid a secret, of the arguments as masked (as the card shows them), and never of the
  // arguments as sent, which would let the secret be guessed offline.
  const raw = await world.redis.hget(keys.approval(approval.approvalId), 'd');
  const stored = (JSON.parse(raw!) as { rawArgs: string }).rawArgs;
  if (stored === approval.rawArgs) {
    expect(line.json!.argsSha256).toBe(sha256(approval.rawArgs));
    expect(line.json!.argsSha256Of).toBeUndefined();
  } else {
    expect(line.json!.argsSha256).toBe(sha256(stored));
    expect(line.json!.argsSha256Of).toBe('masked');
    expect(line.raw).not.toContain(sha256(approval.rawArgs));
  }
  for (const word of secretWords) expect(line.raw).not.toContain(word);
  expect(line.raw).not.toContain('[masked');
  return line.json!;
}

/** A shell request whose arguments hold a token and a word of their own, neither of which may be logged. */
function argsWithSecret(approvalId: string, word: string): ApprovalRequestParams {
  return shellApproval({
    approvalId,
    sessionId: SESSION,
    stages: [['env', `GITHUB_TOKEN=${FAKE_GITHUB_TOKEN}`, './ship.sh', '--note', word]],
  });
}

describe('the decision line in the log', () => {
  it('a click, and the host deciding on its own (policy, its reviewer, another client): one line each at info, with the arguments’ hash and not their text', async () => {
    const world = await startWorld();
    const clicked = argsWithSecret('line-click-0001', 'zebra-quartz-1729');
    await world.host.open(clicked, { via: 'both' });
    const open = await world.waitForCard(clicked.approvalId, (m) => buttonsOf(m).length > 0);
    await world.press(clicked.approvalId, 'Allow once', 'U0ALICE');
    const decide = await world.host.waitForDecide();
    const line = await decisionLineOf(world, clicked, ['zebra-quartz-1729', FAKE_GITHUB_TOKEN, './ship.sh']);
    expect(line).toEqual({
      level: 30,
      time: expect.any(Number),
      pid: expect.any(Number),
      hostname: expect.any(String),
      msg: 'decision',
      audit: 'decision',
      via: 'click',
      userId: 'U0ALICE',
      decision: 'approved',
      choiceId: 'allow_once',
      resolvedBy: 'user',
      approvalId: clicked.approvalId,
      sessionId: SESSION,
      turnId: clicked.turnId,
      itemId: clicked.itemId,
      toolCallId: clicked.toolCallId,
      hostId: 'default',
      route: '(SLACK_CHANNEL)',
      tool: 'bash',
      argsSha256: expect.stringMatching(/^[0-9a-f]{64}$/),
      argsSha256Of: 'masked',
      at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    // The stream entry carries the same hash and the same via.
    const [entry] = await world.auditEntries();
    expect(entry).toMatchObject({ via: 'click', argsSha256: line.argsSha256, argsSha256Of: 'masked' });

    // The host says it again and a stale click re-syncs the card: still one line.
    const again = await world.host.redeliverResolved(clicked.approvalId);
    expect(again).toMatchObject({ decision: 'approved', decidedByCommandId: decide.frame.params.commandId });
    await world.press(clicked.approvalId, 'Allow once', 'U0CAROL', open);
    await world.ephemeralTo('U0CAROL');

    // Policy, with a rule whose save is reported after the resolution: a second stored change
    // of the resolved record, which comes back to the notices and must not log again.
    const ruled = argsWithSecret('line-policy-0001', 'walrus-ochre-5150');
    await world.host.open(ruled, { via: 'both' });
    await world.waitForCard(ruled.approvalId, (m) => buttonsOf(m).length > 0);
    await world.host.resolve({
      approvalId: ruled.approvalId,
      decision: 'approvedPolicyAmendment',
      resolvedBy: 'policy',
      amendment: { durability: 'localPersistent', rulePreview: 'Always allow ./ship.sh' },
    });
    await world.host.update({
      approvalId: ruled.approvalId,
      change: { kind: 'policyPersistence', status: 'failed', reason: 'policy store is read-only' },
    });
    await noticeSettled(world, ruled.approvalId, 'audit', 2);
    expect(await decisionLineOf(world, ruled, ['walrus-ochre-5150', FAKE_GITHUB_TOKEN])).toMatchObject({
      via: 'policy',
      resolvedBy: 'policy',
      decision: 'approvedPolicyAmendment',
    });

    const judged = argsWithSecret('line-judge-0001', 'heron-slate-4242');
    await world.host.open(judged, { via: 'both' });
    await world.waitForCard(judged.approvalId, (m) => buttonsOf(m).length > 0);
    await world.host.resolve({ approvalId: judged.approvalId, decision: 'denied', resolvedBy: 'llmJudge' });
    expect(await decisionLineOf(world, judged, ['heron-slate-4242'])).toMatchObject({
      via: 'reviewer',
      resolvedBy: 'llmJudge',
      decision: 'denied',
    });

    const elsewhere = argsWithSecret('line-other-0001', 'otter-umber-8080');
    await world.host.open(elsewhere, { via: 'both' });
    await world.waitForCard(elsewhere.approvalId, (m) => buttonsOf(m).length > 0);
    await world.host.resolve({ approvalId: elsewhere.approvalId, decision: 'approved', resolvedBy: 'user' });
    const other = await decisionLineOf(world, elsewhere, ['otter-umber-8080']);
    expect(other).toMatchObject({ via: 'otherClient', resolvedBy: 'user' });
    expect(other).not.toHaveProperty('userId');

    expect(decisionLines(world, clicked.approvalId)).toHaveLength(1);
    expect(world.bot.logs.filter((l) => l.json?.audit === 'decision')).toHaveLength(4);
  });

  it('a decision whose card Slack would not take (the bot not invited) is audited all the same', async () => {
    const world = await startWorld();
    world.slack.setBotChannels([]);
    const ruled = argsWithSecret('line-uninvited-0001', 'ibis-sienna-6060');
    await world.host.open(ruled, { via: 'both' });
    await world.bot.waitForLog(
      (l) =>
        l.msg?.startsWith('the bot cannot use this channel') === true &&
        l.json?.approvalId === ruled.approvalId,
    );
    await world.host.resolve({ approvalId: ruled.approvalId, decision: 'denied', resolvedBy: 'policy' });
    expect(await decisionLineOf(world, ruled, ['ibis-sienna-6060'])).toMatchObject({ via: 'policy' });
    expect(await world.auditEntries()).toEqual([
      expect.objectContaining({ approvalId: ruled.approvalId, via: 'policy', decision: 'denied' }),
    ]);
    expect(world.slack.messagesIn(world.channel)).toEqual([]);
  });

  it('a remembered grant’s decision: one line naming the grant and who made it, though no card was shown', async () => {
    const world = await startWorld({ MSP_SANDBOX_MODE: 'workspace-write' });
    const first = shellApproval({
      approvalId: 'line-grant-0001',
      sessionId: SESSION,
      stages: [['make', 'ship']],
    });
    const grantId = await grantFrom(world, first, /^For (1 h|\d+ min|\d+ s)$/);
    const again = shellApproval({
      approvalId: 'line-grant-0002',
      sessionId: SESSION,
      stages: [['make', 'ship']],
    });
    await world.host.open(again);
    await world.host.waitForDecide((d) => d.frame.params.approvalId === again.approvalId);
    const line = await decisionLineOf(world, again, ['make ship']);
    expect(line).toMatchObject({
      via: 'grant',
      grantId,
      grantedBy: 'U0ALICE',
      choiceId: 'allow_once',
      approvalId: again.approvalId,
    });
    expect(line).not.toHaveProperty('userId');
    // The click that made the grant has its own line, as a click.
    expect(decisionLines(world, first.approvalId).map((l) => l.json!.via)).toEqual(['click']);

    // The export has the grant's events beside the decisions, merged in the order they were
    // written (by stream id). Two pairs are written a moment apart in either order: the grant a
    // click remembers is stored once the host took the decide, and the click's decision entry
    // with the host's resolution; the same for the second request's use and its decision.
    await until(async () => (await world.redis.xlen(keys.grantAudit)) >= 2);
    const exported = exportedLines(world, ['--kind', 'grant,decision']);
    const idOrder = (x: string, y: string) => {
      const [xMs, xSeq] = x.split('-').map(Number) as [number, number];
      const [yMs, ySeq] = y.split('-').map(Number) as [number, number];
      return xMs - yMs || xSeq - ySeq;
    };
    const ids = exported.map((e) => e.id!);
    expect(ids).toEqual([...ids].sort(idOrder));
    const what = (e: Record<string, string>) => [e.kind, e.event, e.approvalId];
    expect(exported.slice(0, 2).map(what)).toEqual(
      expect.arrayContaining([
        ['grant', 'created', undefined],
        ['decision', undefined, first.approvalId],
      ]),
    );
    expect(exported.slice(2).map(what)).toEqual(
      expect.arrayContaining([
        ['grant', 'used', again.approvalId],
        ['decision', undefined, again.approvalId],
      ]),
    );
    expect(exported).toHaveLength(4);
    expect(exported.find((e) => e.event === 'created')).toMatchObject({
      grantId,
      grant: expect.stringContaining('"grantedBy":"U0ALICE"'),
    });
  });

  it('an escalation timeout: one line saying timeout, with the host’s owner it was decided for', async () => {
    const host = await FakeHost.start({ sessions: [{ sessionId: SESSION, title: 'Deploy' }] });
    const path = tempConfig(cleanups, {
      hosts: [mainHost(host.command, { owner: OWNER })],
      routes: [route('default', { escalation: ladder(['1s', 'timeout']) })],
    });
    const world = await startWorld({ COUNTERSIGN_CONFIG: path, MSP_HOST_COMMAND: '' }, host);
    const late = argsWithSecret('line-timeout-0001', 'lynx-cobalt-3030');
    await world.host.open(late);
    await world.host.waitForDecide((d) => d.frame.params.approvalId === late.approvalId, 5_000);
    const line = await decisionLineOf(world, late, ['lynx-cobalt-3030', FAKE_GITHUB_TOKEN]);
    expect(line).toMatchObject({
      via: 'timeout',
      owner: OWNER,
      hostId: 'main',
      route: 'default',
      choiceId: 'abort',
    });
    expect(line).not.toHaveProperty('userId');
    expect(await world.auditEntries()).toEqual([expect.objectContaining({ via: 'timeout' })]);
  });
});

describe('a request of several stages', () => {
  it('names whoever decided an earlier stage in the entry, the log line and the export, as one decision', async () => {
    const world = await startWorld();
    await world.host.stageAdvance('updatedOnly');
    const approval = shellApproval({
      approvalId: 'stages-0001',
      sessionId: SESSION,
      stages: [
        ['npm', 'test'],
        ['git', 'push'],
      ],
    });
    const id = approval.approvalId;
    const onStage = (s: number) => (m: Parameters<typeof buttonsOf>[0]) =>
      buttonsOf(m).length > 0 && buttonsOf(m).every((b) => (JSON.parse(b.value) as { s: number }).s === s);
    await world.host.open(approval, { via: 'both' });
    const first = await world.waitForCard(id, onStage(0));
    await world.press(id, 'Allow once', 'U0ALICE', first);
    const stage0 = await world.host.waitForDecide();
    const second = await world.waitForCard(id, onStage(1));
    await world.press(id, 'Allow once', 'U0BOB', second);
    await world.host.waitForDecide((d) => d.index > stage0.index);
    await world.waitForCard(id, (m) => textOf(m).includes('Approved'));
    await noticeSettled(world, id, 'audit');

    const alice = {
      sourceIndex: 0,
      via: 'click',
      userId: 'U0ALICE',
      choiceId: 'allow_once',
      decision: 'approved',
    };
    const entries = await world.auditEntries();
    expect(entries).toEqual([
      expect.objectContaining({ kind: 'decision', approvalId: id, via: 'click', userId: 'U0BOB' }),
    ]);
    expect(JSON.parse(entries[0]!.stages!)).toEqual([alice]);

    const lines = decisionLines(world, id);
    expect(lines).toHaveLength(1);
    expect(lines[0]!.json).toMatchObject({ via: 'click', userId: 'U0BOB', stages: [alice] });

    const exported = exportedLines(world, ['--kind', 'decision']);
    expect(exported).toHaveLength(1);
    expect(JSON.parse(exported[0]!.stages!)).toEqual([alice]);

    // The stats count the request once, decided by a person: the earlier stage is not a decision of its own.
    const summary = await new DecisionStatsReader(world.redis).summary(3_600_000);
    expect(summary.routes.map((r) => [r.route, r.decisions, r.byDecider.person.count])).toEqual([
      ['(SLACK_CHANNEL)', 1, 1],
    ]);
  });
});

/** dist/auditExport.js with only `env` (and PATH) and `args`: its exit status and output. */
function exportWith(env: Record<string, string>, args: string[] = []) {
  const run = spawnSync(process.execPath, ['dist/auditExport.js', ...args], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH ?? '', ...env },
    encoding: 'utf8',
  });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('npm run audit:export on a trimmed trail', () => {
  it('says on stderr which stream lost entries asked for, and exports the rest', async () => {
    const redis = await PrivateRedis.start();
    cleanups.push(() => redis.stop());
    const client = new Redis(`${redis.url}/0`);
    cleanups.push(() => client.quit());
    const since = Date.parse('2026-12-01T10:00:00Z');
    const adds = client.pipeline();
    for (let n = 0; n < 2_000; n++)
      adds.xadd(keys.audit, 'MAXLEN', '~', '100', `${since + n}-0`, 'kind', 'vote');
    await adds.exec();
    const kept = await client.xlen(keys.audit);
    const [first] = await client.xrange(keys.audit, '-', '+', 'COUNT', 1);
    const keptFrom = new Date(Number(first![0].split('-')[0])).toISOString();
    const run = exportWith({ REDIS_URL: `${redis.url}/0` }, ['--since', '2026-12-01T10:00:00Z']);
    expect(run.status).toBe(0);
    expect(run.stdout.trim().split('\n')).toHaveLength(kept);
    expect(run.stderr).toBe(
      `countersign: cs:{audit} was trimmed: entries before ${keptFrom} are gone\n` +
        `countersign: exported ${kept} audit entries\n`,
    );
  });
});

describe('npm run audit:export stopped by its settings', () => {
  it.each([
    [
      'a wrong password',
      'not-the-password',
      'Redis refused the user or password in REDIS_URL (WRONGPASS invalid username-password pair or user is disabled.): fix the password there, or the Redis user it names',
    ],
    [
      'no password',
      undefined,
      'Redis asks for a password and REDIS_URL gives none (NOAUTH Authentication required.): add it, as redis://:password@host:6379 in REDIS_URL or in REDIS_PASSWORD',
    ],
  ])(
    'says Redis refusing %s in one line naming REDIS_URL, without a stack',
    async (_what, password, line) => {
      const redis = await PrivateRedis.start({ password: 'the-right-redis-password' });
      cleanups.push(() => redis.stop());
      const auth = password === undefined ? '' : `:${password}@`;
      expect(exportWith({ REDIS_URL: `redis://${auth}127.0.0.1:${redis.port}/0` })).toEqual({
        status: 1,
        stdout: '',
        stderr: `countersign: ${line}\n`,
      });
    },
  );

  it('says an unreachable Redis in one line with the cause, without a stack', async () => {
    const port = await freePort();
    expect(exportWith({ REDIS_URL: `redis://127.0.0.1:${port}/0` })).toEqual({
      status: 1,
      stdout: '',
      stderr: `countersign: audit export failed: Connection is closed. (connect ECONNREFUSED 127.0.0.1:${port})\n`,
    });
  });

  it('names every invalid Redis variable, one line each', () => {
    expect(exportWith({ REDIS_URL: 'redis://127.0.0.1:6379/abc', REDIS_PASSWORD: 'redispassword' })).toEqual({
      status: 1,
      stdout: '',
      stderr:
        'countersign: REDIS_PASSWORD is set, but it only applies to REDIS_SENTINELS and REDIS_CLUSTER_NODES: put the password in REDIS_URL (redis://:password@host:6379) and unset REDIS_PASSWORD\n' +
        'countersign: REDIS_URL names database "abc", which is not a number (0 to 15 on a default Redis): write it as redis://[[user]:password@]host[:port][/db], or fix or unset it\n',
    });
  });
});
