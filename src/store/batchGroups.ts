import type { Result } from 'ioredis';
import type { BatchMember, BatchShared } from '../domain/batchGroup.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

// Batch triage groups in Redis, shared by every replica (docs/slack.md#batch-triage). A group's
// members and its summary card share one hash tag, so each join or leave is one script: of two
// replicas that see the second member join, exactly one is told to post the summary.

// KEYS: members, order, summary, index. ARGV: approvalId, member JSON, shared JSON, ttl ms,
// posting ttl ms, the card's ts (the order's score: the summary lists the oldest cards first),
// the group id.
const JOIN_SCRIPT = `
redis.call('HSET', KEYS[4], ARGV[1], ARGV[7])
redis.call('PEXPIRE', KEYS[4], ARGV[4])
local had = redis.call('HEXISTS', KEYS[1], ARGV[1])
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[6], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
if had == 1 then return 'same' end
local state = redis.call('HGET', KEYS[3], 'state')
if state and state ~= 'closed' then
  redis.call('HINCRBY', KEYS[3], 'rev', 1)
  return 'refresh'
end
if redis.call('HLEN', KEYS[1]) >= 2 then
  redis.call('DEL', KEYS[3])
  redis.call('HSET', KEYS[3], 'state', 'posting', 'rev', 1, 'shared', ARGV[3])
  redis.call('PEXPIRE', KEYS[3], ARGV[5])
  return 'post'
end
return 'none'
`;

// KEYS: members, order, summary, index. ARGV: approvalId, closed ttl ms, the group id. A closed
// summary stays a while, so the note of the batch decision that emptied it still lands on it; the
// next join posts anew.
const LEAVE_SCRIPT = `
if redis.call('HGET', KEYS[4], ARGV[1]) == ARGV[3] then redis.call('HDEL', KEYS[4], ARGV[1]) end
redis.call('ZREM', KEYS[2], ARGV[1])
if redis.call('HDEL', KEYS[1], ARGV[1]) == 0 then return 'none' end
local state = redis.call('HGET', KEYS[3], 'state')
if not state or state == 'closed' then return 'none' end
redis.call('HINCRBY', KEYS[3], 'rev', 1)
if redis.call('HLEN', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[3], 'state', 'closed')
  redis.call('PEXPIRE', KEYS[3], ARGV[2])
  return state == 'posting' and 'none' or 'close'
end
return 'refresh'
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

// KEYS: summary. ARGV: note JSON.
const NOTE_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'note', ARGV[1])
redis.call('HINCRBY', KEYS[1], 'rev', 1)
return 1
`;

export type JoinResult = 'post' | 'refresh' | 'same' | 'none';

/** `close`: the group emptied; its summary is closed in Redis, and is to be drawn so. */
export type LeaveResult = 'none' | 'refresh' | 'close';

/** A group as it stands: its summary's state and its members, oldest first. */
export interface GroupState {
  state?: 'posting' | 'posted' | 'closed';
  ts?: string;
  rev: number;
  shared?: BatchShared;
  note?: string;
  /** The first members, oldest card first. */
  members: BatchMember[];
  /** How many members the group has. */
  total: number;
}

// KEYS: summary, order, members. ARGV: how many to list. The summary, the first members (oldest
// card first) and how many there are, in one round trip.
const READ_SCRIPT = `
local ids = redis.call('ZRANGE', KEYS[2], 0, tonumber(ARGV[1]) - 1)
local members = {}
if #ids > 0 then members = redis.call('HMGET', KEYS[3], unpack(ids)) end
return {redis.call('HGETALL', KEYS[1]), members, redis.call('ZCARD', KEYS[2])}
`;

const STATES: ReadonlySet<string> = new Set(['posting', 'posted', 'closed']);

/** A group id is `<channel>:<digest>` (domain/batchGroup.ts). */
export function channelOfGroup(groupId: string): string {
  return groupId.slice(0, groupId.lastIndexOf(':'));
}

export interface BatchGroupsOptions {
  /** How long a group lives without a join: pending approvals rarely wait longer. */
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
    redis.defineCommand('csBatchJoin', { numberOfKeys: 4, lua: JOIN_SCRIPT });
    redis.defineCommand('csBatchLeave', { numberOfKeys: 4, lua: LEAVE_SCRIPT });
    redis.defineCommand('csBatchPosted', { numberOfKeys: 1, lua: POSTED_SCRIPT });
    redis.defineCommand('csBatchNote', { numberOfKeys: 1, lua: NOTE_SCRIPT });
    redis.defineCommand('csBatchRead', { numberOfKeys: 3, lua: READ_SCRIPT });
  }

  /** The group the approval is a member of, if any. */
  async groupOf(channel: string, approvalId: string): Promise<string | undefined> {
    return (await this.redis.hget(keys.batchIndex(channel), approvalId)) ?? undefined;
  }

  /**
   * Adds a member (one script, one round trip); `post` to exactly one caller when the group
   * reaches two without a summary. Issued at once: commands reach Redis in the order issued.
   */
  join(groupId: string, member: BatchMember, shared: BatchShared): Promise<JoinResult> {
    return this.redis.csBatchJoin(
      keys.batchMembers(groupId),
      keys.batchOrder(groupId),
      keys.batchSummary(groupId),
      keys.batchIndex(channelOfGroup(groupId)),
      member.approvalId,
      JSON.stringify(member),
      JSON.stringify(shared),
      String(this.options.ttlMs),
      String(this.options.postingTtlMs),
      member.ts,
      groupId,
    ) as Promise<JoinResult>;
  }

  leave(groupId: string, approvalId: string): Promise<LeaveResult> {
    return this.redis.csBatchLeave(
      keys.batchMembers(groupId),
      keys.batchOrder(groupId),
      keys.batchSummary(groupId),
      keys.batchIndex(channelOfGroup(groupId)),
      approvalId,
      String(this.options.closedTtlMs),
      groupId,
    ) as Promise<LeaveResult>;
  }

  /** Says where the summary was posted (false: its claim ran out); it may be closed already. */
  async posted(groupId: string, ts: string): Promise<boolean> {
    return (await this.redis.csBatchPosted(keys.batchSummary(groupId), ts, String(this.options.ttlMs))) === 1;
  }

  /** Keeps what the last batch decision did, for the summary to show. */
  async note(groupId: string, note: string): Promise<void> {
    await this.redis.csBatchNote(keys.batchSummary(groupId), note);
  }

  /** The summary and its first `listed` members, oldest card first: bounded, however big the group. */
  async read(groupId: string, listed: number): Promise<GroupState> {
    const [flat, raw, total] = (await this.redis.csBatchRead(
      keys.batchSummary(groupId),
      keys.batchOrder(groupId),
      keys.batchMembers(groupId),
      String(listed),
    )) as [string[], Array<string | null>, number];
    const summary: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) summary[flat[i]!] = flat[i + 1]!;
    const members = raw.flatMap((json) => (json ? [JSON.parse(json) as BatchMember] : []));
    return {
      ...(STATES.has(summary.state ?? '') ? { state: summary.state as GroupState['state'] } : {}),
      ...(summary.ts ? { ts: summary.ts } : {}),
      rev: Number(summary.rev ?? 0),
      ...(summary.shared ? { shared: JSON.parse(summary.shared) as BatchShared } : {}),
      ...(summary.note ? { note: summary.note } : {}),
      members,
      total,
    };
  }
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    csBatchJoin(
      members: string,
      order: string,
      summary: string,
      index: string,
      approvalId: string,
      member: string,
      shared: string,
      ttlMs: string,
      postingTtlMs: string,
      ts: string,
      groupId: string,
    ): Result<string, Context>;
    csBatchLeave(
      members: string,
      order: string,
      summary: string,
      index: string,
      approvalId: string,
      closedTtlMs: string,
      groupId: string,
    ): Result<string, Context>;
    csBatchPosted(summary: string, ts: string, ttlMs: string): Result<number, Context>;
    csBatchNote(summary: string, note: string): Result<number, Context>;
    csBatchRead(summary: string, order: string, members: string, listed: string): Result<unknown[], Context>;
  }
}
