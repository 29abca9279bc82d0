import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Authorizer } from '../relay/deciding/authorizer.js';
import type { GrantLists } from '../relay/grants/grantLists.js';
import { FALLBACK_ROUTE_NAME, type Router } from '../routing/router.js';
import { HomeTab } from '../slack/homeTab.js';
import type { Permalinks } from '../slack/permalinks.js';
import { slackViews } from '../slack/slackViews.js';
import type { UserStatsOptions } from '../slack/userStats.js';
import { WaitingApprovals } from '../slack/waitingApprovals.js';
import type { ApprovalStore } from '../store/approvalStore.js';
import type { AwayStore } from '../store/awayStore.js';
import { DecisionStatsReader } from '../store/decisionStatsReader.js';
import { HomeViewers } from '../store/homeViewers.js';
import { RecentDecisions } from '../store/recentDecisions.js';
import type { RedisClient } from '../store/redisConnection.js';

export interface HomeNeeds {
  config: Config;
  logger: Logger;
  redis: RedisClient;
  slackClient: WebClient;
  store: ApprovalStore;
  authorizer: Authorizer;
  router: Router;
  grantLists: GrantLists;
  /** Who is away, shown on each user's Home. */
  away: AwayStore;
  /** Whether the hosts and Redis are up, shown on App Home (health.ts). */
  health: { hosts(): boolean; redis(): boolean };
  /** Card links (wireSlack's, shared). */
  permalinks: Permalinks;
}

/** What /countersign and App Home show each user. */
export function wireHome({
  config,
  logger,
  redis,
  slackClient,
  store,
  authorizer,
  router,
  grantLists,
  away,
  health,
  permalinks,
}: HomeNeeds) {
  const reader = new DecisionStatsReader(redis);
  // The fallback is a route of its own only when no route of the file catches everything.
  const routeNames = [
    ...router.all().map((r) => r.name),
    ...(config.routes.some((r) => r.match === undefined) ? [] : [FALLBACK_ROUTE_NAME]),
  ];
  const stats: UserStatsOptions = {
    summary: (windowMs, staleMs) => reader.summary(windowMs, staleMs),
    authorizer,
    routeNames: () => routeNames,
  };
  const waiting = new WaitingApprovals({
    redis,
    store,
    hostIds: config.msp.hosts.map((spec) => spec.id),
    authorizer,
    permalinks,
  });
  const home = new HomeTab({
    views: slackViews(slackClient),
    waiting,
    recent: new RecentDecisions(redis, config.resolvedTtlMs),
    // A member of the team sees what they decided; anyone else only while a route still lets them
    // decide where it was decided (a guest on a route with allowGuests).
    mayRecall: async (userId, decision) =>
      (await authorizer.isMember(userId)) ||
      (decision.route !== undefined && (await authorizer.decidesOn(userId, decision.route))),
    // Opened in the last half hour: likely still on screen, worth publishing again on changes.
    viewers: new HomeViewers(redis, 30 * 60_000),
    // Checked at every publish: a stranger no route lets in is shown nothing but why.
    stranger: (userId) => authorizer.asStranger(userId, routeNames),
    permalinks,
    channel: config.slack.channel,
    status: () => ({ host: health.hosts(), redis: health.redis() }),
    grants: (userId) => grantLists.forHome(userId),
    stats,
    away,
    logger,
  });
  return { waiting, home, stats };
}
