import type { Logger } from 'pino';
import type { RenderedMessage } from '../../domain/messages.js';
import type { ApprovalRecord, CardPlace } from '../../domain/record.js';
import {
  type ApprovalStore,
  FOR_HOST,
  type PostLease,
  type UpdateResult,
} from '../../store/approvalStore.js';
import { type CardChannel, HostLostError } from '../ports.js';

export interface CardPost {
  store: Pick<ApprovalStore, 'renewPostLease' | 'releasePostLease' | 'savePost'>;
  cards: CardChannel;
  render: () => RenderedMessage;
  logger: Logger;
  postLeaseMs: number;
  /** Says the card may have been posted already, by an earlier attempt. */
  postedSince?: Date;
  /** PostOptions.mayAct: whether this process still acts for the card's host. */
  mayAct?: () => boolean;
  /** Told of the record and its card's place, just before that is written (RecordFollower.placing). */
  placing?: (record: ApprovalRecord, place: CardPlace) => void;
}

/**
 * Posts the card of a record that has none yet, under the post lease the caller holds, and saves
 * where it landed. The lease is renewed while the post is under way and given back when Slack
 * refuses it (then this rejects, and the caller tries again later).
 */
export async function postUnderLease(
  record: ApprovalRecord,
  lease: PostLease,
  post: CardPost,
): Promise<{ posted: { ts: string; channel: string }; saved: UpdateResult | undefined }> {
  const { store, cards, logger, postedSince, mayAct } = post;
  const { approvalId } = record;
  let posted: { ts: string; channel: string };
  const renewing = setInterval(
    () => {
      store.renewPostLease(approvalId, lease).catch((err: unknown) => {
        logger.warn({ err, approvalId }, 'could not renew the post lease');
      });
    },
    Math.max(1, Math.floor(post.postLeaseMs / 3)),
  );
  renewing.unref();
  try {
    posted = await cards.post(record.slack.channel, post.render, {
      approvalId,
      ...(postedSince ? { postedSince } : {}),
      ...(mayAct ? { mayAct } : {}),
    });
  } catch (err) {
    clearInterval(renewing);
    // Slack said no (the channel, a scope, an outage): try again later, nothing is lost.
    await store.releasePostLease(approvalId, lease);
    throw err;
  }
  clearInterval(renewing);
  // A post checked against the host's lease is placed only while this process still holds it:
  // followers are not told of a place savePost would refuse to write.
  if (mayAct && !mayAct()) throw new HostLostError();
  post.placing?.(record, posted);
  const saved = await store.savePost(record, posted, lease, mayAct ? FOR_HOST : undefined);
  logger.debug(
    {
      approvalId,
      sessionId: record.sessionId,
      tool: record.tool,
      route: record.route,
      phase: record.phase,
      channel: posted.channel,
      ts: posted.ts,
    },
    'card posted',
  );
  return { posted, saved };
}
