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

/**
 * The reject choice a timeout (and "Reject all") decides with: one that rejects this request only,
 * preferring one that takes feedback. Never one that may keep a deny rule (a scope past once, or a
 * decision word other than plain `abort` or `denied`, such as deniedPolicyAmendment): nobody chose
 * that rule, and it would refuse the same request for the session or for good. A host that offers
 * only such rejections gets none here, as if it offered no reject choice: the timeout step fails
 * (docs/escalation.md) and "Reject all" skips the request, which a person can still decide on its card.
 */
export function timeoutChoice(
  choices: ApprovalRecord['availableChoices'],
): ApprovalRecord['availableChoices'][number] | undefined {
  const rejecting = choices.filter(
    (c) => (c.decision === 'abort' || c.decision === 'denied') && c.scope === 'once',
  );
  return rejecting.find((c) => c.acceptsFeedback) ?? rejecting[0];
}
