import type { ApprovalRecord } from './record.js';

// What a decision word means for the flow. ApprovalDecision is an open enum: the host may send
// words we do not know, so every test here has an answer for an unknown word.

export type DecisionTone = 'approve' | 'reject' | 'other';

/** Whether a decision lets the agent go ahead, stops it, or neither (e.g. timedOut, unknown). */
export function decisionTone(decision: string): DecisionTone {
  if (decision.startsWith('approved')) return 'approve';
  if (decision === 'abort' || decision.startsWith('denied')) return 'reject';
  return 'other';
}

/** Decisions that ask the host to keep a grant (docs/msp-approvals.md §6.4), whatever scope the choice names. */
const GRANTING_DECISIONS: ReadonlySet<string> = new Set(['approvedForSession', 'approvedPolicyAmendment']);

/**
 * Whether a choice leaves something behind the request: an approval for a session, a workspace
 * rule, anything not once. A rejection never widens what an agent may do, whatever its scope. A
 * host that sends a granting decision with scope `once` is read the worse way: it may keep the grant.
 */
export function outlastsRequest(choice: { decision: string; scope: string }): boolean {
  if (decisionTone(choice.decision) === 'reject') return false;
  return choice.scope !== 'once' || GRANTING_DECISIONS.has(choice.decision);
}

/**
 * Whether picking this decision counts toward a quorum rather than deciding at once: only what
 * plainly stops the agent needs one person. A word this bot does not know may let the agent go
 * ahead, so it is counted like an approval.
 */
export function needsQuorum(decision: string): boolean {
  return decisionTone(decision) !== 'reject';
}

/** The reject choice a timeout decides with: not an approval, preferring one that takes feedback. */
export function timeoutChoice(
  choices: ApprovalRecord['availableChoices'],
): ApprovalRecord['availableChoices'][number] | undefined {
  const rejecting = choices.filter((c) => c.decision === 'abort' || c.decision.startsWith('denied'));
  return rejecting.find((c) => c.acceptsFeedback) ?? rejecting[0];
}
