import type { Logger } from 'pino';
import type { ApprovalRecord, Claim } from '../../domain/record.js';
import { HostGoneError, MspError, RequestTimeoutError } from '../../msp/errors.js';
import type { ApprovalHost } from '../../msp/events.js';
import { ApprovalAlreadyResolvedData, FrameRequirementRef } from '../../msp/protocol.js';
import { maskPrefix } from '../../secrets/maskPrefix.js';
import type { Mutation } from '../../store/approvalStore.js';
import {
  closedNotByClaim,
  requirementMoved,
  resolvedElsewhere,
  unclaimed,
} from '../records/decisionMutations.js';
import { heldElsewhere as keptHeldElsewhere, unavailable } from '../records/recordMutations.js';
import type { DecisionOutcome } from './decision.js';

// What a decide the host did not accept comes to: the record is brought in line with what the
// host said (the claim kept, given back, or the approval marked), and the caller gets the outcome.

/** A failed decide, and what the Decider lends to record what it means. */
export interface Failure {
  record: ApprovalRecord;
  claim: Claim;
  host: ApprovalHost;
  log: () => Logger;
  now: () => Date;
  /** Asking how a decision ended whose approval the host no longer lists (Decider.settle). */
  settling?: boolean;
  /** A record change on the way to an outcome; resolves with undefined when Redis failed. */
  mutate(approvalId: string, mutation: Mutation): Promise<ApprovalRecord | undefined>;
}

/** Classifies what the host said (or failed to say) about a decide, after any retries. */
export async function outcomeOfFailure(err: unknown, failure: Failure): Promise<DecisionOutcome> {
  const { record, claim, host, log, now, mutate } = failure;
  /** Drops our claim and frees its stage, so the question goes back to people; see claimKeptUnless. */
  const giveBack = async () => claimKeptUnless(await mutate(record.approvalId, unclaimed(claim.commandId)));
  /**
   * Where the host says our decision was not applied: settling, the host no longer lists the
   * approval, so something else closed it and the card is closed (given back, it would show
   * buttons for a question the host no longer asks, and nothing would read the session again).
   */
  const dropClaim = async () =>
    failure.settling
      ? claimKeptUnless(await mutate(record.approvalId, closedNotByClaim(claim.commandId)))
      : giveBack();

  const { approvalId, sessionId } = record;
  if (err instanceof HostGoneError || err instanceof RequestTimeoutError) {
    // Keep the claim: when the host is back the approval is seen again and this is replayed.
    log().warn({ err: err.message }, 'host gone while deciding; will replay');
    return { kind: 'hostUnavailable' };
  }
  if (!(err instanceof MspError)) {
    log().error({ err }, 'decide failed');
    return { kind: 'refused', errorKind: 'internal', ...(await giveBack()) };
  }
  log().warn({ kind: err.kind, code: err.code }, 'decide refused');
  switch (err.kind) {
    case 'approvalAlreadyResolved': {
      const winner = alreadyResolvedWinner(err.data, log);
      const decision = winner.decision ?? 'unknown';
      const resolvedBy = winner.resolvedBy ?? 'unknown';
      const final = await mutate(approvalId, resolvedElsewhere(decision, resolvedBy, now()));
      return {
        kind: 'alreadyResolved',
        decision: final?.resolution?.decision ?? decision,
        resolvedBy: final?.resolution?.resolvedBy ?? resolvedBy,
        ...(final?.resolution?.slackUserId ? { slackUserId: final.resolution.slackUserId } : {}),
        ...claimKeptUnless(final),
      };
    }
    case 'approvalRequirementStale': {
      // The host names the stage it is at; the card waits without buttons for the session's
      // listing to bring that stage's choices.
      // Parsed as a frame's: the ref is stored on the record and sent back with the next decide.
      const current = FrameRequirementRef.safeParse(err.data?.currentRequirementId);
      const kept =
        current.success && current.data.approvalId === approvalId
          ? claimKeptUnless(await mutate(approvalId, requirementMoved(claim.commandId, current.data)))
          : await giveBack();
      host.refreshSession(sessionId);
      return { kind: 'stale', ...kept };
    }
    case 'approvalChoiceInvalid': {
      const kept = await giveBack();
      host.refreshSession(sessionId);
      return { kind: 'stale', ...kept };
    }
    case 'approvalNotFound': {
      // The buttons go until the host says what it has: re-listed, they come back; missing,
      // the card is superseded.
      const marked = await mutate(approvalId, unavailable('unknownToHost'));
      host.refreshSession(sessionId);
      return { kind: 'unknownToHost', ...claimKeptUnless(marked) };
    }
    case 'approvalReviewerUnavailable':
      return { kind: 'reviewerUnavailable', ...(await dropClaim()) };
    case 'sessionInUse': {
      // A first send the host refused was not applied: its claim goes. Settling, the refusal says
      // nothing of the send it asks about, which may have been: the claim stays, to be asked again
      // (heldElsewhere()).
      if (failure.settling) {
        await mutate(approvalId, keptHeldElsewhere);
        return { kind: 'sessionElsewhere', claimKept: true };
      }
      const marked = await mutate(approvalId, unavailable('heldElsewhere'));
      return { kind: 'sessionElsewhere', ...claimKeptUnless(marked) };
    }
    case 'commandRejected': {
      // A durable rejection of the command (§7): recovery abandons an intake it found unsettled,
      // and then closes the approval and asks it again under a new id. The session is read again
      // so that a card for an id the host no longer has does not keep its buttons.
      const kept = await dropClaim();
      if (!failure.settling) host.refreshSession(sessionId);
      return { kind: 'refused', errorKind: reportedKind(err.kind), ...kept };
    }
    default:
      return { kind: 'refused', errorKind: reportedKind(err.kind), ...(await dropClaim()) };
  }
}

/** Longest kind a refusal is reported by: the protocol's own are far shorter. */
const MAX_REPORTED_KIND = 60;

/**
 * The kind a refusal is reported by to the person who clicked. The host writes it, so it is
 * masked for secrets and cut; a kind of the protocol (`sandboxDenied`) comes through unchanged.
 */
function reportedKind(kind: string): string {
  const masked = maskPrefix(kind, MAX_REPORTED_KIND);
  return masked.cut ? `${masked.text}…` : masked.text;
}

/**
 * A record written (resolved, marked unavailable, its claim given back, its stage moved) no
 * longer holds the claim. Unwritten (Redis failed), it still does, and the claim is replayed (or
 * settled) when the approval is seen again: what the claim took (a grant's use) must stay taken
 * until then, or it would come back twice.
 */
export function claimKeptUnless(written: ApprovalRecord | undefined): { claimKept?: true } {
  return written ? {} : { claimKept: true };
}

/**
 * The winner an approvalAlreadyResolved names. Data that does not parse (a decision that is not
 * text, say) is dropped as a whole, as if the host had named nobody: stored, it would make the
 * record unreadable and the card stuck "Being decided" for good.
 */
function alreadyResolvedWinner(
  data: Record<string, unknown> | undefined,
  log: () => Logger,
): { decision?: string; resolvedBy?: string } {
  const parsed = ApprovalAlreadyResolvedData.safeParse(data ?? {});
  if (parsed.success) return parsed.data.resolution ?? {};
  log().warn(
    { issues: parsed.error.issues.map((i) => ({ path: i.path.join('.'), code: i.code })) },
    'approvalAlreadyResolved with malformed data: taken as naming no winner',
  );
  return {};
}
