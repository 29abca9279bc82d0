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

/** Picks the channel for an approval card from the configured routes. */
export class Router {
  private readonly routes: { channel: string; matches: Test }[];

  constructor(
    routes: Route[],
    private readonly fallbackChannel: string,
  ) {
    this.routes = routes.map((route) => ({ channel: route.channel, matches: compile(route) }));
  }

  /** The first matching route's channel, else the fallback. */
  channelFor(input: RouteInput): string {
    return this.routes.find((route) => route.matches(input))?.channel ?? this.fallbackChannel;
  }
}
