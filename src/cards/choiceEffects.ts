import { decisionTone } from '../domain/decisionWords.js';
import type { ApprovalChoice } from '../msp/protocol.js';
import { clip } from './escape.js';
import { MAX_BUTTON_TEXT } from './limits.js';

// What a choice does, in the bot's words, for when the host's label could mislead: a buggy host
// may label an approval that keeps a rule for good "Reject". The label is the host's; only the
// decision and scope say what the host will do. The word lists are small on purpose: a label
// they miss gets no line, a word they hold in an ordinary label would cry wolf on every card.
// Words are matched whole and in lower case: "Disallow" is a reject word, never "allow".

/**
 * How long an approving choice lasts: this request, the session, for good, or longer in a way
 * this bot cannot name.
 */
export type Reach = 'once' | 'session' | 'rule' | 'beyond';

/** The widest of the decision and the scope: a host that sends them at odds is read the worse way. */
function reachOf(choice: Pick<ApprovalChoice, 'decision' | 'scope'>): Reach {
  if (choice.decision === 'approvedPolicyAmendment' || choice.scope === 'localPersistent') return 'rule';
  if (choice.decision === 'approvedForSession' || choice.scope === 'session') return 'session';
  return choice.scope === 'once' ? 'once' : 'beyond';
}

/** Words that say a label stops the agent ("Reject", "Deny", "No"). */
const REJECT_WORDS = new Set([
  'reject',
  'rejected',
  'deny',
  'denied',
  'disallow',
  'refuse',
  'decline',
  'cancel',
  'abort',
  'block',
  'stop',
  'no',
]);
/** Words that say a label lets it go ahead ("Allow once", "Yes", "Approve"). */
const APPROVE_WORDS = new Set(['allow', 'approve', 'accept', 'yes', 'proceed', 'continue']);
/** Before an approving word, these turn it around ("Don't allow"). */
const NEGATIONS = new Set(['not', "don't", 'dont', 'never']);
/** Words that say how long a label lasts. */
const ONCE_WORDS = new Set(['once']);
const SESSION_WORDS = new Set(['session']);
const RULE_WORDS = new Set(['always', 'rule', 'permanent', 'permanently', 'forever']);

/**
 * The label's words that say what it means: those before a colon, in lower case. After a colon a
 * host puts the rule or the command ("Always allow: docker stop web"), whose words mean nothing
 * about the choice.
 */
function wordsOf(label: string): string[] {
  const head = label.split(':', 1)[0] ?? '';
  return (
    head
      .toLowerCase()
      .replace(/’/g, "'")
      .match(/[\p{L}\p{N}']+/gu) ?? []
  );
}

function saysReject(words: readonly string[]): boolean {
  return words.some(
    (word, i) => REJECT_WORDS.has(word) || (APPROVE_WORDS.has(word) && i > 0 && NEGATIONS.has(words[i - 1]!)),
  );
}

function saysApprove(words: readonly string[]): boolean {
  return !saysReject(words) && words.some((word) => APPROVE_WORDS.has(word));
}

/**
 * Whether the label says the choice lasts as long as it does (or longer, which misleads no one),
 * and names no shorter reach beside it: "Allow always for this session" on a rule that lasts for
 * good says "always", but of the session.
 */
function saysReach(words: readonly string[], reach: Reach): boolean {
  const has = (set: ReadonlySet<string>) => words.some((word) => set.has(word));
  if (reach === 'once') return true;
  if (has(ONCE_WORDS)) return false;
  if (reach === 'session') return has(SESSION_WORDS) || has(RULE_WORDS);
  // A reach this bot cannot name is said by no label.
  return reach === 'rule' && has(RULE_WORDS) && !has(SESSION_WORDS);
}

const APPROVES: Record<Reach, string> = {
  once: 'approves this request only',
  session: 'approves, and the host keeps allowing it for the rest of the session',
  rule: 'approves, and the host keeps it as a rule for good',
  beyond: 'approves, and the host keeps it past this request',
};

/** The same, for a decision word this bot does not know, which quorums and stand-ins count as an approval. */
const MAY_APPROVE: Record<Exclude<Reach, 'once'>, string> = {
  session: 'may approve, and the host keeps allowing it for the rest of the session',
  rule: 'may approve, and the host keeps it as a rule for good',
  beyond: 'may approve, and the host keeps it past this request',
};

/** What a choice does when its label could mislead about it, as a phrase after the label. */
export interface Misleading {
  /** `other`: a decision word this bot does not know, which may approve. */
  tone: 'approve' | 'reject' | 'other';
  reach: Reach;
  /** "approves, and the host keeps it as a rule for good". */
  effect: string;
}

/**
 * What the choice does, when its label could mislead: an approval that outlasts the request and
 * whose label does not say so, a decision word this bot does not know with a scope past once
 * (which may be such an approval), or a label whose words say the opposite of its decision.
 * Undefined when the label is fair, and for an unknown word of this request only.
 *
 * `shown`: how many characters of the label its button shows (clip). What the label says of its
 * reach counts only there: a host could hide "always" past the cut, where nobody reads it. A word
 * that says the opposite of the decision counts anywhere in the label, the part cut off too: one
 * more warning is the safe side.
 */
export function misleadingLabel(
  choice: Pick<ApprovalChoice, 'decision' | 'scope'>,
  label: string,
  shown: number = MAX_BUTTON_TEXT,
): Misleading | undefined {
  const tone = decisionTone(choice.decision);
  const all = wordsOf(label);
  // Clipping can cut a word down to another ("nothing" to "no…"): the button shows that one.
  const seen = wordsOf(clip(label, shown));
  if (tone === 'reject') {
    return saysApprove(seen) || saysApprove(all) ? { tone, reach: 'once', effect: 'rejects' } : undefined;
  }
  const reach = reachOf(choice);
  const fair = saysReach(seen, reach) && !saysReject(seen) && !saysReject(all);
  if (tone === 'approve') return fair ? undefined : { tone, reach, effect: APPROVES[reach] };
  // An unknown word is fair only under a label that says it approves, and for how long.
  if (reach === 'once' || (fair && saysApprove(seen))) return undefined;
  return { tone, reach, effect: MAY_APPROVE[reach] };
}
