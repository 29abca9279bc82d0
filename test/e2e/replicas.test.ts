// Several replicas on one Redis: real bot processes sharing one fake Slack, one fake host command
// and one Redis database. Only the replica holding a host's lease runs the host; a click may land
// at any replica; an owner that dies or stalls hands the host over without losing or doubling.

import { Redis } from 'ioredis';
import { v7 as uuidv7 } from 'uuid';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { ReplicaSeal } from '../../src/replicas/replicaSeal.js';
import { readGrantAudit } from '../../src/store/grantAudit.js';
import { keys } from '../../src/store/keys.js';
import { BOT_TOKEN, freshRedisDb, type RunningBot, SIGNING_SECRET, startBot } from '../support/bot.js';
import { FakeHost, type FakeHostSeed, shellApproval } from '../support/fakeHost.js';
import { FakeSlack } from '../support/fakeSlack.js';
import { seriesValue } from '../support/metricSeries.js';
import { PrivateRedis } from '../support/privateRedis.js';
import { REPLICA_LEASE_TTL_MS, replicaEnv, replicaRunning, standingOf } from '../support/replicas.js';
import { postInteraction, viewSubmissionPayload } from '../support/slackRequests.js';
import { TcpProxy } from '../support/tcpProxy.js';
import { testRedisUrl } from '../support/testRedis.js';
import { probeUntil as until } from '../support/until.js';
import { configFile, route, users } from './fixtures/config.js';
import { buttonsOf, pressButtonAt, rememberButtonOf, SESSION, textOf } from './world.js';

function shell(approvalId: string, argv: string[]) {
  return shellApproval({ approvalId, sessionId: SESSION, stages: [argv] });
}

interface Replicas {
  slack: FakeSlack;
  host: FakeHost;
  redis: Redis;
  redisDb: number;
  bots: RunningBot[];
  /** The bot URL base when not the shared test Redis. */
  redisUrl?: string;
}

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => undefined);
});

async function startReplicas(
  count: number,
  options: { seed?: FakeHostSeed; env?: Record<string, string>; redis?: PrivateRedis } = {},
): Promise<Replicas> {
  const slack = await FakeSlack.start();
  cleanups.push(() => slack.close());
  const host = await FakeHost.start({
    sessions: [{ sessionId: SESSION, title: 'Bump the version' }],
    recovery: 'sameId',
    ...options.seed,
  });
  cleanups.push(() => host.close());
  const redisUrl = options.redis?.url;
  const redisDb = await freshRedisDb(redisUrl);
  const redis = new Redis(redisUrl ? `${redisUrl}/${redisDb}` : testRedisUrl(redisDb));
  const world: Replicas = { slack, host, redis, redisDb, bots: [], ...(redisUrl ? { redisUrl } : {}) };
  // The test may replace its client (after restarting Redis): the one in use then is closed.
  cleanups.push(() => world.redis.quit());
  for (let i = 0; i < count; i++) await addReplica(world, `r${i + 1}`, options.env);
  return world;
}

async function addReplica(
  world: Replicas,
  name: string,
  env: Record<string, string> = {},
  /** Where this replica reaches Redis, when not where the others do (a proxy in front of it). */
  redisUrl = world.redisUrl,
): Promise<RunningBot> {
  const bot = await startBot({
    host: world.host,
    slack: world.slack,
    redisDb: world.redisDb,
    env: replicaEnv(name, env),
    ...(redisUrl ? { redisUrl } : {}),
  });
  cleanups.push(() => bot.stop(5_000));
  world.bots.push(bot);
  await bot.waitReady(20_000);
  return bot;
}

/** The replica that runs host `hostId` now, by its /metrics. */
function ownerOf(world: Replicas, hostId = 'default', timeoutMs = 10_000): Promise<RunningBot> {
  return replicaRunning(world.bots, hostId, timeoutMs);
}

async function postedAt(world: Replicas, approvalId: string, timeoutMs = 10_000) {
  return until(
    `the card of ${approvalId}`,
    async () => {
      const raw = await world.redis.hget(keys.approval(approvalId), 'd');
      const slack = raw ? (JSON.parse(raw) as { slack: { channel: string; ts?: string } }).slack : undefined;
      return slack?.ts ? { channel: slack.channel, ts: slack.ts } : undefined;
    },
    timeoutMs,
  );
}

/** Presses the card's button labelled `label` at `bot`, as a signed interaction. */
async function press(
  world: Replicas,
  bot: RunningBot,
  approvalId: string,
  label: string,
  userId = 'U0ALICE',
  at?: { channel: string; ts: string },
) {
  const { channel, ts } = at ?? (await postedAt(world, approvalId));
  const card = world.slack.message(channel, ts);
  const button = card && buttonsOf(card).find((b) => b.text === label);
  if (!button) throw new Error(`no button ${label} on ${approvalId}`);
  await pressButtonAt(bot.url, world.slack, { channel, ts }, button, userId);
}

/** A config file whose one route (every card, in the tests' channel) lets only `approvers` decide. */
function approversFile(approvers: string[]): string {
  const file = configFile({ routes: [route('deploys', { approvers: users(...approvers) })] });
  cleanups.push(async () => file.remove());
  return file.path;
}

/** The next ephemeral message Slack was asked to show `userId`. */
async function ephemeralTo(world: Replicas, userId: string, timeoutMs = 10_000): Promise<string> {
  const call = await world.slack.waitFor('chat.postEphemeral', (c) => c.args.user === userId, timeoutMs);
  return String(call.args.text);
}

/** Whether anything was ever appended to the host's decision stream (its last id is still 0-0). */
async function streamUntouched(world: Replicas, hostId = 'default'): Promise<boolean> {
  const info = (await world.redis.xinfo('STREAM', keys.decisions(hostId))) as unknown[];
  return info[info.indexOf('last-generated-id') + 1] === '0-0';
}

function decidesFor(host: FakeHost, approvalId: string) {
  return host.decides().filter((d) => d.frame.params.approvalId === approvalId);
}

async function resolvedCard(world: Replicas, approvalId: string, timeoutMs = 10_000) {
  const { channel, ts } = await postedAt(world, approvalId);
  return until(
    `${approvalId} resolved on its card`,
    () => {
      const card = world.slack.message(channel, ts);
      return card && buttonsOf(card).length === 0 && textOf(card).includes('Approved') ? card : undefined;
    },
    timeoutMs,
  );
}

describe('several replicas on one Redis', { timeout: 90_000 }, () => {
  it('1. two replicas, one host process, one card; a click at the non-owner decides once', async () => {
    const world = await startReplicas(2);
    const owner = await ownerOf(world);
    const standby = world.bots.find((b) => b !== owner)!;
    expect((await standingOf(standby)).standby).toEqual(['default']);
    await world.host.waitForIncarnation(1);

    await world.host.open(shell('rep-one-0001', ['git', 'status']));
    await postedAt(world, 'rep-one-0001');
    // Only the replica that runs the host counts its pending approvals: summed, each counts once.
    const pending = async (bot: RunningBot) =>
      seriesValue(
        await (await fetch(`${bot.metricsUrl}/metrics`)).text(),
        'countersign_pending_approvals{route="(SLACK_CHANNEL)"}',
      );
    expect([await pending(owner), await pending(standby)]).toEqual([1, 0]);
    await press(world, standby, 'rep-one-0001', 'Allow once');
    await world.host.waitForDecide();
    await resolvedCard(world, 'rep-one-0001');

    expect(world.host.incarnations).toHaveLength(1);
    expect(decidesFor(world.host, 'rep-one-0001')).toHaveLength(1);
    expect(world.slack.cardPosts()).toHaveLength(1);
    // The standby forwarded it: the owner carried it out.
    expect(standby.logs.some((l) => l.msg === 'decision accepted')).toBe(false);
    expect(owner.logs.some((l) => l.msg === 'decision accepted')).toBe(true);
    // Both say on /metrics which host they run and which they stand by for.
    const metrics = await (await fetch(`${standby.metricsUrl}/metrics`)).text();
    expect(metrics).toContain('countersign_host_owned{host="default"} 0');
    expect(await (await fetch(`${owner.metricsUrl}/metrics`)).text()).toContain(
      'countersign_host_owned{host="default"} 1',
    );
    await expect.poll(() => pending(owner)).toBe(0);
  });

  it('2. SIGKILL the owner: the standby takes over within about the lease, and old cards still decide', async () => {
    const world = await startReplicas(2);
    const owner = await ownerOf(world);
    await world.host.waitForIncarnation(1);
    await world.host.open(shell('rep-kill-0001', ['make', 'deploy']));
    await postedAt(world, 'rep-kill-0001');

    const killedAt = Date.now();
    await owner.kill();
    const next = await world.host.waitForIncarnation(2, REPLICA_LEASE_TTL_MS + 7_000);
    const takeoverMs = Date.now() - killedAt;
    expect(takeoverMs).toBeLessThan(REPLICA_LEASE_TTL_MS + 5_000);
    const successor = await ownerOf(world);
    expect(successor).not.toBe(owner);
    expect(next.incarnation).toBe(2);

    // The card the dead owner posted decides through the new owner's host process.
    await press(world, successor, 'rep-kill-0001', 'Allow once');
    await resolvedCard(world, 'rep-kill-0001');
    const decides = decidesFor(world.host, 'rep-kill-0001');
    expect(
      decides,
      JSON.stringify(decides.map((d) => [d.incarnation, d.frame.params.commandId])),
    ).toHaveLength(1);
    expect(decides[0]!.incarnation).toBe(2);
    expect(world.slack.cardPosts()).toHaveLength(1);
  });

  it('3. SIGSTOP the owner past its lease, then SIGCONT: it sends nothing for the host it lost', async () => {
    const world = await startReplicas(2);
    const owner = await ownerOf(world);
    const standby = world.bots.find((b) => b !== owner)!;
    await world.host.waitForIncarnation(1);
    await world.host.open(shell('rep-stop-0001', ['rm', '-rf', 'build']));
    await postedAt(world, 'rep-stop-0001');
    // Slack has the card; the owner must also have stored its place, or it would do so on waking
    // (rightly: the post was made before it slept) and read below as a post made after.
    await owner.waitForLog((l) => l.msg === 'card posted' && l.json?.approvalId === 'rep-stop-0001');

    owner.proc.kill('SIGSTOP');
    cleanups.push(async () => owner.proc.kill('SIGCONT'));
    // The host process the sleeping owner ran asks a new question: it waits in the owner's pipe.
    await world.host.open(shell('rep-stop-0002', ['git', 'push']));
    await world.host.waitForIncarnation(2, REPLICA_LEASE_TTL_MS + 7_000);
    // The new owner's own host process asks it again (same id): the new owner posts its card.
    await postedAt(world, 'rep-stop-0002');
    await ownerOf(world).then((b) => expect(b).toBe(standby));
    // While the old owner sleeps, a click reaches it: it is read only once it wakes up.
    const stoppedClick = press(world, owner, 'rep-stop-0001', 'Allow once');
    await new Promise((r) => setTimeout(r, 300));
    const wokeAt = world.host.frames.length;
    owner.proc.kill('SIGCONT');
    await stoppedClick;
    await owner.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('lost host default'), 10_000);

    // The click is carried out once, by the new owner's host process.
    await resolvedCard(world, 'rep-stop-0001');
    const decides = decidesFor(world.host, 'rep-stop-0001');
    expect(decides).toHaveLength(1);
    expect(decides[0]!.incarnation).toBe(2);
    // Nothing reached the host process the old owner ran once it woke up.
    expect(world.host.frames.slice(wokeAt).filter((f) => f.incarnation === 1 && isRequest(f.frame))).toEqual(
      [],
    );
    // And it posted, updated and decided nothing for the host after waking.
    const woke = owner.logs.findIndex(
      (l) => typeof l.msg === 'string' && l.msg.startsWith('lost host default'),
    );
    const after = owner.logs.slice(woke).map((l) => l.msg);
    expect(after).not.toContain('card posted');
    expect(after).not.toContain('decision accepted');
    // What its old host process said while it slept is dropped, not relayed.
    await owner.waitForLog((l) => l.msg === 'event of a host this replica no longer owns; dropped', 5_000);
    expect(world.slack.cardPosts()).toHaveLength(2);
  });

  it('4. three replicas and a burst of 150 approvals clicked at random replicas, some twice: one card and one decision each', async () => {
    const world = await startReplicas(3);
    await ownerOf(world);
    await world.host.waitForIncarnation(1);
    const ids = Array.from({ length: 150 }, (_, i) => `rep-burst-${String(i).padStart(4, '0')}`);
    for (const id of ids) await world.host.open(shell(id, ['echo', id]));
    await Promise.all(ids.map((id) => postedAt(world, id, 30_000)));
    let seed = 7;
    const random = () => {
      seed = (seed * 48271) % 2147483647;
      return seed / 2147483647;
    };
    const clicks: Promise<void>[] = [];
    for (const [i, id] of ids.entries()) {
      const times = i % 5 === 0 ? 2 : 1;
      for (let t = 0; t < times; t++) {
        const bot = world.bots[Math.floor(random() * world.bots.length)]!;
        clicks.push(press(world, bot, id, 'Allow once', t === 0 ? 'U0ALICE' : 'U0BOB'));
      }
    }
    await Promise.all(clicks);
    await until(
      'every approval decided',
      () => ids.every((id) => decidesFor(world.host, id).length > 0) || undefined,
      60_000,
    );
    await Promise.all(ids.map((id) => resolvedCard(world, id, 30_000)));
    for (const id of ids) expect(decidesFor(world.host, id), id).toHaveLength(1);
    expect(world.slack.cardPosts()).toHaveLength(ids.length);
    expect(world.host.incarnations).toHaveLength(1);
  });

  it('5. a decision in the owner’s stream when the owner dies is carried out once by the next owner', async () => {
    const world = await startReplicas(2);
    const owner = await ownerOf(world);
    const standby = world.bots.find((b) => b !== owner)!;
    await world.host.waitForIncarnation(1);
    await world.host.open(shell('rep-stream-0001', ['terraform', 'apply']));
    await postedAt(world, 'rep-stream-0001');

    // The owner reads the forwarded click and sends it, but its host never answers.
    await world.host.holdDecide(1);
    await press(world, standby, 'rep-stream-0001', 'Allow once');
    const held = await world.host.waitForDecide();
    expect(held.incarnation).toBe(1);
    expect(await world.redis.xlen(keys.decisions('default'))).toBe(1);
    await owner.kill();

    await world.host.waitForIncarnation(2, REPLICA_LEASE_TTL_MS + 7_000);
    await resolvedCard(world, 'rep-stream-0001', 15_000);
    const decides = decidesFor(world.host, 'rep-stream-0001');
    // Sent again to the new host process with the same commandId: the same decision, once applied.
    expect(decides.filter((d) => d.incarnation === 2)).toHaveLength(1);
    expect(new Set(decides.map((d) => d.frame.params.commandId)).size).toBe(1);
    await until(
      'the entry acknowledged',
      async () => (await world.redis.xlen(keys.decisions('default'))) === 0 || undefined,
      5_000,
    );
    // It went through: as for any click that counted, the clicker is told nothing (the card says it).
    expect(world.slack.callsOf('chat.postEphemeral').filter((c) => c.args.user === 'U0ALICE')).toEqual([]);
  });

  it('6. Redis restarted under the replicas: nothing lost, nothing doubled', async () => {
    const redis = await PrivateRedis.start({ persist: true });
    cleanups.push(() => redis.remove());
    const world = await startReplicas(2, { redis, env: { COUNTERSIGN_LEASE_TTL: '6s' } });
    const owner = await ownerOf(world);
    const standby = world.bots.find((b) => b !== owner)!;
    await world.host.waitForIncarnation(1);
    const before = ['rep-redis-0001', 'rep-redis-0002'];
    for (const id of before) await world.host.open(shell(id, ['echo', id]));
    const cards = await Promise.all(before.map((id) => postedAt(world, id)));

    await world.redis.quit();
    await redis.restart(async () => {
      // While Redis is down: a new approval at the host and a click at the standby.
      await world.host.open(shell('rep-redis-0003', ['echo', 'three']));
      await press(world, standby, 'rep-redis-0001', 'Allow once', 'U0ALICE', cards[0]);
    });
    world.redis = new Redis(`${redis.url}/${world.redisDb}`);
    await postedAt(world, 'rep-redis-0003', 15_000);
    // The click taken while Redis was away either counted or told the clicker it did not.
    await press(world, standby, 'rep-redis-0002', 'Allow once');
    await resolvedCard(world, 'rep-redis-0002', 15_000);
    await until(
      'the first click settled',
      () =>
        decidesFor(world.host, 'rep-redis-0001').length > 0 ||
        world.slack.callsOf('chat.postEphemeral').length > 0 ||
        undefined,
      15_000,
    );
    for (const id of [...before, 'rep-redis-0003'])
      expect(decidesFor(world.host, id).length).toBeLessThanOrEqual(1);
    expect(decidesFor(world.host, 'rep-redis-0002')).toHaveLength(1);
    expect(world.slack.cardPosts()).toHaveLength(3);
    expect(world.host.incarnations).toHaveLength(1);
  });

  it('7. an outsider clicking at the standby is refused there: nothing handed on, nothing decided', async () => {
    const world = await startReplicas(2, { env: { COUNTERSIGN_CONFIG: approversFile(['U0ALICE']) } });
    const owner = await ownerOf(world);
    const standby = world.bots.find((b) => b !== owner)!;
    await world.host.waitForIncarnation(1);
    await world.host.open(shell('rep-outsider-1', ['terraform', 'destroy']));
    await postedAt(world, 'rep-outsider-1');

    await press(world, standby, 'rep-outsider-1', 'Allow once', 'U0EVE');
    expect(await ephemeralTo(world, 'U0EVE')).toBe('Only <@U0ALICE> can decide on deploys.');
    expect(decidesFor(world.host, 'rep-outsider-1')).toEqual([]);
    // Refused where it landed: nothing was ever handed to the owner.
    expect(await streamUntouched(world)).toBe(true);
    const { channel, ts } = await postedAt(world, 'rep-outsider-1');
    expect(buttonsOf(world.slack.message(channel, ts)!).length).toBeGreaterThan(0);

    // The approver's click at the same standby goes through the owner.
    await press(world, standby, 'rep-outsider-1', 'Allow once', 'U0ALICE');
    await resolvedCard(world, 'rep-outsider-1');
    expect(decidesFor(world.host, 'rep-outsider-1')).toHaveLength(1);
  });

  it('8. the owner checks who may decide on the record it claims: a click the standby let through is refused there', async () => {
    // The owner's file lets only Alice decide; the standby's (out of date) lets Eve too.
    const world = await startReplicas(1, { env: { COUNTERSIGN_CONFIG: approversFile(['U0ALICE']) } });
    const owner = await ownerOf(world);
    const standby = await addReplica(world, 'r2', {
      COUNTERSIGN_CONFIG: approversFile(['U0ALICE', 'U0EVE']),
    });
    expect((await standingOf(standby)).standby).toEqual(['default']);
    await world.host.waitForIncarnation(1);
    await world.host.open(shell('rep-recheck-1', ['kubectl', 'delete', 'ns', 'prod']));
    await postedAt(world, 'rep-recheck-1');

    await press(world, standby, 'rep-recheck-1', 'Allow once', 'U0EVE');
    expect(await ephemeralTo(world, 'U0EVE')).toBe('Only <@U0ALICE> can decide on deploys.');
    expect(decidesFor(world.host, 'rep-recheck-1')).toEqual([]);
    // Handed on by the standby, refused by the owner.
    await standby.waitForLog((l) => l.msg === 'decision handed to the host owner');
    await owner.waitForLog(
      (l) =>
        l.msg === 'decision refused where it is claimed: it may not be made on the approval as it stands' &&
        l.json?.approvalId === 'rep-recheck-1',
    );
    // Audited as a refusal, as one found by the click's own check is. The audit append does not
    // hold the decision up, so it may land just after the log line: wait for it, then check that
    // it is the only one.
    const refusals = async () =>
      (await world.redis.xrange(keys.refusals, '-', '+'))
        .map(([, fields]) => fields.join(' '))
        .filter((f) => f.includes('refusal'));
    await vi.waitFor(async () => expect(await refusals()).not.toEqual([]), { timeout: 5_000 });
    expect(await refusals()).toEqual([expect.stringMatching(/U0EVE.*notApprover|notApprover.*U0EVE/)]);
    const { channel, ts } = await postedAt(world, 'rep-recheck-1');
    expect(buttonsOf(world.slack.message(channel, ts)!).length).toBeGreaterThan(0);
  });

  it('9. a forged entry in the stream (no MAC, a wrong one) is dropped and logged; nothing is decided', async () => {
    const world = await startReplicas(1);
    const owner = await ownerOf(world);
    await world.host.waitForIncarnation(1);
    await world.host.open(shell('rep-forged-1', ['rm', '-rf', '/srv']));
    await postedAt(world, 'rep-forged-1');
    const entry = (commandId: string) =>
      JSON.stringify({
        approvalId: 'rep-forged-1',
        hostId: 'default',
        sourceIndex: 0,
        choiceId: 'allow_once',
        by: { via: 'click', userId: 'U0ALICE' },
        commandId,
        at: Date.now(),
      });
    // Written straight into Redis by someone who does not hold the replicas' secret.
    const forged = [uuidv7(), uuidv7()];
    const stream = keys.decisions('default');
    const unsealed = await world.redis.xadd(stream, '*', 'd', entry(forged[0]!));
    const guessed = new ReplicaSeal('a guess at the secret, 32 characters or more');
    const body = entry(forged[1]!);
    const missealed = await world.redis.xadd(stream, '*', 'd', body, 'm', guessed.mac('decision', body));

    for (const [entryId, mac] of [
      [unsealed, 'missing'],
      [missealed, 'wrong'],
    ] as const) {
      const line = await owner.waitForLog(
        (l) => l.msg === 'forwarded decision without a valid MAC; dropped' && l.json?.entryId === entryId,
        10_000,
      );
      expect(line.level).toBe(40);
      expect(line.json).toMatchObject({ hostId: 'default', mac });
    }
    await until(
      'the forged entries removed',
      async () => (await world.redis.xlen(stream)) === 0 || undefined,
    );
    expect(decidesFor(world.host, 'rep-forged-1')).toEqual([]);
    // Never the body in the log.
    for (const commandId of forged) expect(owner.logs.some((l) => l.raw.includes(commandId))).toBe(false);

    // The same entry sealed with the replicas' secret (here the bot token, every replica's) is carried out.
    const real = uuidv7();
    const sealed = entry(real);
    await world.redis.xadd(stream, '*', 'd', sealed, 'm', new ReplicaSeal(BOT_TOKEN).mac('decision', sealed));
    await resolvedCard(world, 'rep-forged-1');
    expect(decidesFor(world.host, 'rep-forged-1').map((d) => d.frame.params.commandId)).toEqual([real]);
  });

  it('10. a forwarded "don\'t ask again" answered after the host moved on to a later stage remembers nothing', {
    timeout: 90_000,
  }, async () => {
    // The owner's decide goes unanswered past the 20 s the standby waits (MSP_REQUEST_TIMEOUT), so
    // the owner answers the clicker itself, late.
    const world = await startReplicas(2, { env: { MSP_REQUEST_TIMEOUT: '30s' } });
    const owner = await ownerOf(world);
    const standby = world.bots.find((b) => b !== owner)!;
    await world.host.waitForIncarnation(1);
    const approvalId = 'rep-late-grant-1';
    await world.host.open(
      shellApproval({
        approvalId,
        sessionId: SESSION,
        stages: [
          ['npm', 'test'],
          ['npm', 'publish'],
        ],
      }),
    );
    const at = await postedAt(world, approvalId);
    const card = world.slack.message(at.channel, at.ts)!;
    const remember = rememberButtonOf(card);
    expect(remember).toBeDefined();

    // Stage 0 (npm test) is applied at the host, which says nothing yet.
    await world.host.applySilently(1);
    await pressButtonAt(standby.url, world.slack, at, remember!, 'U0ALICE');
    await world.host.waitForDecide((d) => d.frame.params.approvalId === approvalId);
    // The standby stops waiting and tells Alice it was handed on.
    expect(await ephemeralTo(world, 'U0ALICE', 25_000)).toMatch(/handed to the Countersign replica/);
    // The host moves on to stage 1 (npm publish), and says so, before the owner hears the decide went through.
    await world.host.update({
      approvalId,
      change: {
        kind: 'stageResolved',
        requirementId: { approvalId, sourceIndex: 0 },
        choiceId: 'allow_once',
        decision: 'approved',
      },
    });
    await until('the approval at stage 1', async () => {
      const raw = await world.redis.hget(keys.approval(approvalId), 'd');
      return (raw && JSON.parse(raw).currentRequirementId.sourceIndex === 1) || undefined;
    });

    // The owner asks again, hears the decide went through, and answers Alice itself: with a grant
    // made, or with a sentence saying why none was.
    const toAlice = () => world.slack.callsOf('chat.postEphemeral').filter((c) => c.args.user === 'U0ALICE');
    const created = async () => (await readGrantAudit(world.redis)).filter((e) => e.kind === 'created');
    await until(
      'the owner answered the press',
      async () => toAlice().length === 2 || (await created()).length > 0 || undefined,
      20_000,
    );
    expect(await created()).toEqual([]);
    expect(String(toAlice()[1]!.args.text)).toMatch(/moved on to another step.*did not remember it/);
    const raw = await world.redis.hget(keys.approval(approvalId), 'd');
    expect(JSON.parse(raw!).remembered).toBeUndefined();
  });

  it('11. right after a takeover the open approvals carry the new owner’s token: a write the paused owner sent before it slept is refused', async () => {
    const redis = await PrivateRedis.start();
    cleanups.push(() => redis.stop());
    // The first replica reaches Redis through a proxy that can keep a command of its in flight.
    const proxy = await TcpProxy.start(redis.port);
    cleanups.push(() => proxy.stop());
    const world = await startReplicas(0, { redis });
    const first = await addReplica(world, 'r1', {}, `redis://127.0.0.1:${proxy.port}`);
    expect(await ownerOf(world)).toBe(first);
    await world.host.waitForIncarnation(1);
    // The second replica's host says nothing when it takes over (a host slow to start): nothing
    // it does for the host can touch the approval, so only the takeover itself can fence it.
    await addReplica(world, 'r2', { MSP_HOST_COMMAND: 'exec sleep 600' });

    const id = 'rep-fence-0001';
    await world.host.open(shell(id, ['kubectl', 'delete', 'ns', 'prod']));
    const at = await postedAt(world, id);
    // Posted and in sync: no card for the next owner to bring up to date.
    await until(
      'the card in sync',
      async () => (await world.redis.zscore(keys.unsyncedCards(), id)) === null,
    );
    const leaseOf = async () => {
      const [replica, token] = ((await world.redis.get(keys.hostLease('default'))) ?? '').split(' ');
      return { replica: replica ?? '', token: Number(token) };
    };
    const firstLease = await leaseOf();
    expect(firstLease.replica.startsWith('r1#')).toBe(true);
    const before = await world.redis.hgetall(keys.approval(id));
    expect(before.f).toBe(String(firstLease.token));

    // A click at the owner: its claim leaves the process, carrying its token, and is held on the way.
    const inFlight = proxy.holdRequestsFrom(keys.claim(id, 0));
    const pressed = press(world, first, id, 'Allow once', 'U0ALICE', at);
    await inFlight.fired;
    first.proc.kill('SIGSTOP');
    cleanups.push(async () => first.proc.kill('SIGCONT'));

    // The lease runs out; the other replica takes the host.
    const secondLease = await until(
      'the other replica holding the lease',
      async () => {
        const lease = await leaseOf();
        return lease.replica.startsWith('r2#') ? lease : undefined;
      },
      REPLICA_LEASE_TTL_MS + 7_000,
    );
    expect(secondLease.token).toBeGreaterThan(firstLease.token);
    // Right after the takeover, before its host has said a word, the approval carries its token.
    await until(
      'the open approval fenced with the new token',
      async () => (await world.redis.hget(keys.approval(id), 'f')) === String(secondLease.token),
      2_000,
    );

    // The former owner wakes, and sees it lost the host; the claim it sent before it slept arrives.
    first.proc.kill('SIGCONT');
    await pressed;
    await first.waitForLog((l) => typeof l.msg === 'string' && l.msg.startsWith('lost host default'), 10_000);
    inFlight.release();
    await inFlight.answered;
    // Refused: the stage is not claimed, and the record is as it was but for the new fence.
    expect(await world.redis.exists(keys.claim(id, 0))).toBe(0);
    const after = await world.redis.hgetall(keys.approval(id));
    expect({ v: after.v, d: after.d }).toEqual({ v: before.v, d: before.d });
    expect(after).toEqual({ ...before, f: String(secondLease.token) });
    expect(decidesFor(world.host, id)).toEqual([]);
  });

  it("12. a quorum's first vote at the standby whose card update lands after the owner's resolved card: the card ends resolved", async () => {
    const file = configFile({
      routes: [route('deploys', { approvers: users('U0ALICE', 'U0BOB'), quorum: 2 })],
    });
    cleanups.push(async () => file.remove());
    const world = await startReplicas(2, { env: { COUNTERSIGN_CONFIG: file.path } });
    const owner = await ownerOf(world);
    const standby = world.bots.find((b) => b !== owner)!;
    await world.host.waitForIncarnation(1);
    const id = 'rep-order-0001';
    await world.host.open(shell(id, ['kubectl', 'delete', 'ns', 'prod']));
    const at = await postedAt(world, id);

    // The standby's card update of the first vote is held at Slack (slow, or retried after a 5xx)
    // until after the owner's update of the resolved record has landed.
    let release: () => void = () => undefined;
    let arrived: () => void = () => undefined;
    const held = new Promise<void>((resolve) => (arrived = resolve));
    const voteShown = (args: Record<string, unknown>) => JSON.stringify(args.blocks).includes('1 of 2');
    world.slack.fault(
      'chat.update',
      { until: new Promise<void>((resolve) => (release = resolve)) },
      {
        match: (args) => {
          if (!voteShown(args)) return false;
          arrived();
          return true;
        },
      },
    );
    await press(world, standby, id, 'Allow once', 'U0ALICE', at);
    await held;
    await press(world, owner, id, 'Allow once', 'U0BOB', at);
    await world.host.waitForDecide();
    await resolvedCard(world, id);
    // The owner is done with the card (a resolution's later writes render it again) before the
    // held update lands: it lands last.
    let updates = -1;
    await until('the owner done with the card', async () => {
      const now = world.slack.callsOf('chat.update').length;
      if (now === updates) return true;
      updates = now;
      await new Promise((resolve) => setTimeout(resolve, 750));
      return undefined;
    });
    release();
    // The standby's update of the vote lands now, over the resolved card ("1 of 2", buttons)...
    await until('the held update carried out', () =>
      world.slack.callsOf('chat.update').some((c) => voteShown(c.args)) ? true : undefined,
    );
    // ...and the card ends resolved again, its buttons gone.
    await resolvedCard(world, id);
    expect(decidesFor(world.host, id)).toHaveLength(1);
  });

  it("13. the owner checks the route's reason rule on the record it claims: a rejection without one, let through by the standby, is refused there", async () => {
    // The owner's file requires a reason to reject; the standby's (not reloaded yet, or of an
    // earlier release) does not, so its reason form takes an empty submit and hands it on.
    const reasonFile = (rejectReason: 'required' | 'optional') => {
      const file = configFile({ routes: [route('deploys', { approvers: users('U0ALICE'), rejectReason })] });
      cleanups.push(async () => file.remove());
      return file.path;
    };
    const world = await startReplicas(1, { env: { COUNTERSIGN_CONFIG: reasonFile('required') } });
    const owner = await ownerOf(world);
    const standby = await addReplica(world, 'r2', { COUNTERSIGN_CONFIG: reasonFile('optional') });
    expect((await standingOf(standby)).standby).toEqual(['default']);
    await world.host.waitForIncarnation(1);
    const id = 'rep-reason-1';
    await world.host.open(shell(id, ['kubectl', 'delete', 'ns', 'prod']));
    await postedAt(world, id);

    await press(world, standby, id, 'Reject', 'U0ALICE');
    const form = await world.slack.waitFor('views.open', () => true, 10_000);
    const submitted = async (reason: string) => {
      const view = form.args.view as { callback_id: string; private_metadata: string };
      const response = await postInteraction(
        standby.url,
        SIGNING_SECRET,
        viewSubmissionPayload({
          userId: 'U0ALICE',
          callbackId: view.callback_id,
          privateMetadata: view.private_metadata,
          values: { cs_feedback_block: { cs_feedback_input: { type: 'plain_text_input', value: reason } } },
        }),
      );
      expect(response.status).toBe(200);
    };
    await submitted('');
    // Told in the words the standby would use had its own file required a reason.
    expect(await ephemeralTo(world, 'U0ALICE')).toBe(
      'A reason is required to reject on deploys: type one. Nothing was decided: press the button again, and give the reason in the form it opens.',
    );
    await owner.waitForLog(
      (l) =>
        l.msg === 'decision refused where it is claimed: it may not be made on the approval as it stands' &&
        l.json?.approvalId === id &&
        l.json?.refused === 'reasonMissing',
    );
    expect(decidesFor(world.host, id)).toEqual([]);
    const { channel, ts } = await postedAt(world, id);
    expect(buttonsOf(world.slack.message(channel, ts)!).length).toBeGreaterThan(0);

    // With a reason, the same rejection is sent once, and carries it.
    await submitted('Use a PR');
    const decide = await world.host.waitForDecide((d) => d.frame.params.approvalId === id, 10_000);
    expect(decide.frame.params).toMatchObject({ choiceId: 'abort', feedback: 'Use a PR' });
    expect(decidesFor(world.host, id)).toHaveLength(1);
  });

  it('spreads hosts: three replicas and six hosts do not end with one replica running them all', {
    timeout: 60_000,
  }, async () => {
    const slack = await FakeSlack.start();
    cleanups.push(() => slack.close());
    const hosts = await Promise.all(
      Array.from({ length: 6 }, () => FakeHost.start({ sessions: [{ sessionId: SESSION, title: 'x' }] })),
    );
    for (const h of hosts) cleanups.push(() => h.close());
    const config = configFile({
      hosts: hosts.map((h, i) => ({ id: `h${i}`, command: h.command, env: h.env })),
      routes: [route('all')],
    });
    cleanups.push(async () => config.remove());
    const file = config.path;
    const redisDb = await freshRedisDb();
    const bots = await Promise.all(
      ['r1', 'r2', 'r3'].map((name) =>
        startBot({
          host: hosts[0]!,
          slack,
          redisDb,
          env: replicaEnv(name, { COUNTERSIGN_CONFIG: file, MSP_HOST_COMMAND: '' }),
        }),
      ),
    );
    for (const bot of bots) cleanups.push(() => bot.stop(5_000));
    const owned = await until(
      'all six hosts owned',
      async () => {
        const standings = await Promise.all(bots.map((b) => standingOf(b).catch(() => undefined)));
        const counts = standings.map((s) => s?.owns.length ?? 0);
        return counts.reduce((a, b) => a + b, 0) === 6 ? counts : undefined;
      },
      20_000,
    );
    expect(Math.max(...owned)).toBeLessThanOrEqual(3);
    expect(owned.filter((n) => n > 0).length).toBeGreaterThanOrEqual(2);
    // Each host process runs once, at its one owner.
    for (const h of hosts) await h.waitForIncarnation(1);
    await new Promise((r) => setTimeout(r, 1_000));
    for (const h of hosts) expect(h.incarnations).toHaveLength(1);
  });
});

function isRequest(frame: unknown): boolean {
  return typeof frame === 'object' && frame !== null && 'method' in frame && 'id' in frame;
}
