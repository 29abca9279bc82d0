// How long things are kept and trusted, and how much is held: resolved records, Slack caches,
// the host event buffer, a host's open approvals, the audit and refusal streams, and host leases.

import { ConfigError, shown } from '../common.js';
import { DEFAULTS } from '../defaults.js';
import { ConfigProblems } from '../problems.js';
import { countVar, durationVar, read } from './read.js';

/** A lease is renewed every third of its life, with a margin: shorter would renew all the time. */
const MIN_LEASE_TTL_MS = 2_000;
/** What Slack says of who may decide (a channel's or a group's members, guests, teams) is trusted for at most this long. */
const MAX_MEMBERSHIP_CACHE_TTL_MS = 5 * 60_000;

/** A cache of who may decide, refused past MAX_MEMBERSHIP_CACHE_TTL_MS: `what` says what it keeps. */
function membershipTtl(env: NodeJS.ProcessEnv, name: string, fallback: string, what: string): number {
  const ttlMs = durationVar(env, name, fallback);
  if (ttlMs > MAX_MEMBERSHIP_CACHE_TTL_MS) {
    throw new ConfigError(
      name,
      `${name} must be at most 5m (got ${shown(read(env, name) ?? '')}): ${what} must not be trusted longer`,
    );
  }
  return ttlMs;
}

/** COUNTERSIGN_LEASE_TTL, at least MIN_LEASE_TTL_MS. */
function leaseTtlVar(env: NodeJS.ProcessEnv): number {
  const leaseTtlMs = durationVar(env, 'COUNTERSIGN_LEASE_TTL', DEFAULTS.leaseTtl);
  if (leaseTtlMs < MIN_LEASE_TTL_MS) {
    throw new ConfigError(
      'COUNTERSIGN_LEASE_TTL',
      `COUNTERSIGN_LEASE_TTL must be at least 2s (got ${shown(read(env, 'COUNTERSIGN_LEASE_TTL') ?? '')}): a lease is renewed every third of it`,
    );
  }
  return leaseTtlMs;
}

/** The COUNTERSIGN_* retention, cache and lease settings, each checked against its bounds. */
export function limitsConfig(env: NodeJS.ProcessEnv) {
  // Every invalid variable is named at once (problems.ts), not only the first.
  const problems = new ConfigProblems();
  // `!`: read before throwIfAny, which throws when any of them failed.
  const take = <T>(read: () => T): T => problems.take(read)!;
  const limits = {
    resolvedTtlMs: take(() => durationVar(env, 'COUNTERSIGN_RESOLVED_TTL', DEFAULTS.resolvedTtl, 'redis')),
    // Someone taken out of an approvers group keeps deciding for as long as the group is cached.
    usergroupCacheTtlMs: take(() =>
      membershipTtl(
        env,
        'COUNTERSIGN_USERGROUP_CACHE_TTL',
        DEFAULTS.usergroupCacheTtl,
        "a user group's members",
      ),
    ),
    membershipCacheTtlMs: take(() =>
      membershipTtl(
        env,
        'COUNTERSIGN_MEMBERSHIP_CACHE_TTL',
        DEFAULTS.membershipCacheTtl,
        'who is in a channel, a guest or another team',
      ),
    ),
    hostEventBuffer: take(() =>
      countVar(env, 'COUNTERSIGN_HOST_EVENT_BUFFER', DEFAULTS.hostEventBuffer, 'events'),
    ),
    maxOpenApprovalsPerHost: take(() =>
      countVar(env, 'COUNTERSIGN_MAX_OPEN_APPROVALS_PER_HOST', DEFAULTS.maxOpenApprovalsPerHost, 'approvals'),
    ),
    auditMaxLen: take(() => countVar(env, 'COUNTERSIGN_AUDIT_MAXLEN', DEFAULTS.auditMaxLen, 'entries')),
    refusalMaxLen: take(() => countVar(env, 'COUNTERSIGN_REFUSAL_MAXLEN', DEFAULTS.refusalMaxLen, 'entries')),
    leaseTtlMs: take(() => leaseTtlVar(env)),
  };
  problems.throwIfAny();
  return limits;
}
