import type { Grant } from './grant.js';

/** What one listing returns at most: the newest live grants. Older ones are not listed. */
export const GRANT_LIST_LIMIT = 100;

/** The newest GRANT_LIST_LIMIT of `grants`, newest first (by creation, then id: a stable order). */
export function newestListed(grants: readonly Grant[]): Grant[] {
  return [...grants]
    .sort((a, b) => (a.createdAt === b.createdAt ? cmp(b.grantId, a.grantId) : cmp(b.createdAt, a.createdAt)))
    .slice(0, GRANT_LIST_LIMIT);
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** One channel's grants, or every grant (an admin asking). */
export interface ChannelGrants {
  grants: Grant[];
  scope: { kind: 'channel'; channel: string } | { kind: 'all' };
}
