import type { Redis } from 'ioredis';
import type { ApprovalStore } from './approvalStore.js';
import { keys } from './keys.js';
import { ApprovalRecord } from './record.js';

/**
 * The records of every approval not yet final on these hosts: the open set of each host, then
 * one pipelined read of all their records. A record gone meanwhile (expired, cleaned up) is
 * left out, and so is one that no longer parses: a listing must not fail on one bad record.
 */
export async function readOpenRecords(
  redis: Redis,
  store: ApprovalStore,
  hostIds: readonly string[],
): Promise<ApprovalRecord[]> {
  const ids = (await Promise.all(hostIds.map((hostId) => store.openApprovalIds(hostId)))).flat();
  if (ids.length === 0) return [];
  const pipe = redis.pipeline();
  for (const id of ids) pipe.hget(keys.approval(id), 'd');
  const results = (await pipe.exec()) ?? [];
  return results.flatMap(([err, raw]) => {
    if (err || typeof raw !== 'string') return [];
    const parsed = ApprovalRecord.safeParse(JSON.parse(raw));
    return parsed.success ? [parsed.data] : [];
  });
}
