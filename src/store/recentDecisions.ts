import { RecentDecision } from '../domain/recentDecision.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

export const RECENT_DECISIONS_KEPT = 10;

/**
 * Notes the approval and pushes it in one step, unless it was noted before: a final record is
 * stored more than once (its card placed, a late host event), and must be listed once.
 * KEYS: list, noted marker. ARGV: entry JSON, how many to keep, TTL ms.
 */
const PUSH_ONCE = `
if redis.call('SET', KEYS[2], '1', 'NX', 'PX', ARGV[3]) == false then return 0 end
redis.call('LPUSH', KEYS[1], ARGV[1])
redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[2]) - 1)
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1
`;

/** The last approvals each Slack user decided, newest first, capped per user. */
export class RecentDecisions {
  constructor(
    private readonly redis: RedisClient,
    /** How long a user's list outlives their last decision; the records themselves last as long. */
    private readonly ttlMs: number,
  ) {}

  /** Resolves with false when this approval was already in the user's list. */
  async add(userId: string, entry: RecentDecision): Promise<boolean> {
    const added = await this.redis.eval(
      PUSH_ONCE,
      2,
      keys.recentDecisions(userId),
      keys.recentDecisionNoted(userId, entry.approvalId),
      JSON.stringify(entry),
      RECENT_DECISIONS_KEPT,
      this.ttlMs,
    );
    return added === 1;
  }

  async list(userId: string): Promise<RecentDecision[]> {
    const raw = await this.redis.lrange(keys.recentDecisions(userId), 0, RECENT_DECISIONS_KEPT - 1);
    return raw.flatMap((json) => {
      const parsed = RecentDecision.safeParse(JSON.parse(json));
      return parsed.success ? [parsed.data] : [];
    });
  }
}
