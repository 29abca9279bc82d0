// The audit stream on a real Redis: flat entries, capped with MAXLEN ~, exported in order, and
// an append that can never fail the decision it records.

import { Redis } from 'ioredis';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { AuditEntry } from '../../src/relay/ports.js';
import { type ExportedAuditEntry, exportAudit, RedisAuditTrail } from '../../src/store/auditStream.js';
import { keys } from '../../src/store/keys.js';
import { freshRedisDb } from '../support/bot.js';
import { captureLogger } from '../support/logCapture.js';
import { testRedisUrl } from '../support/testRedis.js';

let redis: Redis;
beforeAll(async () => {
  redis = new Redis(testRedisUrl(await freshRedisDb()));
});
beforeEach(async () => {
  await redis.del(keys.audit);
});
afterAll(async () => {
  await redis.quit();
});

function decision(n: number, extra: Partial<AuditEntry> = {}): AuditEntry {
  return {
    kind: 'decision',
    approvalId: `a-${n}`,
    hostId: 'main',
    tool: 'shell',
    userId: 'U0ALICE',
    via: 'click',
    choiceId: 'allow_once',
    decision: 'approved',
    at: '2026-12-01T10:00:00.000Z',
    ...extra,
  } as AuditEntry;
}

async function exported(pageSize?: number): Promise<ExportedAuditEntry[]> {
  const out: ExportedAuditEntry[] = [];
  await exportAudit(redis, (entry) => out.push(entry), pageSize);
  return out;
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
    // `~` trims whole radix-tree nodes only: at most one node's worth above maxLen stays.
    const [, nodeEntries] = (await redis.config('GET', 'stream-node-max-entries')) as [string, string];
    const length = await redis.xlen(keys.audit);
    expect(length).toBeGreaterThanOrEqual(maxLen);
    expect(length).toBeLessThanOrEqual(maxLen + Number(nodeEntries));
    const newest = await redis.xrevrange(keys.audit, '+', '-', 'COUNT', 1);
    expect(newest[0]![1]).toContain('a-999');
  });

  it('never rejects when Redis cannot take the entry, and logs it', async () => {
    const { logger, lines } = captureLogger();
    const dead = new Redis('redis://127.0.0.1:1', {
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    dead.on('error', () => undefined);
    const trail = new RedisAuditTrail(dead, { maxLen: 10, logger });
    await expect(trail.append(decision(1))).resolves.toBeUndefined();
    expect(lines.find((l) => l.msg === 'audit entry not written')).toMatchObject({
      level: 50,
      audit: { approvalId: 'a-1' },
    });
    dead.disconnect();
  });
});

describe('exportAudit', () => {
  it('reads every entry once, oldest first, across pages', async () => {
    const { logger } = captureLogger();
    const trail = new RedisAuditTrail(redis, { maxLen: 1_000, logger });
    for (let n = 0; n < 20; n++) await trail.append(decision(n));
    const all = await exported(7);
    expect(all.map((e) => e.approvalId)).toEqual(Array.from({ length: 20 }, (_, n) => `a-${n}`));
    expect(all[0]).toMatchObject({ kind: 'decision', via: 'click', choiceId: 'allow_once' });
    expect(all[0]!.id).toMatch(/^\d+-\d+$/);
  });

  it('exports nothing from an empty stream', async () => {
    expect(await exported()).toEqual([]);
  });
});
