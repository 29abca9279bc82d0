import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { stepRoutingKeys } from '../config/env/pagerDuty.js';
import type { Metrics } from '../domain/metrics.js';
import type { ApprovalRecord } from '../domain/record.js';
import { PagerDuty } from '../pagerduty/pagerDuty.js';
import type { ShownApprovers } from '../relay/deciding/authorizer.js';
import type { Decider } from '../relay/deciding/decider.js';
import type { MayDecide } from '../relay/escalation/escalationSteps.js';
import { Escalator } from '../relay/escalation/escalator.js';
import { OncallResolver } from '../relay/escalation/oncall.js';
import type { RecordKeeper } from '../relay/records/recordKeeper.js';
import type { Router } from '../routing/router.js';
import type { SlackGroupDirectory } from '../slack/groupDirectory.js';
import { SlackEscalationSender, SlackPagerDutyOnCall } from '../slack/slackEscalation.js';
import type { SlackNoticeSender } from '../slack/slackNotices.js';
import type { ApprovalStore } from '../store/approvalStore.js';
import type { AwayStore } from '../store/awayStore.js';
import { EscalationStore } from '../store/escalationStore.js';
import { RedisLookupCache } from '../store/lookupCache.js';
import type { RedisClient } from '../store/redisConnection.js';

export interface EscalationNeeds {
  config: Config;
  logger: Logger;
  redis: RedisClient;
  slackClient: WebClient;
  store: ApprovalStore;
  keeper: RecordKeeper;
  decider: Decider;
  router: Router;
  groups: SlackGroupDirectory;
  /** Who is away: escalation passes them by and reaches their delegates. */
  away: AwayStore;
  /** Whether a delegate may still be reached in someone's place (Authorizer.isMember). */
  mayStandIn: (userId: string) => Promise<boolean>;
  /** Whether a user may decide an approval as its record stands (Authorizer.check): a DM goes to nobody else. */
  mayDecide: MayDecide;
  /** Who may decide an approval as its record stands (Authorizer.shown). */
  shown: (record: ApprovalRecord) => ShownApprovers;
  noticeSender: SlackNoticeSender;
  metrics: Metrics;
}

/** On-call escalation: due steps in Redis, one poll loop, each step fired once (escalator.ts). */
export function wireEscalation(needs: EscalationNeeds) {
  const { config, logger, redis, slackClient, router, groups } = needs;
  const pagerDuty = new PagerDuty({
    eventsUrl: config.pagerDuty.eventsUrl,
    apiUrl: config.pagerDuty.apiUrl,
    ...(config.pagerDuty.apiToken ? { apiToken: config.pagerDuty.apiToken } : {}),
    logger: logger.child({ component: 'pagerduty' }),
  });
  const escalator = new Escalator({
    schedule: new EscalationStore(redis, { lineageTtlMs: 7 * 86_400_000 }),
    store: needs.store,
    keeper: needs.keeper,
    decider: needs.decider,
    slack: new SlackEscalationSender(slackClient, needs.noticeSender),
    pager: pagerDuty,
    oncall: new OncallResolver({
      groups,
      pagerDuty: new SlackPagerDutyOnCall(
        pagerDuty,
        slackClient,
        new RedisLookupCache(redis, 'oncallPagerDuty'),
        { ttlMs: 60_000, logger },
      ),
      logger,
    }),
    ladderOf: (route) => router.escalationOf(route),
    oncallOf: (route) => router.oncallOf(route),
    // The approval's own approvers (a protected write's, a risk rule's), not the route's ordinary ones.
    approversOf: (record) => {
      const { users, usergroups } = needs.shown(record);
      return users || usergroups ? { users: users ?? [], usergroups: usergroups ?? [] } : undefined;
    },
    ...(config.pagerDuty.routingKey ? { defaultRoutingKey: config.pagerDuty.routingKey } : {}),
    // Redis keeps a page by its key's tag: every replica resolves it with the key from its own config.
    routingKeys: stepRoutingKeys(config.routes),
    away: needs.away,
    mayStandIn: needs.mayStandIn,
    // A DM asks its reader to decide: the check a press of its buttons gets, so never one who may
    // read the card but not decide it (the host's owner on a route that bars them, a channel
    // member a risk rule's approvers leave out).
    mayDecide: needs.mayDecide,
    dmMappingTtlMs: Math.max(config.resolvedTtlMs, 7 * 86_400_000),
    metrics: needs.metrics,
    logger: logger.child({ component: 'escalation' }),
  });
  return {
    pagerDuty,
    escalator,
    /** Escalation steps and PagerDuty calls that failed for good, by kind (for /metrics). */
    failures: () => ({
      ...escalator.failures,
      'pagerduty-trigger': pagerDuty.failures.trigger,
      'pagerduty-resolve': pagerDuty.failures.resolve,
      'pagerduty-oncalls': pagerDuty.failures.oncalls,
    }),
  };
}
