import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { decisionEntry } from '../../src/domain/decisionEntry.js';
import type { ResolvedRecord } from '../../src/domain/decisionNotice.js';
import { type ApprovalRecord, isTerminal } from '../../src/domain/record.js';
import { ApprovalStore } from '../../src/store/approvalStore.js';
import { RedisAuditTrail } from '../../src/store/auditStream.js';
import { HeldByWrite } from '../../src/store/heldByWrite.js';
import { keys } from '../../src/store/keys.js';
import { HeldNoticeClaims, RedisNoticeLedger } from '../../src/store/noticeLedger.js';
import { readOpenRecords } from '../../src/store/openRecords.js';
import { createRedisClient, type RedisClient } from '../../src/store/redisConnection.js';
import { captureLogger } from '../support/logCapture.js';
import { PrivateRedis } from '../support/privateRedis.js';
import { sampleRecord } from '../support/sampleRecord.js';
import { BACKENDS, openBackend, type StoreBackend } from '../support/storeBackends.js';
import { testRedisUrl } from '../support/testRedis.js';

/** A click by U1 on stage 0, as the click handler builds it. */
const claim = { sourceIndex: 0, userId: 'U1', choiceId: 'allow_once', commandId: 'cmd-1', claimedAt: 'now' };

describe.each(BACKENDS)('ApprovalStore on %s Redis', (kind) => {
  let backend: StoreBackend;
  let redis: RedisClient;
  let store: ApprovalStore;
  /** Clients a test connected of its own (auditingStore). */
  const clients: RedisClient[] = [];
  beforeAll(async () => {
    // One Redis: a database of its own, so this file can run beside the end-to-end tests.
    backend = await openBackend(kind, async () => ({ url: testRedisUrl(14) }));
    redis = backend.connect();
    store = new ApprovalStore(redis, { resolvedTtlMs: 60_000 });
  });
  beforeEach(async () => {
    await backend.flush();
  });
  afterAll(async () => {
    for (const client of clients) client.disconnect();
    await backend.close();
  });

  it('lets exactly one of many racing creators win', async () => {
    const results = await Promise.all(
      Array.from({ length: 10 }, () => store.createIfAbsent(sampleRecord('a-1'))),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
    expect(await store.openApprovalIds('default')).toEqual(['a-1']);
  });

  it("a create that finds another host's record under its id leaves nothing in its own host's open sets", async () => {
    expect(await store.createIfAbsent(sampleRecord('a-x', { hostId: 'h1' }))).toBe(true);
    const theirs = sampleRecord('a-x', { hostId: 'h2', sessionId: 's-2' });
    expect(await store.createIfAbsent(theirs, store.newPostLease(5_000))).toBe(false);
    expect(await store.openApprovalIds('h2')).toEqual([]);
    expect(await store.openApprovalIds('h2', 's-2')).toEqual([]);
    // The record is the first host's, still open there; asked again by that host, it stays so.
    expect(await store.createIfAbsent(sampleRecord('a-x', { hostId: 'h1' }))).toBe(false);
    expect(await store.openApprovalIds('h1')).toEqual(['a-x']);
    expect((await store.get('a-x'))?.hostId).toBe('h1');
  });

  it("lists a host's open records without another host's id left in its open set", async () => {
    await store.createIfAbsent(sampleRecord('a-x', { hostId: 'h1' }));
    await store.createIfAbsent(sampleRecord('a-y', { hostId: 'h2' }));
    // A stray of a release before the open sets were kept apart: h1's id in h2's set.
    await redis.sadd(keys.openApprovals('h2'), 'a-x');
    const listed = await readOpenRecords(redis, store, ['h1', 'h2']);
    expect(listed.map((record) => `${record.hostId}/${record.approvalId}`).sort()).toEqual([
      'h1/a-x',
      'h2/a-y',
    ]);
    expect((await readOpenRecords(redis, store, ['h2'])).map((record) => record.approvalId)).toEqual(['a-y']);
  });

  it('creates a record already claimed with its claim held: another claim of the stage is refused', async () => {
    const grantClaim = { ...claim, userId: undefined, via: 'grant' as const, commandId: 'cmd-grant' };
    const record = { ...sampleRecord('a-claimed'), phase: 'deciding' as const, claim: grantClaim };
    expect(await store.createIfAbsent(record)).toBe(true);
    expect(JSON.parse((await redis.get(keys.claim('a-claimed', 0)))!)).toEqual(
      JSON.parse(JSON.stringify(grantClaim)),
    );
    expect(await redis.pttl(keys.claim('a-claimed', 0))).toBeGreaterThan(0);
    expect(await redis.exists(keys.postLease('a-claimed'))).toBe(0);
    const click = { ...claim, commandId: 'cmd-click' };
    expect(await store.claimWith(record, { ...record, claim: click })).toEqual({
      kind: 'held',
      holder: JSON.parse(JSON.stringify(grantClaim)),
    });
    // A claimed record has no card to post: it is never created holding a post lease.
    await expect(
      store.createIfAbsent({ ...record, approvalId: 'a-other' }, store.newPostLease(1_000)),
    ).rejects.toThrow(/no card to post/);
  });

  it('applies concurrent updates without losing one (compare-and-set retries)', async () => {
    await store.createIfAbsent(sampleRecord('a-2'));
    await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        store.update('a-2', (r) => ({
          ...r,
          availableChoices: [
            ...r.availableChoices,
            { choiceId: `c${i}`, label: `c${i}`, decision: 'approved', scope: 'once' },
          ],
        })),
      ),
    );
    const final = await store.get('a-2');
    expect(final?.version).toBe(9);
    expect(final?.availableChoices.map((c) => c.choiceId).sort()).toEqual(
      ['allow_once', 'c0', 'c1', 'c2', 'c3', 'c4', 'c5', 'c6', 'c7'].sort(),
    );
  });

  it('reports no change and keeps the version when the mutation returns undefined', async () => {
    await store.createIfAbsent(sampleRecord('a-3'));
    const result = await store.update('a-3', () => undefined);
    expect(result).toMatchObject({ changed: false, record: { version: 1 } });
  });

  it('expires a final record and drops it from the open set', async () => {
    const lease = store.newPostLease(5_000);
    await store.createIfAbsent(sampleRecord('a-4'), lease);
    await store.savePost(sampleRecord('a-4'), { channel: 'C1', ts: '111.222' }, lease);
    expect(await redis.pttl(keys.message('C1', '111.222'))).toBe(-1);
    await store.update('a-4', (r) => ({
      ...r,
      phase: 'resolved',
      resolution: { decision: 'approved', resolvedBy: 'user', decidedAt: 'x' },
    }));
    expect(await redis.pttl(keys.approval('a-4'))).toBeGreaterThan(50_000);
    expect(await redis.pttl(keys.message('C1', '111.222'))).toBeGreaterThan(50_000);
    expect(await store.openApprovalIds('default')).toEqual([]);
    expect(await store.findByMessage('C1', '111.222')).toBe('a-4');
  });

  it('hands the post lease to one worker at a time; only its holder gives it back', async () => {
    const first = await store.acquirePostLease({ approvalId: 'a-6', hostId: 'h' }, 5_000);
    expect(first).toBeDefined();
    expect(await store.acquirePostLease({ approvalId: 'a-6', hostId: 'h' }, 5_000)).toBeUndefined();
    await store.releasePostLease('a-6', store.newPostLease(5_000));
    expect(await store.acquirePostLease({ approvalId: 'a-6', hostId: 'h' }, 5_000)).toBeUndefined();
    await store.releasePostLease('a-6', first!);
    expect(await store.acquirePostLease({ approvalId: 'a-6', hostId: 'h' }, 5_000)).toBeDefined();
  });

  it('gives the post lease to the creator only', async () => {
    const winner = store.newPostLease(5_000);
    expect(await store.createIfAbsent(sampleRecord('a-7'), winner)).toBe(true);
    expect(await store.createIfAbsent(sampleRecord('a-7'), store.newPostLease(5_000))).toBe(false);
    expect(await redis.get(keys.postLease('a-7'))).toBe(winner.token);
  });

  it('saves a posted card, maps its message and frees the lease in one step', async () => {
    const lease = store.newPostLease(5_000);
    await store.createIfAbsent(sampleRecord('a-8'), lease);
    const saved = await store.savePost(sampleRecord('a-8'), { channel: 'C9', ts: '1.2' }, lease);
    expect(saved?.record).toMatchObject({ version: 2, slack: { channel: 'C9', ts: '1.2' } });
    expect(await store.findByMessage('C9', '1.2')).toBe('a-8');
    expect(await redis.exists(keys.postLease('a-8'))).toBe(0);
    expect(await store.get('a-8')).toEqual(saved?.record);
  });

  it('patches the posted card into the stored JSON, whatever the agent wrote that looks like it', async () => {
    const lease = store.newPostLease(5_000);
    const slackLike = '"slack":{"channel":"C9"},"updatedAt":"x","version":1';
    const record: ApprovalRecord = {
      ...sampleRecord('a-patch'),
      // Text that spells the fields being patched, and an object of the host's with a slack key.
      rawArgs: JSON.stringify({ note: slackLike }),
      reason: slackLike,
      subject: { kind: 'custom', slack: { channel: 'C9' }, version: 1 },
      slack: { channel: 'C9' },
    };
    await store.createIfAbsent(record, lease);
    const wholeWrites = vi.spyOn(store, 'update');
    const saved = await store.savePost(record, { channel: 'C9', ts: '5.6' }, lease);
    // Patched in the one script: no read and whole write after it.
    expect(wholeWrites).not.toHaveBeenCalled();
    wholeWrites.mockRestore();
    expect(saved?.record).toMatchObject({ version: 2, slack: { channel: 'C9', ts: '5.6' } });
    // What Redis holds is exactly the record a whole write would have stored.
    expect(JSON.parse((await redis.hget(keys.approval('a-patch'), 'd'))!)).toEqual(saved?.record);
    expect(await redis.hget(keys.approval('a-patch'), 'v')).toBe('2');
    expect(await redis.exists(keys.postLease('a-patch'))).toBe(0);
  });

  it('writes the whole record when the stored JSON is not the one it expects', async () => {
    const lease = store.newPostLease(5_000);
    await store.createIfAbsent(sampleRecord('a-respaced'), lease);
    // Same record, same version, another spelling (as another writer might have stored it).
    const stored = JSON.parse((await redis.hget(keys.approval('a-respaced'), 'd'))!);
    await redis.hset(keys.approval('a-respaced'), 'd', JSON.stringify(stored, null, 1));
    const wholeWrites = vi.spyOn(store, 'update');
    const saved = await store.savePost(sampleRecord('a-respaced'), { channel: 'C1', ts: '7.8' }, lease);
    expect(wholeWrites).toHaveBeenCalledTimes(1);
    wholeWrites.mockRestore();
    expect(saved?.record).toMatchObject({ slack: { channel: 'C1', ts: '7.8' } });
    expect(await store.get('a-respaced')).toMatchObject({ slack: { ts: '7.8' } });
  });

  it('keeps a change made while the card was being posted', async () => {
    const lease = store.newPostLease(5_000);
    await store.createIfAbsent(sampleRecord('a-9'), lease);
    await store.update('a-9', (r) => ({ ...r, reason: 'changed meanwhile' }));
    const saved = await store.savePost(sampleRecord('a-9'), { channel: 'C1', ts: '3.4' }, lease);
    expect(saved?.record).toMatchObject({ version: 3, reason: 'changed meanwhile', slack: { ts: '3.4' } });
    expect(await redis.exists(keys.postLease('a-9'))).toBe(0);
  });

  it("a card's unsynced mark is struck off only by an update handed out after the write that made it", async () => {
    const stamps = Array.from({ length: 50 }, () => store.syncStamp());
    // Strictly increasing, even within one millisecond.
    expect(stamps.every((s, i) => i === 0 || s > stamps[i - 1]!)).toBe(true);

    const lease = store.newPostLease(5_000);
    await store.createIfAbsent(sampleRecord('a-sync'), lease);
    await store.savePost(sampleRecord('a-sync'), { channel: 'C1', ts: '1.1' }, lease);
    const before = store.syncStamp();
    await store.update('a-sync', (r) => ({ ...r, reason: 'marked' }));
    // An update handed out before that write says nothing about it: the mark stays.
    await store.cardsSynced(new Map([['a-sync', before]]));
    expect(await store.unsyncedCards(new Date(Date.now() + 1_000))).toEqual(['a-sync']);
    await store.cardsSynced(new Map([['a-sync', store.syncStamp()]]));
    expect(await store.unsyncedCards(new Date(Date.now() + 1_000))).toEqual([]);
  });

  it('defers a card its creator will not post: patched in one step, or onto a change made meanwhile', async () => {
    const lease = store.newPostLease(5_000);
    await store.createIfAbsent(sampleRecord('a-defer'), lease);
    const wholeWrites = vi.spyOn(store, 'update');
    const deferred = await store.deferPost(sampleRecord('a-defer'), lease);
    expect(wholeWrites).not.toHaveBeenCalled();
    wholeWrites.mockRestore();
    expect(deferred?.record).toMatchObject({ version: 2, slack: { channel: 'C1', deferred: true } });
    expect(JSON.parse((await redis.hget(keys.approval('a-defer'), 'd'))!)).toEqual(deferred?.record);
    expect(await redis.exists(keys.postLease('a-defer'))).toBe(0);

    const again = store.newPostLease(5_000);
    await store.createIfAbsent(sampleRecord('a-defer2'), again);
    await store.update('a-defer2', (r) => ({ ...r, reason: 'changed meanwhile' }));
    const onto = await store.deferPost(sampleRecord('a-defer2'), again);
    expect(onto?.record).toMatchObject({
      version: 3,
      reason: 'changed meanwhile',
      slack: { deferred: true },
    });
    expect(await redis.exists(keys.postLease('a-defer2'))).toBe(0);
  });

  it('a claim on a record of the same version written again (Redis lost it meanwhile) is refused', async () => {
    await store.createIfAbsent(sampleRecord('a-aba'));
    const checked = (await store.get('a-aba'))!;
    // Redis loses the record and the host asks again: same id, same version, another write.
    await redis.del(keys.approval('a-aba'));
    await store.createIfAbsent({ ...sampleRecord('a-aba'), updatedAt: '2026-12-01T00:00:00.001Z' });
    expect(await store.claimWith(checked, { ...checked, phase: 'deciding', claim })).toEqual({
      kind: 'stale',
    });
    expect(await redis.exists(keys.claim('a-aba', 0))).toBe(0);
  });

  it('remembers the card of a record it wrote, for that message only, until it is changed elsewhere', async () => {
    const record = sampleRecord('a-recent');
    const lease = store.newPostLease(60_000);
    await store.createIfAbsent(record, lease);
    await store.savePost(record, { channel: 'C1', ts: '1700000000.000001' }, lease);
    expect(store.recentCard('C1', '1700000000.000001', 'a-recent')).toMatchObject({ version: 2 });
    expect(store.recentCard('C1', '1700000000.000002', 'a-recent')).toBeUndefined();
    expect(store.recentCard('C2', '1700000000.000001', 'a-recent')).toBeUndefined();
    // Another process changes it: a claim on the remembered one is refused, and it is forgotten.
    const other = new ApprovalStore(redis, { resolvedTtlMs: 60_000 });
    await other.update('a-recent', (r) => ({ ...r, reason: 'changed elsewhere' }));
    const remembered = store.recentCard('C1', '1700000000.000001', 'a-recent')!;
    expect(await store.claimWith(remembered, { ...remembered, phase: 'deciding', claim })).toEqual({
      kind: 'stale',
    });
    expect(store.recentCard('C1', '1700000000.000001', 'a-recent')).toBeUndefined();
  });

  it('updates a record it wrote lately without reading it first', async () => {
    await store.createIfAbsent(sampleRecord('a-noread'));
    const hget = vi.spyOn(redis, 'hget');
    try {
      const result = await store.update('a-noread', (r) => ({ ...r, reason: 'changed here' }));
      expect(result).toMatchObject({ changed: true, record: { version: 2, reason: 'changed here' } });
      expect(hget).not.toHaveBeenCalled();
    } finally {
      hget.mockRestore();
    }
    expect(await store.get('a-noread')).toMatchObject({ version: 2, reason: 'changed here' });
  });

  it('an update from memory onto a record of the same version written again is made on what Redis holds', async () => {
    await store.createIfAbsent(sampleRecord('a-aba2'));
    // Redis loses the record and the host asks again: same id, same version, another write.
    await redis.del(keys.approval('a-aba2'));
    const other = new ApprovalStore(redis, { resolvedTtlMs: 60_000 });
    await other.createIfAbsent({
      ...sampleRecord('a-aba2'),
      reason: 'asked again',
      updatedAt: '2026-12-01T00:00:00.001Z',
    });
    const result = await store.update('a-aba2', (r) => ({ ...r, toolCallId: `${r.reason}, then changed` }));
    expect(result?.record).toMatchObject({ version: 2, toolCallId: 'asked again, then changed' });
    expect(await store.get('a-aba2')).toMatchObject({ version: 2, toolCallId: 'asked again, then changed' });
  });

  it('says "no change" only of what Redis holds, not of a record remembered', async () => {
    await store.createIfAbsent(sampleRecord('a-behind'));
    const other = new ApprovalStore(redis, { resolvedTtlMs: 60_000 });
    await other.update('a-behind', (r) => ({ ...r, reason: 'changed elsewhere' }));
    // The remembered record still has the old reason: this mutation would see nothing to do.
    const result = await store.update('a-behind', (r) =>
      r.reason === 'changed elsewhere' ? { ...r, reason: 'seen' } : undefined,
    );
    expect(result).toMatchObject({ changed: true, record: { version: 3, reason: 'seen' } });
  });

  it('a record a lost try took out of the open sets joins them again when the write that wins leaves it open', async () => {
    await store.createIfAbsent(sampleRecord('a-reopen'));
    const other = new ApprovalStore(redis, { resolvedTtlMs: 60_000 });
    await other.update('a-reopen', (r) => ({ ...r, reason: 'asked again' }));
    // On the record remembered the mutation resolves it; on the one Redis holds it does not.
    const result = await store.update('a-reopen', (r) =>
      r.reason === 'asked again'
        ? { ...r, toolCallId: 'seen again' }
        : {
            ...r,
            phase: 'resolved',
            resolution: { decision: 'approved', resolvedBy: 'policy', decidedAt: 'x' },
          },
    );
    expect(result?.record).toMatchObject({ phase: 'pending', toolCallId: 'seen again' });
    expect(await store.openApprovalIds('default')).toContain('a-reopen');
    expect(await store.openApprovalIds('default', 's-1')).toContain('a-reopen');
  });

  /**
   * A store whose resolving writes write the decision's audit entry (wireRecords does this), on
   * a client that lets a script reach two slots where Redis itself does (`slotCheck`: refuse it,
   * as a proxy in front of a cluster does).
   */
  function auditingStore({ slotCheck = false, audit = true } = {}) {
    const written = new HeldByWrite();
    const held = new HeldNoticeClaims('thread', 60_000);
    const refusals: string[] = [];
    const client = backend.connect({ slotCheck });
    clients.push(client);
    const trail = new RedisAuditTrail(client, {
      maxLen: 100,
      decisionMarkTtlMs: 60_000,
      logger: captureLogger().logger,
    });
    const auditing = new ApprovalStore(client, {
      resolvedTtlMs: 60_000,
      resolveNotice: held,
      resolutionAudit: audit
        ? {
            writeOf: (r) => trail.decisionWrite(decisionEntry(r, undefined)),
            written,
            refused: () => refusals.push('refused'),
          }
        : undefined,
    });
    const ledger = new RedisNoticeLedger(client, { ttlMs: 60_000, held });
    return { auditing, written, refusals, held, ledger, client };
  }

  /** Resolves a record as the host's resolution does: the click's user when the record holds its claim. */
  const resolve = (r: ApprovalRecord): ApprovalRecord | undefined =>
    isTerminal(r)
      ? undefined
      : {
          ...r,
          phase: 'resolved',
          claim: undefined,
          resolution: {
            decision: 'approved',
            resolvedBy: 'user',
            decidedAt: '2026-12-06T10:00:00.000Z',
            ...(r.claim ? { slackUserId: r.claim.userId, via: 'click' as const } : {}),
          },
        };

  async function decisionEntries() {
    return (await redis.xrange(keys.audit, '-', '+')).map(([, fields]) =>
      Object.fromEntries(fields.flatMap((f, i) => (i % 2 === 0 ? [[f, fields[i + 1]]] : []))),
    );
  }

  it('the write that resolves a record writes its decision entry, once (one Redis; a Cluster leaves it to the notices)', async () => {
    const { auditing, written } = auditingStore();
    await auditing.createIfAbsent(sampleRecord('a-audited'));
    await auditing.update('a-audited', resolve);
    // Seen resolved again (a late event, the card placed): no second entry.
    await auditing.update('a-audited', (r) => ({ ...r, reason: 'late' }));
    const trail = new RedisAuditTrail(redis, { maxLen: 100, logger: captureLogger().logger });
    const again = decisionEntry((await auditing.get('a-audited')) as ResolvedRecord, undefined);
    if (kind === 'cluster') {
      // The stream's slot is not the record's: no script reaches both.
      expect(written.take('a-audited')).toBe(false);
      expect(await decisionEntries()).toEqual([]);
      expect(await trail.appendDecision(again)).toBe(true);
    } else {
      expect(written.take('a-audited')).toBe(true);
      expect(written.take('a-audited')).toBe(false);
      expect(await decisionEntries()).toEqual([
        expect.objectContaining({
          kind: 'decision',
          approvalId: 'a-audited',
          via: 'otherClient',
          resolvedBy: 'user',
        }),
      ]);
      expect(await redis.get(keys.statsGeneration)).toBe('1');
      // Whoever looks again finds it written: the mark is the trail's own.
      expect(await trail.appendDecision(again)).toBe(false);
    }
    expect(await decisionEntries()).toHaveLength(1);
  });

  it.skipIf(kind === 'cluster')(
    'where Redis refuses a script over two slots, the write goes through without its entry, and never tries again',
    async () => {
      const { auditing, written, refusals } = auditingStore({ slotCheck: true });
      for (const id of ['a-proxied-1', 'a-proxied-2']) {
        await auditing.createIfAbsent(sampleRecord(id));
        expect(await auditing.update(id, resolve)).toMatchObject({
          changed: true,
          record: { phase: 'resolved' },
        });
        expect(written.take(id)).toBe(false);
      }
      expect(await decisionEntries()).toEqual([]);
      expect(refusals).toEqual(['refused']);
    },
  );

  it.each([
    ['with its audit entry', true],
    ['alone', false],
  ])('the write that resolves a placed card claims its thread line, %s, once', async (_, audit) => {
    const { auditing, ledger, client } = auditingStore({ audit });
    const lease = auditing.newPostLease(5_000);
    await auditing.createIfAbsent(sampleRecord('a-notice'), lease);
    await auditing.savePost(sampleRecord('a-notice'), { channel: 'C1', ts: '1.000001' }, lease);
    await auditing.createIfAbsent(sampleRecord('a-no-card'));
    const set = vi.spyOn(client, 'set');
    try {
      await auditing.update('a-notice', resolve);
      await auditing.update('a-no-card', resolve);
      expect(await redis.get(keys.notice('a-notice', 'thread'))).toBe('sending');
      // The process that resolved it holds the claim: no round trip, and only once.
      expect(await ledger.claim('a-notice', 'thread')).toBe(true);
      expect(set).not.toHaveBeenCalled();
      expect(await ledger.claim('a-notice', 'thread')).toBe(false);
      expect(await ledger.claim('a-notice', 'dm')).toBe(true);
      // Seen resolved again (a late event): nothing more is claimed.
      await auditing.update('a-notice', (r) => ({ ...r, reason: 'late' }));
      expect(await ledger.claim('a-notice', 'thread')).toBe(false);
      // No card, no thread: nothing claimed for it.
      expect(await redis.exists(keys.notice('a-no-card', 'thread'))).toBe(0);
    } finally {
      set.mockRestore();
    }
  });

  it('a write that loses its compare-and-set writes no entry and claims no notice', async () => {
    const { auditing, written, held } = auditingStore();
    await auditing.createIfAbsent(sampleRecord('a-lost-race', { slack: { channel: 'C1', ts: '1.000002' } }));
    const remembered = (await auditing.get('a-lost-race'))!;
    const other = new ApprovalStore(redis, { resolvedTtlMs: 60_000 });
    await other.update('a-lost-race', (r) => ({ ...r, phase: 'orphaned' }));
    // Its first try is on the remembered record, and loses; the retry sees it final already.
    const result = await auditing.update('a-lost-race', resolve, remembered);
    expect(result).toMatchObject({ changed: false, record: { phase: 'orphaned' } });
    expect(await decisionEntries()).toEqual([]);
    expect(await redis.exists(keys.decisionAudited('a-lost-race'))).toBe(0);
    expect(written.take('a-lost-race')).toBe(false);
    expect(held.take('a-lost-race', 'thread')).toBe(false);
  });

  it('the entry says what the write that won says, not what a lost try from memory would have', async () => {
    const { auditing } = auditingStore();
    await auditing.createIfAbsent(sampleRecord('a-behind'));
    const remembered = (await auditing.get('a-behind'))!;
    // Another replica's click claimed it since: the record in memory does not know.
    const other = new ApprovalStore(redis, { resolvedTtlMs: 60_000 });
    expect(await other.claimWith(remembered, { ...remembered, phase: 'deciding', claim })).toMatchObject({
      kind: 'claimed',
    });
    const result = await auditing.update('a-behind', resolve, remembered);
    expect(result?.record.resolution).toMatchObject({ slackUserId: 'U1', via: 'click' });
    if (kind === 'single') {
      expect(await decisionEntries()).toEqual([
        expect.objectContaining({ approvalId: 'a-behind', userId: 'U1', via: 'click' }),
      ]);
    } else expect(await decisionEntries()).toEqual([]);
  });

  it('forgets the card of a record whose update found it gone', async () => {
    const record = sampleRecord('a-lost');
    const lease = store.newPostLease(60_000);
    await store.createIfAbsent(record, lease);
    const saved = (await store.savePost(record, { channel: 'C1', ts: '1700000000.000003' }, lease))!;
    expect(store.recentCard('C1', '1700000000.000003', 'a-lost')).toBeDefined();
    // Redis lost it (a flush, a failover): the compare-and-set finds nothing to change.
    await redis.del(keys.approval('a-lost'));
    expect(await store.update('a-lost', (r) => ({ ...r, reason: 'too late' }), saved.record)).toBeUndefined();
    // A click on its card is then read from Redis, not checked against the lost record.
    expect(store.recentCard('C1', '1700000000.000003', 'a-lost')).toBeUndefined();
  });

  it('claims a stage and moves the record to deciding in one step, once', async () => {
    await store.createIfAbsent(sampleRecord('a-10'));
    const checked = (await store.get('a-10'))!;
    const first = await store.claimWith(checked, { ...checked, phase: 'deciding', claim });
    expect(first).toMatchObject({ kind: 'claimed', record: { version: 2, phase: 'deciding', claim } });
    expect(await store.get('a-10')).toMatchObject({ version: 2, phase: 'deciding' });
    const second = await store.claimWith(checked, {
      ...checked,
      phase: 'deciding',
      claim: { ...claim, userId: 'U2', commandId: 'cmd-2' },
    });
    expect(second).toEqual({ kind: 'held', holder: claim });
    // A different stage of the same approval is a different question.
    const moved = (await store.get('a-10'))!;
    const stage1 = { ...claim, sourceIndex: 1, commandId: 'cmd-3' };
    expect(await store.claimWith(moved, { ...moved, claim: stage1 })).toMatchObject({ kind: 'claimed' });
  });

  it('refuses a claim checked against an old version, and leaves the stage free', async () => {
    await store.createIfAbsent(sampleRecord('a-11'));
    const checked = (await store.get('a-11'))!;
    await store.update('a-11', (r) => ({ ...r, reason: 'moved on' }));
    expect(await store.claimWith(checked, { ...checked, phase: 'deciding', claim })).toEqual({
      kind: 'stale',
    });
    expect(await redis.exists(keys.claim('a-11', 0))).toBe(0);
    expect(
      await store.claimWith(sampleRecord('a-none'), { ...checked, approvalId: 'a-none', claim }),
    ).toEqual({
      kind: 'gone',
    });
  });

  it('frees the claim key of a claim the record drops, not of one it keeps', async () => {
    await store.createIfAbsent(sampleRecord('a-12'));
    const checked = (await store.get('a-12'))!;
    await store.claimWith(checked, { ...checked, phase: 'deciding', claim });
    await store.update('a-12', (r) => ({ ...r, reason: 'still deciding' }));
    expect(await redis.exists(keys.claim('a-12', 0))).toBe(1);
    await store.update('a-12', (r) => ({ ...r, phase: 'pending', claim: undefined }));
    expect(await redis.exists(keys.claim('a-12', 0))).toBe(0);
  });

  it("keeps the full text of a cut request in the record's hash: read with it, replaced, gone with it", async () => {
    const record = sampleRecord('a-full');
    const full = (text: string) => JSON.stringify({ parts: [{ label: 'Command', text }], omitted: 7 });
    expect(await store.createIfAbsent(record, undefined, { xs: full('first') })).toBe(true);
    await store.savePost(record, { channel: 'C1', ts: '1.000001' }, store.newPostLease(1000));

    const read = await store.getWithFullText('C1', '1.000001', 'a-full');
    expect(read?.record.approvalId).toBe('a-full');
    expect(read?.full).toEqual({ subject: { parts: [{ label: 'Command', text: 'first' }], omitted: 7 } });
    // The button's hint is only a hint: the message mapping decides.
    expect((await store.getWithFullText('C1', '1.000001', 'other'))?.record.approvalId).toBe('a-full');
    expect(await store.getWithFullText('C1', '9.000009', 'a-full')).toBeUndefined();

    expect(await store.saveFullText('a-full', { xs: full('second') })).toBe(true);
    expect((await store.getWithFullText('C1', '1.000001', undefined))?.full.subject?.parts[0]?.text).toBe(
      'second',
    );

    // Final: the one key, full text and all, starts to expire.
    await store.update('a-full', (r) => ({ ...r, phase: 'resolved' }));
    expect(await redis.pttl(keys.approval('a-full'))).toBeGreaterThan(0);
    expect(await redis.hexists(keys.approval('a-full'), 'xs')).toBe(1);

    // A record that is gone gets no stray hash.
    expect(await store.saveFullText('a-gone', { xs: full('late') })).toBe(false);
    expect(await redis.exists(keys.approval('a-gone'))).toBe(0);
  });
});

describe('ApprovalStore scripts', () => {
  it('read a fenced record once and write it once: create, place, claim and resolve', async () => {
    // A server of the test's own: INFO commandstats counts every client's commands, scripts'
    // inner calls included.
    const server = await PrivateRedis.start();
    const own = createRedisClient({ kind: 'single', url: server.url }, { maxRetriesPerRequest: 1 });
    try {
      const store = new ApprovalStore(own, { resolvedTtlMs: 60_000, fenceOf: () => 7 });
      const record = sampleRecord('a-calls', { slack: { channel: 'C1' } });
      const lease = store.newPostLease(5_000);
      await own.ping();
      await own.config('RESETSTAT');
      expect(await store.createIfAbsent(record, lease, { xs: '{}' })).toBe(true);
      const placed = await store.savePost(record, { channel: 'C1', ts: '1.000001' }, lease);
      const claiming = { ...placed!.record, phase: 'deciding' as const, claim };
      expect(await store.claimWith(placed!.record, claiming)).toMatchObject({ kind: 'claimed' });
      await store.update('a-calls', (r) => ({ ...r, phase: 'resolved', claim: undefined }));
      const stats = await own.info('commandstats');
      const calls = (name: string) =>
        Number(new RegExp(`^cmdstat_${name}:calls=(\\d+)`, 'm').exec(stats)?.[1] ?? 0);
      // One HSET for each of the four writes, fence and full text included; one HMGET for each
      // of the three that check the version, the fence and the tail together; the create asks
      // whether the record exists with one HGET of its JSON (of which host it is, when it does).
      expect(calls('hset')).toBe(4);
      expect(calls('hmget')).toBe(3);
      expect(calls('hget')).toBe(1);
      expect(calls('exists')).toBe(0);
      expect(await own.hmget(keys.approval('a-calls'), 'v', 'f', 'xs')).toEqual(['4', '7', '{}']);
    } finally {
      own.disconnect();
      await server.stop();
    }
  });
});
