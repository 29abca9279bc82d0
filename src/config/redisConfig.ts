// Where Redis is: one server (REDIS_URL), a Sentinel set (a redis+sentinel:// REDIS_URL, or
// REDIS_SENTINELS with REDIS_SENTINEL_NAME) or a Redis Cluster (REDIS_CLUSTER_NODES).
// docs/configuration.md documents each variable; store/redisConnection.ts builds the client.

import { z } from 'zod';
import type { HostPort, RedisTarget } from '../store/redisTarget.js';
import { ConfigError, shown } from './common.js';
import { hasHost, read } from './env/read.js';
import { ConfigProblems } from './problems.js';

export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';
const DEFAULT_SENTINEL_PORT = 26379;
const DEFAULT_CLUSTER_PORT = 6379;

/** The variables that each name a whole Redis deployment: at most one may be set. */
const KINDS = ['REDIS_URL', 'REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'] as const;

const redisUrl = z.url({ protocol: /^rediss?$/ }).refine(hasHost, 'missing host');

/** `host:port,host:port`; `[v6]:port` for IPv6; the port may be left out. Undefined if malformed. */
function hostPorts(text: string, defaultPort: number): HostPort[] | undefined {
  const out: HostPort[] = [];
  for (const part of text.split(',').map((p) => p.trim())) {
    const match = /^(?:\[([0-9a-fA-F:.]+)\]|([^\s:[\]/@?#]+))(?::(\d{1,5}))?$/.exec(part);
    if (!match) return undefined;
    const port = match[3] === undefined ? defaultPort : Number(match[3]);
    if (port < 1 || port > 65535) return undefined;
    out.push({ host: match[1] ?? match[2]!, port });
  }
  return out;
}

/**
 * A host list as written, for an error message, unless it may carry a password: redis://user:pw@h
 * or user:pw@h (an "@"), or ?password=… (a query). A password can hold any character, so it is
 * not cut out of the value: the whole value is left unshown.
 */
function shownHosts(value: string): string {
  return /[@?]/.test(value) ? 'a value with "@" or "?", not shown: it may carry a password' : shown(value);
}

function listVar(env: NodeJS.ProcessEnv, name: string, defaultPort: number, what: string): HostPort[] {
  const value = read(env, name)!;
  const list = hostPorts(value, defaultPort);
  if (!list) {
    throw new ConfigError(
      name,
      `${name} must list ${what} as host:port,host:port (got ${shownHosts(value)}): fix or unset it`,
    );
  }
  return list;
}

/**
 * A part of REDIS_URL with its %-escapes undone. A "%" that starts no escape (a password with a
 * bare %) would throw a URIError, at start-up here or later in the client: one line instead,
 * never echoing the part (it may be the password).
 */
function decoded(text: string, part: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new ConfigError(
      'REDIS_URL',
      `REDIS_URL has a "%" not followed by two hex digits in its ${part}: write it as %25`,
    );
  }
}

const SENTINEL_URL_FORM = 'redis+sentinel://[[user]:password@]host:port,host:port/masterName[?db=N]';

/** A redis+sentinel:// REDIS_URL. Its value is never echoed: it may carry a password. */
function sentinelUrl(value: string): Omit<Extract<RedisTarget, { kind: 'sentinel' }>, 'sentinelPassword'> {
  const bad = (why: string) =>
    new ConfigError('REDIS_URL', `REDIS_URL ${why}: write it as ${SENTINEL_URL_FORM}, or fix or unset it`);
  const match = /^redis\+sentinel:\/\/(?:([^@/]*)@)?([^/?#@]+)\/([^/?#]+)\/?(?:\?([^#]*))?$/.exec(value);
  if (!match) throw bad('is not a valid redis+sentinel:// URL');
  const [, userinfo, hosts, name, query] = match;
  const sentinels = hostPorts(hosts!, DEFAULT_SENTINEL_PORT);
  if (!sentinels) throw bad('lists its sentinels wrongly');
  let db = 0;
  for (const pair of (query ?? '').split('&').filter(Boolean)) {
    const [key, val] = pair.split('=');
    if (key !== 'db' || val === undefined || !/^\d{1,5}$/.test(val))
      throw bad('has a query other than ?db=N');
    db = Number(val);
  }
  const colon = userinfo?.indexOf(':') ?? -1;
  const username =
    userinfo === undefined
      ? ''
      : decoded(colon < 0 ? userinfo : userinfo.slice(0, colon), 'user or password');
  const password = colon < 0 ? '' : decoded(userinfo!.slice(colon + 1), 'user or password');
  return {
    kind: 'sentinel',
    sentinels,
    name: decoded(name!, 'master name'),
    db,
    ...(username ? { username } : {}),
    ...(password ? { password } : {}),
  };
}

function notWith(env: NodeJS.ProcessEnv, name: string, fix: string): void {
  if (read(env, name) !== undefined) throw new ConfigError(name, `${name} is set, but ${fix}`);
}

/** Where Redis is, and `where`: the same without passwords, for messages and the start-up log. */
type Located = { target: RedisTarget; where: string };

/**
 * Where Redis is, and `where` (REDIS_URL itself for one server, so that what was logged before
 * stays as it was). Every invalid variable is named at once (problems.ts), not only the first.
 */
export function redisTargetOf(env: NodeJS.ProcessEnv): Located {
  const set = KINDS.filter((name) => read(env, name) !== undefined);
  // One error only: which of the other variables apply depends on which of these is meant.
  if (set.length > 1) {
    throw new ConfigError(
      set[1]!,
      `${set[0]} and ${set[1]} are both set: set only one of ${KINDS.join(', ')} (one Redis, a Sentinel set or a Cluster)`,
    );
  }
  const kind = set[0] ?? 'REDIS_URL';
  const problems = new ConfigProblems();
  if (kind !== 'REDIS_SENTINELS') problems.take(() => sentinelNameAlone(env));
  const located =
    kind === 'REDIS_CLUSTER_NODES'
      ? clusterTarget(env, problems)
      : kind === 'REDIS_SENTINELS'
        ? sentinelsTarget(env, problems)
        : urlTarget(env, problems);
  problems.throwIfAny();
  // Past throwIfAny the target was read.
  return located!;
}

function sentinelNameAlone(env: NodeJS.ProcessEnv): void {
  if (read(env, 'REDIS_SENTINEL_NAME') === undefined) return;
  throw new ConfigError(
    'REDIS_SENTINEL_NAME',
    'REDIS_SENTINEL_NAME is set without REDIS_SENTINELS: set REDIS_SENTINELS to the sentinels (host:port,host:port), or unset REDIS_SENTINEL_NAME',
  );
}

function sentinelName(env: NodeJS.ProcessEnv): string {
  const name = read(env, 'REDIS_SENTINEL_NAME');
  if (name !== undefined) return name;
  throw new ConfigError(
    'REDIS_SENTINEL_NAME',
    'REDIS_SENTINEL_NAME is required with REDIS_SENTINELS: set it to the name of the master the sentinels monitor',
  );
}

function clusterTarget(env: NodeJS.ProcessEnv, problems: ConfigProblems): Located | undefined {
  problems.take(() =>
    notWith(
      env,
      'REDIS_SENTINEL_PASSWORD',
      'no Sentinel is configured (REDIS_CLUSTER_NODES names a Cluster): unset it',
    ),
  );
  const nodes = problems.take(() =>
    listVar(env, 'REDIS_CLUSTER_NODES', DEFAULT_CLUSTER_PORT, 'seed nodes of the Cluster'),
  );
  if (nodes === undefined) return undefined;
  const password = read(env, 'REDIS_PASSWORD');
  return {
    target: { kind: 'cluster', nodes, ...(password ? { password } : {}) },
    where: `cluster ${nodes.map(hostPort).join(',')}`,
  };
}

function sentinelsTarget(env: NodeJS.ProcessEnv, problems: ConfigProblems): Located | undefined {
  const name = problems.take(() => sentinelName(env));
  const sentinels = problems.take(() =>
    listVar(env, 'REDIS_SENTINELS', DEFAULT_SENTINEL_PORT, 'the sentinels'),
  );
  if (name === undefined || sentinels === undefined) return undefined;
  const password = read(env, 'REDIS_PASSWORD');
  const sentinelPassword = read(env, 'REDIS_SENTINEL_PASSWORD');
  return {
    target: {
      kind: 'sentinel',
      sentinels,
      name,
      db: 0,
      ...(password ? { password } : {}),
      ...(sentinelPassword ? { sentinelPassword } : {}),
    },
    where: sentinelWhere(sentinels, name, 0),
  };
}

/** REDIS_URL: one server, or a Sentinel set as a redis+sentinel:// URL. */
function urlTarget(env: NodeJS.ProcessEnv, problems: ConfigProblems): Located | undefined {
  const url = read(env, 'REDIS_URL') ?? DEFAULT_REDIS_URL;
  problems.take(() =>
    notWith(
      env,
      'REDIS_PASSWORD',
      'it only applies to REDIS_SENTINELS and REDIS_CLUSTER_NODES: put the password in REDIS_URL (redis://:password@host:6379) and unset REDIS_PASSWORD',
    ),
  );
  if (url.startsWith('redis+sentinel:')) {
    const target = problems.take(() => sentinelUrl(url));
    if (target === undefined) return undefined;
    const sentinelPassword = read(env, 'REDIS_SENTINEL_PASSWORD');
    return {
      target: { ...target, ...(sentinelPassword ? { sentinelPassword } : {}) },
      where: sentinelWhere(target.sentinels, target.name, target.db),
    };
  }
  problems.take(() =>
    notWith(
      env,
      'REDIS_SENTINEL_PASSWORD',
      'no Sentinel is configured: unset it, or name the sentinels in REDIS_URL or REDIS_SENTINELS',
    ),
  );
  const single = problems.take(() => singleUrl(url));
  return single === undefined ? undefined : { target: { kind: 'single', url: single }, where: single };
}

function singleUrl(url: string): string {
  const result = redisUrl.safeParse(url);
  if (!result.success) {
    throw new ConfigError(
      'REDIS_URL',
      `REDIS_URL must be a redis:// or rediss:// URL such as ${DEFAULT_REDIS_URL}, or a Sentinel set as ${SENTINEL_URL_FORM}: fix or unset it`,
    );
  }
  checkUrlParts(new URL(result.data));
  return result.data;
}

/**
 * What the client would take from a redis:// URL beyond its host: the port, the database (its
 * path) and options (its query). ioredis takes any path as the database, so `/abc` would only
 * fail later, as `SELECT NaN` on every connection. Nothing here echoes the password, not even
 * a password cut short into the path (cutAuthority).
 */
function checkUrlParts(url: URL): void {
  const bad = (why: string) =>
    new ConfigError(
      'REDIS_URL',
      `REDIS_URL ${why}: write it as redis://[[user]:password@]host[:port][/db], or fix or unset it`,
    );
  cutAuthority(url);
  if (url.port === '0') throw bad('names port 0');
  // The client undoes the escapes of both (ioredis parseURL) and throws a URIError on a bare "%".
  decoded(url.username, 'user or password');
  decoded(url.password, 'user or password');
  const path = url.pathname;
  if (path !== '' && path !== '/' && !/^\/\d{1,9}$/.test(path)) {
    const db = path.slice(1);
    throw bad(
      `names database ${shown(/%(?![0-9a-fA-F]{2})/.test(db) ? db : decodeURIComponent(db))}, which is not a number (0 to 15 on a default Redis)`,
    );
  }
  // A query would set client options unseen (ioredis reads any of them), a fragment nothing.
  if (url.search !== '') throw bad('has a query (?…), which Countersign does not read');
  if (url.hash !== '') throw bad('has a fragment (#…)');
}

/**
 * A "/", "?" or "#" in the user or password ends the URL's authority there: its start becomes
 * the host and port, the rest (up to the "@" and beyond) the database, query or fragment. Those
 * parts are echoed elsewhere; here they may be the password, so nothing of them is.
 */
function cutAuthority(url: URL): void {
  const afterHost = `${url.pathname}${url.search}${url.hash}`;
  if (!afterHost.includes('@')) return;
  throw new ConfigError(
    'REDIS_URL',
    `REDIS_URL has a "${afterHost[0]}" before its "@", which ends the user and password early (not shown: it may hold the password): write "/" in them as %2F, "?" as %3F and "#" as %23`,
  );
}

function hostPort({ host, port }: HostPort): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

function sentinelWhere(sentinels: HostPort[], name: string, db: number): string {
  return `redis+sentinel://${sentinels.map(hostPort).join(',')}/${encodeURIComponent(name)}${db ? `?db=${db}` : ''}`;
}
