import type { Logger } from 'pino';
import type { GrantEvent } from '../domain/grants/grant.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

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
    case 'revoked':
      return ['kind', kind, 'grantId', event.grantId, 'at', at, 'by', event.by];
    case 'replaced':
      return [
        ...['kind', kind, 'grantId', event.grantId, 'at', at, 'by', event.by],
        ...['replacedBy', event.replacedBy, 'approvalId', event.approvalId],
      ];
  }
}

/**
 * Grant events go to a capped stream and to the log, as RedisAuditTrail does for decisions.
 * `MAXLEN ~` keeps at least `maxLen` entries, trimming whole nodes only.
 */
export class GrantAuditTrail {
  constructor(
    private readonly redis: RedisClient,
    private readonly options: { maxLen: number; logger: Logger },
  ) {}

  /** Never rejects: a lost entry is logged, and must not fail the grant operation it records. */
  async record(event: GrantEvent): Promise<void> {
    this.options.logger.info({ grantEvent: event }, `grant ${event.kind}`);
    try {
      await this.redis.xadd(keys.grantAudit, 'MAXLEN', '~', this.options.maxLen, '*', ...eventFields(event));
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
        return { id, kind: 'revoked', at, grantId, by: f.by ?? '' };
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
