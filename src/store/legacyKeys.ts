import type { Logger } from 'pino';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

// Seven keys gained a hash tag (for Redis Cluster). A deployment on one Redis (or a Sentinel
// master) that ran a release before that still holds them under their old names: they are moved
// at start-up, so audit entries, unsynced cards, due escalation steps, App Home viewers and the
// grant indexes (the expiry index is what removes ended grants) are not left behind.

const RENAMED: ReadonlyArray<readonly [string, string]> = [
  ['cs:audit', keys.audit],
  ['cs:cards:unsynced', keys.unsyncedCards()],
  ['cs:esc:due', keys.escalationDue()],
  ['cs:home-viewers', keys.homeViewers()],
  ['cs:grants:all', keys.grantsAll()],
  ['cs:grants:expiring', keys.grantsExpiring()],
  ['cs:grants:audit', keys.grantAudit],
];

/**
 * Moves each old key to its new name when only the old one exists (RENAMENX: atomic, so replicas
 * starting together move it once). Resolves with the names moved; one that exists under both
 * names is left where it is and logged, for the operator to merge.
 */
export async function renameLegacyKeys(redis: RedisClient, logger: Logger): Promise<string[]> {
  const moved: string[] = [];
  for (const [from, to] of RENAMED) {
    if (from === to || (await redis.exists(from)) === 0) continue;
    try {
      if ((await redis.renamenx(from, to)) === 1) {
        moved.push(from);
        logger.info({ from, to }, 'moved a key to its name with a hash tag');
      } else {
        logger.warn({ from, to }, 'a key exists under its old and its new name; the old one is not read');
      }
    } catch (err) {
      // Gone meanwhile: another replica moved it.
      if (!(err instanceof Error && /no such key/i.test(err.message))) throw err;
    }
  }
  return moved;
}
