import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { Authorizer, routeInputOf } from '../relay/deciding/authorizer.js';
import { RiskRules } from '../routing/risks.js';
import { Router, routeName } from '../routing/router.js';
import { ApproverNames, namedInConfig } from '../slack/approverNames.js';
import type { SlackChannelIds } from '../slack/channelIds.js';
import { SlackChannelMembers } from '../slack/channelMembers.js';
import type { BotIdentity } from '../slack/createSlackApp.js';
import { SlackGroupDirectory } from '../slack/groupDirectory.js';
import { SlackPeopleDirectory } from '../slack/peopleDirectory.js';
import { AwayStore } from '../store/awayStore.js';
import { RedisLookupCache } from '../store/lookupCache.js';
import type { RedisClient } from '../store/redisConnection.js';

export interface RoutingNeeds {
  config: Config;
  logger: Logger;
  redis: RedisClient;
  slackClient: WebClient;
  /** Who the bot is, once Slack has said (wireSlack). */
  identity: BotIdentity;
  /** The IDs of the #names routes may give (wireSlack). */
  channelIds: SlackChannelIds;
}

/** Where each approval goes, what it risks, and who may decide it. */
export function wireRouting({ config, logger, redis, slackClient, identity, channelIds }: RoutingNeeds) {
  const router = new Router(config.routes, config.slack.channel, {
    enabled: true,
    caller: 'session',
    ttlMs: config.grants.ttlMs,
    maxTtlMs: config.grants.maxTtlMs,
  });
  const owners = new Map(config.msp.hosts.flatMap((spec) => (spec.owner ? [[spec.id, spec.owner]] : [])));
  // One directory for who may decide and who is on call: one lookup per group, wherever it is asked.
  const groups = new SlackGroupDirectory(slackClient, new RedisLookupCache(redis, 'usergroup'), {
    ttlMs: config.usergroupCacheTtlMs,
    logger,
  });
  // Who is away and whom they chose: read from Redis at every check, so replicas agree at once.
  const away = new AwayStore(redis);
  const authorizer = new Authorizer({
    routeOf: (route) => router.named(route),
    placeNow: (record) => router.placeNow(routeInputOf(record)),
    admins: config.admins,
    ownerOf: (hostId) => owners.get(hostId),
    groups,
    people: new SlackPeopleDirectory(slackClient, new RedisLookupCache(redis, 'person'), {
      ttlMs: config.membershipCacheTtlMs,
    }),
    channels: new SlackChannelMembers(
      slackClient,
      new RedisLookupCache(redis, 'channelMembers'),
      channelIds,
      {
        ttlMs: config.membershipCacheTtlMs,
      },
    ),
    workspace: () =>
      identity.teamId === undefined
        ? undefined
        : {
            teamId: identity.teamId,
            ...(identity.enterpriseId ? { enterpriseId: identity.enterpriseId } : {}),
          },
    standIns: away,
    logger,
  });
  const risks = new RiskRules(config.risks);
  // Names, never mentions, on a card: see renderApprovers.ts.
  const approverNames = new ApproverNames(slackClient, {
    ...namedInConfig(
      [...router.all().map((route) => route.rules), risks.approvers()],
      [...config.admins, ...owners.values()],
    ),
    logger,
  });
  warnOpenRoutes(config, router, logger);
  config.routes.forEach((route, i) => {
    if (route.name !== undefined) return;
    const name = routeName(route);
    logger.info(
      { route: name },
      `routes[${i}] has no name: cards, records and grants call it ${JSON.stringify(name)}, which changes with any change to the route; name it to keep its approvals and grants across edits`,
    );
  });
  return { router, owners, groups, authorizer, risks, approverNames, away };
}

/** Says, once at start-up, where the members of a channel may decide because no approvers are named. */
function warnOpenRoutes(config: Config, router: Router, logger: Logger): void {
  const approversNamed =
    router.namesApprovers() || config.admins.length > 0 || config.risks.some((risk) => risk.approvers);
  if (!approversNamed) {
    logger.warn(
      "no route names approvers: the members of each route's channel may decide its approvals (never guests or users of another Slack team); name routes[].approvers in COUNTERSIGN_CONFIG to restrict who may decide",
    );
  } else {
    for (const name of router.openRoutes()) {
      logger.warn(
        { route: name },
        `route ${JSON.stringify(name)} has no approvers: the members of its channel may decide its approvals`,
      );
    }
  }
}
