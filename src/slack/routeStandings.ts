import type { RouteStanding } from '../cards/renderCommandAnswers.js';
import type { HostSpec, Route } from '../domain/route.js';
import type { Authorizer } from '../relay/deciding/authorizer.js';
import { FALLBACK_ROUTE_NAME, type Router } from '../routing/router.js';

export interface RouteStandingsOptions {
  router: Router;
  /** The file's routes, to tell whether one catches everything (then the fallback is never used). */
  routes: readonly Route[];
  /** SLACK_CHANNEL, or the catch-all route's channel. */
  fallbackChannel: string;
  hosts: readonly HostSpec[];
  authorizer: Authorizer;
}

/**
 * Where a user stands on every route (/countersign whoami). Each route is checked as a click on
 * one of its cards would be, once for ordinary approvals and once for protected writes when the
 * route has approvers of their own; the owner rule is named apart, since it depends on the host.
 */
export async function routeStandings(
  userId: string,
  options: RouteStandingsOptions,
): Promise<RouteStanding[]> {
  const { authorizer } = options;
  const ownsAHost = options.hosts.some((host) => host.owner === userId);
  const routes = everyRoute(options);
  // No host id: the owner rule is reported as notOwnAgents, not as a refusal of the whole route.
  const check = (route: string, protectedWrite: boolean) =>
    authorizer.check(userId, { route, protectedWrite, hostId: '' });
  return Promise.all(
    routes.map(async ({ name, channel, rules }) => {
      const [ordinary, protectedWrite] = await Promise.all([
        check(name, false),
        rules.protectedWriteApprovers ? check(name, true) : undefined,
      ]);
      return {
        route: name,
        channel,
        ordinary,
        ...(protectedWrite ? { protectedWrite } : {}),
        notOwnAgents: ownsAHost && !rules.allowSelfApproval,
      };
    }),
  );
}

/** Every route a card can be placed by: the file's, and the fallback unless a route catches everything. */
export function everyRoute(options: Pick<RouteStandingsOptions, 'router' | 'routes' | 'fallbackChannel'>) {
  const { router } = options;
  const routes = router.all().map(({ name, channel, rules }) => ({ name, channel, rules }));
  if (!options.routes.some((route) => route.match === undefined)) {
    const rules = router.rulesOf(FALLBACK_ROUTE_NAME);
    if (rules) routes.push({ name: FALLBACK_ROUTE_NAME, channel: options.fallbackChannel, rules });
  }
  return routes;
}
