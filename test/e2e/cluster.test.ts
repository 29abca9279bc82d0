// The end-to-end suite's core scenarios with the real bot on a real three-master Redis Cluster
// (REDIS_CLUSTER_NODES): the approval's, the host's, the message's, the grant's and the shared
// keys land on different masters, so a script or pipeline over two slots would fail here
// (CROSSSLOT, or ioredis refusing a pipeline over two nodes) where one Redis lets it through.

import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readGrantAudit } from '../../src/store/grantAudit.js';
import { keys } from '../../src/store/keys.js';
import { freePort, startBot } from '../support/bot.js';
import { approvalFromTranscript, shellApproval } from '../support/fakeHost.js';
import { RedisCluster } from '../support/redisCluster.js';
import { standingOf } from '../support/replicas.js';
import { until } from '../support/until.js';
import { buttonsOf, pressButtonAt, rememberButtonOf, SESSION, textOf, World } from './world.js';

const SLOT_ERRORS = /CROSSSLOT|same slot|slots allocation group|non local key|MOVED|ASK /;

let cluster: RedisCluster;
let world: World | undefined;

beforeAll(async () => {
  cluster = await RedisCluster.start();
});
afterEach(async () => {
  // A round trip over two slots may fail where the scenario does not look (a retried write, a
  // background sweep): the bot's log would say so.
  const refused = world?.bot.logs.filter((l) => SLOT_ERRORS.test(l.raw)) ?? [];
  await world?.close();
  world = undefined;
  expect(refused.map((l) => l.raw)).toEqual([]);
});
afterAll(async () => {
  await cluster?.stop();
});

/** The masters holding `keys`: more than one shows the scenario really spans the cluster. */
async function mastersOf(...names: string[]): Promise<Set<string>> {
  const slots = (await world!.redis.call('CLUSTER', 'SLOTS')) as Array<[number, number, [string, number]]>;
  return new Set(
    await Promise.all(
      names.map(async (key) => {
        const slot = Number(await world!.redis.call('CLUSTER', 'KEYSLOT', key));
        const range = slots.find(([from, to]) => slot >= from && slot <= to)!;
        return `${range[2][0]}:${range[2][1]}`;
      }),
    ),
  );
}

describe('on a Redis Cluster', () => {
  it('the bot says where Redis is and is ready', async () => {
    world = await World.start({}, { METRICS_PORT: String(await freePort()) }, { cluster });
    const listening = await world.bot.waitForLog((l) => l.json?.config !== undefined);
    expect(listening.json?.config).toMatchObject({
      redis: { kind: 'cluster', nodes: cluster.nodes },
      redisUrl: `cluster ${cluster.nodesVar}`,
    });
    const ready = (await (await fetch(`${world.bot.metricsUrl}/readyz`)).json()) as Record<string, unknown>;
    expect(ready).toMatchObject({ ready: true, redis: true });
  });

  it('posts a card, a signed click decides it once, and a second click is refused', async () => {
    world = await World.start({}, {}, { cluster });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'cluster-0001' });
    await world.host.open(approval, { via: 'both' });
    const card = await world.waitForCard('cluster-0001', (m) => buttonsOf(m).length > 0);
    expect(buttonsOf(card).map((b) => b.text)).toEqual(['Allow once', 'Allow for this session', 'Reject']);
    await world.press('cluster-0001', 'Allow once', 'U0ALICE');
    const decide = await world.host.waitForDecide();
    expect(decide.frame.params).toMatchObject({ approvalId: 'cluster-0001', choiceId: 'allow_once' });
    await world.waitForCard(
      'cluster-0001',
      (m) => buttonsOf(m).length === 0 && textOf(m).includes('Approved'),
    );

    // The old card's button, pressed again by someone else: refused, and nothing more is decided.
    await world.pressButton(card.ts, buttonsOf(card)[0]!, 'U0BOB');
    expect(await world.ephemeralTo('U0BOB')).toMatch(/already decided/);
    expect(world.host.decides()).toHaveLength(1);
    expect(world.slack.cardPosts()).toHaveLength(1);
    expect(await world.redis.smembers(keys.openApprovals('default'))).toEqual([]);
    const audit = await world.redis.xrange(keys.audit, '-', '+');
    expect(audit.map(([, f]) => f.join(' ')).filter((f) => f.includes('cluster-0001'))).toHaveLength(1);
    // What the decision wrote really is spread over the masters (slots 10258 and 1463 here).
    const { channel, ts } = await world.postedAt('cluster-0001');
    const written = [keys.approval('cluster-0001'), keys.message(channel, ts), keys.audit];
    for (const key of written) expect(await world.redis.exists(key)).toBe(1);
    expect((await mastersOf(...written)).size).toBeGreaterThan(1);
  });

  it('two users clicking at once: exactly one approval/decide', async () => {
    world = await World.start({}, {}, { cluster });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'cluster-race' });
    await world.host.open(approval, { via: 'both' });
    const card = await world.waitForCard('cluster-race', (m) => buttonsOf(m).length > 0);
    await Promise.all([
      world.pressButton(card.ts, buttonsOf(card)[0]!, 'U0ALICE'),
      world.pressButton(card.ts, buttonsOf(card)[1]!, 'U0BOB'),
    ]);
    await world.host.waitForDecide();
    await world.waitForCard('cluster-race', (m) => textOf(m).includes('Approved'));
    await world.slack.waitForCount('chat.postEphemeral', 1);
    expect(world.host.decides()).toHaveLength(1);
  });

  it('the host crashes and is respawned: the old card is superseded, the re-asked approval gets a new card', async () => {
    world = await World.start({ recovery: 'newId' }, {}, { cluster });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'cluster-crash' });
    await world.host.open(approval, { via: 'both' });
    const before = await world.waitForCard('cluster-crash', (m) => buttonsOf(m).length > 0);

    await world.host.crash(1);
    await world.host.waitForIncarnation(2, 15_000);
    await world.waitForCard(
      'cluster-crash',
      (m) => textOf(m).includes('Superseded') && buttonsOf(m).length === 0,
      10_000,
    );
    const renewed = await world.waitForCard('cluster-crash-r2', (m) => buttonsOf(m).length === 3, 10_000);
    expect(renewed.ts).not.toBe(before.ts);
    expect(await world.redis.smembers(keys.openApprovals('default'))).toEqual(['cluster-crash-r2']);

    await world.pressButton(before.ts, buttonsOf(before)[0]!, 'U0ALICE');
    expect(await world.ephemeralTo('U0ALICE')).toMatch(/closed by the agent host without a decision/);
    await world.press('cluster-crash-r2', 'Allow once', 'U0ALICE');
    const decide = await world.host.waitForDecide();
    expect(decide.frame.params.approvalId).toBe('cluster-crash-r2');
    expect(world.host.decides()).toHaveLength(1);
  });

  it('the bot is killed and restarted: the old card still decides and is not posted again', async () => {
    world = await World.start({ recovery: 'sameId' }, {}, { cluster });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'cluster-restart' });
    await world.host.open(approval, { via: 'both' });
    const card = await world.waitForCard('cluster-restart', (m) => buttonsOf(m).length > 0);

    await world.bot.kill();
    await world.restartBot();
    await world.host.waitForIncarnation(2, 15_000);
    await world.host.waitForMethod('approval/listPending', (f) => f.incarnation === 2);

    await world.pressButton(card.ts, buttonsOf(card)[0]!, 'U0ALICE');
    const decide = await world.host.waitForDecide();
    expect(decide.frame.params).toMatchObject({ approvalId: 'cluster-restart', choiceId: 'allow_once' });
    const final = await world.waitForCard('cluster-restart', (m) => textOf(m).includes('Approved'));
    expect(final.ts).toBe(card.ts);
    expect(world.slack.cardPosts()).toHaveLength(1);
  });

  it('a remembered grant decides a second matching request with no card, once', async () => {
    world = await World.start({}, { MSP_SANDBOX_MODE: 'workspace-write' }, { cluster });
    const first = shellApproval({ approvalId: 'cluster-g1', sessionId: SESSION, stages: [['git', 'push']] });
    await world.host.open(first);
    const card = await world.waitForCard('cluster-g1', (m) => buttonsOf(m).length > 0);
    await world.pressButton(card.ts, rememberButtonOf(card)!, 'U0ALICE', card.channel);
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'cluster-g1');
    const done = await world.waitForCard('cluster-g1', (m) => textOf(m).includes('Remembered:'));
    const grantId = /revoke ([\w-]+)/.exec(textOf(done))?.[1];
    expect(grantId).toBeDefined();

    await world.host.open(
      shellApproval({ approvalId: 'cluster-g2', sessionId: SESSION, stages: [['git', 'push']] }),
    );
    const decide = await world.host.waitForDecide((d) => d.frame.params.approvalId === 'cluster-g2');
    expect(decide.frame.params.choiceId).toBe('allow_once');
    await world.bot.waitForLog((l) => l.msg === 'grant used');
    expect(world.host.decides().filter((d) => d.frame.params.approvalId === 'cluster-g2')).toHaveLength(1);
    // Its line, not a card: no message carries the second approval's metadata.
    const cards = world.slack.callsOf('chat.postMessage').filter((c) => c.args.metadata !== undefined);
    expect(cards.map((c) => JSON.stringify(c.args.metadata))).toEqual([
      expect.stringContaining('cluster-g1'),
    ]);
    // The "grant used" line is logged once its audit entry is stored (once per approval stage).
    const { redis } = world;
    await until(async () => (await readGrantAudit(redis)).length >= 2);
    const events = await readGrantAudit(redis);
    expect(events.map((e) => e.kind)).toEqual(['created', 'used']);
    // Listed in its channel: an entry naming its tag, on the tag's own slot.
    const listed = await world.redis.xrange(keys.grantsListedIn(card.channel), '-', '+');
    expect(listed.map(([, fields]) => fields[1])).toEqual([grantId!.slice(0, 10)]);
  });

  it('two replicas: the host runs at one, a click at the other is forwarded through the stream and decides once', async () => {
    world = await World.start({}, { COUNTERSIGN_REPLICA_ID: 'first' }, { cluster });
    const second = await startBot({
      host: world.host,
      slack: world.slack,
      redisDb: 0,
      env: { REDIS_URL: '', REDIS_CLUSTER_NODES: cluster.nodesVar, COUNTERSIGN_REPLICA_ID: 'second' },
    });
    try {
      await second.waitReady(20_000);
      expect((await standingOf(second)).standby).toEqual(['default']);
      await world.host.open(
        shellApproval({ approvalId: 'cluster-rep-1', sessionId: SESSION, stages: [['make', 'ship']] }),
      );
      const card = await world.waitForCard('cluster-rep-1', (m) => buttonsOf(m).length > 0);
      await pressButtonAt(second.url, world.slack, card, buttonsOf(card)[0]!, 'U0ALICE');
      await world.waitForCard(
        'cluster-rep-1',
        (m) => buttonsOf(m).length === 0 && textOf(m).includes('Approved'),
      );
      expect(world.host.decides()).toHaveLength(1);
      expect(world.host.incarnations).toHaveLength(1);
      // The lease, the fence and the stream share the host's slot; the record lives on its own.
      expect(
        (await mastersOf(keys.hostLease('default'), keys.decisions('default'), keys.hostFence('default')))
          .size,
      ).toBe(1);
      expect(second.logs.filter((l) => SLOT_ERRORS.test(l.raw)).map((l) => l.raw)).toEqual([]);
    } finally {
      await second.stop(5_000);
    }
  });
});
