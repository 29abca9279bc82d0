import { z } from 'zod';
import type { Grant } from '../domain/grants/grant.js';
import { StoredScope } from './grantRows.js';

/** What of a grant never changes: its `d` field, written once. */
export const GrantData = z.object({
  caller: z.string(),
  tool: z.string(),
  capabilities: z.array(z.string()),
  sandboxMode: z.string(),
  holder: z.enum(['bot', 'host']),
  grantedBy: z.string(),
  approvalId: z.string(),
  hostId: z.string(),
  route: z.string(),
  channel: z.string(),
  createdAt: z.string(),
  rulePreview: z.string().optional(),
  scope: z.string().optional(),
  lasts: StoredScope.optional(),
});
export type GrantData = z.infer<typeof GrantData>;

/** A grant read back, with `end`: when it stops being live (bot-held) or listed (host-held). */
export interface StoredGrant {
  grant: Grant;
  end: number;
}

export function parseGrantData(json: string): GrantData {
  return GrantData.parse(JSON.parse(json));
}

/** A grant hash's fields (HGETALL as an object) as a grant; undefined for a missing hash. */
export function fromFields(grantId: string, f: Record<string, string>): StoredGrant | undefined {
  if (f.d === undefined || f.end === undefined) return undefined;
  const end = Number(f.end);
  const data = parseGrantData(f.d);
  const grant: Grant = { ...data, grantId, uses: Number(f.uses ?? 0) };
  if (data.holder === 'bot') grant.expiresAt = new Date(end).toISOString();
  if (f.last) grant.lastUsedAt = f.last;
  // A grant by uses carries both; a time-bound grant neither.
  if (f.max !== undefined && f.max !== '' && f.left !== undefined && f.left !== '') {
    grant.maxUses = Number(f.max);
    grant.usesLeft = Math.max(0, Number(f.left));
  }
  if (f.revAt) grant.revokedAt = f.revAt;
  if (f.revBy) grant.revokedBy = f.revBy;
  if (f.rep) grant.replacedBy = f.rep;
  return { grant, end };
}

/** HGETALL's flat reply inside a script result ([field, value, …]) as an object. */
export function pairs(flat: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!Array.isArray(flat)) return out;
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = String(flat[i + 1]);
  return out;
}

/** Not revoked, not ended, and, for a grant by uses, not exhausted. */
export function isLive(stored: StoredGrant, nowMs: number): boolean {
  return stored.grant.revokedAt === undefined && stored.end > nowMs && stored.grant.usesLeft !== 0;
}
