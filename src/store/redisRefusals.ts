// Answers from Redis that only the operator can fix: a wrong or missing password, a user without
// the permissions Countersign needs, a database the server does not have. Retrying changes
// nothing, so they stop start-up with one line (wiring/redis.ts) instead of a retry loop whose
// every attempt logs a stack trace.

export type RedisRefusal = 'WRONGPASS' | 'NOAUTH' | 'NOPERM' | 'DB_RANGE';

/** Which refusal an error from ioredis is, if it is one. */
export function redisRefusal(err: unknown): RedisRefusal | undefined {
  const message = err instanceof Error ? err.message : typeof err === 'string' ? err : '';
  // Redis 6+ says WRONGPASS; older servers "ERR invalid password".
  if (/^WRONGPASS\b/.test(message) || /^ERR invalid password\b/.test(message)) return 'WRONGPASS';
  if (/^NOAUTH\b/.test(message)) return 'NOAUTH';
  if (/^NOPERM\b/.test(message)) return 'NOPERM';
  if (/^ERR DB index is out of range\b/.test(message)) return 'DB_RANGE';
  return undefined;
}

/**
 * One sentence naming the setting to fix (`setting`: where the password and database are
 * written, REDIS_URL or REDIS_PASSWORD). Redis's own words are kept: they name the user's
 * missing permission, never a password.
 */
export function describeRedisRefusal(err: unknown, setting: string): string | undefined {
  const refusal = redisRefusal(err);
  if (refusal === undefined) return undefined;
  const said = (err instanceof Error ? err.message : String(err)).split('\n')[0]!.trim();
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
