import { statSync } from 'node:fs';
import { z } from 'zod';
import type { HostSpec, RiskRule, Route } from '../domain/route.js';
import type { RedisTarget } from '../store/redisTarget.js';
import { parseDuration } from '../util/duration.js';
import { CHANNEL_ID, ConfigError, shown } from './common.js';
import { loadConfigFile } from './configFile.js';
import { DEFAULT_REDIS_URL, redisTargetOf } from './redisConfig.js';

/** Pino levels accepted by LOG_LEVEL. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevelName = (typeof LOG_LEVELS)[number];

export { CHANNEL_ID, ConfigError, redisTargetOf, shown };

export interface Config {
  slack: {
    botToken: string;
    appToken?: string;
    signingSecret?: string;
    /** Web API base URL, always ending in `/`. */
    apiUrl: string;
    /** How long one Web API call may take before its answer counts as lost. */
    apiTimeoutMs: number;
    /** Default channel for cards: SLACK_CHANNEL, else the channel of the file's catch-all route. */
    channel: string;
    mode: 'socket' | 'http';
  };
  port: number;
  /** Where Redis is, for messages: REDIS_URL for one server, the same without passwords otherwise. */
  redisUrl: string;
  /** What store/redisConnection.ts connects to: one Redis, a Sentinel set or a Cluster. */
  redis: RedisTarget;
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
  pagerDuty: { routingKey?: string; apiToken?: string; eventsUrl: string; apiUrl: string };
  logLevel: LogLevelName;
}

export const DEFAULTS = {
  slackApiUrl: 'https://slack.com/api/',
  slackApiTimeout: '10s',
  port: 3000,
  redisUrl: DEFAULT_REDIS_URL,
  hostId: 'default',
  sandboxMode: 'default',
  grantTtl: '8h',
  grantMaxTtl: '7d',
  resolvedTtl: '30d',
  usergroupCacheTtl: '1m',
  membershipCacheTtl: '2m',
  mspRequestTimeout: '30s',
  hostEventBuffer: 10_000,
  auditMaxLen: 100_000,
  refusalMaxLen: 100_000,
  leaseTtl: '15s',
  pagerDutyEventsUrl: 'https://events.pagerduty.com/v2/enqueue',
  pagerDutyApiUrl: 'https://api.pagerduty.com',
  logLevel: 'info',
} as const;

function hasHost(url: string): boolean {
  try {
    return new URL(url).hostname !== '';
  } catch {
    return false;
  }
}

const httpUrl = z.url({ protocol: /^https?$/ }).refine(hasHost, 'missing host');
const port = z
  .string()
  .regex(/^\d{1,5}$/)
  .transform(Number)
  .pipe(z.number().int().min(0).max(65535));
const duration = z
  .string()
  .transform((s) => parseDuration(s))
  .pipe(z.number().int().positive());
/** A channel ID (public C…, private G…) or a #name, which chat.postMessage also accepts. */
const channel = z.string().regex(CHANNEL_ID);
const logLevel = z
  .string()
  .transform((s) => s.toLowerCase())
  .pipe(z.enum(LOG_LEVELS));

/** Reads an env var; empty or whitespace-only counts as unset. */
function read(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const value = env[name]?.trim();
  return value ? value : undefined;
}

function required(env: NodeJS.ProcessEnv, name: string, fix: string): string {
  const value = read(env, name);
  if (value === undefined) throw new ConfigError(name, `${name} is required: ${fix}`);
  return value;
}

/**
 * Tokens and secrets are printable ASCII without spaces. Anything else (`…`, a space, `<your
 * token>`) is a placeholder pasted from the docs; sent as it is, it fails deep inside the HTTP
 * client and the bot retries for ever.
 */
const SECRET_TEXT = /^[\x21-\x7e]+$/;

function secretVar(env: NodeJS.ProcessEnv, name: string, fix: string): string | undefined {
  const value = read(env, name);
  if (value !== undefined && !SECRET_TEXT.test(value)) {
    // Never echoed: it may be a real secret with a stray character.
    throw new ConfigError(
      name,
      `${name} still holds a placeholder (it contains "…", a space or another character a Slack or PagerDuty secret never has): ${fix}`,
    );
  }
  return value;
}

const BOT_TOKEN_FIX =
  "paste the Bot User OAuth Token (xoxb-…) from your Slack app's OAuth & Permissions page";
const APP_TOKEN_FIX =
  "paste an app-level token (xapp-…) with the connections:write scope from your Slack app's Basic Information page, or unset it to use HTTP mode";
const SIGNING_SECRET_FIX = "paste the Signing Secret from your Slack app's Basic Information page";

function check<T>(name: string, value: string, schema: z.ZodType<T, string>, problem: string): T {
  const result = schema.safeParse(value);
  if (!result.success) throw new ConfigError(name, `${name} ${problem}`);
  return result.data;
}

/** Shortest COUNTERSIGN_REPLICA_SECRET: 32 characters, as many bytes as the keys derived from it. */
const MIN_REPLICA_SECRET_LENGTH = 32;

function replicaSecretVar(env: NodeJS.ProcessEnv): string | undefined {
  const fix =
    'set it to the same random string of at least 32 characters on every replica (e.g. `openssl rand -base64 48`), or unset it to use SLACK_BOT_TOKEN';
  const secret = secretVar(env, 'COUNTERSIGN_REPLICA_SECRET', fix);
  if (secret !== undefined && secret.length < MIN_REPLICA_SECRET_LENGTH) {
    // Never echoed, not even its length.
    throw new ConfigError(
      'COUNTERSIGN_REPLICA_SECRET',
      `COUNTERSIGN_REPLICA_SECRET is shorter than ${MIN_REPLICA_SECRET_LENGTH} characters: ${fix}`,
    );
  }
  return secret;
}

/** A lease is renewed every third of its life, with a margin: shorter would renew all the time. */
const MIN_LEASE_TTL_MS = 2_000;
/** What Slack says of channel members, guests and teams is trusted for at most this long. */
const MAX_MEMBERSHIP_CACHE_TTL_MS = 5 * 60_000;

function durationVar(env: NodeJS.ProcessEnv, name: string, fallback: string): number {
  const value = read(env, name) ?? fallback;
  return check(
    name,
    value,
    duration,
    `must be a positive duration such as 30s, 15m, 8h or 7d (got ${shown(value)}): fix or unset it`,
  );
}

/** A positive whole number of `unit` (up to 9 digits). */
function countVar(env: NodeJS.ProcessEnv, name: string, fallback: number, unit: string): number {
  const value = read(env, name) ?? String(fallback);
  return check(
    name,
    value,
    z
      .string()
      .regex(/^\d{1,9}$/)
      .transform(Number)
      .pipe(z.number().int().positive()),
    `must be a positive whole number of ${unit} (got ${shown(value)}): fix or unset it (default ${fallback})`,
  );
}

function urlVar(env: NodeJS.ProcessEnv, name: string, fallback: string): string {
  // The value is not echoed: a URL can carry credentials.
  return check(
    name,
    read(env, name) ?? fallback,
    httpUrl,
    `must be an http(s) URL (default ${fallback}): fix or unset it`,
  );
}

function requiredInHttpMode(env: NodeJS.ProcessEnv, name: string): string {
  const value = secretVar(env, name, SIGNING_SECRET_FIX);
  if (value === undefined) {
    throw new ConfigError(
      name,
      `${name} is required in HTTP mode (SLACK_APP_TOKEN is unset): copy the Signing Secret from your Slack app's Basic Information page, or set SLACK_APP_TOKEN (xapp-…) to use Socket Mode`,
    );
  }
  return value;
}

/** Slack settings; `channel` is unset when SLACK_CHANNEL is, for the config file to supply it. */
function slackConfig(env: NodeJS.ProcessEnv): Omit<Config['slack'], 'channel'> & { channel?: string } {
  // Token values are never put into a message.
  const botToken = check(
    'SLACK_BOT_TOKEN',
    secretVar(env, 'SLACK_BOT_TOKEN', BOT_TOKEN_FIX) ??
      required(
        env,
        'SLACK_BOT_TOKEN',
        "set it to the bot token (xoxb-…) from your Slack app's OAuth & Permissions page",
      ),
    z.string().startsWith('xoxb-'),
    "must start with xoxb-: use the Bot User OAuth Token from your Slack app's OAuth & Permissions page (not a user or app-level token)",
  );
  const rawAppToken = secretVar(env, 'SLACK_APP_TOKEN', APP_TOKEN_FIX);
  const appToken =
    rawAppToken === undefined
      ? undefined
      : check(
          'SLACK_APP_TOKEN',
          rawAppToken,
          z.string().startsWith('xapp-'),
          "must start with xapp-: create an app-level token with the connections:write scope on your Slack app's Basic Information page, or unset it to use HTTP mode",
        );
  const mode = appToken ? 'socket' : 'http';
  const signingSecret =
    mode === 'http'
      ? requiredInHttpMode(env, 'SLACK_SIGNING_SECRET')
      : secretVar(env, 'SLACK_SIGNING_SECRET', SIGNING_SECRET_FIX);
  const apiUrl = urlVar(env, 'SLACK_API_URL', DEFAULTS.slackApiUrl);
  const apiTimeoutMs = durationVar(env, 'SLACK_API_TIMEOUT', DEFAULTS.slackApiTimeout);
  const rawChannel = read(env, 'SLACK_CHANNEL');
  const slackChannel =
    rawChannel === undefined
      ? undefined
      : check(
          'SLACK_CHANNEL',
          rawChannel,
          channel,
          `must be a channel ID such as C0123456789 (or #channel-name) (got ${shown(rawChannel)}): copy the ID from the channel details in Slack`,
        );
  return {
    botToken,
    ...(appToken ? { appToken } : {}),
    ...(signingSecret ? { signingSecret } : {}),
    apiUrl: apiUrl.endsWith('/') ? apiUrl : `${apiUrl}/`,
    apiTimeoutMs,
    ...(slackChannel ? { channel: slackChannel } : {}),
    mode,
  };
}

/** SLACK_CHANNEL wins; without it, a catch-all route's channel is where unrouted cards would go anyway. */
function defaultChannel(env: NodeJS.ProcessEnv, slackChannel: string | undefined, routes: Route[]): string {
  return (
    slackChannel ??
    routes.find((route) => route.match === undefined)?.channel ??
    required(
      env,
      'SLACK_CHANNEL',
      'set it to the ID of the channel for approval cards (C… or G…; shown at the bottom of the channel details in Slack), or add a route without match to COUNTERSIGN_CONFIG',
    )
  );
}

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

/**
 * What a route's grants need of the rest: a TTL within the maximum (a route's own, else the
 * environment's), and an owner on every host whose grants follow `owner`.
 */
function checkRouteGrants(
  configPath: string | undefined,
  routes: readonly Route[],
  hosts: readonly HostSpec[],
  envMaxTtlMs: number,
): void {
  routes.forEach((route, i) => {
    const grants = route.grants;
    if (!grants) return;
    const at = `COUNTERSIGN_CONFIG (${configPath}): routes[${i}].grants`;
    const maxTtlMs = grants.maxTtlMs ?? envMaxTtlMs;
    if (grants.ttlMs !== undefined && grants.ttlMs > (grants.maxTtlMs ?? envMaxTtlMs)) {
      throw new ConfigError(
        'COUNTERSIGN_CONFIG',
        `${at}.ttl is longer than the maximum (${grants.maxTtlMs === undefined ? 'COUNTERSIGN_GRANT_MAX_TTL' : 'maxTtl'}): shorten it or raise the maximum`,
      );
    }
    const longChoice = (grants.choices ?? []).findIndex((c) => c.kind === 'time' && c.ms > maxTtlMs);
    if (grants.maxTtlMs === undefined && longChoice >= 0) {
      throw new ConfigError(
        'COUNTERSIGN_CONFIG',
        `${at}.choices[${longChoice}] is longer than the maximum (COUNTERSIGN_GRANT_MAX_TTL): shorten it or raise the maximum`,
      );
    }
    if (grants.caller !== 'owner') return;
    const matched = route.match?.hosts;
    const ownerless = hosts.find((h) => !h.owner && (!matched || matched.includes(h.id)));
    if (ownerless) {
      throw new ConfigError(
        'COUNTERSIGN_CONFIG',
        `${at}.caller is owner, but host ${shown(ownerless.id)} has no owner: set hosts[].owner, or use caller session or host`,
      );
    }
  });
}

/** The file's hosts, or MSP_HOST_COMMAND as the one host: never both, never neither. */
function hostsOf(
  env: NodeJS.ProcessEnv,
  configPath: string | undefined,
  fileHosts: HostSpec[] | undefined,
  sandboxMode: string,
): HostSpec[] {
  const command = read(env, 'MSP_HOST_COMMAND');
  if (fileHosts) {
    if (command !== undefined) {
      throw new ConfigError(
        'MSP_HOST_COMMAND',
        `MSP_HOST_COMMAND is set and COUNTERSIGN_CONFIG (${configPath}) lists hosts: unset MSP_HOST_COMMAND, or remove hosts from the file`,
      );
    }
    return fileHosts;
  }
  const hostCommand = required(
    env,
    'MSP_HOST_COMMAND',
    'set it to the command line that starts an MSP host speaking NDJSON on stdio (run through /bin/sh -c), or list hosts in COUNTERSIGN_CONFIG',
  );
  return [{ id: DEFAULTS.hostId, command: hostCommand, sandboxMode }];
}

/** What a route's escalation needs of the environment: a routing key to page, a token to ask PagerDuty. */
function checkEscalation(
  configPath: string | undefined,
  routes: readonly Route[],
  pagerDuty: { routingKey?: string; apiToken?: string },
): void {
  routes.forEach((route, i) => {
    const at = `COUNTERSIGN_CONFIG (${configPath}): routes[${i}]`;
    route.escalation?.forEach((step, j) => {
      if (step.action === 'page' && !step.routingKey && !pagerDuty.routingKey) {
        throw new ConfigError(
          'COUNTERSIGN_CONFIG',
          `${at}.escalation[${j}] pages, but there is no routing key: set PAGERDUTY_ROUTING_KEY or the step's routingKey`,
        );
      }
    });
    if (route.oncall?.kind === 'pagerduty' && !pagerDuty.apiToken) {
      throw new ConfigError(
        'COUNTERSIGN_CONFIG',
        `${at}.oncall.pagerduty needs PAGERDUTY_API_TOKEN: set it, or use a usergroup or rotation`,
      );
    }
  });
}

/**
 * Parses the environment (DESIGN §8). Throws a ConfigError for the first problem found.
 */
export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const { channel: slackChannel, ...slackRest } = slackConfig(env);
  const configPath = configPathVar(env);
  const sandboxMode = read(env, 'MSP_SANDBOX_MODE') ?? DEFAULTS.sandboxMode;
  const file = configPath ? loadConfigFile(configPath, { sandboxMode }) : undefined;
  const routes = file?.routes ?? [];
  const slack = { ...slackRest, channel: defaultChannel(env, slackChannel, routes) };
  const hosts = hostsOf(env, configPath, file?.hosts, sandboxMode);
  const requestTimeoutMs = durationVar(env, 'MSP_REQUEST_TIMEOUT', DEFAULTS.mspRequestTimeout);

  const rawPort = read(env, 'PORT') ?? String(DEFAULTS.port);
  const portNumber = check(
    'PORT',
    rawPort,
    port,
    `must be an integer from 0 to 65535 (got ${shown(rawPort)}): fix or unset it (default ${DEFAULTS.port})`,
  );

  const redis = redisTargetOf(env);

  const grantTtlMs = durationVar(env, 'COUNTERSIGN_GRANT_TTL', DEFAULTS.grantTtl);
  const grantMaxTtlMs = durationVar(env, 'COUNTERSIGN_GRANT_MAX_TTL', DEFAULTS.grantMaxTtl);
  if (grantTtlMs > grantMaxTtlMs) {
    throw new ConfigError(
      'COUNTERSIGN_GRANT_TTL',
      'COUNTERSIGN_GRANT_TTL is longer than COUNTERSIGN_GRANT_MAX_TTL: shorten it or raise the maximum',
    );
  }
  checkRouteGrants(configPath, routes, hosts, grantMaxTtlMs);
  const resolvedTtlMs = durationVar(env, 'COUNTERSIGN_RESOLVED_TTL', DEFAULTS.resolvedTtl);
  const usergroupCacheTtlMs = durationVar(env, 'COUNTERSIGN_USERGROUP_CACHE_TTL', DEFAULTS.usergroupCacheTtl);
  const membershipCacheTtlMs = durationVar(
    env,
    'COUNTERSIGN_MEMBERSHIP_CACHE_TTL',
    DEFAULTS.membershipCacheTtl,
  );
  if (membershipCacheTtlMs > MAX_MEMBERSHIP_CACHE_TTL_MS) {
    throw new ConfigError(
      'COUNTERSIGN_MEMBERSHIP_CACHE_TTL',
      `COUNTERSIGN_MEMBERSHIP_CACHE_TTL must be at most 5m (got ${shown(read(env, 'COUNTERSIGN_MEMBERSHIP_CACHE_TTL') ?? '')}): who is in a channel, a guest or another team must not be trusted longer`,
    );
  }
  const hostEventBuffer = countVar(env, 'COUNTERSIGN_HOST_EVENT_BUFFER', DEFAULTS.hostEventBuffer, 'events');
  const auditMaxLen = countVar(env, 'COUNTERSIGN_AUDIT_MAXLEN', DEFAULTS.auditMaxLen, 'entries');
  const refusalMaxLen = countVar(env, 'COUNTERSIGN_REFUSAL_MAXLEN', DEFAULTS.refusalMaxLen, 'entries');
  const leaseTtlMs = durationVar(env, 'COUNTERSIGN_LEASE_TTL', DEFAULTS.leaseTtl);
  if (leaseTtlMs < MIN_LEASE_TTL_MS) {
    throw new ConfigError(
      'COUNTERSIGN_LEASE_TTL',
      `COUNTERSIGN_LEASE_TTL must be at least 2s (got ${shown(read(env, 'COUNTERSIGN_LEASE_TTL') ?? '')}): a lease is renewed every third of it`,
    );
  }
  const replicaSecret = replicaSecretVar(env);

  const routingKey = secretVar(
    env,
    'PAGERDUTY_ROUTING_KEY',
    'paste the integration key of an Events API v2 integration from PagerDuty, or unset it',
  );
  const apiToken = secretVar(
    env,
    'PAGERDUTY_API_TOKEN',
    'paste a REST API key from PagerDuty (Integrations → API Access Keys), or unset it',
  );
  const eventsUrl = urlVar(env, 'PAGERDUTY_EVENTS_URL', DEFAULTS.pagerDutyEventsUrl);
  const pagerDutyApiUrl = urlVar(env, 'PAGERDUTY_API_URL', DEFAULTS.pagerDutyApiUrl);
  checkEscalation(configPath, routes, {
    ...(routingKey ? { routingKey } : {}),
    ...(apiToken ? { apiToken } : {}),
  });

  const rawLevel = read(env, 'LOG_LEVEL') ?? DEFAULTS.logLevel;
  const level = check(
    'LOG_LEVEL',
    rawLevel,
    logLevel,
    `must be one of ${LOG_LEVELS.join(', ')} (got ${shown(rawLevel)}): fix or unset it (default ${DEFAULTS.logLevel})`,
  );

  return {
    slack,
    port: portNumber,
    redisUrl: redis.where,
    redis: redis.target,
    msp: { hosts, requestTimeoutMs },
    ...(configPath ? { configPath } : {}),
    routes,
    admins: file?.admins ?? [],
    risks: file?.risks ?? [],
    grants: { ttlMs: grantTtlMs, maxTtlMs: grantMaxTtlMs },
    resolvedTtlMs,
    usergroupCacheTtlMs,
    membershipCacheTtlMs,
    hostEventBuffer,
    auditMaxLen,
    refusalMaxLen,
    leaseTtlMs,
    ...(read(env, 'COUNTERSIGN_REPLICA_ID') ? { replicaName: read(env, 'COUNTERSIGN_REPLICA_ID') } : {}),
    ...(replicaSecret ? { replicaSecret } : {}),
    pagerDuty: {
      ...(routingKey ? { routingKey } : {}),
      ...(apiToken ? { apiToken } : {}),
      eventsUrl,
      apiUrl: pagerDutyApiUrl,
    },
    logLevel: level,
  };
}
