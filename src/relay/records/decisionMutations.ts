import { askedOtherwise, claimQuestion } from '../../domain/claimCredit.js';
import type { ApprovalRecord, Claim } from '../../domain/record.js';
import { isTerminal } from '../../domain/record.js';
import {
  type ClaimContradicted,
  noLongerListed,
  stagesBefore,
  superseded,
  unavailable,
} from './recordMutations.js';

// Pure mutations of a decision under way, from the claim of a stage to what the host said of the
// decide; undefined means "nothing changed". As every mutation, they may run more than once.

/**
 * Our decision's replay was answered with its original terminal ack: the host applied it, and the
 * approval/resolved it wrote then never reached us (the bot died first). Record it as decided by
 * the claim it answers; unless the host asked the stage again since it was pressed, when the
 * choice it applied is not what anyone here was shown: then it is the host's own decision, and
 * `contradicted` hears of it (as from resolved()).
 */
export function decidedByClaim(
  commandId: string,
  now: Date,
  contradicted?: (facts: ClaimContradicted) => void,
) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    const claim = record.claim;
    if (isTerminal(record) || claim?.commandId !== commandId) return undefined;
    const choice = record.availableChoices.find((c) => c.choiceId === claim.choiceId);
    const decision = choice?.decision ?? 'unknown';
    const ours = askedOtherwise(record, claim) ? undefined : claim;
    if (!ours) {
      contradicted?.({
        approvalId: record.approvalId,
        choiceId: claim.choiceId,
        ...(claim.decision !== undefined ? { choiceDecision: claim.decision } : {}),
        reported: decision,
        askedOtherwise: true,
      });
    }
    return {
      ...record,
      phase: 'resolved',
      claim: undefined,
      unavailable: undefined,
      stageDecisions: stagesBefore(record, ours),
      resolution: {
        decision,
        resolvedBy: 'user',
        decidedAt: now.toISOString(),
        ...(ours ? creditOf(ours) : {}),
      },
    };
  };
}

/** Whom a resolution by `claim` names, as the claim's person (quorum, grant) pressed it. */
function creditOf(claim: Claim) {
  return {
    ...(claim.userId ? { slackUserId: claim.userId } : {}),
    ...(claim.voters ? { voters: claim.voters } : {}),
    ...(claim.stoodInFor ? { stoodInFor: claim.stoodInFor } : {}),
    ...(claim.onBehalfOf ? { onBehalfOf: claim.onBehalfOf } : {}),
    choiceId: claim.choiceId,
    ...(claim.feedback ? { feedback: claim.feedback } : {}),
    ...(claim.via ? { via: claim.via } : {}),
    ...(claim.grant ? { grant: claim.grant } : {}),
  };
}

/**
 * Our decision's replay, made because the host no longer lists the approval, says it did not
 * close it (an ack of one stage, or a refusal): something else did, a close we missed. Closed
 * as any approval the host no longer lists, while it still holds our claim.
 */
export function closedNotByClaim(commandId: string) {
  return (record: ApprovalRecord): ApprovalRecord | undefined =>
    record.claim?.commandId === commandId ? noLongerListed(record) : undefined;
}

/**
 * The host answered approvalAlreadyResolved: record the winner it names, if we lack one. An
 * `abort` by `user` that was not ours is a recovery's or a withdrawal's (see resolved()).
 */
export function resolvedElsewhere(decision: string, resolvedBy: string, now: Date) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (isTerminal(record)) return undefined;
    if (decision === 'abort' && resolvedBy === 'user') {
      return superseded(
        'The agent host closed this request without a decision (it restarted or withdrew it).',
      )(record);
    }
    return {
      ...record,
      phase: 'resolved',
      claim: undefined,
      resolution: { decision, resolvedBy, decidedAt: now.toISOString() },
    };
  };
}

/**
 * The host answered approvalRequirementStale naming the stage it is at now: the question moved
 * on without our record hearing of it. Point the card at that stage, without buttons: the choices
 * the record holds are the old stage's (§5.3: they change between stages), and one pressed for the
 * new stage could ask the host for what nobody was shown (a rule saved for another command). The
 * session is re-read, and its listing asks that stage with its own choices (reopened()).
 */
export function requirementMoved(commandId: string, current: ApprovalRecord['currentRequirementId']) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (isTerminal(record)) return undefined;
    if (!sameJson(record.currentRequirementId, current)) {
      return unavailable('stageMoved')({ ...record, currentRequirementId: current, availableChoices: [] });
    }
    return unclaimed(commandId)(record);
  };
}

/** The host left our decide unanswered `count` times: the card says we are still asking. */
export function unanswered(commandId: string, count: number) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (record.phase !== 'deciding' || record.claim?.commandId !== commandId) return undefined;
    if (record.claim.unanswered === count) return undefined;
    return { ...record, claim: { ...record.claim, unanswered: count } };
  };
}

/**
 * A click took the stage. Checked again here, under compare-and-set, because the question may
 * have moved since the click was checked: a button pressed for one stage must never decide
 * another.
 */
export function claimed(claim: Claim) {
  return (record: ApprovalRecord): (ApprovalRecord & { claim: Claim }) | undefined => {
    if (record.phase !== 'pending') return undefined;
    if (record.currentRequirementId.sourceIndex !== claim.sourceIndex) return undefined;
    const choice = record.availableChoices.find((c) => c.choiceId === claim.choiceId);
    if (!choice) return undefined;
    // What was pressed, on what question: the host may ask the stage again before it answers,
    // and only a resolution of this very question, as this choice decided it, is credited to it.
    const pressed = {
      ...claim,
      decision: choice.decision,
      scope: choice.scope,
      question: claimQuestion(record),
    };
    return { ...record, phase: 'deciding', claim: pressed };
  };
}

/** Our decision was refused or abandoned: give the question back to the humans. */
export function unclaimed(commandId: string) {
  return (record: ApprovalRecord): ApprovalRecord | undefined => {
    if (isTerminal(record) || record.claim?.commandId !== commandId) return undefined;
    return { ...record, phase: record.phase === 'deciding' ? 'pending' : record.phase, claim: undefined };
  };
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
