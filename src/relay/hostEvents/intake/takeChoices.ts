import type { ApprovalChoice } from '../../../msp/protocol.js';
import { MAX_CHOICE_TEXT_CHARS, MAX_CHOICES, MAX_CHOICES_CHARS } from './limits.js';
import { type FieldTaker, PartIntake, type PartReport } from './partIntake.js';

/**
 * The choices with labels and rule previews masked and cut. choiceId, decision, scope and
 * acceptsFeedback are kept as sent: the decision names the choiceId. Choices past MAX_CHOICES
 * could not be shown as buttons anyway and are left out.
 */
export function takeChoices(choices: readonly ApprovalChoice[]): {
  availableChoices: ApprovalChoice[];
  report: PartReport;
} {
  const part = new PartIntake(MAX_CHOICES_CHARS);
  const text: FieldTaker = (value) => part.text(value as string, MAX_CHOICE_TEXT_CHARS);
  const keep: FieldTaker = (value) => part.verbatim(value);
  if (choices.length > MAX_CHOICES) part.truncated = true;
  const availableChoices = choices.slice(0, MAX_CHOICES).map(
    (choice) =>
      part.shaped(choice, {
        choiceId: keep,
        decision: keep,
        scope: keep,
        acceptsFeedback: keep,
        label: text,
        rulePreview: text,
      }) as ApprovalChoice,
  );
  return { availableChoices, report: part.report() };
}
