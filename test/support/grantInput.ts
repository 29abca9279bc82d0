import type { GrantStore } from '../../src/domain/grants/grant.js';

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
