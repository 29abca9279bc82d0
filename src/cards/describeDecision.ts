import { clip } from './escape.js';

// ApprovalDecision is an open enum (msp-approvals.md §6.4): the host may send words we do not know.

const WORDS: Record<string, string> = {
  approved: 'Approved (this request only)',
  approvedForSession: 'Approved for the rest of the session',
  approvedPolicyAmendment: 'Approved, and a rule was saved to allow it again',
  denied: 'Denied',
  deniedPolicyAmendment: 'Denied, and a rule was saved to deny it again',
  abort: 'Rejected',
  timedOut: 'Timed out',
};

/**
 * A decision in human words. Unknown decisions come back as the host's own word, escaped and cut,
 * so the result is always safe to put in mrkdwn.
 */
export function describeDecision(decision: string): string {
  return Object.hasOwn(WORDS, decision) ? WORDS[decision]! : clip(decision, 100);
}

export type DecisionTone = 'approve' | 'reject' | 'other';

/** Whether a decision lets the agent go ahead, stops it, or neither (e.g. timedOut, unknown). */
export function decisionTone(decision: string): DecisionTone {
  if (decision.startsWith('approved')) return 'approve';
  if (decision === 'abort' || decision.startsWith('denied')) return 'reject';
  return 'other';
}

/**
 * Whether picking this decision counts toward a quorum rather than deciding at once: only what
 * plainly stops the agent needs one person. A word this bot does not know may let the agent go
 * ahead, so it is counted like an approval.
 */
export function needsQuorum(decision: string): boolean {
  return decisionTone(decision) !== 'reject';
}
