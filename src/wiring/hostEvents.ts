import type { Logger } from 'pino';
import { renderHostCapLine } from '../cards/renderHostCap.js';
import { renderTakenIdLine } from '../cards/renderTakenId.js';
import type { Config } from '../config/config.js';
import type { Metrics } from '../domain/metrics.js';
import type { HostFleet } from '../msp/hostFleet.js';
import type { Decider } from '../relay/deciding/decider.js';
import type { GrantAnswerer } from '../relay/grants/grantAnswerer.js';
import { HostEventHandler } from '../relay/hostEvents/hostEventHandler.js';
import { OpenApprovalCap } from '../relay/hostEvents/openApprovalCap.js';
import type { RecordFollowers } from '../relay/records/recordFollowers.js';
import type { RecordKeeper } from '../relay/records/recordKeeper.js';
import type { FenceBook } from '../replicas/fenceBook.js';
import type { RiskInput, RiskRules } from '../routing/risks.js';
import type { Router } from '../routing/router.js';
import type { SlackNoticeSender } from '../slack/slackNotices.js';
import type { ApprovalStore } from '../store/approvalStore.js';
import type { RedisAuditTrail } from '../store/auditStream.js';
import type { RedisHealth } from '../store/redisHealth.js';

export interface HostEventsNeeds {
  config: Config;
  logger: Logger;
  store: ApprovalStore;
  keeper: RecordKeeper;
  auditTrail: RedisAuditTrail;
  redisHealth: RedisHealth;
  hosts: HostFleet;
  fences: FenceBook;
  decider: Decider;
  grantAnswerer: GrantAnswerer;
  router: Router;
  risks: RiskRules;
  owners: ReadonlyMap<string, string>;
  metrics: Metrics;
  /** The cap on a host's open approvals follows the records' closes. */
  followers: RecordFollowers;
  /** Where the lines saying a host reached its cap, or asked another host's approval id, are posted. */
  noticeSender: SlackNoticeSender;
}

/** What the hosts say (approvals asked, resolved, gone) becomes records and cards. */
export function wireHostEvents(needs: HostEventsNeeds) {
  const { config, router, risks, owners, hosts, fences } = needs;
  const specs = new Map(config.msp.hosts.map((spec) => [spec.id, spec]));
  // A host asking without end fills neither Redis nor its channel (openApprovalCap.ts).
  const cap = new OpenApprovalCap({
    max: config.maxOpenApprovalsPerHost,
    countOpen: (hostId) => needs.store.openCount(hostId),
    exists: (approvalId) => needs.store.exists(approvalId),
    knows: (approvalId) => needs.store.knows(approvalId),
    epochOf: (hostId) => fences.fenceOf(hostId),
    reread: (hostId) => hosts.get(hostId)?.refreshAll(),
    tell: (hostId, channel, { max, resumeBelow }) =>
      needs.noticeSender.channelLine(channel, renderHostCapLine(hostId, max, resumeBelow)),
    logger: needs.logger,
  });
  needs.followers.add(cap);
  return new HostEventHandler({
    cap,
    keeper: needs.keeper,
    store: needs.store,
    decider: needs.decider,
    grants: needs.grantAnswerer,
    grantsOf: (route) => router.grantsOf(route),
    ownerOf: (hostId) => owners.get(hostId),
    host: (hostId) => hosts.get(hostId),
    logger: needs.logger,
    routeFor: (input) => {
      const route = router.placeNow(input);
      return { name: route.name, channel: route.channel, quorum: route.rules.quorum };
    },
    knowsRoute: (route) => router.named(route) !== undefined,
    sandboxModeOf: (hostId) => specs.get(hostId)?.sandboxMode ?? 'default',
    redis: needs.redisHealth,
    maxBufferedEvents: config.hostEventBuffer,
    mayAct: (hostId) => fences.holds(hostId),
    metrics: needs.metrics,
    tellTakenId: (hostId, approvalId, channel) =>
      needs.noticeSender.channelLine(channel, renderTakenIdLine(hostId, approvalId)),
    ...(risks.size > 0
      ? { risksFor: (input: RiskInput) => risks.marksFor(input), audit: needs.auditTrail }
      : {}),
  });
}
