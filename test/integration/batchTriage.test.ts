// Batch triage against a real Redis, with the summary board and the records in memory: what one
// turn's joins cost, where a leave goes, and what a draw drops (docs/performance.md, "Batch triage").

import pino from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { SummaryView } from '../../src/domain/batchGroup.js';
import { batchGroupOf } from '../../src/domain/batchGroup.js';
import type { ApprovalRecord } from '../../src/domain/record.js';
import { BatchTriage, type SummaryBoard } from '../../src/relay/batching/batchTriage.js';
import { BatchGroups, MAX_MEMBERS_PER_CALL } from '../../src/store/batchGroups.js';
import { keys } from '../../src/store/keys.js';
import type { RedisClient } from '../../src/store/redisConnection.js';
import { freshRedisDb } from '../support/bot.js';
import { fileRecord } from '../support/cardFixtures.js';
import { BACKENDS, openBackend, type StoreBackend } from '../support/storeBackends.js';
import { testRedisUrl } from '../support/testRedis.js';

/** The backend's client (slot-checked: a script that strays from one channel's tag is refused). */
let redis: RedisClient;

class MemoryBoard implements SummaryBoard {
  readonly posts: SummaryView[] = [];
  readonly updates: SummaryView[] = [];
  async post(_channel: string, view: SummaryView): Promise<string> {
    this.posts.push(view);
    return `9.${this.posts.length}`;
  }
  async update(_channel: string, _ts: string, view: SummaryView): Promise<void> {
    this.updates.push(view);
  }
}

const triages: BatchTriage[] = [];
afterEach(() => {
  for (const t of triages.splice(0)) t.stop();
});

/** A triage over `records` (what Redis would hold of each approval), drawing at once. */
function triageOver(
  records: Map<string, ApprovalRecord>,
  joinDelayMs?: number,
  redraw: { settleMs: number; intervalMs: number } | 'default' = { settleMs: 0, intervalMs: 0 },
) {
  const board = new MemoryBoard();
  const groups = new BatchGroups(redis);
  /** Each join call: its channel and how many joined each of its groups. */
  const joins: Array<{ channel: string; sizes: number[] }> = [];
  const join = groups.join.bind(groups);
  groups.join = (channel, some) => {
    joins.push({ channel, sizes: some.map((g) => g.members.length) });
    return join(channel, some);
  };
  const triage = new BatchTriage({
    groups,
    board,
    records: async (ids) => ids.map((id) => records.get(id)),
    quorum: () => 1,
    logger: pino({ level: 'silent' }),
    ...(redraw === 'default' ? {} : { redraw }),
    ...(joinDelayMs === undefined ? {} : { joinDelayMs }),
  });
  triages.push(triage);
  return { triage, board, joins };
}

function alike(n: number, from = 0): ApprovalRecord[] {
  return Array.from({ length: n }, (_, i) =>
    fileRecord({
      approvalId: `batch-${from + i}`,
      slack: { channel: 'C0APPROVALS', ts: `100.${from + i + 1}` },
    }),
  );
}

/** What the keeper tells the triage as a card is posted: the record before, and where its card is. */
function place(triage: BatchTriage, record: ApprovalRecord): void {
  const { channel, ts } = record.slack;
  triage.placing({ ...record, slack: { channel } }, { channel, ts: ts! });
}

async function until(what: string, check: () => boolean | Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe.each(BACKENDS)('BatchTriage on %s Redis', (kind) => {
  let backend: StoreBackend;
  beforeAll(async () => {
    backend = await openBackend(kind, async () => ({ url: testRedisUrl(await freshRedisDb()) }));
    redis = backend.connect();
  });
  beforeEach(() => backend.flush());
  afterAll(() => backend.close());

  it('a moment’s joins are one script per channel, whatever the groups; one summary is posted for the alike', async () => {
    const records = new Map(alike(6).map((r) => [r.approvalId, r]));
    // Asked once each: groups of one, which never get a summary.
    const lone = [1, 2, 3].map((i) =>
      fileRecord({
        approvalId: `lone-${i}`,
        subject: { kind: 'fileAccess', path: `/srv/lone-${i}`, access: 'write' },
        slack: { channel: 'C0APPROVALS', ts: `200.${i}` },
      }),
    );
    for (const record of lone) records.set(record.approvalId, record);
    const { triage, board, joins } = triageOver(records);
    for (const record of records.values()) place(triage, record);
    await until('the summary', () => board.posts.length === 1);
    expect(joins).toEqual([{ channel: 'C0APPROVALS', sizes: [6, 1, 1, 1] }]);
    expect(board.posts[0]!.total).toBe(6);
    expect(board.posts[0]!.members.map((m) => m.approvalId)).toEqual([...records.keys()].slice(0, 6));
    const loneGroup = batchGroupOf(lone[0]!, 1)!.groupId;
    expect(await redis.zrange(keys.batchOrder(loneGroup), 0, -1)).toEqual(['lone-1']);
    expect(await redis.exists(keys.batchSummary(loneGroup))).toBe(0);
    // Told again after the write (follow), nothing more is sent.
    for (const record of records.values()) triage.follow(record);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(joins).toHaveLength(1);
  });

  it('a moment with more joins than a call carries is split across calls, and none is lost', async () => {
    const many = alike(MAX_MEMBERS_PER_CALL + 150);
    const lone = fileRecord({
      approvalId: 'lone-1',
      subject: { kind: 'fileAccess', path: '/srv/lone-1', access: 'write' },
      slack: { channel: 'C0APPROVALS', ts: '300.1' },
    });
    const records = new Map([...many, lone].map((r) => [r.approvalId, r]));
    const { triage, board, joins } = triageOver(records);
    for (const record of records.values()) place(triage, record);
    await until('the summary', () => board.posts.length === 1);
    // The alike group fills the first call and starts the second, which the lone one joins.
    expect(joins).toEqual([
      { channel: 'C0APPROVALS', sizes: [MAX_MEMBERS_PER_CALL] },
      { channel: 'C0APPROVALS', sizes: [150, 1] },
    ]);
    const group = batchGroupOf(many[0]!, 1)!.groupId;
    expect(await redis.zcard(keys.batchOrder(group))).toBe(MAX_MEMBERS_PER_CALL + 150);
    expect(await redis.zcard(keys.batchOrder(batchGroupOf(lone, 1)!.groupId))).toBe(1);
  });

  it('a member a risk rule marks later leaves, though its question is the same object', async () => {
    const records = new Map(alike(3).map((r) => [r.approvalId, r]));
    const { triage, board } = triageOver(records);
    for (const record of records.values()) place(triage, record);
    await until('the summary', () => board.posts.length === 1);
    // As recordMutations.riskMarked writes it: a copy with the same subject and choices.
    const marked = {
      ...records.get('batch-2')!,
      risks: [{ name: 'deploy', warning: 'Pushes to production' }],
    };
    records.set('batch-2', marked);
    triage.follow(marked);
    await until('the redraw', () => board.updates.some((v) => v.total === 2));
    expect(board.updates.at(-1)!.members.map((m) => m.approvalId)).toEqual(['batch-0', 'batch-1']);
  });

  it('a summary growing through a burst is redrawn at most once in 3 s: chat.update is Tier 3', async () => {
    const records = new Map(alike(2).map((r) => [r.approvalId, r]));
    const { triage, board } = triageOver(records, undefined, 'default');
    for (const record of records.values()) place(triage, record);
    await until('the summary', () => board.posts.length === 1);
    const posted = Date.now();
    // A card every 250 ms for 2.5 s.
    for (const record of alike(10, 2)) {
      records.set(record.approvalId, record);
      place(triage, record);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, posted + 2_800 - Date.now())));
    expect(board.updates.length).toBeLessThanOrEqual(1);
    // The last of them is shown all the same.
    await until('the whole group', () => board.updates.at(-1)?.total === 12);
  });

  it('a card decided before its join is sent never joins', async () => {
    const records = new Map(alike(3).map((r) => [r.approvalId, r]));
    const { triage, board, joins } = triageOver(records, 100);
    for (const record of records.values()) place(triage, record);
    const decided = { ...records.get('batch-1')!, phase: 'resolved' as const };
    records.set('batch-1', decided);
    triage.follow(decided);
    await until('the summary', () => board.posts.length === 1);
    expect(joins).toEqual([{ channel: 'C0APPROVALS', sizes: [2] }]);
    expect(board.posts[0]!.members.map((m) => m.approvalId)).toEqual(['batch-0', 'batch-2']);
  });

  it('a decision writes nothing at once; its leave goes with the next draw, and the last one closes the summary', async () => {
    const records = new Map(alike(3).map((r) => [r.approvalId, r]));
    const { triage, board } = triageOver(records);
    for (const record of records.values()) place(triage, record);
    await until('the summary', () => board.posts.length === 1);
    const group = batchGroupOf(records.get('batch-0')!, 1)!.groupId;
    await until('its place', async () => (await redis.hget(keys.batchSummary(group), 'ts')) === '9.1');

    for (const record of records.values()) {
      const resolved = { ...record, phase: 'resolved' as const };
      records.set(record.approvalId, resolved);
      triage.follow(resolved);
    }
    await until('the closed summary', () => board.updates.at(-1)?.closed === true);
    expect(await redis.zcard(keys.batchOrder(group))).toBe(0);
  });

  it('a draw drops a member whose record no longer asks what the group asks, though nobody here followed it', async () => {
    const records = new Map(alike(3).map((r) => [r.approvalId, r]));
    const { triage, board } = triageOver(records);
    for (const record of records.values()) place(triage, record);
    await until('the summary', () => board.posts.length === 1);
    // Another replica resolved it: this one was never told.
    records.set('batch-1', { ...records.get('batch-1')!, phase: 'resolved' });
    // A new member makes the summary draw again.
    const [late] = alike(1, 3);
    records.set(late!.approvalId, late!);
    place(triage, late!);
    await until('the redraw', () => board.updates.some((v) => v.total === 3));
    const last = board.updates.at(-1)!;
    expect(last.members.map((m) => m.approvalId)).toEqual(['batch-0', 'batch-2', 'batch-3']);
    const group = batchGroupOf(records.get('batch-0')!, 1)!.groupId;
    expect(await redis.zrange(keys.batchOrder(group), 0, -1)).toEqual(['batch-0', 'batch-2', 'batch-3']);
  });

  it('a member whose record does not say where its card is yet stays: a burst’s summary is not closed under it', async () => {
    const placed = alike(3);
    // What a draw reads while the writes that place the cards are still on their way.
    const records = new Map(placed.map((r) => [r.approvalId, { ...r, slack: { channel: r.slack.channel } }]));
    const { triage, board } = triageOver(records);
    for (const record of placed) place(triage, record);
    await until('the summary', () => board.posts.length === 1);
    expect(board.posts[0]!.total).toBe(3);
    expect(board.posts[0]!.closed).toBeUndefined();
    const group = batchGroupOf(placed[0]!, 1)!.groupId;
    expect(await redis.zcard(keys.batchOrder(group))).toBe(3);
  });

  it('cards whose question changes as soon as they are posted post no summary, and leave the claim free', async () => {
    const placed = alike(3);
    const records = new Map(placed.map((r) => [r.approvalId, r]));
    const { triage, board, joins } = triageOver(records);
    for (const record of placed) place(triage, record);
    const group = batchGroupOf(placed[0]!, 1)!.groupId;
    // Their joins are sent, and this process holds the claim to post the summary.
    await until('the joins', () => joins.length === 1);
    expect(await redis.hget(keys.batchSummary(group), 'state')).toBe('posting');
    // The host changes two right after: each asks something of its own now.
    for (const record of placed.slice(1)) {
      const path = `/etc/${record.approvalId}`;
      const changed = { ...record, subject: { kind: 'fileAccess' as const, path, access: 'write' as const } };
      records.set(record.approvalId, changed);
      triage.follow(changed);
    }
    await until('the two leaves', async () => (await redis.zcard(keys.batchOrder(group))) === 1);
    // The claim the second join took is given up once the summary would have been posted.
    await until('the claim given up', async () => (await redis.exists(keys.batchSummary(group))) === 0);
    expect(board.posts).toEqual([]);
    // Two that do ask alike later get their summary.
    const again = alike(1, 5);
    for (const record of again) records.set(record.approvalId, record);
    for (const record of again) place(triage, record);
    await until('the summary', () => board.posts.length === 1);
    expect(board.posts[0]!.members.map((m) => m.approvalId)).toEqual(['batch-0', 'batch-5']);
  });

  it('a summary whose post waits longer than its claim lasts is posted once: the claim is kept alive meanwhile', async () => {
    const cards = alike(12);
    const records = new Map(cards.map((r) => [r.approvalId, r]));
    // A post that waits 1.5 s behind the channel's cards, against a claim that lasts 0.5 s.
    const board = new MemoryBoard();
    const post = board.post.bind(board);
    board.post = async (channel, view) => {
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      return post(channel, view);
    };
    const triage = new BatchTriage({
      groups: new BatchGroups(redis, { ttlMs: 60_000, postingTtlMs: 500, closedTtlMs: 60_000 }),
      board,
      records: async (ids) => ids.map((id) => records.get(id)),
      quorum: () => 1,
      logger: pino({ level: 'silent' }),
      redraw: { settleMs: 0, intervalMs: 0 },
      postSettleMs: 0,
      joinDelayMs: 10,
    });
    triages.push(triage);
    // A card every 200 ms, through the post's wait and past it.
    for (const record of cards) {
      place(triage, record);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    await until('the summary', () => board.posts.length >= 1);
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect(board.posts).toHaveLength(1);
    const group = batchGroupOf(cards[0]!, 1)!.groupId;
    expect(await redis.hget(keys.batchSummary(group), 'state')).toBe('posted');
  });

  it('a summary whose members moved on where no process knew their group is redrawn by the sweep, and closed', async () => {
    const cards = alike(3);
    const records = new Map(cards.map((r) => [r.approvalId, r]));
    // The first process reads the questions as they were when it stopped: a draw it still had in
    // flight must not see the next process's changes, which would drop the members itself and
    // leave the sweep nothing to do (it failed so in CI, one run in many).
    const first = triageOver(new Map(records));
    for (const record of cards) place(first.triage, record);
    const group = batchGroupOf(cards[0]!, 1)!.groupId;
    // Listed as open once its post is recorded, a moment after Slack's answer.
    await until(
      'the summary listed as open',
      async () => (await redis.sismember(keys.batchOpen(), group)) === 1,
    );
    expect(first.board.posts).toHaveLength(1);
    expect(await redis.smembers(keys.batchOpen())).toEqual([group]);
    first.triage.stop();

    // The next process placed none of them: each is asked again about a file of its own.
    const next = triageOver(records);
    for (const record of cards) {
      const path = `/etc/${record.approvalId}`;
      const changed = { ...record, subject: { kind: 'fileAccess' as const, path, access: 'write' as const } };
      records.set(record.approvalId, changed);
      next.triage.follow(changed);
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    // It could not know their old group: the summary still lists all three.
    expect(await redis.zcard(keys.batchOrder(group))).toBe(3);
    expect(next.board.updates).toEqual([]);

    await next.triage.sweep();
    await until('the summary drawn closed', () => next.board.updates.some((v) => v.closed === true));
    expect(await redis.zcard(keys.batchOrder(group))).toBe(0);
    // Forgotten once drawn closed, a moment after Slack's answer.
    await until('the summary forgotten', async () => (await redis.scard(keys.batchOpen())) === 0);
    // An open summary that lost nobody costs Slack nothing when swept.
    const others = alike(2, 10);
    for (const record of others) records.set(record.approvalId, record);
    for (const record of others) place(next.triage, record);
    await until('the second summary listed as open', async () => (await redis.scard(keys.batchOpen())) === 1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    const updates = next.board.updates.length;
    await next.triage.sweep();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(next.board.updates).toHaveLength(updates);
  });

  it('one process a period sweeps the open summaries, however many replicas tick', async () => {
    const sweepMs = 400;
    const replicas = [0, 1, 2].map(() => {
      const groups = new BatchGroups(redis);
      let swept = 0;
      const open = groups.openSummaries.bind(groups);
      groups.openSummaries = (max) => {
        swept++;
        return open(max);
      };
      const triage = new BatchTriage({
        groups,
        board: new MemoryBoard(),
        records: async () => [],
        quorum: () => 1,
        logger: pino({ level: 'silent' }),
        sweepMs,
      });
      triages.push(triage);
      return { triage, swept: () => swept };
    });
    const tick = () => Promise.all(replicas.map((r) => r.triage.sweepTurn()));
    // Ticking at once: exactly one sweeps.
    expect((await tick()).filter(Boolean)).toHaveLength(1);
    expect(replicas.map((r) => r.swept()).reduce((a, b) => a + b)).toBe(1);
    // Again within the period: none does.
    expect((await tick()).filter(Boolean)).toHaveLength(0);
    // The period's hold (90 % of it) is taken again once it has run out.
    await new Promise((resolve) => setTimeout(resolve, sweepMs));
    expect((await tick()).filter(Boolean)).toHaveLength(1);
    expect(replicas.map((r) => r.swept()).reduce((a, b) => a + b)).toBe(2);
  });
});
