// Whether the bot may use a Redis that asks for no password. Approvals, claims and grants are
// plain data in Redis: whatever can write there can write itself a grant and approve its own
// requests, and the agent can reach what the bot reaches (its MSP host runs beside the bot). So a
// Redis reached without a password stops start-up, unless REDIS_ALLOW_NO_PASSWORD=true says that
// nothing else can reach it (docs/security.md).

import type { RedisTarget } from '../store/redisTarget.js';
import { ConfigError, shown } from './common.js';
import { read } from './env/read.js';
import { DEFAULT_REDIS_URL } from './redisConfig.js';

const OPT_IN = 'REDIS_ALLOW_NO_PASSWORD';

function allowNoPasswordVar(env: NodeJS.ProcessEnv): boolean {
  const value = read(env, OPT_IN);
  if (value === undefined || value.toLowerCase() === 'false') return false;
  if (value.toLowerCase() === 'true') return true;
  throw new ConfigError(OPT_IN, `${OPT_IN} must be true or false (got ${shown(value)}): fix or unset it`);
}

/** A user alone (redis://user@host) sends no AUTH: the connection is Redis's default user's. */
function hasPassword(target: RedisTarget): boolean {
  return (target.kind === 'single' ? new URL(target.url).password : (target.password ?? '')) !== '';
}

/** The setting that would carry the password, what lacks it, and how to give it one. */
function missing(
  env: NodeJS.ProcessEnv,
  target: RedisTarget,
): { variable: string; what: string; fix: string } {
  if (target.kind === 'cluster') {
    return {
      variable: 'REDIS_PASSWORD',
      what: 'REDIS_PASSWORD is unset, so the nodes of REDIS_CLUSTER_NODES are reached with no password',
      fix: "set REDIS_PASSWORD to the nodes' password (requirepass)",
    };
  }
  if (read(env, 'REDIS_SENTINELS') !== undefined) {
    return {
      variable: 'REDIS_PASSWORD',
      what: 'REDIS_PASSWORD is unset, so the master the sentinels name is reached with no password',
      fix: "set REDIS_PASSWORD to the master's password (requirepass)",
    };
  }
  if (target.kind === 'sentinel') {
    return {
      variable: 'REDIS_URL',
      what: 'REDIS_URL has no password for the master',
      fix: "put the master's password (requirepass) in it: redis+sentinel://:PASSWORD@host:26379/masterName",
    };
  }
  return {
    variable: 'REDIS_URL',
    what:
      read(env, 'REDIS_URL') === undefined
        ? `REDIS_URL is unset, and its default ${DEFAULT_REDIS_URL} has no password`
        : 'REDIS_URL has no password',
    fix: 'set a password (redis://:PASSWORD@host:6379, requirepass)',
  };
}

/** How the bot may reach Redis: without a password (allowed), and whether it does. */
export interface RedisPasswordPolicy {
  /** REDIS_ALLOW_NO_PASSWORD=true: a Redis that asks for no password is accepted. */
  allowNoPassword: boolean;
  /** The settings give no password (which only allowNoPassword allows). */
  unauthenticated: boolean;
}

/**
 * Whether the bot reaches Redis without a password, which only REDIS_ALLOW_NO_PASSWORD=true
 * allows: without it, a ConfigError naming the setting the password belongs in.
 */
export function redisPasswordPolicy(env: NodeJS.ProcessEnv, target: RedisTarget): RedisPasswordPolicy {
  // Read first, so that a value that is neither true nor false is said even with a password.
  const allowed = allowNoPasswordVar(env);
  if (hasPassword(target)) return { allowNoPassword: allowed, unauthenticated: false };
  if (allowed) return { allowNoPassword: true, unauthenticated: true };
  const { variable, what, fix } = missing(env, target);
  throw new ConfigError(
    variable,
    `${what}: an agent that can reach this Redis could write itself a grant; ${fix} or set ${OPT_IN}=true where nothing else can reach Redis`,
  );
}
