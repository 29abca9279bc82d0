import type { Grant, GrantListFilter } from '../domain/grants/grant.js';
import { GRANT_LIST_LIMIT, newestListed } from '../domain/grants/listing.js';
import { type GrantRow, grantOf, ROW, rowIsLive } from './grantRows.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

const PAGE = 200;

export type ListFilter = GrantListFilter;

/** A tag string's rows as the store reads them (it logs what it cannot read). */
export type RowsOf = (tag: string, raw: Uint8Array | null) => GrantRow[];

/**
 * Live grants, newest first, at most GRANT_LIST_LIMIT, read from the smallest listing that
 * answers the filter (a granter's stream, or each channel's: "all" is every channel's) rather
 * than every grant.
 */
export async function listGrants(
  redis: RedisClient,
  filter: ListFilter,
  nowMs: number,
  rowsOf: RowsOf,
): Promise<Grant[]> {
  const { channels, grantedBy, shown } = filter;
  if (channels?.length === 0) return [];
  let found: Grant[];
  if (grantedBy !== undefined) {
    // One user's grants are few: filtering them by channel is cheaper than reading each channel.
    const inChannels = channels ? new Set(channels) : undefined;
    found = await liveFromStream(
      redis,
      keys.grantsListedBy(grantedBy),
      { nowMs, rowsOf, shown },
      (row) => row[ROW.grantedBy] === grantedBy && (inChannels ? inChannels.has(row[ROW.channel]) : true),
    );
  } else {
    const listed = channels ? [...new Set(channels)] : await redis.smembers(keys.grantChannels());
    const perChannel = await Promise.all(
      listed.map((c) =>
        liveFromStream(
          redis,
          keys.grantsListedIn(c),
          { nowMs, rowsOf, shown },
          (row) => row[ROW.channel] === c,
        ),
      ),
    );
    found = perChannel.flat();
  }
  return newestListed(found);
}

/**
 * The newest live grants of one listing that `accept` takes and `shown` keeps, up to the limit:
 * enough for the merged newest of several. An entry names a tag; the tag's rows this listing lists
 * are its grants. Entries whose tag holds nothing any more leave the stream on the way (an ended
 * grant's entries are deleted when it ends, so these are few: a deletion that failed).
 */
async function liveFromStream(
  redis: RedisClient,
  stream: string,
  read: { nowMs: number; rowsOf: RowsOf; shown: GrantListFilter['shown'] },
  accept: (row: GrantRow) => boolean,
): Promise<Grant[]> {
  const { nowMs, rowsOf, shown } = read;
  const out = new Map<string, Grant>();
  const gone: string[] = [];
  for (let before = '+'; out.size < GRANT_LIST_LIMIT; ) {
    const entries = (await redis.xrevrange(stream, before, '-', 'COUNT', PAGE)) as Array<[string, string[]]>;
    if (entries.length === 0) break;
    const tags = [...new Set(entries.map(([, fields]) => fields[1] ?? ''))];
    // Tags are in different slots: one read each, all issued at once.
    const raws = await Promise.all(tags.map((tag) => redis.getBuffer(keys.grantTag(tag))));
    const rows = new Map(tags.map((tag, i) => [tag, raws[i] == null ? undefined : rowsOf(tag, raws[i]!)]));
    const page = new Map<string, Grant>();
    for (const [id, fields] of entries) {
      const tag = fields[1] ?? '';
      const held = rows.get(tag);
      if (held === undefined) {
        gone.push(id);
        continue;
      }
      for (const row of held) {
        if (!rowIsLive(row, nowMs) || !accept(row)) continue;
        const { grant } = grantOf(tag, row);
        if (!out.has(grant.grantId)) page.set(grant.grantId, grant);
      }
    }
    const candidates = [...page.values()];
    const keep = shown ? await shown(candidates) : undefined;
    candidates.forEach((grant, i) => {
      if (!keep || keep[i]) out.set(grant.grantId, grant);
    });
    if (entries.length < PAGE) break;
    before = `(${entries.at(-1)![0]}`;
  }
  if (gone.length > 0) await redis.xdel(stream, ...gone);
  return [...out.values()];
}
