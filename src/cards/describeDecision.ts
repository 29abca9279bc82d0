import { type Resolution, rulePersistence } from '../domain/record.js';
import { quote } from './escape.js';
import { clipProse, inertProse } from './prose.js';

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
  return Object.hasOwn(WORDS, decision) ? WORDS[decision]! : clipProse(decision, 100);
}

/** The words of the decisions that save a rule, for when the host said it could not save it. */
const RULE_NOT_SAVED: Record<string, string> = {
  approvedPolicyAmendment: 'Approved (a rule was asked for; it was not saved)',
  deniedPolicyAmendment: 'Denied (a rule was asked for; it was not saved)',
};

/**
 * The words of decisions that say no rule was made, for when the host says one was all the same
 * (an amendment on an `approved`: "Allow once" answered with a rule, resolved()).
 */
const RULE_SAVED_ANYWAY: Record<string, string> = {
  approved: 'Approved, and the host saved a rule too',
};

/**
 * A resolution's decision in human words: as describeDecision, except that a rule the host
 * reported it could not save (policyPersistence failed) is never said to be saved, and one it
 * says it saved is never denied ("this request only").
 */
export function describeResolution(
  resolution: Pick<Resolution, 'decision' | 'amendment' | 'persistence'>,
): string {
  const { decision } = resolution;
  if (rulePersistence(resolution)?.status === 'failed' && Object.hasOwn(RULE_NOT_SAVED, decision)) {
    return RULE_NOT_SAVED[decision]!;
  }
  if (resolution.amendment && Object.hasOwn(RULE_SAVED_ANYWAY, decision)) return RULE_SAVED_ANYWAY[decision]!;
  return describeDecision(decision);
}

/**
 * A decider the host names that Countersign does not know (resolvedBy is an open enum too): the
 * host's own word, quoted, escaped and cut, after "the agent host", so that whatever it says (a
 * person's name, "@here") neither passes for someone who decided nor pings anyone.
 */
export function hostNamedDecider(resolvedBy: string): string {
  return resolvedBy.trim() === ''
    ? 'the agent host'
    : `the agent host (${quote(inertProse(resolvedBy), 62)})`;
}
