import type { Refused } from './authorization.js';
import type { TypedConfirmation } from './typedConfirmation.js';

/**
 * Why a person's click changed nothing, or what they need to know about it: what relay/ hands
 * back, and cards/renderUserMessages.ts turns into the sentence only that person reads.
 */
export type Refusal =
  | { code: 'unknownCard' }
  | { code: 'alreadyResolved'; decision: string; resolvedBy: string; slackUserId?: string }
  | { code: 'superseded' }
  | { code: 'orphaned' }
  | { code: 'underReview' }
  /**
   * What was shown is no longer asked; or (`unnamed`) the button pressed, on a card posted before
   * buttons named their question, cannot say what it showed; or (`unnamedForm`) the form submitted
   * (a reason or confirmation modal whose metadata names no question) cannot.
   */
  | { code: 'questionChanged'; why?: 'unnamed' | 'unnamedForm' }
  | { code: 'alreadyBeingDecided'; userId?: string; self: boolean }
  | { code: 'reviewerUnavailable' }
  /** `stopping`: Countersign, not the host, is restarting, with the decision kept to send again. */
  | { code: 'hostUnavailable'; why?: 'stopping' }
  | { code: 'sessionElsewhere' }
  | { code: 'unknownToHost' }
  /** The host settles this request itself: found already decided, or resolving a takeover. */
  | { code: 'settledByHost' }
  /** The host asked it again on another route, tool or session than its card's (record.rerouted). */
  | { code: 'routeChanged' }
  | { code: 'notRecorded' }
  /** Handed to the replica that runs the host; it answers later. */
  | { code: 'forwarded' }
  | { code: 'stopping' }
  | { code: 'decideFailed'; kind: string }
  /** The route's rules do not let this user decide (authorization.ts says why). */
  | { code: 'notAuthorized'; refused: Refused }
  /** "Don't ask again" is not offered for this request (any more): nothing was decided. */
  | { code: 'cannotRemember' }
  /**
   * The decision went through, but the grant it asked for was not stored: Redis did not take it,
   * or (`stageMoved`) the approval had moved on from the stage pressed by the time it went through,
   * or (`askedOtherwise`) the host asked that stage otherwise than the person saw it.
   */
  | { code: 'grantNotStored'; why?: 'stageMoved' | 'askedOtherwise' }
  /** Checked again where it was claimed: fewer people who may decide picked it than it needs. */
  | { code: 'quorumNotMet'; votes: number; quorum: number }
  /** An approving pick was counted; the quorum is not reached yet, so nothing was sent. */
  | { code: 'voteCounted'; votes: number; quorum: number }
  /**
   * Someone deciding as the delegate of `for`, who is away, picked what would outlast the request
   * ("don't ask again", a session or workspace choice): a stand-in decides this request only.
   */
  | { code: 'standInOnce'; for: string }
  /**
   * The host's owner picked an approving choice on a request that needs a quorum, or (`for`) their
   * delegate did, standing in for them: the owner never counts toward a quorum.
   */
  | { code: 'ownerNoVote'; quorum: number; for?: string }
  /**
   * Approving needs the target typed first (a risk rule's `confirm: type`): a press opens the
   * confirmation modal instead; told only when no modal could be opened.
   */
  | { code: 'confirmationNeeded'; confirmation: TypedConfirmation }
  /**
   * The choice takes a reason and the route requires one, but none came with it (a press that
   * opened no reason modal): nothing was decided. `quickReasons`: the route offers some.
   */
  | { code: 'reasonRequired'; route?: string; quickReasons: boolean }
  /** The text typed in the confirmation modal is not the target: nothing was decided. */
  | { code: 'confirmationMismatch'; confirmation: TypedConfirmation }
  /**
   * Slack did not open the form a press asked for (a trigger past its 3 s, Slack away): the
   * reason for a choice that takes one, the typed confirmation, or the full view. Nothing was
   * decided; pressed again, it opens.
   */
  | { code: 'formNotOpened'; form: 'reason' | 'confirmation' | 'fullView' }
  /**
   * "View full" found no approval behind the card (`gone`), could not read it now, or not (nor
   * who may read it) before Slack's trigger to open it would run out (`late`).
   */
  | { code: 'cannotShowFull'; why: 'gone' | 'unreadable' | 'late' };
