import type { Grant, GrantStore } from '../../src/domain/grants/grant.js';
import type { ApprovalRecord } from '../../src/domain/record.js';
import type { RouteGrants } from '../../src/domain/route.js';
import { sampleRecord } from './sampleRecord.js';

/** What GrantStore.create takes. */
export type GrantInput = Parameters<GrantStore['create']>[0];

/** A bot-held grant of an hour for `npm test` in session s-1's shell; tests override fields. */
export function botGrantInput(extra: Partial<GrantInput> = {}): GrantInput {
  return {
    caller: 'session:s-1',
    tool: 'shell',
    capabilities: ['exec:npm test'],
    sandboxMode: 'workspace-write',
    holder: 'bot',
    grantedBy: 'U0ALICE',
    approvalId: 'a-1',
    hostId: 'main',
    route: 'default',
    channel: 'C0DEPLOY',
    ttlMs: 60 * 60 * 1000,
    ...extra,
  };
}

/** A stored bot-held grant for sampleRecord()'s file write, live at 2026-11-30 12:00 UTC. */
export function sampleGrant(overrides: Partial<Grant> = {}): Grant {
  return {
    grantId: 'g-1',
    caller: 'session:s-1',
    tool: 'write_file',
    capabilities: ['file-write:/srv/app.ts'],
    sandboxMode: 'default',
    route: 'default',
    holder: 'bot',
    grantedBy: 'U0ALICE',
    approvalId: 'a-0',
    hostId: 'default',
    channel: 'C1',
    createdAt: '2026-11-30T11:00:00Z',
    expiresAt: '2026-11-30T13:00:00Z',
    uses: 0,
    ...overrides,
  };
}

/** A route's grants of one use, an hour by default: what the give-back tests spend and count. */
export const ONE_USE_GRANTS: RouteGrants = {
  enabled: true,
  ttlMs: 3_600_000,
  maxTtlMs: 86_400_000,
  caller: 'session',
  choices: [{ kind: 'uses', uses: 1 }],
};

/** sampleRecord()'s file write, on the route `ops`: the bucket its grants are found in. */
export const SAMPLE_BUCKET = {
  caller: 'session:s-1',
  tool: 'write_file',
  sandboxMode: 'default',
  route: 'ops',
};

/** A bot-held grant of an hour in SAMPLE_BUCKET for sampleRecord()'s file write, of `maxUses`. */
export function sampleBucketGrant(maxUses: number): GrantInput {
  return {
    ...SAMPLE_BUCKET,
    capabilities: ['file-write:/srv/app.ts'],
    holder: 'bot',
    grantedBy: 'U0ALICE',
    approvalId: 'a-0',
    hostId: 'default',
    channel: 'C1',
    ttlMs: 3_600_000,
    maxUses,
  };
}

/** sampleRecord()'s file write on the route `ops`, its card deferred: one a grant may answer. */
export function deferredSampleRecord(approvalId: string): ApprovalRecord {
  const now = new Date().toISOString();
  return sampleRecord(approvalId, {
    route: 'ops',
    availableChoices: [
      { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
      { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once' },
    ],
    slack: { channel: 'C1', deferred: true },
    openedAt: now,
    updatedAt: now,
  });
}
