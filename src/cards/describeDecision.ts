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
