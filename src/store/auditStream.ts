import type { Logger } from 'pino';
import type { AuditEntry, AuditTrail } from '../relay/ports.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

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

/** One exported line: the stream's id (its time in ms, then a sequence) and the entry's fields. */
export interface ExportedAuditEntry {
  id: string;
  [field: string]: string;
}

/**
 * The audit trail in a capped Redis stream. `MAXLEN ~` lets Redis trim whole nodes only, so the
 * stream holds at least `maxLen` entries and a little more, at no cost to the append.
 */
export class RedisAuditTrail implements AuditTrail {
  constructor(
    private readonly redis: RedisClient,
    private readonly options: { maxLen: number; logger: Logger },
  ) {}

  /** Never rejects: a lost audit entry is logged, and must not fail the decision it records. */
  async append(entry: AuditEntry): Promise<void> {
    try {
      await this.redis.xadd(keys.audit, 'MAXLEN', '~', this.options.maxLen, '*', ...auditFields(entry));
    } catch (err) {
      this.options.logger.error({ err, audit: entry }, 'audit entry not written');
    }
  }
}

/** Reads the whole stream, oldest first, a page at a time, handing each entry to `write`. */
export async function exportAudit(
  redis: RedisClient,
  write: (entry: ExportedAuditEntry) => void,
  pageSize = 1_000,
): Promise<number> {
  let start = '-';
  let count = 0;
  for (;;) {
    const page = await redis.xrange(keys.audit, start, '+', 'COUNT', pageSize);
    for (const [id, fields] of page) {
      const entry: ExportedAuditEntry = { id };
      for (let i = 0; i + 1 < fields.length; i += 2) entry[fields[i]!] = fields[i + 1]!;
      write(entry);
      count++;
    }
    if (page.length < pageSize) return count;
    // An exclusive start (Redis 6.2+) continues after the last entry read.
    start = `(${page[page.length - 1]![0]}`;
  }
}
