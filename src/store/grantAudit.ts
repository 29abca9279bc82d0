import type { Result } from 'ioredis';
import type { Logger } from 'pino';
import type { GrantEvent } from '../domain/grants/grant.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    csGrantUsedOnce(
      markKey: string,
      streamKey: string,
      markTtlMs: number,
      maxLen: number,
      ...fields: string[]
    ): Result<number, Context>;
  }
}

/** One stream entry: flat fields, the grant of `created` (and the one it `replaces`) as JSON. */
function eventFields(event: GrantEvent): string[] {
  const { kind, at } = event;
  switch (event.kind) {
    case 'created': {
      const fields = [
        'kind',
        kind,
        'grantId',
        event.grant.grantId,
        'at',
        at,
        'grant',
        JSON.stringify(event.grant),
      ];
      if (event.replaces) fields.push('replaces', JSON.stringify(event.replaces));
      return fields;
    }
    case 'used':
      return [
        ...['kind', kind, 'grantId', event.grantId, 'at', at],
        ...['approvalId', event.approvalId, 'sourceIndex', String(event.sourceIndex)],
      ];
    case 'expired':
    case 'exhausted':
      return ['kind', kind, 'grantId', event.grantId, 'at', at];
    case 'revoked': {
      const fields = ['kind', kind, 'grantId', event.grantId, 'at', at, 'by', event.by];
      if (event.reason !== undefined) fields.push('reason', event.reason);
      return fields;
    }
    case 'replaced':
      return [
        ...['kind', kind, 'grantId', event.grantId, 'at', at, 'by', event.by],
        ...['replacedBy', event.replacedBy, 'approvalId', event.approvalId],
      ];
  }
}

/**
 * Writes a `used` entry unless its approval stage's mark says it is written: the mark (SET NX, as
 * long as resolved records are kept), then the entry, in one step in the stream's slot. A use two
 * replicas both finish (the old owner's writes landing after a partition, once the new owner
 * replayed the decision) is recorded once, as it is counted once (RECORD_USE, grantScripts.ts).
 * KEYS: the mark, the stream. ARGV: the mark's TTL, the stream's cap, then the entry's fields.
 * Returns 1 when it wrote the entry.
 */
const USED_ONCE = `
if not redis.call('SET', KEYS[1], '1', 'PX', ARGV[1], 'NX') then return 0 end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', unpack(ARGV, 3))
return 1
`;

/** How long a use's marks are kept by default: as long as a resolved record (COUNTERSIGN_RESOLVED_TTL's default). */
export const DEFAULT_USE_MARK_TTL_MS = 30 * 24 * 60 * 60_000;

/**
 * Grant events go to a capped stream and to the log, as RedisAuditTrail does for decisions.
 * `MAXLEN ~` keeps at least `maxLen` entries, trimming whole nodes only.
 */
export class GrantAuditTrail {
  private readonly markTtlMs: number;

  constructor(
    private readonly redis: RedisClient,
    private readonly options: {
      maxLen: number;
      logger: Logger;
      /** How long a `used` entry's mark is kept: as long as its approval's resolved record. */
      useMarkTtlMs?: number;
    },
  ) {
    redis.defineCommand('csGrantUsedOnce', { numberOfKeys: 2, lua: USED_ONCE });
    this.markTtlMs = options.useMarkTtlMs ?? DEFAULT_USE_MARK_TTL_MS;
  }

  /** Never rejects: a lost entry is logged, and must not fail the grant operation it records. */
  async record(event: GrantEvent): Promise<void> {
    if (event.kind === 'used') return this.recordUsed(event);
    this.options.logger.info({ grantEvent: event }, `grant ${event.kind}`);
    try {
      await this.redis.xadd(keys.grantAudit, 'MAXLEN', '~', this.options.maxLen, '*', ...eventFields(event));
    } catch (err) {
      this.options.logger.error({ err, grantEvent: event }, 'grant audit entry not written');
    }
  }

  /** One `used` per approval stage, however many replicas record it (USED_ONCE). Never rejects. */
  private async recordUsed(event: Extract<GrantEvent, { kind: 'used' }>): Promise<void> {
    try {
      const written = await this.redis.csGrantUsedOnce(
        keys.grantUseRecorded(event.approvalId, event.sourceIndex),
        keys.grantAudit,
        this.markTtlMs,
        this.options.maxLen,
        ...eventFields(event),
      );
      // Logged once too: the log is the other copy of the trail.
      if (written === 1) this.options.logger.info({ grantEvent: event }, 'grant used');
    } catch (err) {
      this.options.logger.error({ err, grantEvent: event }, 'grant audit entry not written');
    }
  }
}

/** The grant audit stream read back, oldest first, each entry with its stream id. */
export async function readGrantAudit(
  redis: RedisClient,
  count = 10_000,
): Promise<Array<GrantEvent & { id: string }>> {
  const entries = await redis.xrange(keys.grantAudit, '-', '+', 'COUNT', count);
  return entries.map(([id, list]) => {
    const f: Record<string, string> = {};
    for (let i = 0; i + 1 < list.length; i += 2) f[list[i]!] = list[i + 1]!;
    const at = f.at ?? '';
    const grantId = f.grantId ?? '';
    switch (f.kind) {
      case 'created':
        return {
          id,
          kind: 'created',
          at,
          grant: JSON.parse(f.grant ?? '{}'),
          ...(f.replaces ? { replaces: JSON.parse(f.replaces) } : {}),
        };
      case 'used':
        return {
          id,
          kind: 'used',
          at,
          grantId,
          approvalId: f.approvalId ?? '',
          sourceIndex: Number(f.sourceIndex),
        };
      case 'revoked':
        return {
          id,
          kind: 'revoked',
          at,
          grantId,
          by: f.by ?? '',
          ...(f.reason === undefined ? {} : { reason: f.reason }),
        };
      case 'replaced':
        return {
          id,
          kind: 'replaced',
          at,
          grantId,
          by: f.by ?? '',
          replacedBy: f.replacedBy ?? '',
          approvalId: f.approvalId ?? '',
        };
      case 'exhausted':
        return { id, kind: 'exhausted', at, grantId };
      default:
        return { id, kind: 'expired', at, grantId };
    }
  });
}
