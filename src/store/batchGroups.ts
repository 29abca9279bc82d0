import type { Result } from 'ioredis';
import type { BatchShared } from '../domain/batchGroup.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

// Batch triage groups in Redis, shared by every replica (docs/slack.md#batch-triage). A group is a
// sorted set of approvalIds, scored by their card's ts (a summary lists the oldest first), and its
// summary card's hash; both share one hash tag (the channel), so each step is one script. What a
// member shows (its session, its card, its stage) is read from its record when the summary is
// drawn, so a join writes one member and nothing else (docs/performance.md, "Batch triage").

// KEYS: the channel's batch prefix (keys.batchChannel), which the script builds its groups' keys
// from (`<prefix>:<digest>:o` and `:s`, as keys.ts does): every key of a channel shares its slot.
// ARGV: ttl ms, posting ttl ms, then for each group its digest, shared JSON, how many join (n),
// and n pairs of (the card's ts, approvalId). Every join of a channel for a moment is one call
// (docs/performance.md, "Batch triage"). Of two replicas that see a group reach two members,
// exactly one is told to post the summary ('post'); with a summary, its rev is bumped so a draw
// that raced the join is drawn again ('refresh'). Returns (digest, result) pairs for those only.
const JOIN_SCRIPT = `
local out = {}
local at = 3
while at <= #ARGV do
  local digest, shared, n = ARGV[at], ARGV[at + 1], tonumber(ARGV[at + 2])
  local first, last = at + 3, at + 2 + 2 * n
  at = last + 1
  local order = KEYS[1] .. ':' .. digest .. ':o'
  local summary = KEYS[1] .. ':' .. digest .. ':s'
  local added = redis.call('ZADD', order, unpack(ARGV, first, last))
  if added > 0 then
    local state = redis.call('HGET', summary, 'state')
    if state == 'posting' or state == 'posted' then
      redis.call('HINCRBY', summary, 'rev', 1)
      out[#out + 1] = digest
      out[#out + 1] = 'refresh'
    else
      local size = redis.call('ZCARD', order)
      -- A new group lives a day without being drawn; every draw renews it (DRAW_SCRIPT).
      if size == added then redis.call('PEXPIRE', order, ARGV[1]) end
      if size >= 2 then
        redis.call('DEL', summary)
        redis.call('HSET', summary, 'state', 'posting', 'rev', 1, 'shared', shared)
        redis.call('PEXPIRE', summary, ARGV[2])
        redis.call('PEXPIRE', order, ARGV[1])
        out[#out + 1] = digest
        out[#out + 1] = 'post'
      end
    end
  end
end
return out
`;

// KEYS: order, summary. ARGV: how many to list, ttl ms, closed ttl ms, then the approvalIds that
// left. Members leave here, when the summary is drawn, not one write per decision: a group's
// leaves since its last draw are one call. A group left empty closes its summary (kept a while,
// so the note of the batch decision that emptied it still lands on it; the next join posts anew).
// Returns the summary, the first members (oldest card first) and how many there are.
const DRAW_SCRIPT = `
if #ARGV > 3 then
  if redis.call('ZREM', KEYS[1], unpack(ARGV, 4)) > 0 then
    local state = redis.call('HGET', KEYS[2], 'state')
    if (state == 'posting' or state == 'posted') and redis.call('ZCARD', KEYS[1]) == 0 then
      redis.call('HSET', KEYS[2], 'state', 'closed')
      redis.call('PEXPIRE', KEYS[2], ARGV[3])
    end
    if state then redis.call('HINCRBY', KEYS[2], 'rev', 1) end
  end
end
local ids = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
if #ids > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  if redis.call('HGET', KEYS[2], 'state') == 'posted' then redis.call('PEXPIRE', KEYS[2], ARGV[2]) end
end
return {redis.call('HGETALL', KEYS[2]), ids, redis.call('ZCARD', KEYS[1])}
`;

// KEYS: summary. ARGV: ts, ttl ms. The group may have emptied while the summary was posted: then
// it is closed already, and its poster, the only one who knows where it is, draws it closed.
const POSTED_SCRIPT = `
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'posting' and state ~= 'closed' then return 0 end
redis.call('HSET', KEYS[1], 'ts', ARGV[1])
if state == 'posting' then
  redis.call('HSET', KEYS[1], 'state', 'posted')
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
`;

// KEYS: summary. ARGV: posting ttl ms. Keeps a claim to post alive while its post waits its turn
// (behind the channel's cards, at Slack's pace of about one a second): a claim that ran out would
// let the next join claim and post a second summary.
const RENEW_SCRIPT = `
if redis.call('HGET', KEYS[1], 'state') ~= 'posting' then return 0 end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
`;

// KEYS: summary. A claim to post given up (too few members still ask alike): the next join that
// finds two members claims it again.
const UNCLAIM_SCRIPT = `
if redis.call('HGET', KEYS[1], 'state') == 'posting' then redis.call('DEL', KEYS[1]) end
return 0
`;

// KEYS: summary. ARGV: note JSON.
const NOTE_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'note', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'rev', 1)
return 1
`;

/**
 * What joins did to a group: `post`, it reached two members and this caller is to post its
 * summary; `refresh`, its summary is to be drawn again. Anything else needs nothing.
 */
export type JoinResult = 'post' | 'refresh';

/** A member as it joins: its approval and its card's ts (its place in the summary's list). */
export interface Joining {
  approvalId: string;
  ts: string;
}

/** One group's joins: its id (`<channel>:<digest>`), what it shares, who joins. */
export interface GroupJoins {
  groupId: string;
  shared: BatchShared;
  members: readonly Joining[];
}

/** A group as it stands: its summary's state and its members, oldest card first. */
export interface GroupState {
  state?: 'posting' | 'posted' | 'closed';
  ts?: string;
  rev: number;
  shared?: BatchShared;
  note?: string;
  /** The first members' approvalIds, oldest card first. */
  memberIds: string[];
  /** How many members the group has. */
  total: number;
}

/**
 * Members a call carries at most, over all its groups: Lua's unpack() is bounded by its stack
 * (about 8,000 values), and one script should not hold Redis for long.
 */
export const MAX_MEMBERS_PER_CALL = 1_000;

const STATES: ReadonlySet<string> = new Set(['posting', 'posted', 'closed']);

/** A group id is `<channel>:<digest>` (domain/batchGroup.ts). */
export function channelOfGroup(groupId: string): string {
  return groupId.slice(0, groupId.lastIndexOf(':'));
}

function digestOfGroup(groupId: string): string {
  return groupId.slice(groupId.lastIndexOf(':') + 1);
}

export interface BatchGroupsOptions {
  /** How long a group lives without a join or a draw: pending approvals rarely wait longer. */
  ttlMs: number;
  /** How long a claim to post a summary holds if its poster dies before saying where it posted. */
  postingTtlMs: number;
  /** How long a closed summary is kept, for the note of the decision that closed it. */
  closedTtlMs: number;
}

export class BatchGroups {
  constructor(
    private readonly redis: RedisClient,
    private readonly options: BatchGroupsOptions = {
      ttlMs: 24 * 3_600_000,
      postingTtlMs: 30_000,
      closedTtlMs: 10 * 60_000,
    },
  ) {
    // One key, fixed: ioredis routes a script on a Cluster by its first argument.
    redis.defineCommand('csBatchJoin', { numberOfKeys: 1, lua: JOIN_SCRIPT });
    redis.defineCommand('csBatchDraw', { numberOfKeys: 2, lua: DRAW_SCRIPT });
    redis.defineCommand('csBatchPosted', { numberOfKeys: 1, lua: POSTED_SCRIPT });
    redis.defineCommand('csBatchNote', { numberOfKeys: 1, lua: NOTE_SCRIPT });
    redis.defineCommand('csBatchUnclaim', { numberOfKeys: 1, lua: UNCLAIM_SCRIPT });
    redis.defineCommand('csBatchRenew', { numberOfKeys: 1, lua: RENEW_SCRIPT });
  }

  /** How often a poster renews its claim while its post waits: three times within its TTL. */
  get renewEveryMs(): number {
    return Math.max(1, Math.floor(this.options.postingTtlMs / 3));
  }

  /** Keeps this caller's claim to post alive (false: it is posted, closed or gone). */
  async renew(groupId: string): Promise<boolean> {
    return (
      (await this.redis.csBatchRenew(keys.batchSummary(groupId), String(this.options.postingTtlMs))) === 1
    );
  }

  /**
   * Adds members to groups of one channel (at most MAX_MEMBERS_PER_CALL in all: the caller splits
   * more) in one script. Says which groups need something (JoinResult); the rest need nothing.
   */
  async join(channel: string, groups: readonly GroupJoins[]): Promise<Map<string, JoinResult>> {
    const args = [String(this.options.ttlMs), String(this.options.postingTtlMs)];
    for (const { groupId, shared, members } of groups) {
      args.push(digestOfGroup(groupId), JSON.stringify(shared), String(members.length));
      for (const member of members) args.push(member.ts, member.approvalId);
    }
    const flat = (await this.redis.csBatchJoin(keys.batchChannel(channel), ...args)) as string[];
    const results = new Map<string, JoinResult>();
    for (let i = 0; i + 1 < flat.length; i += 2)
      results.set(`${channel}:${flat[i]}`, flat[i + 1] as JoinResult);
    return results;
  }

  /**
   * Removes the members that left (at most MAX_MEMBERS_PER_CALL), then reads the summary and its
   * first `listed` members, oldest card first: bounded, however big the group.
   */
  async draw(groupId: string, listed: number, leaving: readonly string[] = []): Promise<GroupState> {
    const [flat, ids, total] = (await this.redis.csBatchDraw(
      keys.batchOrder(groupId),
      keys.batchSummary(groupId),
      String(listed),
      String(this.options.ttlMs),
      String(this.options.closedTtlMs),
      ...leaving,
    )) as [string[], string[], number];
    const summary: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) summary[flat[i]!] = flat[i + 1]!;
    return {
      ...(STATES.has(summary.state ?? '') ? { state: summary.state as GroupState['state'] } : {}),
      ...(summary.ts ? { ts: summary.ts } : {}),
      rev: Number(summary.rev ?? 0),
      ...(summary.shared ? { shared: JSON.parse(summary.shared) as BatchShared } : {}),
      ...(summary.note ? { note: summary.note } : {}),
      memberIds: ids,
      total,
    };
  }

  /**
   * Says where the summary was posted (false: its claim ran out); it may be closed already. A
   * posted summary is listed among the open ones (openSummaries), for the sweep to find.
   */
  async posted(groupId: string, ts: string): Promise<boolean> {
    const kept =
      (await this.redis.csBatchPosted(keys.batchSummary(groupId), ts, String(this.options.ttlMs))) === 1;
    // Another slot than the channel's: a command of its own. Lost, it costs only the sweep's help.
    if (kept) await this.redis.sadd(keys.batchOpen(), groupId);
    return kept;
  }

  /** Summaries listed as posted and not closed (at most `max`): the sweep's work. */
  async openSummaries(max: number): Promise<string[]> {
    return this.redis.srandmember(keys.batchOpen(), max);
  }

  /**
   * Takes this period's sweep (true) unless another process took it less than `forMs` ago: one
   * sweep a period whatever the number of replicas, each of which would draw the same summaries.
   */
  async takeSweep(forMs: number): Promise<boolean> {
    return (await this.redis.set(keys.batchSweep(), '1', 'PX', forMs, 'NX')) === 'OK';
  }

  /** The summary is closed or gone: the sweep has nothing more to do for it. */
  async forget(groupId: string): Promise<void> {
    await this.redis.srem(keys.batchOpen(), groupId);
  }

  /** Gives up a claim to post the summary, unless it was posted or closed meanwhile. */
  async unclaim(groupId: string): Promise<void> {
    await this.redis.csBatchUnclaim(keys.batchSummary(groupId));
  }

  /** The summary's rev: it moves with every change a draw would show. */
  async rev(groupId: string): Promise<number> {
    return Number((await this.redis.hget(keys.batchSummary(groupId), 'rev')) ?? 0);
  }

  /** Keeps what the last batch decision did, for the summary to show. */
  async note(groupId: string, note: string): Promise<void> {
    await this.redis.csBatchNote(keys.batchSummary(groupId), note);
  }
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    /** ARGV as JOIN_SCRIPT documents. */
    csBatchJoin(channel: string, ...args: string[]): Result<string[], Context>;
    /** ARGV as DRAW_SCRIPT documents. */
    csBatchDraw(order: string, summary: string, ...args: string[]): Result<unknown[], Context>;
    csBatchPosted(summary: string, ts: string, ttlMs: string): Result<number, Context>;
    csBatchNote(summary: string, note: string): Result<number, Context>;
    csBatchUnclaim(summary: string): Result<number, Context>;
    csBatchRenew(summary: string, ttlMs: string): Result<number, Context>;
  }
}
