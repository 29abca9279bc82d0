// The audit stream on a real Redis: flat entries, capped with MAXLEN ~, and
// an append that can never fail the decision it records. Refusals go to a stream of their own,
// within a limit per user and minute, so that no number of them trims a decision.

import { Redis } from 'ioredis';
import { beforeEach, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/domain/audit.js';
import { REFUSALS_PER_USER_PER_MINUTE, RedisAuditTrail } from '../../src/store/auditStream.js';
import { keys } from '../../src/store/keys.js';
import { decisionEntry as decision } from '../support/auditEntries.js';
import { useFreshRedis } from '../support/freshRedis.js';
import { captureLogger } from '../support/logCapture.js';
import { PrivateRedis } from '../support/privateRedis.js';

const fresh = useFreshRedis();
/** The file's own database, emptied before each test. */
let redis: Redis;
beforeEach(() => {
  redis = fresh();
});

/** A client of a Redis that is not there: every command fails at once. */
function unreachableRedis(): Redis {
  const dead = new Redis('redis://127.0.0.1:1', {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  dead.on('error', () => undefined);
  return dead;
}

/**
 * How many entries one radix-tree node of a stream holds: `~` trims whole nodes only, so at most
 * one node's worth above the cap stays.
 */
async function nodeEntries(): Promise<number> {
  const [, value] = (await redis.config('GET', 'stream-node-max-entries')) as [string, string];
  return Number(value);
}

function refusal(userId: string, n: number, reason = 'notApprover'): AuditEntry {
  return {
    kind: 'refusal',
    approvalId: `a-${n}`,
    hostId: 'main',
    route: 'deploys',
    userId,
    action: 'click',
    reason,
    at: '2026-12-01T10:00:00.000Z',
  };
}

/** The user's refusal counter runs out within a minute. */
async function expectWindowEnds(userId: string): Promise<void> {
  const ttl = await redis.pttl(keys.refusalCount(userId));
  expect(ttl).toBeGreaterThan(0);
  expect(ttl).toBeLessThanOrEqual(60_000);
}

/** The approvalIds of a stream's entries, oldest first. */
async function approvalIdsIn(key: string): Promise<string[]> {
  const entries = await redis.xrange(key, '-', '+');
  return entries.map(([, fields]) => fields[fields.indexOf('approvalId') + 1]!);
}

describe('RedisAuditTrail', () => {
  it('appends one flat entry per call, leaving absent fields out', async () => {
    const { logger } = captureLogger();
    const trail = new RedisAuditTrail(redis, { maxLen: 100, logger });
    await trail.append(decision(1, { route: 'deploys', feedback: 'ok then' }));
    await trail.append(decision(2));
    const entries = await redis.xrange(keys.audit, '-', '+');
    expect(entries).toHaveLength(2);
    expect(entries[0]![1]).toEqual([
      'kind',
      'decision',
      'approvalId',
      'a-1',
      'hostId',
      'main',
      'tool',
      'shell',
      'userId',
      'U0ALICE',
      'via',
      'click',
      'choiceId',
      'allow_once',
      'decision',
      'approved',
      'at',
      '2026-12-01T10:00:00.000Z',
      'route',
      'deploys',
      'feedback',
      'ok then',
    ]);
    expect(entries[1]![1]).not.toContain('route');
    expect(entries[1]![1]).not.toContain('feedback');
  });

  it('trims the stream to about maxLen entries, keeping the newest', async () => {
    const { logger } = captureLogger();
    const maxLen = 10;
    const trail = new RedisAuditTrail(redis, { maxLen, logger });
    for (let n = 0; n < 1_000; n++) await trail.append(decision(n));
    const length = await redis.xlen(keys.audit);
    expect(length).toBeGreaterThanOrEqual(maxLen);
    expect(length).toBeLessThanOrEqual(maxLen + (await nodeEntries()));
    const newest = await redis.xrevrange(keys.audit, '+', '-', 'COUNT', 1);
    expect(newest[0]![1]).toContain('a-999');
  });

  it('writes a decision once per approval: its mark, the entry and the stats generation in one script', async () => {
    // A server of the test's own: INFO commandstats counts every client's commands, a script's
    // inner calls included.
    const server = await PrivateRedis.start();
    const own = new Redis(server.url);
    try {
      const { logger } = captureLogger();
      const trail = new RedisAuditTrail(own, { maxLen: 100, logger, decisionMarkTtlMs: 60_000 });
      // Loads the script: what follows runs it by its digest.
      expect(await trail.appendDecision(decision(0))).toBe(true);
      await own.config('RESETSTAT');
      expect(await trail.appendDecision(decision(1))).toBe(true);
      const calls = async () =>
        Object.fromEntries(
          [...(await own.info('commandstats')).matchAll(/^cmdstat_(\w+):calls=(\d+)/gm)].map((m) => [
            m[1],
            Number(m[2]),
          ]),
        );
      // Counted from RESETSTAT on; the INFO reading them is counted after its own reply.
      expect(await calls()).toEqual({ evalsha: 1, set: 1, xadd: 1, incr: 1 });
      // Again, by another process or a later look: found written, nothing more.
      expect(await trail.appendDecision(decision(1))).toBe(false);
      await trail.append(decision(1));
      expect(await own.xlen(keys.audit)).toBe(2);
      expect(await own.get(keys.statsGeneration)).toBe('2');
      expect(await own.pttl(keys.decisionAudited('a-1'))).toBeGreaterThan(59_000);
    } finally {
      own.disconnect();
      await server.stop();
    }
  });

  it('never rejects when Redis cannot take the entry, and logs it', async () => {
    const { logger, lines } = captureLogger();
    const dead = unreachableRedis();
    const trail = new RedisAuditTrail(dead, { maxLen: 10, logger });
    await expect(trail.append({ ...decision(1), feedback: 'FEEDBACK-MARK' })).resolves.toBeUndefined();
    expect(lines.find((l) => l.msg === 'audit entry not written')).toMatchObject({
      level: 50,
      auditEntry: { approvalId: 'a-1' },
    });
    // A reviewer's feedback is a person's free text: the log, which goes further, leaves it out.
    expect(JSON.stringify(lines)).not.toContain('FEEDBACK-MARK');
    dead.disconnect();
  });
});

describe('refusals', () => {
  it('thousands of refusals trim no decision: they have a stream and a cap of their own', async () => {
    const { logger } = captureLogger();
    const maxLen = 10;
    const trail = new RedisAuditTrail(redis, { maxLen, refusalMaxLen: maxLen, logger });
    const users = Array.from({ length: 250 }, (_, i) => `U0USER${i}`);
    // Decisions between bursts of refusals: 250 users, each under the limit per minute, so that
    // every refusal is written and the refusal stream itself is trimmed many times over.
    for (let round = 0; round < 5; round++) {
      await trail.append(decision(round));
      await Promise.all(users.map((user, i) => trail.append(refusal(user, round * 1_000 + i))));
    }
    expect(await approvalIdsIn(keys.audit)).toEqual(['a-0', 'a-1', 'a-2', 'a-3', 'a-4']);
    const refusals = await redis.xlen(keys.refusals);
    expect(refusals).toBeGreaterThanOrEqual(maxLen);
    expect(refusals).toBeLessThanOrEqual(maxLen + (await nodeEntries()));
    expect(trail.refusals.total.notApprover).toBe(1_250);
    expect(trail.refusals.overLimit.notApprover).toBe(0);
  });

  it('writes a user’s first refusals of a minute, counts the rest, shared by every replica', async () => {
    const { logger, lines } = captureLogger();
    // Two replicas' trails: the limit is counted in Redis, not in either process.
    const a = new RedisAuditTrail(redis, { maxLen: 1_000, logger });
    const b = new RedisAuditTrail(redis, { maxLen: 1_000, logger });
    const limit = REFUSALS_PER_USER_PER_MINUTE;
    for (let n = 0; n < limit * 3; n++) await (n % 2 === 0 ? a : b).append(refusal('U0EVE', n));
    // Someone else refused meanwhile is written all the same.
    await b.append(refusal('U0MALLORY', 999, 'selfApproval'));
    const written = await redis.xrange(keys.refusals, '-', '+');
    expect(written.filter(([, f]) => f.includes('U0EVE'))).toHaveLength(limit);
    expect(written.filter(([, f]) => f.includes('U0MALLORY'))).toHaveLength(1);
    // The ones written are the first of the minute.
    expect((await approvalIdsIn(keys.refusals)).slice(0, limit)).toEqual(
      Array.from({ length: limit }, (_, n) => `a-${n}`),
    );
    expect(a.refusals.total.notApprover + b.refusals.total.notApprover).toBe(limit * 3);
    expect(a.refusals.overLimit.notApprover + b.refusals.overLimit.notApprover).toBe(limit * 2);
    expect(b.refusals.total.selfApproval).toBe(1);
    // Said once, naming the user, not once per refusal.
    const over = lines.filter((l) => String(l.msg).startsWith('refusals of one user over the limit'));
    expect(over).toEqual([expect.objectContaining({ level: 40, userId: 'U0EVE', limit })]);
    // The window ends: the counter has a TTL of a minute.
    await expectWindowEnds('U0EVE');
  });

  it('gives a counter left without a TTL one: nobody is limited for good', async () => {
    const { logger } = captureLogger();
    const trail = new RedisAuditTrail(redis, { maxLen: 100, logger });
    await redis.set(keys.refusalCount('U0STUCK'), '500');
    await trail.append(refusal('U0STUCK', 1));
    expect(await redis.xlen(keys.refusals)).toBe(0);
    await expectWindowEnds('U0STUCK');
  });

  it('counts a reason it does not know as other: label values stay a closed set', async () => {
    const { logger } = captureLogger();
    const trail = new RedisAuditTrail(redis, { maxLen: 100, logger });
    await trail.append(refusal('U0EVE', 1, 'U0EVE said so'));
    expect(trail.refusals.total).toEqual({
      notApprover: 0,
      selfApproval: 0,
      routeGone: 0,
      notRiskApprover: 0,
      external: 0,
      guest: 0,
      deactivated: 0,
      notChannelMember: 0,
      unverified: 0,
      other: 1,
    });
    // The entry itself keeps the reason as given.
    const [[, fields]] = (await redis.xrange(keys.refusals, '-', '+')) as [[string, string[]]];
    expect(fields).toEqual(expect.arrayContaining(['reason', 'U0EVE said so']));
  });

  it('counts a refusal Redis cannot take, and logs it without rejecting', async () => {
    const { logger, lines } = captureLogger();
    const dead = unreachableRedis();
    const trail = new RedisAuditTrail(dead, { maxLen: 10, logger });
    await expect(trail.append(refusal('U0EVE', 1))).resolves.toBeUndefined();
    expect(trail.refusals.total.notApprover).toBe(1);
    expect(lines.find((l) => l.msg === 'audit entry not written')).toMatchObject({
      level: 50,
      auditEntry: { kind: 'refusal', userId: 'U0EVE' },
    });
    dead.disconnect();
  });
});
