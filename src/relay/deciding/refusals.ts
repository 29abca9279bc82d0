import type { ApprovalRecord } from '../../domain/record.js';
import type { Refusal } from '../../domain/refusal.js';
import type { DecisionOutcome } from './decision.js';
import type { NotDecidable } from './decisionCheck.js';

// The one place where an outcome becomes what the person who clicked is told; the words
// themselves are cards/renderUserMessages.ts's. Every such note is ephemeral and goes only to
// the person who clicked.

/** What to tell the person whose decision ended in `outcome` (anything but `decided`). */
export function refusalFor(
  outcome: Exclude<DecisionOutcome, { kind: 'decided' }> | NotDecidable,
  userId: string,
): Refusal {
  switch (outcome.kind) {
    case 'final': {
      const { record } = outcome;
      if (record.phase === 'superseded') return { code: 'superseded' };
      if (record.phase === 'orphaned') return { code: 'orphaned' };
      return {
        code: 'alreadyResolved',
        decision: record.resolution?.decision ?? 'unknown',
        resolvedBy: record.resolution?.resolvedBy ?? 'unknown',
        ...(record.resolution?.slackUserId ? { slackUserId: record.resolution.slackUserId } : {}),
      };
    }
    case 'alreadyResolved': {
      const { decision, resolvedBy, slackUserId } = outcome;
      return { code: 'alreadyResolved', decision, resolvedBy, ...(slackUserId ? { slackUserId } : {}) };
    }
    case 'alreadyBeingDecided': {
      const holder = outcome.holder?.userId;
      const self = holder === userId || outcome.holder?.voters?.includes(userId) === true;
      return { code: 'alreadyBeingDecided', ...(holder ? { userId: holder } : {}), self };
    }
    case 'unavailable':
      return unavailableRefusal(outcome.reason);
    case 'underReview':
      return { code: 'underReview' };
    case 'stale':
    case 'changed':
    case 'askedOtherwise':
      return { code: 'questionChanged' };
    case 'gone':
      return { code: 'unknownCard' };
    case 'reviewerUnavailable':
      return { code: 'reviewerUnavailable' };
    case 'hostUnavailable':
      return outcome.why ? { code: 'hostUnavailable', why: outcome.why } : { code: 'hostUnavailable' };
    case 'sessionElsewhere':
      return { code: 'sessionElsewhere' };
    case 'unknownToHost':
      return { code: 'unknownToHost' };
    case 'notRecorded':
      return { code: 'notRecorded' };
    case 'forwarded':
      return { code: 'forwarded' };
    case 'stopping':
      return { code: 'stopping' };
    case 'refused':
      return { code: 'decideFailed', kind: outcome.errorKind };
    case 'notAuthorized':
      return { code: 'notAuthorized', refused: outcome.refused };
    case 'quorumNotMet':
      return { code: 'quorumNotMet', votes: outcome.votes, quorum: outcome.quorum };
    case 'unconfirmed':
      return { code: 'confirmationMismatch', confirmation: outcome.confirmation };
    case 'standInOnce':
      return { code: 'standInOnce', for: outcome.for };
    case 'reasonMissing': {
      const { route, quickReasons } = outcome;
      return { code: 'reasonRequired', ...(route === undefined ? {} : { route }), quickReasons };
    }
    case 'unwarranted':
      // A grant or a timeout, never a person's click: the card shows the question as it stands.
      return { code: 'questionChanged' };
  }
}

/** A press on a card that has no buttons now (one shown before they went, say). */
function unavailableRefusal(reason: NonNullable<ApprovalRecord['unavailable']>): Refusal {
  switch (reason) {
    case 'heldElsewhere':
      return { code: 'sessionElsewhere' };
    case 'stageMoved':
      return { code: 'questionChanged' };
    case 'alreadyTerminal':
    case 'resolving':
      return { code: 'settledByHost' };
    case 'routeChanged':
      return { code: 'routeChanged' };
    default:
      return { code: 'unknownToHost' };
  }
}
