// The pieces several replicas rely on, against a real Redis: leases and their fencing tokens,
// fenced record writes, the ownership loop when Redis stalls, and the forwarded decisions' reply
// protocol between an asker and a host's owner.

import { Redis } from 'ioredis';
import pino from 'pino';
import { afterAll, afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Config } from '../../src/config/config.js';
import type { ApprovalRecord } from '../../src/domain/record.js';
import { HostFleet } from '../../src/msp/hostFleet.js';
import type { HostSupervisor } from '../../src/msp/hostSupervisor.js';
import type { ClickHandler } from '../../src/relay/deciding/clickHandler.js';
import type { Decider } from '../../src/relay/deciding/decider.js';
import type { GrantAnswerer } from '../../src/relay/grants/grantAnswerer.js';
import type { RecordKeeper } from '../../src/relay/records/recordKeeper.js';
import { DecisionForwarding, type DecisionForwardingOptions } from '../../src/replicas/decisionForwarding.js';
import { FenceBook } from '../../src/replicas/fenceBook.js';
import { HostOwnership } from '../../src/replicas/hostOwnership.js';
import { ReplicaSeal } from '../../src/replicas/replicaSeal.js';
import { ApprovalStore, FencedError, FOR_HOST } from '../../src/store/approvalStore.js';
import { DecisionStream } from '../../src/store/decisionStream.js';
import { HostLeases } from '../../src/store/hostLeases.js';
import { keys } from '../../src/store/keys.js';
import { renameLegacyKeys } from '../../src/store/legacyKeys.js';
import { Late } from '../../src/wiring/late.js';
import { wireReplicas } from '../../src/wiring/replicas.js';
import { PrivateRedis } from '../support/privateRedis.js';
import { sampleRecord } from '../support/sampleRecord.js';
import { testRedisUrl } from '../support/testRedis.js';

const redis = new Redis(testRedisUrl(13));
const quiet = pino({ level: 'silent' });

function record(approvalId: string): ApprovalRecord {
  return sampleRecord(approvalId, { hostId: 'h1' });
}

beforeEach(async () => {
  await redis.flushdb();
});
afterAll(async () => {
  await redis.quit();
});

describe('host leases', () => {
  const leases = new HostLeases(redis);

  it('one holder at a time, and every new lease has a higher fencing token', async () => {
    const tokens = await Promise.all(['a#1', 'b#1', 'c#1'].map((p) => leases.acquire('h1', p, 5_000)));
    const taken = tokens.filter((t) => t !== undefined);
    expect(taken).toEqual([1]);
    const holder = (await leases.holders(['h1'])).get('h1')!;
    expect(holder.token).toBe(1);
    // Only the holder renews or releases it.
    expect(await leases.renew('h1', { replicaId: 'b#1', token: 1 }, 5_000)).toBe(false);
    expect(await leases.renew('h1', holder, 5_000)).toBe(true);
    await leases.release('h1', { replicaId: 'b#1', token: 1 });
    expect((await leases.holders(['h1'])).get('h1')).toEqual(holder);
    await leases.release('h1', holder);
    expect(await leases.acquire('h1', 'b#1', 5_000)).toBe(2);
  });

  it('a lease runs out on its own, and the next one gets a higher token', async () => {
    expect(await leases.acquire('h1', 'a#1', 200)).toBe(1);
    expect(await leases.acquire('h1', 'b#1', 5_000)).toBeUndefined();
    await new Promise((r) => setTimeout(r, 300));
    expect(await leases.acquire('h1', 'b#1', 5_000)).toBe(2);
  });

  it('a restarted process of the same replica takes back exactly the lease its predecessor held', async () => {
    await leases.acquire('h1', 'a#old', 5_000);
    // Not some other holder's: the replacement names the exact holder it replaces.
    expect(await leases.acquire('h1', 'a#new', 5_000, { replicaId: 'a#older', token: 1 })).toBeUndefined();
    expect(await leases.acquire('h1', 'a#new', 5_000, { replicaId: 'a#old', token: 1 })).toBe(2);
  });
});

describe('fenced record writes', () => {
  it('a write carrying an older fencing token than the record has seen is refused', async () => {
    let fence: number | undefined = 1;
    const deposed = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: () => fence });
    const owner = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: () => 2 });
    const unfenced = new ApprovalStore(redis, { resolvedTtlMs: 60_000 });
    expect(await deposed.createIfAbsent(record('f-1'))).toBe(true);
    expect(await redis.hget(keys.approval('f-1'), 'f')).toBe('1');
    // The new owner takes over: it raises the fence of every open approval of the host first.
    expect(await owner.fenceOpen('h1', 2)).toBe(1);

    await expect(deposed.update('f-1', (r) => ({ ...r, phase: 'reviewing' }))).rejects.toBeInstanceOf(
      FencedError,
    );
    const current = (await deposed.get('f-1'))!;
    expect(current.phase).toBe('pending');
    const claim = {
      sourceIndex: 0,
      userId: 'U1',
      choiceId: 'allow_once',
      commandId: 'c-1',
      claimedAt: 'now',
    };
    expect(await deposed.claimWith(current, { ...current, phase: 'deciding', claim })).toEqual({
      kind: 'fenced',
    });
    expect(await redis.exists(keys.claim('f-1', 0))).toBe(0);
    await expect(deposed.acquirePostLease(current, 5_000)).rejects.toBeInstanceOf(FencedError);
    expect(await redis.exists(keys.postLease('f-1'))).toBe(0);

    // The owner writes; a write that does not act for the host (no token) is not fenced.
    expect((await owner.update('f-1', (r) => ({ ...r, phase: 'reviewing' })))?.changed).toBe(true);
    expect((await unfenced.update('f-1', (r) => ({ ...r, route: 'ops' })))?.record.route).toBe('ops');
    expect(await redis.hget(keys.approval('f-1'), 'f')).toBe('2');
    // Learning the new token is what lets a replica write again.
    fence = 3;
    expect((await deposed.update('f-1', (r) => ({ ...r, phase: 'pending' })))?.changed).toBe(true);
  });
  it("a final write refused by the fence leaves the approval in its host's open sets", async () => {
    const deposed = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: () => 1 });
    const owner = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: () => 2 });
    expect(await deposed.createIfAbsent(record('f-5'))).toBe(true);
    expect(await owner.fenceOpen('h1', 2)).toBe(1);
    // The deposed replica hears the host close it and would write it final; the open sets'
    // removal goes with that write, which the fence refuses.
    await expect(
      deposed.update('f-5', (r) => ({ ...r, phase: 'superseded', supersededNote: 'gone' })),
    ).rejects.toBeInstanceOf(FencedError);
    expect((await owner.get('f-5'))?.phase).toBe('pending');
    // Still open, so the new owner's reconcile finds it and keeps its card true.
    expect(await owner.openApprovalIds('h1')).toContain('f-5');
    expect(await owner.openApprovalIds('h1', 's-1')).toContain('f-5');
  });

  it("another host's approval named in this host's open sets is neither kept there nor fenced by this host's owner", async () => {
    const h1 = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: () => 1 });
    const h2 = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: () => 5 });
    expect(await h1.createIfAbsent(record('f-6'))).toBe(true);
    // Host h2 asks under the same id: its create finds h1's record and leaves nothing in h2's sets.
    expect(await h2.createIfAbsent(sampleRecord('f-6', { hostId: 'h2', sessionId: 's-2' }))).toBe(false);
    expect(await h2.openApprovalIds('h2')).toEqual([]);
    expect(await h2.openApprovalIds('h2', 's-2')).toEqual([]);
    expect(await h1.openApprovalIds('h1')).toEqual(['f-6']);
    // An entry left anyway (a process gone between the create and the take-back): h2's new owner
    // raises no fence on h1's record, whose own owner goes on writing it.
    await redis.sadd(keys.openApprovals('h2'), 'f-6');
    expect(await h2.fenceOpen('h2', 5)).toBe(0);
    expect(await redis.hget(keys.approval('f-6'), 'f')).toBe('1');
    expect(
      (await h1.update('f-6', (r) => ({ ...r, phase: 'reviewing' }), undefined, FOR_HOST))?.changed,
    ).toBe(true);
    // A record of the host stored in another key order is still known as the host's, and fenced.
    const stored = (await h1.get('f-6'))!;
    const { hostId, ...rest } = stored;
    await redis.hset(keys.approval('f-6'), 'd', JSON.stringify({ hostId, ...rest }));
    const owner = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: () => 2 });
    expect(await owner.fenceOpen('h1', 2)).toBe(1);
    expect(await redis.hget(keys.approval('f-6'), 'f')).toBe('2');
  });

  it('a replica whose lease ran out makes no claim, though it no longer has a token to send', async () => {
    let now = 0;
    const book = new FenceBook(() => now);
    book.hold('h1', 1, 1_000);
    const deposed = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: (h) => book.fenceOf(h) });
    const owner = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: () => 2 });
    expect(await deposed.createIfAbsent(record('f-2'))).toBe(true);
    // It checked the decision while it held the lease; the lease ran out (a pause) and another
    // replica took the host before the claim was written.
    const checked = (await deposed.get('f-2'))!;
    now = 5_000;
    expect(await owner.fenceOpen('h1', 2)).toBe(1);
    const claim = {
      sourceIndex: 0,
      userId: 'U1',
      choiceId: 'allow_once',
      commandId: 'c-2',
      claimedAt: 'now',
    };
    expect(await deposed.claimWith(checked, { ...checked, phase: 'deciding', claim })).toEqual({
      kind: 'fenced',
    });
    expect(await redis.exists(keys.claim('f-2', 0))).toBe(0);
    expect((await owner.get('f-2'))?.phase).toBe('pending');
  });
});

describe('writes for a host once its lease ran out', () => {
  it('neither creates a record nor changes one for the host, but still takes a note', async () => {
    let now = 0;
    const book = new FenceBook(() => now);
    book.hold('h1', 1, 1_000);
    const deposed = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: (h) => book.fenceOf(h) });
    expect(await deposed.createIfAbsent(record('f-3'))).toBe(true);
    // The host's events were queued while it held the lease; they run after it ran out, before
    // (or after) the new owner raised the fence. Unfenced, they would get past that fence.
    now = 5_000;
    await expect(deposed.createIfAbsent(record('f-4'))).rejects.toBeInstanceOf(FencedError);
    expect(await redis.exists(keys.approval('f-4'))).toBe(0);
    await expect(
      deposed.update('f-3', (r) => ({ ...r, phase: 'reviewing' }), undefined, FOR_HOST),
    ).rejects.toBeInstanceOf(FencedError);
    expect((await deposed.get('f-3'))?.phase).toBe('pending');
    // A standby's own note on the record acts for nobody: it is still written, unfenced.
    expect((await deposed.update('f-3', (r) => ({ ...r, route: 'ops' })))?.record.route).toBe('ops');
  });

  it('does not place a card it posted for the host: neither the record nor the message key', async () => {
    let now = 0;
    const book = new FenceBook(() => now);
    book.hold('h1', 1, 1_000);
    const deposed = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: (h) => book.fenceOf(h) });
    const owner = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: () => 2 });
    const lease = deposed.newPostLease(5_000);
    expect(await deposed.createIfAbsent(record('f-5'), lease)).toBe(true);
    const created = (await deposed.get('f-5'))!;
    // Its post waited out a 429 past its lease; the new owner raised the fence, and has not
    // posted yet. Sent with no token, the write would get past that fence.
    now = 5_000;
    expect(await owner.fenceOpen('h1', 2)).toBe(1);
    await expect(
      deposed.savePost(created, { channel: 'C1', ts: '2.2' }, lease, FOR_HOST),
    ).rejects.toBeInstanceOf(FencedError);
    expect(await redis.exists(keys.message('C1', '2.2'))).toBe(0);
    expect((await owner.get('f-5'))?.slack.ts).toBeUndefined();

    // The new owner posts the card and places it; the deposed one's place comes after.
    await redis.del(keys.postLease('f-5'));
    const ownerLease = (await owner.acquirePostLease(created, 5_000))!;
    expect((await owner.savePost(created, { channel: 'C1', ts: '1.1' }, ownerLease, FOR_HOST))?.changed).toBe(
      true,
    );
    await expect(
      deposed.savePost(created, { channel: 'C1', ts: '2.3' }, lease, FOR_HOST),
    ).rejects.toBeInstanceOf(FencedError);
    expect(await redis.exists(keys.message('C1', '2.3'))).toBe(0);
    expect(await redis.get(keys.message('C1', '1.1'))).toBe('f-5');
    expect((await owner.get('f-5'))?.slack.ts).toBe('1.1');
  });

  it('does not mark a card deferred for the host: its new owner still posts it', async () => {
    let now = 0;
    const book = new FenceBook(() => now);
    book.hold('h1', 1, 1_000);
    const deposed = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: (h) => book.fenceOf(h) });
    const owner = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: () => 2 });
    const lease = deposed.newPostLease(5_000);
    expect(await deposed.createIfAbsent(record('f-6'), lease)).toBe(true);
    const created = (await deposed.get('f-6'))!;
    // A grant answered while it held the lease; the lease ran out before the card was deferred.
    // Deferred, the card would wait for a grant decision this replica can no longer send.
    now = 5_000;
    await expect(deposed.deferPost(created, lease)).rejects.toBeInstanceOf(FencedError);
    expect((await owner.get('f-6'))?.slack.deferred).toBeUndefined();
    // The same after the new owner changed the record (the write that is not a patch).
    expect(await owner.fenceOpen('h1', 2)).toBe(1);
    await owner.update('f-6', (r) => ({ ...r, phase: 'reviewing' }), undefined, FOR_HOST);
    await expect(deposed.deferPost(created, lease)).rejects.toBeInstanceOf(FencedError);
    expect((await owner.get('f-6'))?.slack.deferred).toBeUndefined();
  });

  it('a card place Redis refuses for an older token leaves no message key behind', async () => {
    const deposed = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: () => 1 });
    const owner = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: () => 2 });
    const lease = deposed.newPostLease(5_000);
    expect(await deposed.createIfAbsent(record('f-6'), lease)).toBe(true);
    const created = (await deposed.get('f-6'))!;
    // The deposed replica still believes its lease good (it checked, then froze); Redis knows better.
    expect(await owner.fenceOpen('h1', 2)).toBe(1);
    await expect(
      deposed.savePost(created, { channel: 'C1', ts: '3.3' }, lease, FOR_HOST),
    ).rejects.toBeInstanceOf(FencedError);
    expect(await redis.exists(keys.message('C1', '3.3'))).toBe(0);
    expect((await owner.get('f-6'))?.slack.ts).toBeUndefined();
  });

  it('a card posted by a process that never held the host (a standby) is still placed, unfenced', async () => {
    const book = new FenceBook(() => 0);
    const standby = new ApprovalStore(redis, { resolvedTtlMs: 60_000, fenceOf: (h) => book.fenceOf(h) });
    const unfenced = new ApprovalStore(redis, { resolvedTtlMs: 60_000 });
    expect(await unfenced.createIfAbsent(record('f-7'))).toBe(true);
    const created = (await standby.get('f-7'))!;
    const lease = (await standby.acquirePostLease(created, 5_000))!;
    expect((await standby.savePost(created, { channel: 'C1', ts: '4.4' }, lease))?.changed).toBe(true);
    expect(await redis.get(keys.message('C1', '4.4'))).toBe('f-7');
  });
});

describe('the ownership loop', () => {
  let privateRedis: PrivateRedis | undefined;
  let client: Redis | undefined;
  afterEach(async () => {
    client?.disconnect();
    await privateRedis?.stop();
  });

  it('stops the host once Redis stalls past the lease, and a standby takes over with a higher token', async () => {
    privateRedis = await PrivateRedis.start();
    client = new Redis(privateRedis.url, { maxRetriesPerRequest: null });
    const other = new Redis(privateRedis.url, { maxRetriesPerRequest: null });
    const events: string[] = [];
    const ownership = (name: string, connection: Redis) =>
      new HostOwnership({
        leases: new HostLeases(connection),
        replicaId: `${name}#1`,
        hostIds: ['h1'],
        ttlMs: 2_000,
        logger: quiet,
        onGained: async (hostId, token) => {
          events.push(`${name} gained ${hostId} ${token}`);
        },
        onLost: (hostId) => {
          events.push(`${name} lost ${hostId}`);
        },
      });
    const first = ownership('a', client);
    first.start();
    await waitFor(() => first.holds('h1'));
    expect(first.fenceOf('h1')).toBe(1);
    const second = ownership('b', other);
    second.start();
    await new Promise((r) => setTimeout(r, 500));
    expect(second.holds('h1')).toBe(false);
    expect(second.standings()).toEqual([{ hostId: 'h1', role: 'standby', ownerReplica: 'a#1' }]);

    // Redis freezes: nothing renews, and the owner gives the host up on its own clock.
    privateRedis.pause();
    const pausedAt = Date.now();
    // holds() turns false on the clock at the deadline; the timer that stops the host fires right
    // after, a little later on a loaded machine: wait for both.
    await waitFor(() => !first.holds('h1') && events.includes('a lost h1'), 4_000);
    expect(Date.now() - pausedAt).toBeLessThan(2_500);
    expect(first.fenceOf('h1')).toBeUndefined();
    privateRedis.resume();
    // Its lease ran out in Redis too: whoever takes it gets token 2, and only one of them does.
    await waitFor(() => first.holds('h1') || second.holds('h1'), 6_000);
    expect([first.fenceOf('h1'), second.fenceOf('h1')].filter((t) => t !== undefined)).toEqual([2]);
    await Promise.all([first.stop(), second.stop()]);
    other.disconnect();
  }, 20_000);
});

describe('a lease another holder took with the same token', () => {
  it('is lost at the next look at the leases, not at the next renewal', async () => {
    // A Sentinel failover that lost the lease's last writes: the promoted replica's counter is
    // behind, and another replica takes the host with the very token this one holds.
    const lost: string[] = [];
    const ownership = new HostOwnership({
      leases: new HostLeases(redis),
      replicaId: 'a#1',
      hostIds: ['h1'],
      ttlMs: 15_000,
      logger: quiet,
      onGained: async () => {},
      onLost: (hostId) => {
        lost.push(hostId);
      },
    });
    ownership.start();
    try {
      await waitFor(() => ownership.holds('h1'));
      const token = ownership.fenceOf('h1');
      await redis.set(keys.hostLease('h1'), `b#1 ${token}`, 'PX', 15_000);
      // Looked at every second (a fifth of the lease, at most 1 s); renewed every 5 s.
      await waitFor(() => lost.includes('h1'), 2_500);
      expect(ownership.holds('h1')).toBe(false);
    } finally {
      await ownership.stop();
    }
  });
});

describe('a host whose lease runs out while it is being taken', () => {
  let privateRedis: PrivateRedis | undefined;
  let client: Redis | undefined;
  afterEach(async () => {
    client?.disconnect();
    await privateRedis?.stop();
  });

  it('is never started without the lease, nor are its forwarded decisions served', async () => {
    privateRedis = await PrivateRedis.start();
    const server = privateRedis;
    client = new Redis(server.url, { maxRetriesPerRequest: null });
    const fences = new FenceBook();
    // Each start of the host, with the fencing token this replica held at that moment.
    const starts: (number | undefined)[] = [];
    const hosts = new HostFleet({
      hostIds: ['h1'],
      mayAct: (hostId) => fences.holds(hostId),
      create: (hostId) =>
        ({
          hostId,
          start: async () => {
            starts.push(fences.fenceOf(hostId));
          },
          stop: async () => {},
          killNow: () => {},
          isUp: () => true,
        }) as unknown as HostSupervisor,
    });
    let fenceOpens = 0;
    // The first fencing of the host's approvals hangs on a Redis that stalls past the lease (a
    // failover, a pause): renewals hang with it, and the lease runs out before it returns.
    const store = {
      fenceOpen: async () => {
        fenceOpens += 1;
        if (fenceOpens > 1) return 0;
        server.pause();
        await waitFor(() => !fences.holds('h1'), 6_000);
        server.resume();
        return 0;
      },
    } as unknown as ApprovalStore;
    const { ownership, forwarding } = wireReplicas({
      config: {
        replicaName: 'a',
        msp: { hosts: [{ id: 'h1' }] },
        leaseTtlMs: 2_000,
        replicaSecret: 'a replica secret of 32 characters!',
        slack: { botToken: 'xoxb-test' },
      } as unknown as Config,
      logger: quiet,
      redis: client,
      fences,
      store,
      keeper: { track: () => {}, recoverCards: async () => {} } as unknown as RecordKeeper,
      hosts,
      decider: new Late<Decider>('decider'),
      clicks: new Late<ClickHandler>('clicks'),
      grantAnswerer: new Late<GrantAnswerer>('grant answerer'),
    });
    const serving = vi.spyOn(forwarding, 'serve');
    ownership.start();
    try {
      await waitFor(() => fenceOpens === 1 && !fences.holds('h1'), 8_000);
      // Give the stalled take every chance to go on: Redis answers again, and the loop may take the
      // host back with a new token, which then starts it as it should.
      await new Promise((r) => setTimeout(r, 1_500));
      expect(starts.every((token) => token !== undefined)).toBe(true);
      expect(serving.mock.calls.length).toBe(starts.length);
      if (starts.length > 0) expect(starts).toEqual([2]);
    } finally {
      await ownership.stop();
      forwarding.stopServing('h1');
    }
  }, 20_000);
});

describe('a replica that stops', () => {
  it('gives back a lease it took while stopping, so a standby need not wait for it to run out', async () => {
    const leases = new HostLeases(redis);
    let acquired!: () => void;
    const acquiring = new Promise<void>((resolve) => {
      acquired = resolve;
    });
    // The lease is taken at Redis, but its answer arrives only once stop() has been called.
    const slow = Object.assign(Object.create(leases) as HostLeases, {
      acquire: async (...args: Parameters<HostLeases['acquire']>) => {
        const token = await leases.acquire(...args);
        await acquiring;
        return token;
      },
    });
    const gained: string[] = [];
    const ownership = new HostOwnership({
      leases: slow,
      replicaId: 'stopping#1',
      hostIds: ['h1'],
      ttlMs: 15_000,
      logger: quiet,
      onGained: async (hostId) => {
        gained.push(hostId);
      },
      onLost: () => {},
    });
    ownership.start();
    await waitFor(async () => (await redis.exists(keys.hostLease('h1'))) === 1);
    const stopping = ownership.stop();
    acquired();
    await stopping;
    expect(gained).toEqual([]);
    expect(await redis.exists(keys.hostLease('h1'))).toBe(0);
    // The next replica takes the host at once.
    expect(await leases.acquire('h1', 'standby#1', 15_000)).toBeDefined();
  });
});

describe('a replica shutting down', () => {
  it('keeps renewing the host it runs, and takes none another replica gives back', async () => {
    const events: string[] = [];
    const ownership = (name: string, hostIds: string[]) =>
      new HostOwnership({
        leases: new HostLeases(redis),
        replicaId: `${name}#1`,
        hostIds,
        ttlMs: 2_000,
        logger: quiet,
        onGained: async (hostId) => {
          events.push(`${name} gained ${hostId}`);
        },
        onLost: (hostId) => {
          events.push(`${name} lost ${hostId}`);
        },
      });
    const a = ownership('a', ['h1']);
    a.start();
    await waitFor(() => a.holds('h1'));
    const b = ownership('b', ['h1', 'h2']);
    b.start();
    await waitFor(() => b.holds('h2'));
    // Both are told to stop together: b has begun its shutdown (stopping its hosts) as a gives h1
    // back. Taken now, h1 would be started only to be abandoned when b gives its leases back.
    b.stopTaking();
    await a.stop();
    // Several looks at the leases (one a fifth of the lease), and past h2's lease: still renewed.
    await new Promise((r) => setTimeout(r, 2_500));
    expect(b.holds('h1')).toBe(false);
    expect(b.holds('h2')).toBe(true);
    await b.stop();
    expect(events).toEqual(['a gained h1', 'b gained h2']);
  });
});

describe('the lease deadline', () => {
  it('stops the host at its deadline even when the expiry timer fires before the clock gets there', async () => {
    // Renewals never come back (Redis stalled), and the clock the lease is counted on runs 1%
    // slower than timers: each timer fires "early", as libuv's whole milliseconds can.
    const leases = new HostLeases(redis);
    const unanswered: Array<() => void> = [];
    const stalled = Object.assign(Object.create(leases) as HostLeases, {
      renew: () => new Promise<boolean>((_, reject) => unanswered.push(() => reject(new Error('stalled')))),
    });
    const lost: string[] = [];
    const ownership = new HostOwnership({
      leases: stalled,
      replicaId: 'slow#1',
      hostIds: ['h1'],
      ttlMs: 2_000,
      logger: quiet,
      clock: () => performance.now() * 0.99,
      onGained: async () => {},
      onLost: (hostId) => {
        lost.push(hostId);
      },
    });
    ownership.start();
    await waitFor(() => ownership.holds('h1'));
    await waitFor(() => lost.includes('h1'), 4_000);
    expect(ownership.holds('h1')).toBe(false);
    for (const fail of unanswered) fail();
    await ownership.stop();
  }, 10_000);
});

describe('a restarted replica', () => {
  it('takes its hosts back at once from an earlier process of its own that is gone, never from a live one', async () => {
    const leases = new HostLeases(redis);
    // The earlier process (pid 999999) holds the lease and said it is alive a moment ago.
    await leases.acquire('h1', 'a#999999.old', 15_000);
    await leases.heartbeat('a#999999.old', Date.now(), 3_000, 60_000);
    const start = (gone: boolean) => {
      const ownership = new HostOwnership({
        leases,
        replicaId: `a#${process.pid}.new`,
        hostIds: ['h1'],
        ttlMs: 15_000,
        logger: quiet,
        onGained: async () => {},
        onLost: () => {},
        isGone: (pid) => gone && pid === 999999,
      });
      ownership.start();
      return ownership;
    };
    const waiting = start(false);
    await new Promise((r) => setTimeout(r, 500));
    expect(waiting.holds('h1')).toBe(false);
    await waiting.stop();
    const back = start(true);
    await waitFor(() => back.holds('h1'), 3_000);
    expect(back.fenceOf('h1')).toBe(2);
    await back.stop();
  });
});

describe('forwarded decisions', () => {
  const stream = new DecisionStream(redis);

  it('an asker that withdraws first wins over the owner, and an owner that took it first wins over the asker', async () => {
    expect(await stream.withdraw('h1', 'cmd-1')).toBe(true);
    expect(await stream.take('h1', 'cmd-1')).toBe('withdrawn');
    expect(await stream.take('h1', 'cmd-2')).toBe('taken');
    expect(await stream.withdraw('h1', 'cmd-2')).toBe(false);
  });

  it('the owner finishes, and tells the person itself only when the asker stopped waiting', async () => {
    await stream.ensureGroup('h1');
    const waited = await stream.append('h1', '{}', 'mac-w');
    const abandoned = await stream.append('h1', '{}', 'mac-a');
    const read = await stream.claimPending('h1', 'owner#1');
    expect(read).toEqual([]);
    const reader = redis.duplicate();
    const entries = await stream.read(reader, 'h1', 'owner#1', 100);
    reader.disconnect();
    expect(entries.map((e) => e.id)).toEqual([waited, abandoned]);

    await stream.take('h1', 'cmd-w');
    expect(await stream.finish('h1', waited, 'cmd-w', '{"kind":"decided"}')).toBe(true);
    expect(await stream.outcome('h1', 'cmd-w')).toBe('{"kind":"decided"}');
    // Giving up after the outcome came returns the outcome instead.
    expect(await stream.giveUp('h1', 'cmd-w')).toBe('{"kind":"decided"}');

    await stream.take('h1', 'cmd-a');
    expect(await stream.giveUp('h1', 'cmd-a')).toBeUndefined();
    expect(await stream.finish('h1', abandoned, 'cmd-a', '{"kind":"stale"}')).toBe(false);
    // Both carried out: acknowledged and gone from the stream.
    expect(await redis.xlen(keys.decisions('h1'))).toBe(0);
  });

  it('the outcome is pushed onto the reply list of an asker still waiting, popped once, and gone', async () => {
    await stream.ensureGroup('h1');
    const id = await stream.append('h1', '{}', 'mac-l');
    const reader = redis.duplicate();
    try {
      await stream.read(reader, 'h1', 'owner#1', 100);
      await stream.take('h1', 'cmd-l');
      // The asker blocks first; the owner's finish wakes it.
      const waiting = stream.awaitOutcome(reader, 'h1', 'cmd-l', 5_000);
      expect(await stream.finish('h1', id, 'cmd-l', '{"kind":"decided"}')).toBe(true);
      expect(await waiting).toBe('{"kind":"decided"}');
      expect(await redis.exists(keys.decisionReplyList('h1', 'cmd-l'))).toBe(0);
      // Nothing more comes: a bounded wait, then nothing.
      expect(await stream.awaitOutcome(reader, 'h1', 'cmd-l', 50)).toBeUndefined();
    } finally {
      reader.disconnect();
    }
  });

  it('an asker that gave up leaves no reply list, whenever the owner finishes', async () => {
    await stream.ensureGroup('h1');
    const before = await stream.append('h1', '{}', 'mac-b');
    const after = await stream.append('h1', '{}', 'mac-c');
    // Finished before the asker gave up: giving up returns the outcome and deletes the list.
    await stream.take('h1', 'cmd-b');
    await stream.finish('h1', before, 'cmd-b', '{"kind":"decided"}');
    expect(await redis.exists(keys.decisionReplyList('h1', 'cmd-b'))).toBe(1);
    expect(await stream.giveUp('h1', 'cmd-b')).toBe('{"kind":"decided"}');
    expect(await redis.exists(keys.decisionReplyList('h1', 'cmd-b'))).toBe(0);
    // Finished after: nothing is pushed for nobody.
    await stream.take('h1', 'cmd-c');
    expect(await stream.giveUp('h1', 'cmd-c')).toBeUndefined();
    expect(await stream.finish('h1', after, 'cmd-c', '{"kind":"stale"}')).toBe(false);
    expect(await redis.exists(keys.decisionReplyList('h1', 'cmd-c'))).toBe(0);
  });

  it('an asker that gave up before any owner took its entry is still answered by the owner', async () => {
    await stream.ensureGroup('h1');
    const id = await stream.append('h1', '{}', 'mac-g');
    // The owner was away (it died, or the host changed hands) for as long as the asker waited.
    expect(await stream.giveUp('h1', 'cmd-g')).toBeUndefined();
    expect(await stream.take('h1', 'cmd-g')).toBe('gaveUp');
    // Nobody waits: the owner must tell the person, and nothing is pushed for nobody.
    expect(await stream.finish('h1', id, 'cmd-g', '{"kind":"decided"}')).toBe(false);
    expect(await redis.exists(keys.decisionReplyList('h1', 'cmd-g'))).toBe(0);
  });

  it('a new owner claims what an owner that died left pending', async () => {
    await stream.ensureGroup('h1');
    const id = await stream.append('h1', '{"x":1}', 'mac-x');
    const reader = redis.duplicate();
    expect((await stream.read(reader, 'h1', 'dead#1', 100)).map((e) => e.id)).toEqual([id]);
    reader.disconnect();
    const claimed = await stream.claimPending('h1', 'next#1');
    expect(claimed).toEqual([{ id, body: '{"x":1}', mac: 'mac-x' }]);
    expect(await stream.claimPending('h1', 'next#1')).toEqual([{ id, body: '{"x":1}', mac: 'mac-x' }]);
  });
});

describe('decision forwarding', () => {
  const store = new ApprovalStore(redis, { resolvedTtlMs: 60_000 });
  let owns = true;
  const forwarding = (waitMs: number, late: unknown[], decideAfterMs: number) => {
    const f = new DecisionForwarding({
      stream: new DecisionStream(redis),
      seal: new ReplicaSeal('the replicas share this secret, 32+ characters'),
      store,
      readerConnection: () => redis.duplicate(),
      replicaId: 'owner#1',
      newCommandId: () => `cmd-${Math.random()}`,
      mayAct: () => owns,
      logger: quiet,
      waitMs,
      onLateOutcome: (asker, approvalId, outcome) => late.push({ asker, approvalId, outcome }),
      decide: async (request) => {
        await new Promise((r) => setTimeout(r, decideAfterMs));
        return request.commandId
          ? { kind: 'decided', terminal: true }
          : { kind: 'refused', errorKind: 'no id' };
      },
    });
    return f;
  };
  afterEach(() => {
    owns = true;
  });

  it('the asker hears the owner’s outcome; one that stopped waiting is answered by the owner', async () => {
    await store.createIfAbsent(record('fw-1'));
    const late: unknown[] = [];
    const quick = forwarding(5_000, late, 0);
    await quick.serve('h1');
    const request = {
      record: (await store.get('fw-1'))!,
      sourceIndex: 0,
      choiceId: 'allow_once',
      by: { via: 'click' as const, userId: 'U1' },
      asker: { channel: 'C1', userId: 'U1' },
    };
    // Heard on the reply list as the owner pushed it: the reply key is never polled.
    const polled = vi.spyOn(DecisionStream.prototype, 'outcome');
    try {
      expect(await quick.forward(request)).toEqual({ kind: 'decided', terminal: true });
      expect(polled).not.toHaveBeenCalled();
    } finally {
      polled.mockRestore();
    }
    expect(late).toEqual([]);
    expect(await redis.keys(keys.decisionReplyList('h1', '*'))).toEqual([]);
    await quick.stop();

    const slow = forwarding(200, late, 800);
    await slow.serve('h1');
    expect(await slow.forward(request)).toEqual({ kind: 'forwarded' });
    await waitFor(() => late.length === 1, 3_000);
    expect(late[0]).toEqual({
      asker: { channel: 'C1', userId: 'U1' },
      approvalId: 'fw-1',
      outcome: { kind: 'decided', terminal: true },
    });
    await slow.stop();
    expect(await redis.xlen(keys.decisions('h1'))).toBe(0);
  });

  it('an entry the owner could not finish (it lost the host) stays pending for the next owner', async () => {
    await store.createIfAbsent(record('fw-2'));
    const late: unknown[] = [];
    const first = forwarding(300, late, 200);
    await first.serve('h1');
    const asking = first.forward({
      record: (await store.get('fw-2'))!,
      sourceIndex: 0,
      choiceId: 'allow_once',
      by: { via: 'timeout' as const },
    });
    await new Promise((r) => setTimeout(r, 100));
    owns = false;
    expect(await asking).toEqual({ kind: 'forwarded' });
    first.stopServing('h1');
    await first.stop();
    expect(await redis.xlen(keys.decisions('h1'))).toBe(1);
    owns = true;
    const next = forwarding(300, late, 0);
    await next.serve('h1');
    await waitFor(async () => (await redis.xlen(keys.decisions('h1'))) === 0, 3_000);
    await next.stop();
  });
});

describe('decision forwarding to a new owner', () => {
  const store = new ApprovalStore(redis, { resolvedTtlMs: 60_000 });

  it('an entry a deposed owner’s blocked read took after the takeover is carried out by the new owner', async () => {
    await store.createIfAbsent(record('fw-3'));
    const stream = new DecisionStream(redis);
    await stream.ensureGroup('h1');
    // The old owner froze (a long pause) inside its blocking read: Redis still hands it the
    // next entry, after the new owner has claimed what was pending.
    const { frozen, stolen } = await frozenOwnerRead(redis);
    const decided: string[] = [];
    const owner = new DecisionForwarding({
      stream,
      seal: new ReplicaSeal('the replicas share this secret, 32+ characters'),
      store,
      readerConnection: () => redis.duplicate(),
      replicaId: 'owner#2',
      newCommandId: () => `cmd-${Math.random()}`,
      mayAct: () => true,
      logger: quiet,
      waitMs: 300,
      reclaimIdleMs: 500,
      decide: async (request) => {
        decided.push(request.record.approvalId);
        return { kind: 'decided', terminal: true };
      },
    });
    try {
      await owner.serve('h1');
      expect(
        await owner.forward({
          record: (await store.get('fw-3'))!,
          sourceIndex: 0,
          choiceId: 'allow_once',
          by: { via: 'timeout' as const },
        }),
      ).toEqual({ kind: 'forwarded' });
      expect(await stolen).not.toBeNull();
      await waitFor(async () => (await redis.xlen(keys.decisions('h1'))) === 0, 5_000);
      expect(decided).toEqual(['fw-3']);
    } finally {
      frozen.disconnect();
      await owner.stop();
    }
  });
});

describe('a decision its owner hands on again', () => {
  const store = new ApprovalStore(redis, { resolvedTtlMs: 60_000 });
  const seal = new ReplicaSeal('the replicas share this secret, 32+ characters');

  it('to the new owner, having lost the host as it claimed, still lets the person who stopped waiting hear: once', async () => {
    await store.createIfAbsent(record('fw-4'));
    const stream = new DecisionStream(redis);
    await stream.ensureGroup('h1');
    const late: unknown[] = [];
    const replica = (
      replicaId: string,
      how: Pick<DecisionForwardingOptions, 'mayAct' | 'decide'> & Partial<DecisionForwardingOptions>,
    ) =>
      new DecisionForwarding({
        stream,
        seal,
        store,
        readerConnection: () => redis.duplicate(),
        replicaId,
        newCommandId: () => `cmd-${Math.random()}`,
        logger: quiet,
        waitMs: 300,
        onLateOutcome: (asker, approvalId, outcome) => late.push({ replicaId, asker, approvalId, outcome }),
        ...how,
      });
    // The old owner, still in its blocking read as the host changes hands, is handed the click.
    const { frozen, stolen } = await frozenOwnerRead(redis);
    const newOwner = replica('owner#2', {
      mayAct: () => true,
      decide: async () => ({ kind: 'decided', terminal: true }),
      reclaimIdleMs: 2_000,
    });
    const standby = replica('standby#1', {
      mayAct: () => false,
      decide: async () => ({ kind: 'refused', errorKind: 'not the owner' }),
    });
    // The old owner carries it out as it wakes, and finds at its claim that the host is the new
    // owner's: its Decider hands the decision on, under the same commandId (Decider, `fenced`).
    // What comes next goes to the new owner, blocked on the stream first; the old owner's reads
    // are left out, so that it does every time.
    let oldOwns = true;
    const oldStream = new DecisionStream(redis);
    vi.spyOn(oldStream, 'read').mockImplementation(async () => {
      await new Promise((r) => setTimeout(r, 20));
      return [];
    });
    const oldOwner: DecisionForwarding = replica('old#1', {
      stream: oldStream,
      mayAct: () => oldOwns,
      decide: async (request) => {
        oldOwns = false;
        return oldOwner.forward(request);
      },
    });
    try {
      await newOwner.serve('h1');
      const asker = { channel: 'C1', userId: 'U1' };
      // Nobody answered within its wait: the clicker heard that their choice was handed on.
      expect(
        await standby.forward({
          record: (await store.get('fw-4'))!,
          sourceIndex: 0,
          choiceId: 'allow_once',
          by: { via: 'click', userId: 'U1' },
          onChange: 'return',
          asker,
        }),
      ).toEqual({ kind: 'forwarded' });
      expect(await stolen).not.toBeNull();
      await oldOwner.serve('h1');
      // Carried out by the new owner; the first entry, found done, dropped.
      await waitFor(async () => (await redis.xlen(keys.decisions('h1'))) === 0, 8_000);
      expect(late).toEqual([
        { replicaId: 'owner#2', asker, approvalId: 'fw-4', outcome: { kind: 'decided', terminal: true } },
      ]);
    } finally {
      frozen.disconnect();
      await Promise.all([oldOwner.stop(), newOwner.stop(), standby.stop()]);
    }
  });
});

/**
 * The old owner `old#1`, frozen in its blocking read of h1's decisions on a connection of its
 * own: Redis hands it the next entry. Resolves once the read is waiting.
 */
async function frozenOwnerRead(redis: Redis) {
  const frozen = redis.duplicate();
  const stolen = frozen.xreadgroup(
    'GROUP',
    'owners',
    'old#1',
    'COUNT',
    64,
    'BLOCK',
    3_000,
    'STREAMS',
    keys.decisions('h1'),
    '>',
  );
  await new Promise((r) => setTimeout(r, 50));
  return { frozen, stolen };
}

async function waitFor(condition: () => boolean | Promise<boolean>, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('keys of an earlier release', () => {
  it('are moved to their names with a hash tag once, and a key under both names is left alone', async () => {
    await redis.xadd('cs:audit', '*', 'e', '{}');
    await redis.zadd('cs:grants:expiring', 1, 'g-1');
    await redis.zadd('cs:esc:due', 1, 'm-old');
    await redis.zadd(keys.escalationDue(), 2, 'm-new');
    const moved = await Promise.all([renameLegacyKeys(redis, quiet), renameLegacyKeys(redis, quiet)]);
    expect(moved.flat().sort()).toEqual(['cs:audit', 'cs:grants:expiring']);
    expect(await redis.xlen(keys.audit)).toBe(1);
    expect(await redis.zrange(keys.grantsExpiring(), 0, -1)).toEqual(['g-1']);
    expect(await redis.exists('cs:audit', 'cs:grants:expiring')).toBe(0);
    // Both names hold data: nothing is overwritten.
    expect(await redis.zrange(keys.escalationDue(), 0, -1)).toEqual(['m-new']);
    expect(await redis.zrange('cs:esc:due', 0, -1)).toEqual(['m-old']);
  });
});
