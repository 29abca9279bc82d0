import type { CardView, Headline } from './cardView.js';

// The chaos figures, computed from what crossed the bot's edges only: the fake host's state and
// the frames it read, the fake Slack's messages, and the clicks the simulated users made. Every
// column but the first two should be zero; `details` says which approval made a column count.

/** How an approval stands at the host at the end. */
export type HostOutcome =
  | { kind: 'pending'; sourceIndex: number }
  /** Decided: by one of the bot's decides, policy, a reviewer or another client. */
  | { kind: 'resolved'; decision: string; resolvedBy: string }
  /** Closed by a restarted host's recovery (an abort nobody chose), re-asked under a new id. */
  | { kind: 'closedByRecovery'; reaskedAs: string };

export interface HostApproval {
  approvalId: string;
  outcome: HostOutcome;
  /**
   * How long the approval was pending while a host process was up, in ms. The bot runs the host
   * as its child, so it was up too and could have seen the approval; one asked and closed while
   * nobody could read it has a tiny exposure and is not `lost` when it never gets a card.
   */
  exposureMs: number;
}

/** An approval/decide the host read. */
export interface SentDecide {
  commandId: string;
  approvalId: string;
  sourceIndex: number;
  /** The host read it and never answered (nor recorded) it: still in flight at the end. */
  unanswered: boolean;
}

/** A commandId the host carried out (accepted), from its command ledger. */
export interface AppliedDecide {
  commandId: string;
  approvalId: string;
  sourceIndex: number;
  choiceId: string;
  /** It ended the approval (the last stage, or a rejection). */
  terminal: boolean;
}

/** A press (or a feedback modal submitted) by a simulated user, whether or not it got through. */
export interface Click {
  approvalId: string;
  sourceIndex: number;
  choiceId: string;
  userId: string;
}

export interface AuditInput {
  approvals: HostApproval[];
  cards: CardView[];
  decides: SentDecide[];
  applied: AppliedDecide[];
  clicks: Click[];
  /** Below this exposure an approval without a card is not counted as lost. */
  lostGraceMs: number;
}

export type Column = 'lost' | 'duplicatedCards' | 'duplicatedDecisions' | 'stuck' | 'mislabelled';

export interface Figures {
  approvals: number;
  cards: number;
  lost: number;
  duplicatedCards: number;
  duplicatedDecisions: number;
  stuck: number;
  mislabelled: number;
}

export interface Finding {
  column: Column;
  approvalId: string;
  why: string;
}

export interface Audit {
  figures: Figures;
  details: Finding[];
  /** Approvals without a card that were not counted as lost: too briefly pending to be seen. */
  unseen: Array<{ approvalId: string; exposureMs: number; outcome: HostOutcome['kind'] }>;
}

const OPEN_HEADLINES: ReadonlySet<Headline> = new Set([
  'Approval needed',
  'Being decided',
  'Under automated review',
  'Cannot be decided from Slack now',
]);

/** The headline a card must carry for a host decision (cards/describeDecision's tones). */
function expectedHeadline(decision: string): Headline {
  if (decision === 'timedOut') return 'Timed out';
  if (decision.startsWith('approved')) return 'Approved';
  if (decision === 'abort' || decision.startsWith('denied')) return 'Rejected';
  return 'Decided';
}

const stageKey = (approvalId: string, sourceIndex: number) => `${approvalId}#${sourceIndex}`;

function groupBy<T>(items: T[], key: (item: T) => string): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(item);
    else out.set(k, [item]);
  }
  return out;
}

/**
 * stuck: the card contradicts the host's state at the end.
 * - The host has the approval pending: the card must offer buttons for the stage the host is
 *   asking, unless it says another client holds the session. A card without buttons (e.g. still
 *   "Being decided" when no decide is in flight, or already final) or with the buttons of another
 *   stage leaves a question nobody can answer from Slack.
 * - The host has resolved or closed it: the card must show no buttons and no open headline
 *   (pending, being decided, under review, cannot be decided now).
 */
function stuckReason(card: CardView, host: HostOutcome, inFlight: boolean): string | undefined {
  if (host.kind === 'pending') {
    if (card.heldElsewhere) return undefined;
    if (card.headline === 'Being decided' && inFlight) return undefined;
    if (card.buttons.length === 0) return `host has it pending, card "${card.headline}" has no buttons`;
    const stale = card.buttons.find((b) => b.sourceIndex !== host.sourceIndex);
    if (stale) return `host asks stage ${host.sourceIndex}, card offers stage ${stale.sourceIndex}`;
    return undefined;
  }
  if (card.buttons.length > 0) return `host ${host.kind}, card still has ${card.buttons.length} buttons`;
  if (OPEN_HEADLINES.has(card.headline)) return `host ${host.kind}, card says "${card.headline}"`;
  return undefined;
}

/**
 * mislabelled: a final card whose outcome contradicts the host.
 * - Resolved by a decision: the card must carry that decision's headline (Approved for approved*,
 *   Rejected for abort and denied*, …), never Superseded or Orphaned; when one of the bot's
 *   decides ended it, the card must credit a user who pressed that very choice on that stage;
 *   when none did (policy, reviewer, another client), it must credit no Slack user.
 * - Closed by a restarted host's recovery: the card must say Superseded, never Rejected (nobody
 *   rejected it) nor any other decision.
 * Cards still open are judged by `stuck` instead.
 */
function mislabelReason(
  card: CardView,
  host: HostOutcome,
  decidedBy: AppliedDecide | undefined,
  clicks: Click[],
): string | undefined {
  if (host.kind === 'pending' || OPEN_HEADLINES.has(card.headline)) return undefined;
  if (host.kind === 'closedByRecovery') {
    return card.headline === 'Superseded'
      ? undefined
      : `closed by the host's restart recovery, card says "${card.headline}"`;
  }
  const expected = expectedHeadline(host.decision);
  if (card.headline !== expected)
    return `host decided ${host.decision} (${host.resolvedBy}), card says "${card.headline}"`;
  const credited = card.decidedBy && 'userId' in card.decidedBy ? card.decidedBy.userId : undefined;
  if (!decidedBy) {
    return credited ? `host says ${host.resolvedBy} decided, card credits <@${credited}>` : undefined;
  }
  const pressers = new Set(
    clicks
      .filter(
        (c) =>
          c.approvalId === decidedBy.approvalId &&
          c.sourceIndex === decidedBy.sourceIndex &&
          c.choiceId === decidedBy.choiceId,
      )
      .map((c) => c.userId),
  );
  if (credited && pressers.has(credited)) return undefined;
  const shown = credited ? `<@${credited}>` : JSON.stringify(card.decidedBy ?? 'nobody');
  return `decided by ${decidedBy.choiceId} at stage ${decidedBy.sourceIndex}, pressed by ${[...pressers].join(', ') || 'nobody'}; card credits ${shown}`;
}

export function audit(input: AuditInput): Audit {
  const details: Finding[] = [];
  const unseen: Audit['unseen'] = [];
  const note = (column: Column, approvalId: string, why: string) => details.push({ column, approvalId, why });
  const cardsOf = groupBy(input.cards, (c) => c.approvalId);

  for (const approval of input.approvals) {
    const cards = cardsOf.get(approval.approvalId) ?? [];
    // lost: asked, pending long enough (or still pending) to have been seen, and never a card.
    if (cards.length === 0) {
      const { exposureMs, outcome } = approval;
      // Closed by a restart's recovery and asked again under a new id that got its card: the
      // person saw the question, under the id it can still be answered by.
      const reaskedWithCard =
        outcome.kind === 'closedByRecovery' && (cardsOf.get(outcome.reaskedAs)?.length ?? 0) > 0;
      if (outcome.kind === 'pending' || (exposureMs >= input.lostGraceMs && !reaskedWithCard))
        note('lost', approval.approvalId, `no card; pending ${exposureMs} ms while the host was up`);
      else unseen.push({ approvalId: approval.approvalId, exposureMs, outcome: outcome.kind });
    }
    // duplicatedCards: more than one card for one approval.
    if (cards.length > 1) {
      note(
        'duplicatedCards',
        approval.approvalId,
        `${cards.length} cards: ${cards.map((c) => `${c.channel}/${c.ts}`).join(', ')}`,
      );
    }
  }

  // duplicatedDecisions: a stage the bot sent more than one distinct commandId for, or that the
  // host carried out more than once.
  const sent = groupBy(input.decides, (d) => stageKey(d.approvalId, d.sourceIndex));
  const applied = groupBy(input.applied, (d) => stageKey(d.approvalId, d.sourceIndex));
  for (const key of new Set([...sent.keys(), ...applied.keys()])) {
    const commandIds = new Set((sent.get(key) ?? []).map((d) => d.commandId));
    const carriedOut = applied.get(key) ?? [];
    if (commandIds.size > 1 || carriedOut.length > 1) {
      const [approvalId = key] = key.split('#');
      note(
        'duplicatedDecisions',
        approvalId,
        `stage ${key}: ${commandIds.size} commandIds sent, ${carriedOut.length} carried out`,
      );
    }
  }

  const inFlight = new Set(input.decides.filter((d) => d.unanswered).map((d) => d.approvalId));
  const terminalDecide = new Map(input.applied.filter((d) => d.terminal).map((d) => [d.approvalId, d]));
  for (const approval of input.approvals) {
    const cards = cardsOf.get(approval.approvalId) ?? [];
    const stuck = cards
      .map((c) => stuckReason(c, approval.outcome, inFlight.has(approval.approvalId)))
      .find(Boolean);
    if (stuck) note('stuck', approval.approvalId, stuck);
    const mislabel = cards
      .map((c) => mislabelReason(c, approval.outcome, terminalDecide.get(approval.approvalId), input.clicks))
      .find(Boolean);
    if (mislabel) note('mislabelled', approval.approvalId, mislabel);
  }

  const count = (column: Column) =>
    new Set(details.filter((d) => d.column === column).map((d) => d.approvalId)).size;
  return {
    figures: {
      approvals: input.approvals.length,
      cards: input.cards.length,
      lost: count('lost'),
      duplicatedCards: count('duplicatedCards'),
      duplicatedDecisions: details.filter((d) => d.column === 'duplicatedDecisions').length,
      stuck: count('stuck'),
      mislabelled: count('mislabelled'),
    },
    details,
    unseen,
  };
}
