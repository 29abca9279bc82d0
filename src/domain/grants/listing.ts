import type { Grant } from './grant.js';

/** What one listing returns at most: the newest live grants. Older ones are not listed. */
export const GRANT_LIST_LIMIT = 100;

/** One channel's grants, or every grant (an admin asking). */
export interface ChannelGrants {
  grants: Grant[];
  scope: { kind: 'channel'; channel: string } | { kind: 'all' };
}
