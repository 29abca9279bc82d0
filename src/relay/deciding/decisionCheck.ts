import type { ApprovalRecord, Claim } from '../../domain/record.js';
import { isTerminal } from '../../domain/record.js';

/** Why a decision cannot be made on a record as it stands. */
export type NotDecidable =
  /** Resolved, superseded or orphaned: the record says how. */
  | { kind: 'final'; record: ApprovalRecord }
  | { kind: 'underReview' }
  | { kind: 'unavailable'; reason: NonNullable<ApprovalRecord['unavailable']> }
  | { kind: 'alreadyBeingDecided'; holder?: Claim }
  /** The stage moved on or the choice is no longer offered: the card shows the current question. */
  | { kind: 'stale' };

/** What a decision names: the stage it was made for and the choice. */
export interface DecisionAsk {
  sourceIndex: number;
  choiceId: string;
}

/** Why `ask` cannot be decided on `record`, or undefined when it can. Pure. */
export function whyNotDecidable(record: ApprovalRecord, ask: DecisionAsk): NotDecidable | undefined {
  if (isTerminal(record)) return { kind: 'final', record };
  // Before the phase: whatever a later mutation made of the phase, a question asked again on
  // another route, tool or session is never decided on the first one's card (record.rerouted).
  if (record.rerouted) return { kind: 'unavailable', reason: 'routeChanged' };
  if (record.phase === 'reviewing') return { kind: 'underReview' };
  if (record.phase === 'unavailable')
    return { kind: 'unavailable', reason: record.unavailable ?? 'unknownToHost' };
  if (record.phase === 'deciding' && record.claim?.sourceIndex === ask.sourceIndex) {
    return { kind: 'alreadyBeingDecided', holder: record.claim };
  }
  const offered = record.availableChoices.some((c) => c.choiceId === ask.choiceId);
  if (ask.sourceIndex !== record.currentRequirementId.sourceIndex || !offered) return { kind: 'stale' };
  return undefined;
}
