import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Authorizer } from '../relay/deciding/authorizer.js';
import { DecisionNotices } from '../relay/deciding/decisionNotices.js';
import type { CardCalls } from '../slack/cardCalls.js';
import type { ChannelPacer } from '../slack/channelPacer.js';
import { SlackNoticeSender } from '../slack/slackNotices.js';
import type { RedisAuditTrail } from '../store/auditStream.js';
import type { HeldByWrite } from '../store/heldByWrite.js';
import { type HeldNoticeClaims, RedisNoticeLedger } from '../store/noticeLedger.js';
import type { RedisClient } from '../store/redisConnection.js';
import type { Activity } from '../util/activity.js';

export interface NoticesNeeds {
  config: Config;
  logger: Logger;
  redis: RedisClient;
  slackClient: WebClient;
  cardCalls: CardCalls;
  /** The cards' pacer: a channel's lines wait behind its cards. */
  postPacer: ChannelPacer;
  activity: Activity;
  auditTrail: RedisAuditTrail;
  /** The thread line's notice, claimed by the write that resolves a record (wireRecords). */
  resolveNotice: HeldNoticeClaims;
  /** The decisions whose entry the write that resolved them wrote (wireRecords). */
  writtenDecisions: HeldByWrite;
  owners: ReadonlyMap<string, string>;
  /** Whether a user is a stranger a record's route does not let in (the owner's DM). */
  authorizer: Pick<Authorizer, 'strangerTo'>;
  /** The route's `sla` (ms), for the audit entry. */
  slaOf: (route: string | undefined) => number | undefined;
}

/** What follows a decision: the thread line, the audit entry and the owner's DM, each once. */
export function wireNotices({
  config,
  logger,
  redis,
  slackClient,
  cardCalls,
  postPacer,
  activity,
  auditTrail,
  resolveNotice,
  writtenDecisions,
  owners,
  authorizer,
  slaOf,
}: NoticesNeeds) {
  const noticeSender = new SlackNoticeSender(slackClient, logger, cardCalls, postPacer);
  const noticeLedger = new RedisNoticeLedger(redis, { ttlMs: config.resolvedTtlMs, held: resolveNotice });
  const notices = new DecisionNotices({
    activity,
    sender: noticeSender,
    ledger: noticeLedger,
    audit: auditTrail,
    writtenWithResolution: writtenDecisions,
    ownerOf: (hostId) => owners.get(hostId),
    strangerTo: async (userId, record) => (await authorizer.strangerTo(userId, record))?.why,
    slaOf,
    logger,
  });
  return { noticeSender, noticeLedger, notices };
}
