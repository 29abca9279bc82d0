import type { StatsView } from '../cards/renderStats.js';
import type { StatsSummary } from '../domain/decisionStats.js';
import type { Authorizer } from '../relay/deciding/authorizer.js';

export const STATS_WINDOWS = { '7d': 7 * 86_400_000, '30d': 30 * 86_400_000 } as const;
export type StatsWindow = keyof typeof STATS_WINDOWS;

export interface UserStatsOptions {
  /** The window's summary over every route (store/decisionStatsReader.ts), at most `staleMs` old. */
  summary: (windowMs: number, staleMs?: number) => Promise<StatsSummary>;
  authorizer: Pick<Authorizer, 'actsAsAdmin' | 'decidesOn'>;
  /** The routes of the file, the fallback included when a card can reach it. */
  routeNames: () => readonly string[];
}

/** What `/countersign stats` was asked: `[route] [7d|30d]`, in either order. */
export interface StatsQuery {
  window: StatsWindow;
  route?: string;
  /** How old a summary may be though decisions came since (App Home); fresh when absent. */
  staleMs?: number;
}

export function parseStatsArgs(args: readonly string[]): StatsQuery {
  let window: StatsWindow = '7d';
  const words: string[] = [];
  for (const arg of args) {
    const lower = arg.toLowerCase();
    if (lower === '7d' || lower === '30d') window = lower;
    else if (arg !== '') words.push(arg);
  }
  return words.length > 0 ? { window, route: words.join(' ') } : { window };
}

/**
 * Which routes a user may see stats of: `all` for an admin (the ones gone from the file
 * included), else those named. A flag, not a name: a route may be called anything, `*` too.
 */
type Visible = { all: true } | { all: false; routes: ReadonlySet<string> };

/**
 * The routes `userId` may see stats of: those they decide ordinary approvals on, checked as a
 * click would be (strangers and guests get none unless the route lets them in); every route for
 * an admin. Undefined when that is none at all.
 */
async function visibleRoutes(userId: string, options: UserStatsOptions): Promise<Visible | undefined> {
  const { authorizer } = options;
  if (await authorizer.actsAsAdmin(userId)) return { all: true };
  const names = options.routeNames();
  const allowed = await Promise.all(names.map((name) => authorizer.decidesOn(userId, name)));
  const routes = new Set(names.filter((_, i) => allowed[i]));
  return routes.size > 0 ? { all: false, routes } : undefined;
}

/**
 * The stats one user may see, or undefined when they approve on no route (or asked for a route
 * they may not see, which is answered the same way as one that does not exist).
 */
export async function statsFor(
  userId: string,
  query: StatsQuery,
  options: UserStatsOptions,
): Promise<StatsView | undefined> {
  const visible = await visibleRoutes(userId, options);
  if (!visible) return undefined;
  const may = (route: string) => visible.all || visible.routes.has(route);
  if (query.route !== undefined && !may(query.route)) return undefined;
  const summary = await options.summary(STATS_WINDOWS[query.window], query.staleMs);
  const routes = summary.routes.filter(
    (r) => may(r.route) && (query.route === undefined || r.route === query.route),
  );
  return { window: query.window, routes, capped: summary.capped, read: summary.read };
}
