import type { Logger } from 'pino';
import { BatchTriage } from '../relay/batching/batchTriage.js';
import type { Authorizer } from '../relay/deciding/authorizer.js';
import { BatchDecider } from '../relay/deciding/batchDecider.js';
import type { ClickHandler } from '../relay/deciding/clickHandler.js';
import type { CardCalls } from '../slack/cardCalls.js';
import type { ChannelPacer } from '../slack/channelPacer.js';
import type { Permalinks } from '../slack/permalinks.js';
import { SlackSummaryBoard } from '../slack/slackSummaryBoard.js';
import type { ApprovalStore } from '../store/approvalStore.js';
import { BatchGroups } from '../store/batchGroups.js';
import { BatchRejectForms } from '../store/batchRejectForms.js';
import type { RedisClient } from '../store/redisConnection.js';

export interface BatchingNeeds {
  logger: Logger;
  redis: RedisClient;
  /** The card calls (wireSlack's): summaries are posted and updated as cards are. */
  cardCalls: CardCalls;
  store: ApprovalStore;
  authorizer: Authorizer;
  clicks: ClickHandler;
  /** Card links (wireSlack's, shared). */
  permalinks: Permalinks;
  /** The posts' pacer (wireSlack's): summaries share their channel's pace with its cards. */
  postPacer: ChannelPacer;
}

/** Batch triage: groups of alike approvals in Redis, their summary cards, and deciding them together. */
export function wireBatching({
  logger,
  redis,
  cardCalls,
  store,
  authorizer,
  clicks,
  permalinks,
  postPacer,
}: BatchingNeeds) {
  const triage = new BatchTriage({
    groups: new BatchGroups(redis),
    board: new SlackSummaryBoard(cardCalls, permalinks, logger, postPacer),
    // The records this process wrote last are the latest of its own hosts: a draw reads the rest.
    records: (ids) => Promise.all(ids.map((id) => store.recentOrGet(id))),
    quorum: (record) => authorizer.quorum(record),
    logger,
  });
  const batchDecider = new BatchDecider({ store, clicks, authorizer, logger });
  return { triage, batchDecider, rejectForms: new BatchRejectForms(redis) };
}
