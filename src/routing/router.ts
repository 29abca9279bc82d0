import picomatch from 'picomatch';
import type { Route } from './routeConfig.js';

/** What an approval is routed on. */
export interface RouteInput {
  hostId: string;
  tool: string;
  workspaceRoot?: string;
}

type Test = (input: RouteInput) => boolean;

/** All of a route's match fields must hold; a route without any catches everything. */
function compile(route: Route): Test {
  const tests: Test[] = [];
  const { hosts, tools, workspaces } = route.match ?? {};
  if (hosts) {
    const ids = new Set(hosts);
    tests.push((input) => ids.has(input.hostId));
  }
  if (tools) {
    const isTool = picomatch(tools, { dot: true });
    tests.push((input) => isTool(input.tool));
  }
  if (workspaces) {
    const isWorkspace = picomatch(workspaces, { dot: true });
    // Unknown workspace never matches: a route scoped to some workspaces must not catch the rest.
    tests.push((input) => input.workspaceRoot !== undefined && isWorkspace(input.workspaceRoot));
  }
  return (input) => tests.every((test) => test(input));
}

/** The route an approval's card follows: its name (stored with the record) and its channel. */
export interface ChosenRoute {
  name: string;
  channel: string;
}

/** What the record says when no route of the file matched: the card went to SLACK_CHANNEL. */
export const FALLBACK_ROUTE_NAME = '(SLACK_CHANNEL)';

/** Picks the route, and so the channel, of an approval card from the configured routes. */
export class Router {
  private readonly routes: Array<ChosenRoute & { matches: Test }>;
  private readonly fallback: ChosenRoute;

  constructor(routes: Route[], fallbackChannel: string) {
    // An unnamed route is named by its place in the file, which is how errors name it too.
    this.routes = routes.map((route, i) => ({
      name: route.name ?? `routes[${i}]`,
      channel: route.channel,
      matches: compile(route),
    }));
    this.fallback = { name: FALLBACK_ROUTE_NAME, channel: fallbackChannel };
  }

  /** The first matching route, else the fallback. */
  routeFor(input: RouteInput): ChosenRoute {
    const route = this.routes.find((r) => r.matches(input));
    return route ? { name: route.name, channel: route.channel } : this.fallback;
  }

  /** The channel of routeFor(input). */
  channelFor(input: RouteInput): string {
    return this.routeFor(input).channel;
  }
}
