// The configuration: environment variables (docs/configuration.md), read by section
// in env/, and the COUNTERSIGN_CONFIG file (configFile.ts).

import { statSync } from 'node:fs';
import { z } from 'zod';
import type { HostSpec, RiskRule, Route } from '../domain/route.js';
import type { RedisTarget } from '../store/redisTarget.js';
import { CHANNEL_ID, ConfigError, shown } from './common.js';
import { loadConfigFile } from './configFile.js';
import { DEFAULTS } from './defaults.js';
import { grantsConfig } from './env/grants.js';
import { hostsOf } from './env/hosts.js';
import { limitsConfig } from './env/limits.js';
import { metricsConfig } from './env/metrics.js';
import { checkEscalation, type PagerDutyConfig, pagerDutyConfig } from './env/pagerDuty.js';
import { check, durationVar, read } from './env/read.js';
import { replicaSecretVar } from './env/replicas.js';
import { defaultChannel, type SlackConfig, slackChannelVar, slackConfig } from './env/slack.js';
import { ConfigProblems } from './problems.js';
import { redisTargetOf } from './redisConfig.js';
import { type RedisPasswordPolicy, redisPasswordPolicy } from './redisPassword.js';

/** Pino levels accepted by LOG_LEVEL. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

export { ConfigErrors, eachConfigError } from './problems.js';
export { CHANNEL_ID, ConfigError, DEFAULTS, redisTargetOf, shown };

export interface Config {
  slack: SlackConfig;
  port: number;
  /** METRICS_PORT: /metrics (with /readyz and /healthz) on a port of its own; unset, /metrics is off. */
  metricsPort?: number;
  /** Where Redis is, for messages: REDIS_URL for one server, the same without passwords otherwise. */
  redisUrl: string;
  /** What store/redisConnection.ts connects to: one Redis, a Sentinel set or a Cluster. */
  redis: RedisTarget;
  /**
   * Redis is reached without a password, which REDIS_ALLOW_NO_PASSWORD=true allowed: start-up
   * says so (wiring/redis.ts).
   */
  redisUnauthenticated: boolean;
  /**
   * REDIS_ALLOW_NO_PASSWORD=true: a Redis that asks for no password is accepted. Without it, a
   * password given to a Redis that asks for none stops start-up too (wiring/redis.ts).
   */
  redisAllowNoPassword: boolean;
  msp: {
    /** The hosts to run: the file's `hosts`, else MSP_HOST_COMMAND as host "default". */
    hosts: HostSpec[];
    /** How long one request to the host may take before it is asked again (decide) or fails. */
    requestTimeoutMs: number;
  };
  configPath?: string;
  /** Routes from the COUNTERSIGN_CONFIG file, first match wins; empty without a file. */
  routes: Route[];
  /** Slack user IDs that may decide on every route. */
  admins: string[];
  /** Risk rules from the COUNTERSIGN_CONFIG file (`risks`); empty without a file. */
  risks: RiskRule[];
  grants: { ttlMs: number; maxTtlMs: number };
  /** How long resolved approval records are kept in Redis. */
  resolvedTtlMs: number;
  /** How long a user group's members, read from Slack, are trusted (shared by replicas in Redis). */
  usergroupCacheTtlMs: number;
  /**
   * How long a channel's members and a user's team and guest status, read from Slack, are
   * trusted (shared by replicas in Redis); at most five minutes.
   */
  membershipCacheTtlMs: number;
  /** Host events held while Redis does not answer; past this they are dropped and re-read later. */
  hostEventBuffer: number;
  /**
   * How many approvals one host may have open (stored, with a card) at once; a new one past it
   * stays pending at the host, without a record or a card, until the host is under again.
   */
  maxOpenApprovalsPerHost: number;
  /** About how many entries the audit stream keeps (XADD MAXLEN ~); older ones are trimmed. */
  auditMaxLen: number;
  /** About how many entries the refusal stream keeps (XADD MAXLEN ~), apart from the decisions. */
  refusalMaxLen: number;
  /** How long a host's lease lives unless renewed: how soon a standby replica takes over a host. */
  leaseTtlMs: number;
  /** This replica's name in host leases (COUNTERSIGN_REPLICA_ID); default the machine's hostname. */
  replicaName?: string;
  /**
   * The secret replicas seal what they hand each other with (COUNTERSIGN_REPLICA_SECRET); unset:
   * the bot token, which every replica of one app has.
   */
  replicaSecret?: string;
  pagerDuty: PagerDutyConfig;
  logLevel: LogLevelName;
}

// Not 0: the bot would listen on a port the OS picks and nothing reports, and the image's
// HEALTHCHECK and the probes would ask port 0.
const port = z
  .string()
  .regex(/^\d{1,5}$/)
  .transform(Number)
  .pipe(z.number().int().min(1).max(65535));
const logLevel = z
  .string()
  .transform((s) => s.toLowerCase())
  .pipe(z.enum(LOG_LEVELS));

function configPathVar(env: NodeJS.ProcessEnv): string | undefined {
  const path = read(env, 'COUNTERSIGN_CONFIG');
  if (path === undefined) return undefined;
  let isFile = false;
  try {
    isFile = statSync(path).isFile();
  } catch {
    isFile = false;
  }
  if (!isFile) {
    throw new ConfigError(
      'COUNTERSIGN_CONFIG',
      `COUNTERSIGN_CONFIG points to ${shown(path)}, which is not a readable file: fix the path or unset it`,
    );
  }
  return path;
}

/** The COUNTERSIGN_CONFIG file, read, or nothing when the variable is unset. */
function configFileVar(env: NodeJS.ProcessEnv, sandboxMode: string) {
  const configPath = configPathVar(env);
  return { configPath, file: configPath ? loadConfigFile(configPath, { sandboxMode }) : undefined };
}

function portVar(env: NodeJS.ProcessEnv): number {
  const rawPort = read(env, 'PORT') ?? String(DEFAULTS.port);
  return check(
    'PORT',
    rawPort,
    port,
    `must be an integer from 1 to 65535 (got ${shown(rawPort)}): fix or unset it (default ${DEFAULTS.port})`,
  );
}

function logLevelVar(env: NodeJS.ProcessEnv): LogLevelName {
  const rawLevel = read(env, 'LOG_LEVEL') ?? DEFAULTS.logLevel;
  return check(
    'LOG_LEVEL',
    rawLevel,
    logLevel,
    `must be one of ${LOG_LEVELS.join(', ')} (got ${shown(rawLevel)}): fix or unset it (default ${DEFAULTS.logLevel})`,
  );
}

/**
 * Parses the environment (docs/configuration.md). Throws a ConfigError for a problem found, or a
 * ConfigErrors (problems.ts) naming every one when there are several.
 */
export function loadConfig(env: NodeJS.ProcessEnv): Config {
  // Each part is read on its own (take), so that every invalid setting is reported at once.
  const problems = new ConfigProblems();
  const take = <T>(read: () => T): T | undefined => problems.take(read);

  const slackParts = take(() => slackConfig(env));
  // Apart from the other Slack settings, so that it is checked even when they failed.
  const slackChannel = take(() => ({ value: slackChannelVar(env) }));
  const sandboxMode = read(env, 'MSP_SANDBOX_MODE') ?? DEFAULTS.sandboxMode;
  const fromFile = take(() => configFileVar(env, sandboxMode));
  const configPath = fromFile?.configPath;
  const file = fromFile?.file;
  const routes = file?.routes ?? [];
  // Parts read with the file only once it was read: without it they would say something else.
  const channel = slackChannel && fromFile && take(() => defaultChannel(env, slackChannel.value, routes));
  const hosts = fromFile && take(() => hostsOf(env, configPath, file?.hosts, sandboxMode));
  const requestTimeoutMs = take(() => durationVar(env, 'MSP_REQUEST_TIMEOUT', DEFAULTS.mspRequestTimeout));
  const portNumber = take(() => portVar(env));
  const metrics = portNumber !== undefined ? take(() => metricsConfig(env, portNumber)) : undefined;
  const redis = take(() => redisTargetOf(env));
  const passwordPolicy: RedisPasswordPolicy | undefined =
    redis && take(() => redisPasswordPolicy(env, redis.target));
  const grants = fromFile && hosts && take(() => grantsConfig(env, configPath, routes, hosts));
  const limits = take(() => limitsConfig(env));
  const replicaSecret = take(() => replicaSecretVar(env));
  const pagerDuty = take(() => pagerDutyConfig(env));
  if (fromFile && pagerDuty) take(() => checkEscalation(configPath, routes, pagerDuty));
  const level = take(() => logLevelVar(env));
  problems.throwIfAny();

  // Past throwIfAny every part was read: none is undefined.
  return {
    slack: { ...slackParts!, channel: channel! },
    port: portNumber!,
    ...metrics!,
    redisUrl: redis!.where,
    redis: redis!.target,
    redisUnauthenticated: passwordPolicy!.unauthenticated,
    redisAllowNoPassword: passwordPolicy!.allowNoPassword,
    msp: { hosts: hosts!, requestTimeoutMs: requestTimeoutMs! },
    ...(configPath ? { configPath } : {}),
    routes,
    admins: file?.admins ?? [],
    risks: file?.risks ?? [],
    grants: grants!,
    ...limits!,
    ...(read(env, 'COUNTERSIGN_REPLICA_ID') ? { replicaName: read(env, 'COUNTERSIGN_REPLICA_ID') } : {}),
    ...(replicaSecret ? { replicaSecret } : {}),
    pagerDuty: pagerDuty!,
    logLevel: level!,
  };
}
