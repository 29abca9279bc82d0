import { ApprovalRecord } from '../domain/record.js';
import type { ApprovalStore } from './approvalStore.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

/**
 * The records of every approval not yet final on these hosts: the open set of each host, then
 * a read of each record, all issued at once (each record is in a slot of its own, so no one
 * pipeline may read them all on a Cluster). A record gone meanwhile (expired, cleaned up) is left
 * out, and so is one that no longer parses or could not be read: a listing must not fail on one
 * bad record.
 */
export async function readOpenRecords(
  redis: RedisClient,
  store: ApprovalStore,
  hostIds: readonly string[],
): Promise<ApprovalRecord[]> {
  const ids = (
    await Promise.all(
      hostIds.map(async (hostId) => (await store.openApprovalIds(hostId)).map((id) => ({ hostId, id }))),
    )
  ).flat();
  if (ids.length === 0) return [];
  const results = await Promise.all(
    ids.map(({ id }) => redis.hget(keys.approval(id), 'd').catch(() => null)),
  );
  return results.flatMap((raw, i) => {
    if (typeof raw !== 'string') return [];
    const parsed = ApprovalRecord.safeParse(JSON.parse(raw));
    // Only the set of the record's own host lists it: a release before the sets were kept apart
    // could leave another host's id in one (OpenApprovals' sweep clears it), listed twice else.
    return parsed.success && parsed.data.hostId === ids[i]!.hostId ? [parsed.data] : [];
  });
}
