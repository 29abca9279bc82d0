import type { Logger } from 'pino';
import { v7 as uuidv7 } from 'uuid';
import type { Metrics } from '../domain/metrics.js';
import type { HostFleet } from '../msp/hostFleet.js';
import type { Authorizer } from '../relay/deciding/authorizer.js';
import { ClickHandler } from '../relay/deciding/clickHandler.js';
import { Decider } from '../relay/deciding/decider.js';
import { DecisionWarrant } from '../relay/deciding/decisionWarrant.js';
import { GrantAnswerer } from '../relay/grants/grantAnswerer.js';
import type { GrantMaker } from '../relay/grants/grantMaker.js';
import type { RecordKeeper } from '../relay/records/recordKeeper.js';
import type { DecisionForwarding } from '../replicas/decisionForwarding.js';
import type { FenceBook } from '../replicas/fenceBook.js';
import type { Router } from '../routing/router.js';
import type { SlackCardChannel } from '../slack/slackCardChannel.js';
import type { SlackGrantLines } from '../slack/slackGrantLines.js';
import type { ApprovalStore } from '../store/approvalStore.js';
import type { RedisAuditTrail } from '../store/auditStream.js';
import type { RedisGrantStore } from '../store/grantStore.js';
import type { RedisNoticeLedger } from '../store/noticeLedger.js';
import type { Activity } from '../util/activity.js';

export interface DecidingNeeds {
  logger: Logger;
  store: ApprovalStore;
  keeper: RecordKeeper;
  activity: Activity;
  auditTrail: RedisAuditTrail;
  hosts: HostFleet;
  fences: FenceBook;
  forwarding: DecisionForwarding;
  router: Router;
  authorizer: Authorizer;
  grantStore: RedisGrantStore;
  grantMaker: GrantMaker;
  grantLines: SlackGrantLines;
  noticeLedger: RedisNoticeLedger;
  cardChannel: SlackCardChannel;
  metrics: Metrics;
}

/** Decisions: the Decider, clicks on cards, and standing grants that answer approvals. */
export function wireDeciding(needs: DecidingNeeds) {
  const { logger, store, keeper, hosts, fences, forwarding, router, authorizer, grantStore } = needs;
  const decider = new Decider({
    keeper,
    store,
    host: (hostId) => hosts.get(hostId),
    logger,
    newCommandId: () => uuidv7(),
    mayAct: (hostId) => fences.holds(hostId),
    forward: (request) => forwarding.forward(request),
    // What this process did not check itself (a decision forwarded here) is checked on the record claimed.
    warrant: new DecisionWarrant({
      authorizer,
      grants: grantStore,
      grantsOf: (route) => router.grantsOf(route),
      ladderOf: (route) => router.escalationOf(route),
      logger,
    }),
    activity: needs.activity,
    // The answerer is made just below, with this Decider.
    replayed: (record, claim): Promise<void> => grantAnswerer.replayed(record, claim),
    replayDropped: (record, claim): Promise<void> => grantAnswerer.replayDropped(record, claim),
  });
  const grantAnswerer: GrantAnswerer = new GrantAnswerer({
    grants: grantStore,
    store,
    keeper,
    decider,
    lines: needs.grantLines,
    ledger: needs.noticeLedger,
    grantsOf: (route) => router.grantsOf(route),
    logger,
    metrics: needs.metrics,
  });
  const clicks = new ClickHandler({
    store,
    decider,
    keeper,
    notifier: needs.cardChannel,
    authorizer,
    audit: needs.auditTrail,
    remembering: needs.grantMaker,
    metrics: needs.metrics,
    logger,
  });
  return { decider, grantAnswerer, clicks };
}
