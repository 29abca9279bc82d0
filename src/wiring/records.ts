import type { Logger } from 'pino';
import { renderCard } from '../cards/renderCard.js';
import type { Config } from '../config/config.js';
import { decisionEntry } from '../domain/decisionEntry.js';
import type { Metrics } from '../domain/metrics.js';
import type { Authorizer } from '../relay/deciding/authorizer.js';
import { auditVotesLeft } from '../relay/deciding/clickVotes.js';
import type { GrantMaker } from '../relay/grants/grantMaker.js';
import { RecordFollowers } from '../relay/records/recordFollowers.js';
import { RecordKeeper } from '../relay/records/recordKeeper.js';
import type { FenceBook } from '../replicas/fenceBook.js';
import type { Router } from '../routing/router.js';
import type { ApproverNames } from '../slack/approverNames.js';
import type { SlackCardChannel } from '../slack/slackCardChannel.js';
import { ApprovalStore } from '../store/approvalStore.js';
import { RedisAuditTrail } from '../store/auditStream.js';
import { HeldByWrite } from '../store/heldByWrite.js';
import { HeldNoticeClaims } from '../store/noticeLedger.js';
import type { RedisClient } from '../store/redisConnection.js';
import { Activity } from '../util/activity.js';
import type { Late } from './late.js';

export interface RecordsNeeds {
  config: Config;
  logger: Logger;
  redis: RedisClient;
  /** Every write for a host carries its lease's fencing token (replicas/hostOwnership.ts). */
  fences: FenceBook;
  cardChannel: SlackCardChannel;
  router: Router;
  authorizer: Authorizer;
  approverNames: ApproverNames;
  /** Built on top of the keeper (grants.ts); a card offers to remember a choice through it. */
  grantMaker: Late<GrantMaker>;
  metrics: Metrics;
}

/** The approvals' records, their cards, and the audit of what became of them. */
export function wireRecords(needs: RecordsNeeds) {
  const { config, logger, redis, fences, router, authorizer, approverNames, grantMaker } = needs;
  // Audit: the thread line, the stream entry and the owner's DM of each resolved approval.
  const auditTrail = new RedisAuditTrail(redis, {
    maxLen: config.auditMaxLen,
    refusalMaxLen: config.refusalMaxLen,
    // A decision's mark is kept as long as its resolved record.
    decisionMarkTtlMs: config.resolvedTtlMs,
    logger,
  });
  // The write that resolves a record claims its thread line's notice, and writes its decision's
  // audit entry where Redis lets one script do both; the notices take them from there
  // (DecisionNotices, wireNotices).
  const resolveNotice = new HeldNoticeClaims('thread', config.resolvedTtlMs);
  const writtenDecisions = new HeldByWrite();
  const store = new ApprovalStore(redis, {
    resolvedTtlMs: config.resolvedTtlMs,
    fenceOf: (hostId) => fences.fenceOf(hostId),
    resolveNotice,
    resolutionAudit: {
      writeOf: (written) => auditTrail.decisionWrite(decisionEntry(written, router.slaOf(written.route))),
      written: writtenDecisions,
      refused: () =>
        logger.warn(
          'Redis refuses a script over two hash slots (a proxy in front of a cluster?): each decision entry now takes a write of its own',
        ),
    },
  });
  const activity = new Activity();
  // Followers of stored changes, each one line: the parts built later add themselves (assemble.ts).
  const followers = new RecordFollowers();
  const keeper = new RecordKeeper({
    store,
    activity,
    metrics: needs.metrics,
    cards: needs.cardChannel,
    fenceOf: (hostId) => fences.fenceOf(hostId),
    render: (record, now) =>
      renderCard(record, {
        now,
        approvers: approverNames.shown(authorizer.shown(record)),
        showHost: config.msp.hosts.length > 1,
        remember: grantMaker.get().offer(record),
        escalation: router.escalationOf(record.route),
        quorum: authorizer.quorum(record),
        slaMs: router.slaOf(record.route),
      }),
    logger,
    onChange: (record) => followers.notify(record),
    // A quorum's votes a change let go of, that no decision entry will name (clickVotes.ts).
    onVotesLeft: (before, after) =>
      auditVotesLeft(before, after, { audit: auditTrail, logger, quorum: (r) => authorizer.quorum(r) }),
    onPlacing: (record, place) => followers.placing(record, place),
  });
  return { store, activity, auditTrail, followers, keeper, resolveNotice, writtenDecisions };
}
