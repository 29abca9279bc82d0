import type { Refused } from '../../domain/authorization.js';
import type { ApprovalRecord, GrantRef } from '../../domain/record.js';
import type { TypedConfirmation } from '../../domain/typedConfirmation.js';
import type { NotDecidable } from './decisionCheck.js';

// What a decision is and what can come of it: the words the Decider, the DecisionWarrant and
// their callers share, in a file of their own so that neither of the two needs the other.

/** Who made a decision. */
export type DecidedBy =
  /** `voters`: everyone whose approving pick made the quorum, the last of them `userId`. */
  /** `typed`: what the person typed to confirm an approval that asks for it (typedConfirmation.ts). */
  /** `onBehalfOf`: `userId` decided as the delegate of this person, who is away. */
  /** `stoodInFor`: the voters who voted as someone's delegate, and for whom. */
  /** `askedAs`: the question as the person saw it (questionDigest), where it must still be asked. */
  /** `remember`: the person pressed "don't ask again", which outlasts the request for them. */
  | {
      via: 'click';
      userId: string;
      voters?: string[];
      stoodInFor?: Record<string, string>;
      typed?: string;
      onBehalfOf?: string;
      askedAs?: string;
      remember?: true;
    }
  | { via: 'grant'; grant: GrantRef }
  | { via: 'timeout' };

export interface DecisionRequest {
  /** The record the decision was checked against; it is checked again under compare-and-set. */
  record: ApprovalRecord;
  /** The stage the decision was made for. */
  sourceIndex: number;
  choiceId: string;
  /** Sent only when the choice accepts feedback. */
  feedback?: string;
  by: DecidedBy;
  /**
   * When the person must hear back (ms since the epoch). If the claim is not stored by then, the
   * outcome is `notRecorded` and the claim, should Redis store it later, is released unsent.
   */
  recordBy?: number;
  /**
   * The commandId to decide with; minted here when absent. A decision carried out again (a
   * forwarded one whose first owner died) comes with the same one, and is the same decision.
   */
  commandId?: string;
  /**
   * Who to tell the outcome should the asker stop waiting for it (JSON; see DecisionForwarding):
   * a decision forwarded to another replica may end after its asker answered the person.
   */
  asker?: Record<string, unknown>;
  /**
   * What to do when the record changed between the check and the claim. `recheck` (the default):
   * read it again and check it again in full (who may decide included, see `warranted`).
   * `return`: claim nothing and resolve `changed`, for a caller that checks more than that (a
   * click: whether its "don't ask again" is still offered).
   */
  onChange?: 'recheck' | 'return';
  /**
   * The caller itself checked, against `record`, that this decision may be made (a click checked
   * by the ClickHandler, a grant the GrantAnswerer found, a timeout step the Escalator fired).
   * Claiming that very record needs no second check; any other record is checked in full before
   * it is claimed (DeciderOptions.warrant). Never carried to another replica: a forwarded
   * decision is checked again by the owner, on the record it holds.
   */
  warranted?: boolean;
  /**
   * Told when this process hands the decision to its host (written before the current turn of
   * the event loop ends when the host is up), before the host answers, and again each time an
   * unanswered decide is asked again; not for a decision forwarded to another replica. A click's
   * acknowledgement waits for it (choiceButton.ts).
   */
  onSent?: () => void;
  /**
   * Whether the grant of a record created claimed by it still answers, read in the round trip
   * of that create (GrantAnswerer.claimAtCreate): the first send goes on it. Any other decision
   * by grant has its grant read again before each send. Never carried to another replica.
   */
  grantRead?: Promise<boolean>;
}

export type DecisionOutcome =
  /** The host admitted the decision; the card follows when the host reports the result. */
  | { kind: 'decided'; terminal: boolean | undefined }
  | NotDecidable
  /**
   * The claim's stage or choice is stale (the host said so, or the record moved on to another
   * stage before it was sent). `claimKept`: see unknownToHost.
   */
  | { kind: 'stale'; claimKept?: true }
  /** Checked again before the claim: this decision may not be made on the record as it stands. */
  | Unwarranted
  | { kind: 'gone' }
  /** The record changed since it was checked; nothing was claimed (onChange: 'return'). */
  | { kind: 'changed' }
  /**
   * Someone or something else decided first (the host's own record of the winner). `claimKept`:
   * see unknownToHost; the claim is settled when the next start finds it.
   */
  | { kind: 'alreadyResolved'; decision: string; resolvedBy: string; slackUserId?: string; claimKept?: true }
  /** `claimKept`: see unknownToHost. */
  | { kind: 'reviewerUnavailable'; claimKept?: true }
  /**
   * The host is down; the claim is kept and the decision sent when the approval is seen again.
   * `stopping`: the host is up, but this process stopped while the host had left the decide
   * unanswered: the claim is kept, and the next start or owner sends it again.
   */
  | { kind: 'hostUnavailable'; why?: 'stopping' }
  /** Another client holds the session. `claimKept`: see unknownToHost. */
  | { kind: 'sessionElsewhere'; claimKept?: true }
  /**
   * The host does not know the approval; its session is being re-read. `claimKept`: Redis did
   * not store that the claim is dropped, so the record still holds it and it is sent again when
   * the approval is seen again, as for hostUnavailable.
   */
  | { kind: 'unknownToHost'; claimKept?: true }
  /** Redis did not store the claim in time: nothing was decided, and nothing will be. */
  | { kind: 'notRecorded' }
  | { kind: 'stopping' }
  /** `claimKept`: see unknownToHost. */
  | { kind: 'refused'; errorKind: string; claimKept?: true }
  /** Handed to the replica that owns the host, which has not answered yet; it tells the asker. */
  | { kind: 'forwarded' };

/**
 * Whether the host refused (or never took) the decision but its claim is still on the record:
 * Redis failed to drop it, and the next look at the approval settles it (see unknownToHost).
 */
export function claimKept(outcome: DecisionOutcome): boolean {
  return 'claimKept' in outcome && outcome.claimKept === true;
}

/** Why a decision may not be made on the record as it stands. */
export type Unwarranted =
  /** The person may not decide this approval (authorization.ts says why). */
  | { kind: 'notAuthorized'; refused: Refused }
  /** An approving pick that needs a quorum has fewer votes than it, from people who may decide. */
  | { kind: 'quorumNotMet'; votes: number; quorum: number }
  /** The person decided on a question the record no longer asks (a modal's, a batch summary's). */
  | { kind: 'askedOtherwise' }
  /** An approving pick that asks for its target typed (a risk rule's `confirm: type`) lacks it. */
  | { kind: 'unconfirmed'; confirmation: TypedConfirmation }
  /** The person decides only as someone's delegate now, and the choice would outlast the request. */
  | { kind: 'standInOnce'; for: string }
  /**
   * No live grant answers this stage with this choice; or the route's ladder ends in no timeout.
   * `claimKept`: a claim by a grant that stopped answering before it was sent, whose drop Redis
   * did not store (see unknownToHost).
   */
  | { kind: 'unwarranted'; via: 'grant' | 'timeout'; claimKept?: true }
  | ReasonMissing;

/**
 * A person's pick of a choice that takes a reason, on a route whose `rejectReason` is required,
 * came without one (reasonRule.ts): nothing was claimed. `route`, `quickReasons`: for its words.
 */
export interface ReasonMissing {
  kind: 'reasonMissing';
  route?: string;
  quickReasons: boolean;
}

/**
 * The decision may be made, by whom the record counts now rather than as the request names them:
 * fewer voters (some no longer may decide: the rules, a group or an absence changed since they
 * voted), or the person standing in for someone else than it says, or for nobody now. `by` names
 * them as they count.
 */
export interface Recounted {
  kind: 'recounted';
  by: Extract<DecidedBy, { via: 'click' }>;
}

/** What of a decision the check needs. */
export interface WarrantAsk {
  sourceIndex: number;
  choiceId: string;
  /** The reason given, held to the route's rule as it is now. */
  feedback?: string | undefined;
  by: DecidedBy;
}
