import { afterEach, describe, expect, it } from 'vitest';
import { ACK_WAIT_MS } from '../../src/slack/listeners/choiceButton.js';
import { readGrantAudit } from '../../src/store/grantAudit.js';
import { keys } from '../../src/store/keys.js';
import { approvalFromTranscript, fileWriteApproval, shellApproval } from '../support/fakeHost.js';
import { PrivateRedis } from '../support/privateRedis.js';
import { TcpProxy } from '../support/tcpProxy.js';
import { until } from '../support/until.js';
import { grantFrom, storeOf } from './grantSteps.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

// Redis going away under the bot, on a redis-server of the test's own: paused (SIGSTOP) or cut
// off behind a proxy. A click is either decided exactly once or its clicker is told to click
// again; host events are held, or dropped and read again, and no approval is lost or doubled.

let world: World | undefined;
let redis: PrivateRedis | undefined;
let proxy: TcpProxy | undefined;
afterEach(async () => {
  redis?.resume();
  await world?.close();
  await proxy?.stop();
  await redis?.stop();
  world = undefined;
  redis = undefined;
  proxy = undefined;
});

async function open(w: World, approvalId: string) {
  await w.host.open(approvalFromTranscript('approval-round-trip', { approvalId }), { via: 'both' });
  return w.waitForCard(approvalId, (m) => buttonsOf(m).length > 0);
}

/** A bot that reaches its own Redis through a proxy the test steers, and a card of `approvalId`. */
async function withProxy(approvalId: string) {
  redis = await PrivateRedis.start();
  proxy = await TcpProxy.start(redis.port);
  world = await World.start({}, {}, { redisUrl: redis.url, botRedisUrl: `redis://127.0.0.1:${proxy.port}` });
  return { w: world, p: proxy, card: await open(world, approvalId) };
}

describe('a click while Redis is away', () => {
  it('13. Redis paused: the clicker hears within 3 s that nothing was recorded, and nothing is sent later', async () => {
    redis = await PrivateRedis.start();
    world = await World.start({}, {}, { redisUrl: redis.url });
    const card = await open(world, 'paused-0001');

    redis.pause();
    const clickedAt = Date.now();
    await world.press('paused-0001', 'Allow once', 'U0ALICE', card);
    const told = await world.ephemeralTo('U0ALICE', 3_000);
    expect(Date.now() - clickedAt).toBeLessThan(3_000);
    expect(told).toMatch(/could not be recorded/);

    redis.resume();
    // Whatever the bot had queued for Redis runs now; none of it may turn into a decision.
    await world.bot.waitForLog((l) => l.msg === 'Redis answers again', 10_000);
    await world.press('paused-0001', 'Allow once', 'U0BOB', card);
    const decide = await world.host.waitForDecide();
    const final = await world.waitForCard('paused-0001', (m) => textOf(m).includes('Approved'));
    expect(textOf(final)).toContain('<@U0BOB>');
    expect(world.host.decides()).toEqual([decide]);
  });

  it('13. a claim stored after its deadline is released unsent: told to click again, never decided', async () => {
    const { w, p, card } = await withProxy('late-0001');

    // The lookup answers; the claim reaches Redis, but its answer is held past the deadline.
    const cue = p.holdRepliesAfter(keys.claim('late-0001', 0));
    await w.press('late-0001', 'Allow once', 'U0ALICE', card);
    await cue.answered;
    expect(await w.ephemeralTo('U0ALICE', 3_000)).toMatch(/could not be recorded/);
    cue.release();

    // The claim ran in Redis, then its release: the stage is free and nothing was sent.
    const released = await waitForRecord(w, 'late-0001', (r) => r.phase === 'pending' && !r.claim);
    expect(released.version).toBeGreaterThan(2);
    expect(await w.redis.exists(keys.claim('late-0001', 0))).toBe(0);
    await w.press('late-0001', 'Allow once', 'U0BOB', card);
    await w.waitForCard('late-0001', (m) => textOf(m).includes('<@U0BOB>') && textOf(m).includes('Approved'));
    expect(w.host.decides()).toHaveLength(1);
    expect(w.host.decides()[0]!.frame.params.approvalId).toBe('late-0001');
  });

  it('13. Redis back within the deadline: the decision goes out exactly once and nobody is told to click again', async () => {
    redis = await PrivateRedis.start();
    world = await World.start({}, {}, { redisUrl: redis.url });
    const card = await open(world, 'blip-0001');

    redis.pause();
    const pressed = world.press('blip-0001', 'Allow once', 'U0ALICE', card);
    setTimeout(() => redis?.resume(), 300);
    await pressed;
    await world.waitForCard('blip-0001', (m) => textOf(m).includes('Approved'));
    expect(world.host.decides()).toHaveLength(1);
    expect(world.slack.ephemerals.filter((e) => e.user === 'U0ALICE')).toEqual([]);
  });

  it('7. a claim that ran but whose answer was lost counts as ours when ioredis sends it again', async () => {
    const { w, p, card } = await withProxy('resent-0001');

    const cue = p.cutAfter(keys.claim('resent-0001', 0));
    await w.press('resent-0001', 'Allow once', 'U0ALICE', card);
    await cue.answered;
    const decide = await w.host.waitForDecide();
    expect(decide.frame.params.approvalId).toBe('resent-0001');
    const final = await w.waitForCard('resent-0001', (m) => textOf(m).includes('Approved'));
    expect(textOf(final)).toContain('<@U0ALICE>');
    expect(w.slack.ephemerals.filter((e) => e.user === 'U0ALICE')).toEqual([]);
    expect(w.host.decides()).toHaveLength(1);
  });

  it('7. the resolving write ran but its answer was lost: sent again by ioredis, it counts as landed and its card, line and entry follow once', async () => {
    const { w, p, card } = await withProxy('resent-0002');

    // Only the write that resolves the record names its audit mark (it writes the entry in the
    // same step): the claim before it and the card's other writes do not.
    const cue = p.cutAfter(keys.decisionAudited('resent-0002'));
    await w.press('resent-0002', 'Allow once', 'U0ALICE', card);
    await cue.answered;
    await w.host.waitForDecide();
    await waitForRecord(w, 'resent-0002', (r) => r.phase === 'resolved');
    const final = await w.waitForCard('resent-0002', (m) => textOf(m).includes('Approved'));
    expect(textOf(final)).toContain('<@U0ALICE>');

    const { channel, ts } = await w.postedAt('resent-0002');
    await until(() => w.slack.repliesTo(channel, ts).length >= 1);
    const decisionLines = () =>
      w.bot.logs.filter((l) => l.json?.audit === 'decision' && l.json.approvalId === 'resent-0002');
    await until(() => decisionLines().length >= 1);
    // Settled: nothing else is on its way for the approval.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(w.slack.repliesTo(channel, ts)).toHaveLength(1);
    expect(decisionLines()).toHaveLength(1);
    const entries = (await w.auditEntries()).filter((e) => e.kind === 'decision');
    expect(entries).toEqual([expect.objectContaining({ approvalId: 'resent-0002', userId: 'U0ALICE' })]);
    expect(w.host.decides()).toHaveLength(1);
  });
});

describe('a request a grant answers, created already claimed', () => {
  it('7. its create ran but its answer was lost: sent again by ioredis, it is ours, and the grant’s use and line follow', async () => {
    redis = await PrivateRedis.start();
    proxy = await TcpProxy.start(redis.port);
    world = await World.start(
      {},
      { MSP_SANDBOX_MODE: 'workspace-write' },
      { redisUrl: redis.url, botRedisUrl: `redis://127.0.0.1:${proxy.port}` },
    );
    const w = world;
    const shell = (approvalId: string) =>
      shellApproval({ approvalId, sessionId: SESSION, stages: [['git', 'log']] });
    const grantId = await grantFrom(w, shell('rc-first'), /^For /);
    // Answered after its create: from now on a like request is looked up first and created claimed.
    await w.host.open(shell('rc-2'));
    await w.host.waitForDecide((d) => d.frame.params.approvalId === 'rc-2');

    // The claimed create names the claim's key; the connection is cut before its answer arrives.
    const cue = proxy.cutAfter(keys.claim('rc-3', 0));
    await w.host.open(shell('rc-3'));
    await cue.answered;
    await w.host.waitForDecide((d) => d.frame.params.approvalId === 'rc-3');
    await waitForRecord(w, 'rc-3', (r) => r.phase === 'resolved');

    // Decided once, and as any request a grant answers: its use counted, its line in the channel.
    await until(async () => (await storeOf(w).get(grantId))?.uses === 2);
    await until(async () => (await readGrantAudit(w.redis)).length >= 3);
    expect((await readGrantAudit(w.redis)).map((e) => ('approvalId' in e ? e.approvalId : e.kind))).toEqual([
      'created',
      'rc-2',
      'rc-3',
    ]);
    const lines = () =>
      w.slack
        .callsOf('chat.postMessage')
        .filter((c) => String(c.args.text).startsWith(':repeat: Approved by a remembered grant'));
    await until(() => lines().length === 2);
    expect(w.host.decides().filter((d) => d.frame.params.approvalId === 'rc-3')).toHaveLength(1);
  });
});

describe("Slack's answer to a press", () => {
  it('waits for the claim the decide goes on: not answered while it is held, answered once it is in', async () => {
    const { w, p, card } = await withProxy('ack-0001');
    // The claim's answer is held a moment, so that the decide leaves well after the press arrived.
    // A short moment: the press is answered anyway ACK_WAIT_MS after it came in.
    const cue = p.holdRepliesAfter(keys.claim('ack-0001', 0));
    let answeredAt: bigint | undefined;
    const pressing = w.press('ack-0001', 'Allow once', 'U0ALICE', card).then((response) => {
      answeredAt = process.hrtime.bigint();
      return response;
    });
    await cue.fired;
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Not answered while the claim, which the decide waits for, is held.
    expect(answeredAt).toBeUndefined();
    const releasedAt = process.hrtime.bigint();
    cue.release();
    expect((await pressing).status).toBe(200);
    expect(answeredAt! > releasedAt).toBe(true);
    // The host reads the decide at its own pace (on a loaded machine, after the answer reached
    // Slack): that the decide is written before the answer goes is not seen from here, only
    // that it arrives, once.
    await w.host.waitForDecide();
    expect(w.host.decides()).toHaveLength(1);
  });

  it(`is not held past ${ACK_WAIT_MS} ms by a claim Redis is slow to answer, which still decides once`, async () => {
    const { w, p, card } = await withProxy('ack-0002');
    const cue = p.holdRepliesAfter(keys.claim('ack-0002', 0));
    const pressedAt = Date.now();
    const response = await w.press('ack-0002', 'Allow once', 'U0ALICE', card);
    const waited = Date.now() - pressedAt;
    expect(response.status).toBe(200);
    expect(waited).toBeGreaterThanOrEqual(ACK_WAIT_MS - 20);
    expect(waited).toBeLessThan(ACK_WAIT_MS + 500);
    // Answered while the decision still waits on Redis; it goes out once Redis answers.
    expect(w.host.decides()).toHaveLength(0);
    cue.release();
    await w.host.waitForDecide();
    await w.waitForCard('ack-0002', (m) => textOf(m).includes('Approved'));
    expect(w.host.decides()).toHaveLength(1);
  });
});

describe('host events while Redis is away', () => {
  it('14. a full buffer drops events and the sessions are read again: every approval gets exactly one card', async () => {
    redis = await PrivateRedis.start();
    world = await World.start({}, { COUNTERSIGN_HOST_EVENT_BUFFER: '5' }, { redisUrl: redis.url });
    await open(world, 'before-0001');
    const postsBefore = world.slack.cardPosts().length;

    redis.pause();
    await world.bot.waitForLog((l) => l.msg?.startsWith('Redis is not answering') === true, 10_000);
    // The host resolves the approval whose card is up, and asks twelve more (two frames each).
    await world.host.resolve({ approvalId: 'before-0001', decision: 'approved', resolvedBy: 'policy' });
    const ids = Array.from({ length: 12 }, (_, i) => `during-${String(i).padStart(4, '0')}`);
    for (const approvalId of ids) {
      // Each writes another file: alike pending requests would also get a batch summary card
      // (docs/slack.md#batch-triage), a post of its own this count of cards does not take in.
      const approval = approvalFromTranscript('approval-round-trip', { approvalId });
      approval.subject = { ...approval.subject, path: `/home/me/src/proj/${approvalId}.toml` };
      await world.host.open(approval, { via: 'both' });
    }
    await world.bot.waitForLog((l) => l.msg?.includes('event buffer is full') === true, 10_000);
    redis.resume();

    for (const approvalId of ids) await world.waitForCard(approvalId, (m) => buttonsOf(m).length > 0, 15_000);
    const posted = world.slack.cardPosts().slice(postsBefore);
    expect(posted).toHaveLength(ids.length);
    expect(new Set(posted.map((c) => c.response.ts)).size).toBe(ids.length);
    // The approval whose resolution was dropped does not keep live buttons.
    const closed = await world.waitForCard('before-0001', (m) => buttonsOf(m).length === 0, 10_000);
    expect(textOf(closed)).toMatch(/Approved|no longer has this request pending/);
    expect(world.host.decides()).toHaveLength(0);
  });

  it('14. big frames fill the buffer by its bytes long before its count: dropped, read again, every approval gets exactly one card', async () => {
    redis = await PrivateRedis.start();
    // Redis stays paused while 35 MB of frames go through: on a loaded machine that outlasted the
    // 15 s lease, and the bot let the host go (as it must), whose next process asked the same
    // approvals under new ids. What is tested here is the buffer, not the lease.
    world = await World.start({}, { COUNTERSIGN_LEASE_TTL: '90s' }, { redisUrl: redis.url });
    await open(world, 'before-0002');
    const postsBefore = world.slack.cardPosts().length;

    redis.pause();
    await world.bot.waitForLog((l) => l.msg?.startsWith('Redis is not answering') === true, 10_000);
    // Five writes of 7 MB of content each, under the 10 MiB frame cap: held whole until intake
    // cuts them, they outweigh the buffer's bytes where its count would take 10,000. Each in a
    // session of its own, so that each session's listing is one frame under the cap too.
    const content = 'x'.repeat(7_000_000);
    const ids = Array.from({ length: 5 }, (_, i) => `big-${String(i).padStart(4, '0')}`);
    for (const approvalId of ids) {
      const approval = fileWriteApproval(
        approvalFromTranscript('approval-round-trip', { approvalId }),
        `/home/me/src/proj/${approvalId}.bin`,
      );
      approval.sessionId = `session-${approvalId}`;
      approval.rawArgs = JSON.stringify({ path: `/home/me/src/proj/${approvalId}.bin`, content });
      await world.host.open(approval, { via: 'requested' });
    }
    await world.bot.waitForLog((l) => l.msg?.includes('event buffer is full') === true, 20_000);
    redis.resume();

    for (const approvalId of ids) {
      // Sessions are read again one after another, each a few frames of megabytes.
      await world.postedAt(approvalId, 30_000);
      await world.waitForCard(approvalId, (m) => buttonsOf(m).length > 0);
    }
    const posted = world.slack.cardPosts().slice(postsBefore);
    expect(posted).toHaveLength(ids.length);
    expect(new Set(posted.map((c) => c.response.ts)).size).toBe(ids.length);
    expect(world.host.decides()).toHaveLength(0);
  }, 90_000);
});

async function waitForRecord(
  w: World,
  approvalId: string,
  predicate: (record: { phase: string; claim?: unknown; version: number }) => boolean,
): Promise<{ phase: string; claim?: unknown; version: number }> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const raw = await w.redis.hget(keys.approval(approvalId), 'd');
    const record = raw ? (JSON.parse(raw) as { phase: string; claim?: unknown; version: number }) : undefined;
    if (record && predicate(record)) return record;
    if (Date.now() > deadline) throw new Error(`record of ${approvalId} never matched: ${raw}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
