import { renderConfirmModal } from '../../cards/renderConfirmModal.js';
import { subjectSummary } from '../../cards/subjectSummary.js';
import { questionDigest } from '../../domain/questionDigest.js';
import type { ApprovalRecord } from '../../domain/record.js';
import type { TypedConfirmation } from '../../domain/typedConfirmation.js';
import type { Click } from '../../relay/deciding/clickHandler.js';

/**
 * The confirmation modal for an approving press that a risk rule asks to confirm, or undefined
 * when the pressed choice is no longer on the record (the press is then refused as a click is).
 * Its private_metadata holds only what finds the card again: the submit re-reads everything.
 */
export function confirmModal(
  click: Click,
  record: ApprovalRecord,
  confirmation: TypedConfirmation,
): ReturnType<typeof renderConfirmModal> | undefined {
  const choice = record.availableChoices.find((c) => c.choiceId === click.choiceId);
  if (!choice) return undefined;
  const subject = subjectSummary(record);
  return renderConfirmModal({
    metadata: {
      channel: click.channel,
      ts: click.ts,
      sourceIndex: click.sourceIndex,
      choiceId: click.choiceId,
      approvalId: record.approvalId,
      askedAs: questionDigest(record),
    },
    confirmation,
    choiceLabel: choice.label || choice.choiceId,
    tool: record.tool,
    ...(subject ? { subject } : {}),
  });
}
