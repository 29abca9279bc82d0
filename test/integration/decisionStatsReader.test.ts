// Decision stats read from the audit stream: a bounded read (pages up to a cap, the window's
// start), and a summary kept for every replica until a decision entry bumps the generation.

import type { Redis } from 'ioredis';
import pino from 'pino';
import { beforeEach, describe, expect, it, vi } from 'vitest';
import type { AuditEntry } from '../../src/domain/audit.js';
import { RedisAuditTrail } from '../../src/store/auditStream.js';
import { DecisionStatsReader } from '../../src/store/decisionStatsReader.js';
import { keys } from '../../src/store/keys.js';
import { useFreshRedis } from '../support/freshRedis.js';

const fresh = useFreshRedis();
/** The file's own database, emptied before each test. */
let redis: Redis;
beforeEach(() => {
  redis = fresh();
});

const WEEK = 7 * 86_400_000;

function decision(i: number, route = 'deploys'): AuditEntry {
  return {
    kind: 'decision',
    approvalId: `a-${i}`,
    hostId: 'h',
    route,
    tool: 'bash',
    via: 'click',
    choiceId: 'allow_once',
    decision: 'approved',
    waitedMs: 1_000 * (i + 1),
    at: new Date().toISOString(),
  };
}

describe('DecisionStatsReader', () => {
  it('reads newest first in pages, up to its cap, and says when it stopped there', async () => {
    const pipe = redis.pipeline();
    for (let i = 0; i < 1_200; i++)
      pipe.xadd(keys.audit, '*', 'kind', 'decision', 'route', 'r', 'via', 'grant');
    await pipe.exec();
    const summary = await new DecisionStatsReader(redis, { cap: 1_100 }).summary(WEEK);
    expect(summary).toMatchObject({ read: 1_100, capped: true });
    expect(summary.routes[0]).toMatchObject({ route: 'r', decisions: 1_100, byGrant: 1_100 });
  });

  it('leaves out what is older than the window', async () => {
    const trail = new RedisAuditTrail(redis, { maxLen: 1_000, logger: pino({ level: 'silent' }) });
    await trail.append(decision(0));
    const later = new DecisionStatsReader(redis, { now: () => Date.now() + WEEK + 60_000 });
    expect(await later.summary(WEEK)).toMatchObject({ read: 0, routes: [] });
  });

  it('keeps a summary until a decision entry is written, however recent', async () => {
    const trail = new RedisAuditTrail(redis, { maxLen: 1_000, logger: pino({ level: 'silent' }) });
    const reader = new DecisionStatsReader(redis);
    await trail.append(decision(0));
    expect((await reader.summary(WEEK)).routes[0]!.decisions).toBe(1);
    // A refusal is no decision: the kept summary still holds.
    await trail.append({ kind: 'refusal', userId: 'U1', action: 'click', reason: 'notApprover', at: '' });
    expect(await redis.get(keys.statsGeneration)).toBe('1');
    await trail.append(decision(1));
    expect((await reader.summary(WEEK)).routes[0]!.decisions).toBe(2);
    // Another replica's reader sees the same.
    expect((await new DecisionStatsReader(redis).summary(WEEK)).routes[0]!.decisions).toBe(2);
    // Within `staleMs`, a summary is served though a decision came since (App Home).
    await trail.append(decision(2));
    expect((await reader.summary(WEEK, 60_000)).routes[0]!.decisions).toBe(2);
    expect((await reader.summary(WEEK)).routes[0]!.decisions).toBe(3);
  });

  it('callers that find no kept summary at once share one scan', async () => {
    const pipe = redis.pipeline();
    for (let i = 0; i < 1_200; i++)
      pipe.xadd(keys.audit, '*', 'kind', 'decision', 'route', 'r', 'via', 'grant');
    await pipe.exec();
    const reader = new DecisionStatsReader(redis);
    // Counted at the client: INFO would count other test files' reads of the shared server.
    const ranges = vi.spyOn(redis, 'xrevrange');
    // Fifty open Homes published again at once, the kept summary expired.
    const summaries = await Promise.all(Array.from({ length: 50 }, () => reader.summary(WEEK, 60_000)));
    expect(new Set(summaries).size).toBe(1);
    expect(summaries[0]!.routes[0]).toMatchObject({ route: 'r', decisions: 1_200 });
    // One scan: 1,200 entries in pages of 500.
    expect(ranges).toHaveBeenCalledTimes(3);
    ranges.mockRestore();
  });
});
