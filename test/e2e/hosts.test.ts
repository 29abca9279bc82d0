// Several hosts from COUNTERSIGN_CONFIG, end to end: the real bot runs a healthy fake host and one
// whose command exits at once. Each is supervised on its own: the broken one respawns with its own
// growing backoff and never disturbs the other, which keeps posting cards and deciding. Cards,
// records, Redis keys, /readyz, /metrics and log lines carry the host id, and each host gets the
// cwd and env the file gives it, and none of the bot's own settings.

import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { keys } from '../../src/store/keys.js';
import { BOT_TOKEN, type BotLogLine, freePort, SIGNING_SECRET } from '../support/bot.js';
import { FakeHost, shellApproval } from '../support/fakeHost.js';
import { PrivateRedis } from '../support/privateRedis.js';
import { until } from '../support/until.js';
import { APPROVALS, configFile, configYaml, mainHost, route } from './fixtures/config.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

function tempDir(): string {
  const dir = realpathSync(mkdtempSync(join(tmpdir(), 'countersign-hosts-')));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Log lines of one host (its logger binds hostId) with message `msg`. */
function hostLines(logs: BotLogLine[], hostId: string, msg: string): Array<Record<string, unknown>> {
  return logs.filter((l) => l.json?.hostId === hostId && l.msg === msg).map((l) => l.json!);
}

/**
 * A file with the healthy fake host "main" (cwd and env of its own: the fake host finds its
 * control socket only through that env) and "flaky", whose command exits at once.
 */
function twoHostsFile(host: FakeHost, cwd: string): string {
  const path = join(tempDir(), 'countersign.yml');
  writeFileSync(
    path,
    configYaml({
      hosts: [
        mainHost(host.command, {
          cwd,
          env: {
            FAKE_HOST_CONTROL: host.env.FAKE_HOST_CONTROL!,
            FAKE_HOST_STATE: host.env.FAKE_HOST_STATE!,
            FAKE_HOST_MARK: 'main-only',
          },
        }),
        { id: 'flaky', command: 'echo flaky host gave up >&2; exit 3' },
      ],
      routes: [route('flaky-only', { channel: 'C0FLAKY', match: { hosts: ['flaky'] } })],
    }),
  );
  return path;
}

it('runs two hosts: one crashing in a loop with its own backoff, the other posting and deciding normally', async () => {
  const hostDir = tempDir();
  // The bot's own environment has no MSP_HOST_COMMAND and none of the fake host's variables.
  // METRICS_PORT: where /readyz names each host (PORT's says ready or not alone).
  const metricsPort = String(await freePort());
  const world = await World.start({}, (host) => ({
    COUNTERSIGN_CONFIG: twoHostsFile(host, hostDir),
    MSP_HOST_COMMAND: '',
    FAKE_HOST_CONTROL: '',
    FAKE_HOST_STATE: '',
    METRICS_PORT: metricsPort,
  }));
  cleanups.push(() => world.close());

  // The healthy host runs where the file says, with the env the file gives it.
  const first = await world.host.waitForIncarnation(1);
  expect({ cwd: first.cwd, mark: first.mark }).toEqual({ cwd: hostDir, mark: 'main-only' });

  // The broken host keeps respawning, each time after a longer wait: its own backoff.
  await world.bot.waitForLog((l) => l.json?.hostId === 'flaky' && l.json.failures === 3, 10_000);
  const respawns = hostLines(world.bot.logs, 'flaky', 'respawning host');
  expect(respawns.slice(0, 3).map((r) => r.failures)).toEqual([1, 2, 3]);
  expect(respawns[2]!.delayMs as number).toBeGreaterThan(respawns[0]!.delayMs as number);
  // Its failure is logged once, naming the host and where its command is written.
  const failed = await world.bot.waitForLog((l) => l.json?.hostId === 'flaky' && l.level === 50, 10_000);
  expect(failed.msg).toMatch(
    /^COUNTERSIGN_CONFIG hosts\[1\]\.command exited with code 3 \(configError\) \d+ times in a row: flaky host gave up$/,
  );

  // Ready while one host is up; /readyz names the host that is down and why.
  const ready = await fetch(`${world.bot.metricsUrl}/readyz`);
  expect(ready.status).toBe(200);
  const readyBody = (await ready.json()) as Record<string, unknown>;
  expect(readyBody).toMatchObject({ ready: true, host: true, hosts: { main: { up: true } } });
  expect(readyBody.hosts).toMatchObject({
    flaky: { up: false, reason: expect.stringContaining('exited with code 3') },
  });
  expect(readyBody.hosts).not.toHaveProperty('main.reason');
  const metrics = await (await fetch(`${world.bot.metricsUrl}/metrics`)).text();
  expect(metrics).toContain('countersign_host_up{host="main"} 1\n');
  expect(metrics).toContain('countersign_host_up{host="flaky"} 0\n');
  expect(metrics).toContain('countersign_up{part="host"} 1\n');

  // Meanwhile the healthy host's approvals are posted and decided as usual.
  const approvalId = 'two-hosts-main-1';
  await world.host.open(shellApproval({ approvalId, sessionId: SESSION, stages: [['make', 'deploy']] }));
  const card = await world.waitForCard(approvalId, (m) => buttonsOf(m).length > 0);
  expect(card.channel).toBe(world.channel);
  // With more than one host, the card says which one asked.
  expect(textOf(card)).toContain('Host: `main`');

  const stored = JSON.parse((await world.redis.hget(keys.approval(approvalId), 'd'))!) as { hostId: string };
  expect(stored.hostId).toBe('main');
  expect(await world.redis.smembers(keys.openApprovals('main'))).toEqual([approvalId]);
  expect(await world.redis.exists(keys.openApprovals('flaky'))).toBe(0);
  const requested = hostLines(world.bot.logs, 'main', 'approval requested');
  expect(requested.map((l) => l.approvalId)).toEqual([approvalId]);

  await world.press(approvalId, 'Allow once', 'U0ALICE');
  const decide = await world.host.waitForDecide((d) => d.frame.params.approvalId === approvalId);
  expect(decide.frame.params.choiceId).toBe('allow_once');
  const final = await world.waitForCard(approvalId, (m) => textOf(m).includes('Approved'));
  expect(buttonsOf(final)).toHaveLength(0);
  expect(textOf(final)).toContain('Host: `main`');

  // The broken host went on failing all along, and never took the healthy one down with it.
  const respawnsBefore = hostLines(world.bot.logs, 'flaky', 'respawning host').length;
  await until(() => hostLines(world.bot.logs, 'flaky', 'respawning host').length > respawnsBefore, 10_000);
  expect(world.host.incarnations.map((i) => i.incarnation)).toEqual([1]);
  expect(world.host.connected).toBe(true);
  expect(hostLines(world.bot.logs, 'main', 'respawning host')).toEqual([]);
  expect(world.slack.messagesIn('C0FLAKY')).toEqual([]);
  expect(world.host.decides()).toHaveLength(1);
});

it("gives a host the bot's environment without the bot's settings: no token, secret or Redis password", async () => {
  // The agent the host runs can read its environment: with the signing secret it could sign a
  // press on its own card. A password a URL must encode, so both spellings are looked for.
  const redisPassword = 'redis/hostenv+secret@0001';
  const replicaSecret = 'replica-hostenv-secret-0123456789abcdef';
  const providerKey = 'provider-hostenv-key-0002';
  const license = 'museLicense-hostenv-0003';
  const redis = await PrivateRedis.start({ password: redisPassword });
  cleanups.push(() => redis.stop());
  const host = await FakeHost.start({ sessions: [{ sessionId: SESSION, title: 'Bump the version' }] });
  const file = configFile({
    hosts: [mainHost(host.command, { env: { MUSE_LICENSE: license } })],
    routes: [route('everything')],
  });
  cleanups.push(file.remove);
  const world = await World.start(
    {},
    {
      COUNTERSIGN_CONFIG: file.path,
      MSP_HOST_COMMAND: '',
      COUNTERSIGN_REPLICA_SECRET: replicaSecret,
      // Exported beside the bot's settings for the agent (a provider key): the host needs it.
      AGENT_PROVIDER_KEY: providerKey,
    },
    { host, redisUrl: redis.url },
  );
  cleanups.push(() => world.close());

  const env = await world.host.environment();
  // What is not the bot's reaches the host, and so does the host's own env from the file.
  expect(env).toMatchObject({ AGENT_PROVIDER_KEY: providerKey, MUSE_LICENSE: license });
  expect(env.FAKE_HOST_CONTROL).toBe(host.env.FAKE_HOST_CONTROL);
  // None of the bot's settings does, under its name or any other.
  for (const name of ['SLACK_BOT_TOKEN', 'SLACK_SIGNING_SECRET', 'REDIS_URL', 'COUNTERSIGN_REPLICA_SECRET']) {
    expect(env).not.toHaveProperty(name);
  }
  const values = Object.values(env).join('\n');
  for (const secret of [
    BOT_TOKEN,
    SIGNING_SECRET,
    redisPassword,
    encodeURIComponent(redisPassword),
    replicaSecret,
  ]) {
    expect(values).not.toContain(secret);
  }
  // Start-up says which names were withheld, and only their names.
  const withheld = world.bot.logs.find((l) => l.msg === "the bot's settings are withheld from the hosts");
  expect(withheld?.level).toBe(30);
  expect(withheld?.json?.withheld).toEqual(
    expect.arrayContaining([
      'COUNTERSIGN_REPLICA_SECRET',
      'REDIS_URL',
      'SLACK_BOT_TOKEN',
      'SLACK_SIGNING_SECRET',
    ]),
  );
  expect(withheld?.json?.withheld).not.toContain('AGENT_PROVIDER_KEY');
});

/** The sandbox host's session: another host's than SESSION. */
const OTHER_SESSION = '0198f0aa-3333-7000-8000-0000000000cc';

/**
 * Two hosts of one bot: `main` (hostA, the World's) and `sandbox` (hostB, started with `b`), the
 * sandbox host up before this returns.
 */
async function twoHosts(b: { durability?: 'ephemeral' } = {}) {
  const hostA = await FakeHost.start({ sessions: [{ sessionId: SESSION, title: 'Bump the version' }] });
  const hostB = await FakeHost.start({ ...b, sessions: [{ sessionId: OTHER_SESSION, title: 'Sandbox' }] });
  cleanups.push(
    () => hostA.close(),
    () => hostB.close(),
  );
  const file = configFile({
    hosts: [mainHost(hostA.command), { id: 'sandbox', command: hostB.command, env: { ...hostB.env } }],
  });
  cleanups.push(file.remove);
  const world = await World.start(
    {},
    { COUNTERSIGN_CONFIG: file.path, MSP_HOST_COMMAND: '' },
    { host: hostA },
  );
  cleanups.push(() => world.close());
  await hostB.waitForIncarnation(1, 20_000);
  return { hostA, hostB, world };
}

it("one host never changes another's approval: a re-ask, an update or a resolution under its id is ignored", async () => {
  const { hostA, hostB, world } = await twoHosts();

  const id = 'xh-0001';
  await hostA.open(shellApproval({ approvalId: id, sessionId: SESSION, stages: [['npm', 'test']] }));
  await world.waitForCard(id, (m) => buttonsOf(m).length > 0);
  // The sandbox host names the same approval: asks it with its own command, changes it, resolves it.
  const theirs = shellApproval({
    approvalId: id,
    sessionId: OTHER_SESSION,
    stages: [['rm', '-rf', '/srv/prod']],
  });
  await hostB.open(theirs);
  await hostB.update({
    approvalId: id,
    patch: { subject: theirs.subject },
    change: { kind: 'subjectChanged' },
  });
  await hostB.resolve({ approvalId: id, decision: 'approved', resolvedBy: 'policy' });
  const ignored = (l: BotLogLine) => l.msg === "a host spoke of another host's approval; ignored";
  await until(() => world.bot.logs.filter(ignored).length >= 3, 10_000);
  expect(world.bot.logs.find(ignored)?.json).toMatchObject({ hostId: 'sandbox', approvalHostId: 'main' });

  const card = await world.card(id);
  expect(buttonsOf(card).length).toBeGreaterThan(0);
  expect(textOf(card)).toContain('npm test');
  expect(JSON.stringify(card.blocks)).not.toContain('/srv/prod');
  const record = JSON.parse((await world.redis.hget(keys.approval(id), 'd'))!);
  expect(record).toMatchObject({ hostId: 'main', phase: 'pending' });
  // A press decides it at its own host, as shown.
  expect((await world.press(id, 'Allow once')).status).toBe(200);
  const decide = await hostA.waitForDecide((d) => d.frame.params.approvalId === id);
  expect(decide.frame.params.choiceId).toBe('allow_once');
  expect(hostB.decides()).toEqual([]);
});

it("an approval asked under an id another host's approval has gets no card: its channel is told once, and no open set keeps it", async () => {
  const { hostA, hostB, world } = await twoHosts();

  // The sandbox host asks the id first; the main host then asks its own approval under it, twice.
  const id = 'xh-0004';
  await hostB.open(shellApproval({ approvalId: id, sessionId: OTHER_SESSION, stages: [['true']] }));
  await world.waitForCard(id, (m) => buttonsOf(m).length > 0);
  const ours = shellApproval({ approvalId: id, sessionId: SESSION, stages: [['make', 'deploy']] });
  await hostA.open(ours);
  await hostA.open(ours);
  const told = () =>
    world.slack
      .callsOf('chat.postMessage')
      .filter((c) => String(c.args.text).includes("already belongs to another host's approval"));
  await until(() => told().length > 0, 10_000);
  const ignored = (l: BotLogLine) =>
    l.msg === "a host spoke of another host's approval; ignored" && l.json?.hostId === 'main';
  await until(() => world.bot.logs.filter(ignored).length >= 4, 10_000);
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(told()).toHaveLength(1);
  expect(told()[0]!.args).toMatchObject({ channel: APPROVALS });
  expect(String(told()[0]!.args.text)).toContain('Host `main` asked approval `xh-0004`');
  const strays = async () =>
    (await world.redis.sismember(keys.openApprovals('main'), id)) +
    (await world.redis.sismember(keys.openInSession('main', SESSION), id));
  await until(async () => (await strays()) === 0, 5_000);
  // The record and card are the sandbox host's, as they were.
  const record = JSON.parse((await world.redis.hget(keys.approval(id), 'd'))!);
  expect(record).toMatchObject({ hostId: 'sandbox', phase: 'pending' });
  expect(JSON.stringify((await world.card(id)).blocks)).not.toContain('make deploy');
});

it("a host that names another host's approval, then dies keeping nothing, leaves that approval as it was", async () => {
  // A host that keeps nothing: each of its exits and starts orphans what it has open.
  const { hostA, hostB, world } = await twoHosts({ durability: 'ephemeral' });

  const id = 'xh-0003';
  await hostA.open(shellApproval({ approvalId: id, sessionId: SESSION, stages: [['npm', 'test']] }));
  await world.waitForCard(id, (m) => buttonsOf(m).length > 0);
  await hostB.open(shellApproval({ approvalId: id, sessionId: OTHER_SESSION, stages: [['true']] }), {
    via: 'requested',
  });
  const ignored = (l: BotLogLine) => l.msg === "a host spoke of another host's approval; ignored";
  await until(() => world.bot.logs.some(ignored), 10_000);
  // Its create found the record and took back the open-set entry it sent along.
  const strays = async () =>
    (await world.redis.sismember(keys.openApprovals('sandbox'), id)) +
    (await world.redis.sismember(keys.openInSession('sandbox', OTHER_SESSION), id));
  await until(async () => (await strays()) === 0, 5_000);
  expect(await world.redis.sismember(keys.openApprovals('main'), id)).toBe(1);
  // An entry left anyway (a process that died between the create and the take-back) is passed over.
  await world.redis.sadd(keys.openApprovals('sandbox'), id);

  await hostB.crash();
  await hostB.waitForIncarnation(2, 20_000);
  await until(async () => (await world.redis.sismember(keys.openApprovals('sandbox'), id)) === 0, 10_000);
  const record = JSON.parse((await world.redis.hget(keys.approval(id), 'd'))!);
  expect(record).toMatchObject({ hostId: 'main', phase: 'pending' });
  const card = await world.card(id);
  expect(buttonsOf(card).length).toBeGreaterThan(0);
  expect((await world.press(id, 'Allow once')).status).toBe(200);
  const decide = await hostA.waitForDecide((d) => d.frame.params.approvalId === id);
  expect(decide.frame.params.choiceId).toBe('allow_once');
});
