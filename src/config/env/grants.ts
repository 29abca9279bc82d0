// Standing grants: the environment's default and longest TTL, and what each route's own grants
// settings need of them and of the hosts.

import type { HostSpec, Route } from '../../domain/route.js';
import { ConfigError, shown } from '../common.js';
import { DEFAULTS } from '../defaults.js';
import { durationVar } from './read.js';

/** COUNTERSIGN_GRANT_TTL and COUNTERSIGN_GRANT_MAX_TTL, checked against each other and the routes. */
export function grantsConfig(
  env: NodeJS.ProcessEnv,
  configPath: string | undefined,
  routes: readonly Route[],
  hosts: readonly HostSpec[],
): { ttlMs: number; maxTtlMs: number } {
  // A grant ends at a time kept with it in Redis and checked when it is used: no timer waits for it.
  const grantTtlMs = durationVar(env, 'COUNTERSIGN_GRANT_TTL', DEFAULTS.grantTtl, 'redis');
  const grantMaxTtlMs = durationVar(env, 'COUNTERSIGN_GRANT_MAX_TTL', DEFAULTS.grantMaxTtl, 'redis');
  if (grantTtlMs > grantMaxTtlMs) {
    throw new ConfigError(
      'COUNTERSIGN_GRANT_TTL',
      'COUNTERSIGN_GRANT_TTL is longer than COUNTERSIGN_GRANT_MAX_TTL: shorten it or raise the maximum',
    );
  }
  checkRouteGrants(configPath, routes, hosts, grantMaxTtlMs);
  return { ttlMs: grantTtlMs, maxTtlMs: grantMaxTtlMs };
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
