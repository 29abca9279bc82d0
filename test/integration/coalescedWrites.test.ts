// Commands issued together leave in one socket write (src/store/coalescedWrites.ts), read from
// Redis's own counter of reads, on a redis-server of the test's own so nothing else is counted.

import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rideNextWrite, rideOrSend } from '../../src/store/coalescedWrites.js';
import { readGrantAudit } from '../../src/store/grantAudit.js';
import { RedisGrantStore } from '../../src/store/grantStore.js';
import { keys } from '../../src/store/keys.js';
import { RedisNoticeLedger } from '../../src/store/noticeLedger.js';
import { createRedisClient, type RedisClient } from '../../src/store/redisConnection.js';
import { botGrantInput } from '../support/grantInput.js';
import { captureLogger } from '../support/logCapture.js';
import { PrivateRedis } from '../support/privateRedis.js';

let server: PrivateRedis;
let probe: Redis;
let client: RedisClient;

beforeAll(async () => {
  server = await PrivateRedis.start();
  probe = new Redis(server.url);
  client = createRedisClient({ kind: 'single', url: server.url }, { maxRetriesPerRequest: 1 });
  await client.ping();
});

afterAll(async () => {
  client.disconnect();
  probe.disconnect();
  await server.stop();
});

/** Reads Redis made from every client, the probe's own INFO included. */
async function reads(): Promise<number> {
  const stats = await probe.info('stats');
  return Number(/total_reads_processed:(\d+)/.exec(stats)?.[1]);
}

describe('commands issued in one turn', () => {
  it('reach Redis in one read, in the order they were issued', async () => {
    const before = await reads();
    const replies = await Promise.all([
      client.rpush('order', 'a'),
      client.rpush('order', 'b'),
      client.lrange('order', 0, -1),
      client.del('order'),
    ]);
    const after = await reads();
    expect(replies).toEqual([1, 2, ['a', 'b'], 1]);
    // One read for the four commands, one for the probe's INFO after them.
    expect(after - before).toBe(2);
  });

  it('a command awaited on its own leaves at once, in a write of its own', async () => {
    const before = await reads();
    for (let i = 0; i < 5; i++) expect(await client.incr('turns')).toBe(i + 1);
    expect(await reads()).toBe(before + 5 + 1);
  });
});

describe('work riding the next write', () => {
  it('waits for a command of this process, and leaves in its read', async () => {
    let rode: Promise<number> | undefined;
    expect(rideNextWrite(client, () => (rode = client.incr('rider')))).toBe(true);
    const before = await reads();
    // Nothing sent yet: the rider waits.
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(rode).toBeUndefined();
    expect(await client.incr('carrier')).toBe(1);
    expect(await rode).toBe(1);
    // One read for the command and its rider, one for each of the probe's INFO.
    expect((await reads()) - before).toBe(2);
    await client.del('rider', 'carrier');
  });
});

describe('work riding the next write, when that write is a pipeline or a transaction', () => {
  it('leaves every reply to its own command: a claim riding a heartbeat is not told it won', async () => {
    await client.set('taken', 'someone else');
    await client.set('k1', 'one');
    // A notice's claim (SET NX) of a key already claimed, waiting to ride.
    const claim = rideOrSend(client, () => client.set('taken', 'mine', 'NX'));
    // The replicas' heartbeat is a MULTI; its first command used to carry the claim.
    const multi = await client.multi().zadd('beat', 1, 'r-1').zrange('beat', 0, -1).exec();
    expect(multi).toEqual([
      [null, 1],
      [null, ['r-1']],
    ]);
    expect(await claim).toBeNull();

    const read = rideOrSend(client, () => client.get('taken'));
    expect(await client.pipeline().get('k1').get('beat-none').exec()).toEqual([
      [null, 'one'],
      [null, null],
    ]);
    expect(await read).toBe('someone else');
    await client.del('taken', 'k1', 'beat');
  });
});

describe('a notice’s outcome', () => {
  it('rides the next write of the process, in its read; alone when nothing else is sent', async () => {
    const ledger = new RedisNoticeLedger(client, { ttlMs: 60_000 });
    expect(await ledger.claim('a-1', 'thread')).toBe(true);
    const before = await reads();
    const settling = ledger.settle('a-1', 'thread', 'sent');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(await client.incr('carrier')).toBe(1);
    await settling;
    // One read for the command and the outcome riding it, one for the probe's INFO.
    expect((await reads()) - before).toBe(2);
    expect(await probe.get(keys.notice('a-1', 'thread'))).toBe('sent');

    // With nothing else sent, it goes on its own.
    expect(await ledger.claim('a-2', 'thread')).toBe(true);
    await ledger.settle('a-2', 'thread', 'failed: 500');
    expect(await probe.get(keys.notice('a-2', 'thread'))).toBe('failed: 500');
    await client.del('carrier', keys.notice('a-1', 'thread'), keys.notice('a-2', 'thread'));
  });
});

describe('a grant’s use, answering a request', () => {
  it('its count, its `used` entry and its line’s claim ride the next write; alone after a while', async () => {
    const { logger } = captureLogger();
    const grants = new RedisGrantStore(client, { logger, auditMaxLen: 100 });
    const ledger = new RedisNoticeLedger(client, { ttlMs: 60_000 });
    const grant = await grants.create(botGrantInput({ approvalId: 'a-0', ttlMs: 60_000 }));
    const before = await reads();
    const counting = grants.recordUse(grant, 'a-1', 0, new Date(), { ride: true });
    const claiming = ledger.claim('a-1', 'grant-0', { ride: true });
    await new Promise((resolve) => setTimeout(resolve, 20));
    // Nothing written yet (read by the probe: a command of the client would carry them).
    expect((await readGrantAudit(probe)).map((e) => e.kind)).toEqual(['created']);
    expect(await probe.get(keys.notice('a-1', 'grant-0'))).toBeNull();
    // The resolution's write: the use and the claim leave with it.
    expect(await client.incr('resolution')).toBe(1);
    await counting;
    expect(await claiming).toBe(true);
    // The probe's two reads, the write with its riders, the probe's INFO.
    expect((await reads()) - before).toBe(4);
    expect((await grants.get(grant.grantId))?.uses).toBe(1);
    expect((await readGrantAudit(probe)).map((e) => e.kind)).toEqual(['created', 'used']);

    // With nothing else sent, each goes on its own.
    await grants.recordUse(grant, 'a-2', 0, new Date(), { ride: true });
    expect(await ledger.claim('a-2', 'grant-0', { ride: true })).toBe(true);
    expect((await grants.get(grant.grantId))?.uses).toBe(2);
    expect(await probe.get(keys.notice('a-2', 'grant-0'))).toBe('sending');
    await probe.flushdb();
  });
});

/** Counts the writes the client's socket hands to the system, from here on. */
function socketWrites(): () => number {
  const socket = (client as Redis).stream as unknown as {
    _write: (...args: unknown[]) => void;
    _writev: (...args: unknown[]) => void;
  };
  let count = 0;
  for (const name of ['_write', '_writev'] as const) {
    const original = socket[name];
    socket[name] = function (this: unknown, ...args: unknown[]) {
      count += 1;
      return original.apply(this, args);
    };
  }
  return () => count;
}

describe('while Redis is still answering earlier commands', () => {
  // Keeps Redis busy while the commands below are sent, so that their replies are outstanding.
  const BUSY = 'local i = 0 while i < 20000000 do i = i + 1 end return 1';

  it('commands issued at separate moments of one turn share a write, in order', async () => {
    const writes = socketWrites();
    // Nothing outstanding: the script leaves at once, in a write of its own.
    const busy = client.eval(BUSY, 0);
    await Promise.resolve();
    await Promise.resolve();
    expect(writes()).toBe(1);
    // Its reply is outstanding: each of these used to leave at its own microtask.
    const first = client.rpush('nagle', 'a');
    await Promise.resolve();
    await Promise.resolve();
    const second = client.rpush('nagle', 'b');
    await Promise.resolve();
    await Promise.resolve();
    const third = client.lrange('nagle', 0, -1);
    expect(writes()).toBe(1);
    expect(await Promise.all([busy, first, second, third])).toEqual([1, 1, 2, ['a', 'b']]);
    expect(writes()).toBe(2);
    await client.del('nagle');
  });
});
