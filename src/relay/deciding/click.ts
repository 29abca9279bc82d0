import { z } from 'zod';
import { type ApprovalRecord, RiskMark, Vote } from '../../domain/record.js';
import type { Refusal } from '../../domain/refusal.js';
import type { RouteRules } from '../../domain/route.js';
import type { ApprovalChoice } from '../../msp/protocol.js';

// A click as the ClickHandler takes it, and what of it travels with a decision (the asker).

/**
 * How long a click may take to be recorded in Redis. The person must hear within 3 s (Slack's
 * own patience) whether their click counted, and the ephemeral answer needs its own moment.
 */
export const RECORD_WITHIN_MS = 2_000;

export interface Click {
  channel: string;
  ts: string;
  userId: string;
  /** The requirement the pressed button was rendered for. */
  sourceIndex: number;
  choiceId: string;
  feedback?: string;
  /** The approval the button says it belongs to; checked against the message's own mapping. */
  approvalHint?: string;
  /** When the click reached us (ms since the epoch); deadlines count from here. */
  receivedAt?: number;
  /** Where the choice was made: its button (the default), or the submit of the reason modal. */
  from?: 'button' | 'modal';
  /** The bot's "approve and don't ask again": decide with `choiceId` and remember the request. */
  remember?: boolean;
  /**
   * The scope pressed (scopeToken). A "don't ask again" without one (a button of a card posted
   * before scopes, or a crafted press) is refused: cannotRemember.
   */
  rememberScope?: string;
  /**
   * What was typed in the confirmation modal (a risk rule's `confirm: type`); absent on a press,
   * which then opens that modal rather than deciding.
   */
  typed?: string;
  /**
   * The question as the person was shown it (questionDigest), by the button pressed or the modal
   * that took `typed` or the reason: the click decides only while the approval still asks exactly
   * that.
   */
  askedAs?: string;
  /**
   * A press on a button that names no question (no `askedAs`): one of a card posted before
   * buttons carried it. What it showed cannot be known, so it decides nothing (docs/security.md).
   */
  namesNoQuestion?: true;
  /** Told when the click's decision is handed to the host (DecisionRequest.onSent). */
  onSent?: () => void;
}

export type ClickCheck =
  /** `rules`: those of the record's route (how a rejection is asked for), defaults when gone. */
  /** `onBehalfOf`: the clicker may decide only as the delegate of this person, who is away. */
  | { ok: true; record: ApprovalRecord; choice: ApprovalChoice; rules: RouteRules; onBehalfOf?: string }
  /**
   * `record`: set with `confirmationNeeded`, for the modal that asks for it, and with a refusal
   * the record's state gave (whyNotDecidable): a decision claimed or resolved may name the
   * person's vote (recordNamesVoter).
   */
  | { ok: false; refusal: Refusal; approvalId?: string; record?: ApprovalRecord };

/** What answering a person about their decision needs of their click. */
export type Answerable = Pick<
  Click,
  'channel' | 'userId' | 'remember' | 'rememberScope' | 'from' | 'askedAs'
> & {
  /** The stage pressed; a "don't ask again" is only ever remembered for it. */
  sourceIndex?: number;
};

/**
 * A vote a pick stored anew, and how it counted then: with what of its approval its audit entry
 * names (auditVoteCast).
 */
export const CastVote = z.object({
  record: z.object({
    approvalId: z.string(),
    hostId: z.string(),
    route: z.string().optional(),
    risks: z.array(RiskMark.pick({ name: true, quorum: true })).optional(),
  }),
  vote: Vote,
  votes: z.number().int(),
  quorum: z.number().int(),
});
export type CastVote = z.infer<typeof CastVote>;

/**
 * What the owner of the host needs to answer the person itself (JSON in the decision stream).
 * `sourceIndex`, the stage pressed, is absent only in entries of an earlier release: then a
 * "don't ask again" is not remembered.
 */
export const Asker = z.object({
  channel: z.string(),
  userId: z.string(),
  sourceIndex: z.number().int().optional(),
  from: z.enum(['button', 'modal']).optional(),
  remember: z.boolean().optional(),
  rememberScope: z.string().optional(),
  /**
   * The question the person saw (questionDigest). A "don't ask again" answered late is made from
   * the record as it is then, which the host may have asked otherwise on the same stage since:
   * without this, nothing is remembered.
   */
  askedAs: z.string().optional(),
  /**
   * The vote this press stored that completed the quorum: should the decision not go through, no
   * decision entry names it, and the owner audits it as a vote. Absent in entries of an earlier
   * release.
   */
  vote: CastVote.optional(),
});

/** `cast`: the vote the click stored that completed the quorum, if it did. */
export function askerOf(click: Click, cast?: CastVote): Record<string, unknown> {
  return {
    channel: click.channel,
    userId: click.userId,
    sourceIndex: click.sourceIndex,
    ...(click.from ? { from: click.from } : {}),
    ...(click.remember ? { remember: true } : {}),
    ...(click.remember && click.rememberScope !== undefined ? { rememberScope: click.rememberScope } : {}),
    ...(click.remember && click.askedAs !== undefined ? { askedAs: click.askedAs } : {}),
    // Only what the vote's audit entry needs of its record (the schema strips the rest): the asker
    // travels in every entry.
    ...(cast ? { vote: CastVote.parse(cast) } : {}),
  };
}

export function deadlineOf(click: Click): number {
  return (click.receivedAt ?? Date.now()) + RECORD_WITHIN_MS;
}
