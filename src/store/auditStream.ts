import type { Result } from 'ioredis';
import type { Logger } from 'pino';
import {
  type AuditEntry,
  type AuditTrail,
  type DecisionEntry,
  type DecisionTrail,
  loggableEntry,
} from '../domain/audit.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';
import { RefusalCounts } from './refusalCounts.js';

/** An entry as XADD takes it: field, value, field, value… (absent fields are left out). */
export function auditFields(entry: AuditEntry): string[] {
  const fields: string[] = [];
  for (const [field, value] of Object.entries(entry)) {
    // Lists and mappings (a quorum's voters, a risk rule's approvers) as JSON, not "[object Object]".
    if (value !== undefined)
      fields.push(field, typeof value === 'object' ? JSON.stringify(value) : String(value));
  }
  return fields;
}

/**
 * Writes an approval's decision entry unless its mark says it is written: the mark (SET NX, as
 * long as resolved records are kept), the entry, then the stats generation that tells cached
 * summaries they are stale. One step, so no crash can leave the mark without the entry. `k`: the
 * index of its first key in KEYS (DecisionKeys), `a`: of its first argument in ARGV
 * (DecisionArgs). Sets the Lua local `audited`, which the script around it declares, to 1 when it
 * wrote the entry. Shared with the write that resolves a record (approvalScripts.ts), which
 * writes the entry itself where it can.
 */
export const writeDecisionOnce = (k: number, a: number) => `
if redis.call('SET', KEYS[${k}], '1', 'PX', ARGV[${a}], 'NX') then
  redis.call('XADD', KEYS[${k + 1}], 'MAXLEN', '~', ARGV[${a + 1}], '*', unpack(ARGV, ${a + 2}))
  redis.call('INCR', KEYS[${k + 2}])
  audited = 1
end`;

/** writeDecisionOnce's keys: the mark, the stream, the stats generation. */
export type DecisionKeys = [markKey: string, streamKey: string, generationKey: string];
/** writeDecisionOnce's arguments: the mark's TTL, the stream's cap, then the entry's fields. */
export type DecisionArgs = [markTtlMs: string, maxLen: string, ...fields: string[]];
/** What writeDecisionOnce is given for one entry (RedisAuditTrail.decisionWrite). */
export interface DecisionWrite {
  keys: DecisionKeys;
  args: DecisionArgs;
}

const DECISION_ONCE = `local audited = 0${writeDecisionOnce(1, 1)}
return audited
`;

/**
 * Writes a vote's entry unless its mark (SET NX, as long as a decision's) says it is written: the
 * vote may be audited where it was cast, where its decision failed and where its claim was closed
 * (clickVotes.ts), at one replica or several. KEYS: the mark, the stream. ARGV: the mark's TTL,
 * the stream's cap, then the entry's fields. 1 when this call wrote it.
 */
const VOTE_ONCE = `
if not redis.call('SET', KEYS[1], '1', 'PX', ARGV[1], 'NX') then return 0 end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', unpack(ARGV, 3))
return 1
`;

/** How many of one user's refusals a minute are written; past it they are only counted. */
export const REFUSALS_PER_USER_PER_MINUTE = 20;

/**
 * Counts one user's refusal in the current window and returns the count; the first starts the
 * window. A counter found without a TTL gets one, so no user is ever limited for good.
 * KEYS: the user's counter. ARGV: window (ms).
 */
const COUNT_REFUSAL = `
local n = redis.call('INCR', KEYS[1])
if redis.call('PTTL', KEYS[1]) < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n
`;

const REFUSAL_WINDOW_MS = 60_000;

const DEFAULT_DECISION_MARK_TTL_MS = 30 * 24 * 60 * 60_000;

export interface AuditTrailOptions {
  /** About how many entries `cs:{audit}` keeps: decisions, risk rules, votes. */
  maxLen: number;
  /**
   * How long a decision's mark, and a vote's, is kept (keys.decisionAudited, keys.voteAudited):
   * as long as the resolved record (default 30 days, COUNTERSIGN_RESOLVED_TTL's default).
   */
  decisionMarkTtlMs?: number;
  /** About how many entries the refusal stream keeps (default: maxLen). */
  refusalMaxLen?: number;
  /** How many of one user's refusals a minute are written (default REFUSALS_PER_USER_PER_MINUTE). */
  refusalsPerUserPerMinute?: number;
  logger: Logger;
}

/**
 * The audit trail in capped Redis streams. `MAXLEN ~` lets Redis trim whole nodes only, so a
 * stream holds at least its cap and a little more, at no cost to the append.
 *
 * Refusals go to a stream of their own, whoever appends them: anyone in the channel can be
 * refused as often as they can click, and in the decisions' stream they would push decisions out
 * of its cap. Each user gets a number of written refusals a minute, counted in Redis so that
 * every replica shares it, so that one person clicking away cannot push everyone else's refusals
 * out either; every refusal, written or not, is counted for /metrics.
 */
export class RedisAuditTrail implements AuditTrail, DecisionTrail {
  readonly refusals = new RefusalCounts();

  constructor(
    private readonly redis: RedisClient,
    private readonly options: AuditTrailOptions,
  ) {
    redis.defineCommand('csCountRefusal', { numberOfKeys: 1, lua: COUNT_REFUSAL });
    redis.defineCommand('csDecisionOnce', { numberOfKeys: 3, lua: DECISION_ONCE });
    redis.defineCommand('csVoteOnce', { numberOfKeys: 2, lua: VOTE_ONCE });
  }

  /**
   * Writes an approval's decision entry once, whoever asks and however often (writeDecisionOnce).
   * True when this call wrote it. Rejects when Redis does not answer: the caller logs it.
   */
  async appendDecision(entry: DecisionEntry): Promise<boolean> {
    const { keys: decisionKeys, args } = this.decisionWrite(entry);
    return (await this.redis.csDecisionOnce(...decisionKeys, ...args)) === 1;
  }

  /** The keys and arguments of writeDecisionOnce for `entry`, here or in another script. */
  decisionWrite(entry: DecisionEntry): DecisionWrite {
    return {
      keys: [keys.decisionAudited(entry.approvalId), keys.audit, keys.statsGeneration],
      args: [
        String(this.options.decisionMarkTtlMs ?? DEFAULT_DECISION_MARK_TTL_MS),
        String(this.options.maxLen),
        ...auditFields(entry),
      ],
    };
  }

  /** Never rejects: a lost audit entry is logged, and must not fail the decision it records. */
  async append(entry: AuditEntry): Promise<void> {
    try {
      if (entry.kind === 'refusal') await this.appendRefusal(entry);
      else if (entry.kind === 'decision') await this.appendDecision(entry);
      else if (entry.kind === 'vote') await this.appendVote(entry);
      else await this.redis.xadd(keys.audit, 'MAXLEN', '~', this.options.maxLen, '*', ...auditFields(entry));
    } catch (err) {
      // Not `audit`: that key is the audit lines' own, always a string (their kind).
      this.options.logger.error({ err, auditEntry: loggableEntry(entry) }, 'audit entry not written');
    }
  }

  /** Writes a vote's entry once, however many ask (VOTE_ONCE): true when this call wrote it. */
  private async appendVote(entry: Extract<AuditEntry, { kind: 'vote' }>): Promise<boolean> {
    const written = await this.redis.csVoteOnce(
      keys.voteAudited(entry.approvalId, entry.userId, entry.at),
      keys.audit,
      String(this.options.decisionMarkTtlMs ?? DEFAULT_DECISION_MARK_TTL_MS),
      String(this.options.maxLen),
      ...auditFields(entry),
    );
    return written === 1;
  }

  private async appendRefusal(entry: Extract<AuditEntry, { kind: 'refusal' }>): Promise<void> {
    this.refusals.count(entry.reason);
    const limit = this.options.refusalsPerUserPerMinute ?? REFUSALS_PER_USER_PER_MINUTE;
    const counter = keys.refusalCount(entry.userId);
    const n = await this.redis.csCountRefusal(counter, REFUSAL_WINDOW_MS);
    if (n > limit) {
      this.refusals.countOverLimit(entry.reason);
      // Said once a minute, by whichever replica counted past the limit.
      if (n === limit + 1) {
        this.options.logger.warn(
          { userId: entry.userId, limit },
          'refusals of one user over the limit: the rest of this minute are counted on /metrics, not written to the audit trail',
        );
      }
      return;
    }
    const maxLen = this.options.refusalMaxLen ?? this.options.maxLen;
    await this.redis.xadd(keys.refusals, 'MAXLEN', '~', maxLen, '*', ...auditFields(entry));
  }
}

declare module 'ioredis' {
  interface RedisCommander<Context> {
    csCountRefusal(counterKey: string, windowMs: number): Result<number, Context>;
    csDecisionOnce(...keysAndArgs: [...DecisionKeys, ...DecisionArgs]): Result<number, Context>;
    csVoteOnce(
      markKey: string,
      streamKey: string,
      markTtlMs: string,
      maxLen: string,
      ...fields: string[]
    ): Result<number, Context>;
  }
}
