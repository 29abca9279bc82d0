import { decisionTone } from '../../domain/decisionWords.js';
import type { ApprovalRecord } from '../../domain/record.js';
import type { ConfirmTarget, TypedConfirmation } from '../../domain/typedConfirmation.js';
import type { ApprovalChoice } from '../../msp/protocol.js';
import { confirmTarget } from '../../routing/confirmTarget.js';

// When a pick needs the target typed first: the record matched a risk rule with `confirm: type`
// (kept on the record, so a restart with another file does not loosen it), and the pick is not
// one that plainly stops the agent. As with a quorum, a decision word the bot does not know may
// let the agent go ahead, so it is confirmed too; a rejection never is.

/** What `choice` on `record`, as it stands, asks to be typed; undefined when nothing. */
export function typedConfirmationFor(
  record: Pick<ApprovalRecord, 'risks' | 'subject' | 'currentRequirementId' | 'tool'>,
  choice: Pick<ApprovalChoice, 'decision'>,
): TypedConfirmation | undefined {
  const asking = (record.risks ?? []).filter((risk) => risk.confirm === 'type');
  if (asking.length === 0 || decisionTone(choice.decision) === 'reject') return undefined;
  const found = confirmTarget(record.subject, record.currentRequirementId.sourceIndex);
  // A word nobody can be asked to type (a long URL, a script) gives way to the tool's name.
  const target = found && isTypeable(found.text) ? found : fallbackTarget(record);
  return { target, risks: asking.map(({ name, warning }) => ({ name, warning })) };
}

/** Longest target asked for: past it, or across lines, a person copies rather than reads it. */
export const MAX_TARGET_LENGTH = 100;

function isTypeable(text: string): boolean {
  return text.length <= MAX_TARGET_LENGTH && !/[\r\n]/.test(text);
}

/** No target could be derived: the tool's name is asked for instead, never nothing. */
function fallbackTarget(record: Pick<ApprovalRecord, 'tool' | 'subject'>): ConfirmTarget {
  const text = record.tool.trim() || record.subject.kind.trim() || 'approve';
  return { text, source: 'tool' };
}
