import { describeDecision } from '../cards/describeDecision.js';

// The one place where a refusal code becomes the sentence a person reads. Every text here is
// ephemeral and goes only to the person who clicked.

export type Refusal =
  | { code: 'unknownCard' }
  | { code: 'alreadyResolved'; decision: string; resolvedBy: string; slackUserId?: string }
  | { code: 'superseded' }
  | { code: 'orphaned' }
  | { code: 'underReview' }
  | { code: 'questionChanged' }
  | { code: 'alreadyBeingDecided'; userId?: string; self: boolean }
  | { code: 'reviewerUnavailable' }
  | { code: 'hostUnavailable' }
  | { code: 'sessionElsewhere' }
  | { code: 'decideFailed'; kind: string };

function who(resolvedBy: string, slackUserId?: string): string {
  if (slackUserId) return `<@${slackUserId}>`;
  if (resolvedBy === 'policy') return 'policy';
  if (resolvedBy === 'llmJudge') return 'the automated reviewer';
  if (resolvedBy === 'user') return 'someone outside Slack';
  return resolvedBy.replace(/[&<>]/g, '');
}

export function refusalText(refusal: Refusal): string {
  switch (refusal.code) {
    case 'unknownCard':
      return 'Countersign has no approval behind this message any more, so this click changed nothing.';
    case 'alreadyResolved':
      return `This approval was already decided: ${describeDecision(refusal.decision)} by ${who(refusal.resolvedBy, refusal.slackUserId)}. Your click changed nothing.`;
    case 'superseded':
      return 'This request was superseded when the agent host restarted. It was asked again on a new card: decide there.';
    case 'orphaned':
      return 'The agent host stopped and this request died with it. Nothing can be decided here.';
    case 'underReview':
      return 'An automated reviewer holds this request right now. If it hands it to a person, the buttons come back.';
    case 'questionChanged':
      return 'The question changed while you were looking (a stage advanced or the choices changed). The card now shows the current question: please decide again.';
    case 'alreadyBeingDecided':
      return refusal.self
        ? 'Your decision on this step is already being sent.'
        : `This step is already being decided by ${refusal.userId ? `<@${refusal.userId}>` : 'someone else'}.`;
    case 'reviewerUnavailable':
      return 'This is a protected write, and the agent host has no live reviewer right now, so it cannot be approved from Slack. Approve it at the host, or try again later.';
    case 'hostUnavailable':
      return 'The agent host is restarting. If it keeps this request, your decision is sent when it is back; if it asks again, a new card says so.';
    case 'sessionElsewhere':
      return 'This session is open in another agent host (someone’s terminal, say), which holds it; it can only be decided there.';
    case 'decideFailed':
      return `The agent host refused the decision (${refusal.kind.replace(/[&<>]/g, '')}). Nothing was decided; the card shows the current state.`;
  }
}
