// Answers from Redis that only the operator can fix: a wrong or missing password, a user without
// the permissions Countersign needs, a database the server does not have. Retrying changes
// nothing, so they stop start-up with one line (wiring/redis.ts) instead of a retry loop whose
// every attempt logs a stack trace.

import type { RedisTarget } from './redisTarget.js';

export type RedisRefusal = 'WRONGPASS' | 'NOAUTH' | 'NOPERM' | 'DB_RANGE';

/** Which refusal an error from ioredis is, if it is one. */
export function redisRefusal(err: unknown): RedisRefusal | undefined {
  return refusalOf(messageOf(refusingError(err)));
}

function refusalOf(message: string): RedisRefusal | undefined {
  // Redis 6+ says WRONGPASS; older servers "ERR invalid password".
  if (/^WRONGPASS\b/.test(message) || /^ERR invalid password\b/.test(message)) return 'WRONGPASS';
  if (/^NOAUTH\b/.test(message)) return 'NOAUTH';
  if (/^NOPERM\b/.test(message)) return 'NOPERM';
  if (/^ERR DB index is out of range\b/.test(message)) return 'DB_RANGE';
  return undefined;
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : typeof err === 'string' ? err : '';
}

/**
 * The error carrying Redis's answer. ioredis's Cluster wraps whatever stopped it reading the
 * slots (AUTH refused, NOPERM on CLUSTER SLOTS) in a ClusterAllFailedError, "Failed to refresh
 * slots cache.", with Redis's own answer only in its lastNodeError.
 */
function refusingError(err: unknown): unknown {
  if (refusalOf(messageOf(err)) !== undefined) return err;
  const lastNodeError = err instanceof Error ? (err as { lastNodeError?: unknown }).lastNodeError : undefined;
  return lastNodeError ?? err;
}

/**
 * One sentence naming the setting to fix (`setting`: where the password and database are
 * written, REDIS_URL or REDIS_PASSWORD). Redis's own words are kept: they name the user's
 * missing permission, never a password.
 */
export function describeRedisRefusal(err: unknown, setting: string): string | undefined {
  const refusal = redisRefusal(err);
  if (refusal === undefined) return undefined;
  const refusing = refusingError(err);
  const said = (refusing instanceof Error ? refusing.message : String(refusing)).split('\n')[0]!.trim();
  switch (refusal) {
    case 'WRONGPASS':
      return `Redis refused the user or password in ${setting} (${said}): fix the password there, or the Redis user it names`;
    case 'NOAUTH':
      return `Redis asks for a password and ${setting} gives none (${said}): add it, as redis://:password@host:6379 in REDIS_URL or in REDIS_PASSWORD`;
    case 'NOPERM':
      return `the Redis user in ${setting} lacks a permission Countersign needs (${said}): allow it every command on the keys cs:* (ACL SETUSER <user> ~cs:* +@all), or use another user`;
    case 'DB_RANGE':
      return `REDIS_URL names a database this Redis does not have (${said}; it has 16, 0 to 15, unless its databases setting says more): pick one it has`;
  }
}

/** Where the operator wrote the password and the database, for the refusal's one line. */
export function refusalSetting(target: RedisTarget): string {
  if (target.kind === 'cluster') return 'REDIS_PASSWORD';
  if (target.kind === 'sentinel') return 'REDIS_URL or REDIS_PASSWORD';
  return 'REDIS_URL';
}
