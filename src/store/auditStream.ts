import type { Result } from 'ioredis';
import type { Logger } from 'pino';
import type { AuditEntry, AuditTrail } from '../domain/audit.js';
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

export interface AuditTrailOptions {
  /** About how many entries `cs:{audit}` keeps: decisions, risk rules, votes. */
  maxLen: number;
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
export class RedisAuditTrail implements AuditTrail {
  readonly refusals = new RefusalCounts();

  constructor(
    private readonly redis: RedisClient,
    private readonly options: AuditTrailOptions,
  ) {
    redis.defineCommand('csCountRefusal', { numberOfKeys: 1, lua: COUNT_REFUSAL });
  }

  /** Never rejects: a lost audit entry is logged, and must not fail the decision it records. */
  async append(entry: AuditEntry): Promise<void> {
    try {
      if (entry.kind === 'refusal') await this.appendRefusal(entry);
      else if (entry.kind === 'decision') {
        // The entry, then the generation that tells cached stats they are stale: issued together,
        // one round trip. No MULTI around them (two commands fewer per decision): a reader that
        // sees the new generation sees the entry, written first, and one that reads the old
        // generation between the two caches a summary the increment makes stale at once
        // (decisionStatsReader.ts reads the generation before the stream).
        await Promise.all([
          this.redis.xadd(keys.audit, 'MAXLEN', '~', this.options.maxLen, '*', ...auditFields(entry)),
          this.redis.incr(keys.statsGeneration),
        ]);
      } else
        await this.redis.xadd(keys.audit, 'MAXLEN', '~', this.options.maxLen, '*', ...auditFields(entry));
    } catch (err) {
      // Not `audit`: that key is the audit lines' own, always a string (their kind).
      this.options.logger.error({ err, auditEntry: entry }, 'audit entry not written');
    }
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
  }
}
