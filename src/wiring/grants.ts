import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Authorizer } from '../relay/deciding/authorizer.js';
import { GrantLists } from '../relay/grants/grantLists.js';
import { GrantMaker } from '../relay/grants/grantMaker.js';
import { GrantRevoker } from '../relay/grants/grantRevoker.js';
import type { RecordKeeper } from '../relay/records/recordKeeper.js';
import { FALLBACK_ROUTE_NAME, type Router } from '../routing/router.js';
import type { SlackChannelIds } from '../slack/channelIds.js';
import { SlackGrantLines } from '../slack/slackGrantLines.js';
import type { SlackNoticeSender } from '../slack/slackNotices.js';
import type { ApprovalStore } from '../store/approvalStore.js';
import type { RedisAuditTrail } from '../store/auditStream.js';
import { RedisGrantStore } from '../store/grantStore.js';
import type { RedisClient } from '../store/redisConnection.js';

/** How often expired grants are taken out of Redis (they stop matching the moment they expire). */
const GRANT_SWEEP_MS = 60_000;

export interface GrantsNeeds {
  config: Config;
  logger: Logger;
  redis: RedisClient;
  keeper: RecordKeeper;
  store: ApprovalStore;
  router: Router;
  authorizer: Authorizer;
  /** The IDs of the #names routes may give (wireSlack). */
  channelIds: SlackChannelIds;
  noticeSender: SlackNoticeSender;
  auditTrail: RedisAuditTrail;
}

/**
 * Standing grants: remembered from a card, listed and revoked from Slack, swept once expired.
 * (They answer approvals through the GrantAnswerer, built with the Decider in deciding.ts.)
 */
export function wireGrants({
  config,
  logger,
  redis,
  keeper,
  store,
  router,
  authorizer,
  channelIds,
  noticeSender,
  auditTrail,
}: GrantsNeeds) {
  const grantStore = new RedisGrantStore(redis, {
    logger,
    auditMaxLen: config.auditMaxLen,
    // A use's marks outlive any replay of its decision: the record's life (recordUse).
    useMarkTtlMs: config.resolvedTtlMs,
  });
  const grantMaker = new GrantMaker({
    grants: grantStore,
    keeper,
    record: (approvalId) => store.get(approvalId),
    grantsOf: (route) => router.grantsOf(route),
    logger,
  });
  const grantLines = new SlackGrantLines(noticeSender, { showHost: config.msp.hosts.length > 1 });
  // Expired grants stop matching at once; this only takes them out of Redis, and audits it.
  const grantSweep = setInterval(() => {
    grantStore.sweep(new Date()).catch((err: unknown) => logger.warn({ err }, 'grant sweep failed'));
  }, GRANT_SWEEP_MS);
  grantSweep.unref();
  // Seeing and revoking grants from Slack. The fallback route is a route of its own only when no
  // route of the file catches everything.
  const cardRoutes = config.routes.some((route) => route.match === undefined)
    ? router.all()
    : [...router.all(), { name: FALLBACK_ROUTE_NAME, channel: config.slack.channel }];
  const grantLists = new GrantLists({
    grants: grantStore,
    authorizer,
    routes: () => cardRoutes,
    channelId: (channel) => channelIds.id(channel),
  });
  const revoker = new GrantRevoker({
    grants: grantStore,
    authorizer,
    notices: grantLines,
    audit: auditTrail,
    logger,
  });
  return { grantStore, grantMaker, grantLines, grantLists, revoker, stop: () => clearInterval(grantSweep) };
}
