import type { ApprovalChoice } from '../../../msp/protocol.js';
import { MAX_CHOICE_TEXT_CHARS, MAX_CHOICES, MAX_CHOICES_CHARS } from './limits.js';
import { type FieldTaker, PartIntake, type PartReport } from './partIntake.js';

/** Whether two choices make the host do the same, labels aside: then they are one choice. */
function sameEffect(a: ApprovalChoice, b: ApprovalChoice): boolean {
  return (
    a.decision === b.decision &&
    a.scope === b.scope &&
    a.rulePreview === b.rulePreview &&
    (a.acceptsFeedback === true) === (b.acceptsFeedback === true)
  );
}

/**
 * The choices a press can name without doubt. A press sends only the choiceId: when the host
 * offers one id for choices that do different things, the bot would reason about one of them (a
 * quorum, a stand-in's limits, a grant) while the host applies whichever it finds. None of those
 * is offered, and how many were left out is told. Repeats that do the same thing are one choice.
 * The whole menu is looked at: a repeat past MAX_CHOICES still shares its id with a kept one.
 */
function unambiguous(choices: readonly ApprovalChoice[]): { kept: ApprovalChoice[]; withheld: number } {
  // The first choice under each id, or null once another one under it does something else.
  const first = new Map<string, ApprovalChoice | null>();
  for (const choice of choices) {
    const seen = first.get(choice.choiceId);
    if (seen === undefined) first.set(choice.choiceId, choice);
    else if (seen !== null && !sameEffect(seen, choice)) first.set(choice.choiceId, null);
  }
  const kept: ApprovalChoice[] = [];
  let withheld = 0;
  for (const choice of choices) {
    const seen = first.get(choice.choiceId);
    if (seen === null) withheld += 1;
    else if (seen === choice) kept.push(choice);
  }
  return { kept, withheld };
}

/**
 * The choices with labels and rule previews masked and cut. choiceId, decision, scope and
 * acceptsFeedback are kept as sent: the decision names the choiceId. Choices sharing an id are
 * left out or made one (unambiguous). Choices past MAX_CHOICES could not be shown as buttons
 * anyway and are left out.
 */
export function takeChoices(choices: readonly ApprovalChoice[]): {
  availableChoices: ApprovalChoice[];
  report: PartReport;
} {
  const part = new PartIntake(MAX_CHOICES_CHARS);
  const text: FieldTaker = (value) => part.text(value as string, MAX_CHOICE_TEXT_CHARS);
  const keep: FieldTaker = (value) => part.verbatim(value);
  const { kept, withheld } = unambiguous(choices);
  if (kept.length > MAX_CHOICES) part.truncated = true;
  part.choicesWithheld = withheld;
  const availableChoices = kept.slice(0, MAX_CHOICES).map(
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
