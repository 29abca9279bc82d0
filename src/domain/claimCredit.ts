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
 * The scope of the choice `claim` pressed: as it was when pressed, or, on a claim stored before
 * that was kept, as the record offers it now. The question a claim was pressed on covers the
 * choices, scopes and all, so while the record is not askedOtherwise that is the scope pressed.
 */
export function pressedScope(record: ApprovalRecord, claim: Claim): string | undefined {
  return claim.scope ?? record.availableChoices.find((c) => c.choiceId === claim.choiceId)?.scope;
}

/**
 * The rule (approval/resolved.amendment durability) a choice of each scope leaves at the host
 * (docs/msp-approvals.md §6.4, §10.1): none for a once-scoped one, a `session` rule for a
 * `session` one, a `localPersistent` rule for a `localPersistent` one.
 */
const RULE_OF_SCOPE: Record<string, string | undefined> = {
  once: undefined,
  session: 'session',
  localPersistent: 'localPersistent',
};

/**
 * Whether the rule the host says a decision left is the one the pressed choice (of `scope`) asks
 * for: no rule at all, or one of the durability its scope means. A scope or durability the
 * protocol does not name, or a scope unknown (a claim whose choice the record no longer offers),
 * never matches a rule: nobody is credited with a rule whose reach nobody here was shown.
 */
export function ruleAsPressed(
  scope: string | undefined,
  amendment: { durability: string } | undefined,
): boolean {
  if (!amendment) return true;
  if (scope === undefined || !Object.hasOwn(RULE_OF_SCOPE, scope)) return false;
  return RULE_OF_SCOPE[scope] === amendment.durability;
}

/**
 * The record no longer asks the question `claim` was pressed on (another command, other choices,
 * other risks): whatever the host decided with its commandId, nobody was shown it. Never for a
 * claim stored before that question was kept.
 */
export function askedOtherwise(record: ApprovalRecord, claim: Claim): boolean {
  return claim.question !== undefined && claim.question !== claimQuestion(record);
}
