import { questionDigest } from './questionDigest.js';
import type { ApprovalRecord, Claim } from './record.js';

// Whether what the host reports of a claim's decision is the decision its person (quorum, grant,
// timeout) made: the host may ask the stage again while the decide is in flight, and the choiceId
// sent then means whatever the host now says it means.

/**
 * The question a claim's choice is pressed on: questionDigest, less the progress the host marks
 * on the stages (each stage's resolution). The host marks the very stage being decided resolved
 * before it says the approval is (a final approval/updated, stageResolved), and how other stages
 * were decided does not change what the choice pressed for this one means. The command, the
 * stage, the choices, the risks and the marks all count.
 */
export function claimQuestion(record: ApprovalRecord): string {
  // One resolution for every stage, as if none were marked yet: a digest of the same shape.
  const stages = record.subject.stages?.map((stage) => ({ ...stage, resolution: { kind: '' } }));
  return questionDigest(stages ? { ...record, subject: { ...record.subject, stages } } : record);
}

/**
 * The decision of the choice `claim` pressed: as it was when pressed, or, on a claim stored before
 * that was kept, as the record offers it now.
 */
export function pressedDecision(record: ApprovalRecord, claim: Claim): string | undefined {
  return claim.decision ?? record.availableChoices.find((c) => c.choiceId === claim.choiceId)?.decision;
}

/**
 * The record no longer asks the question `claim` was pressed on (another command, other choices,
 * other risks): whatever the host decided with its commandId, nobody was shown it. Never for a
 * claim stored before that question was kept.
 */
export function askedOtherwise(record: ApprovalRecord, claim: Claim): boolean {
  return claim.question !== undefined && claim.question !== claimQuestion(record);
}
