import type { ActionsBlock, Button, ConfirmationDialog, KnownBlock } from '@slack/types';
import { decisionTone } from '../domain/decisionWords.js';
import type { RememberOffer } from '../domain/grants/match.js';
import { scopeToken } from '../domain/grants/scope.js';
import { questionDigest } from '../domain/questionDigest.js';
import type { ApprovalRecord } from '../domain/record.js';
import type { ApprovalChoice } from '../msp/protocol.js';
import { context, plainText, section } from './blocks.js';
import type { CardBudget } from './budget.js';
import { type Misleading, misleadingLabel, type Reach } from './choiceEffects.js';
import { clip, fitsWithin } from './escape.js';
import { fitLines } from './fitLines.js';
import {
  CHOICE_ACTION_PREFIX,
  CHOICE_BLOCK_PREFIX,
  encodeChoiceValue,
  REMEMBER_ACTION_PREFIX,
  REMEMBER_BLOCK_PREFIX,
} from './ids.js';
import { MAX_ACTIONS_ELEMENTS, MAX_BUTTON_TEXT, MAX_BUTTON_VALUE, MAX_CONFIRM_BUTTON } from './limits.js';
import { truncateProse } from './prose.js';
import { rememberHeading, scopeLabel } from './renderGrant.js';

/** Choices shown at most: three actions blocks, which keeps a card far below 50 blocks. */
export const MAX_SHOWN_CHOICES = 75;

const CONFIRM_DENY = 'Cancel';
const MIN_LABEL = 10;

/** A confirm dialog's words; without `confirm`, its confirm button repeats the label. */
interface Dialog {
  title: string;
  text: string;
  confirm?: string;
  style: 'primary' | 'danger';
}

const REJECT_DIALOG: Dialog = {
  title: 'Reject this?',
  text: 'The agent will not be allowed to do this.',
  style: 'danger',
};

const APPROVE_TITLES: Record<Reach, string> = {
  once: 'Approve this?',
  session: 'Allow for the session?',
  rule: 'Allow this for good?',
  beyond: 'Allow past this request?',
};

function labelOf(choice: ApprovalChoice, index: number): string {
  return choice.label !== ''
    ? choice.label
    : choice.choiceId !== ''
      ? choice.choiceId
      : `Choice ${index + 1}`;
}

/**
 * The dialog a button asks through first: every rejection, and every choice whose label could
 * mislead (misleadingLabel), which says in the bot's words what it does. The confirm button of
 * such a dialog says it too, never the label it contradicts; for a decision word this bot does
 * not know, which it cannot call an approval, it says only "Confirm".
 */
function dialogOf(choice: ApprovalChoice, misleading: Misleading | undefined): Dialog | undefined {
  if (misleading && misleading.tone !== 'reject') {
    return {
      title: APPROVE_TITLES[misleading.reach],
      text: `Whatever its label says, this ${misleading.effect}.`,
      confirm: misleading.tone === 'approve' ? 'Approve' : 'Confirm',
      style: 'primary',
    };
  }
  if (decisionTone(choice.decision) !== 'reject') return undefined;
  return misleading ? { ...REJECT_DIALOG, confirm: 'Reject' } : REJECT_DIALOG;
}

function confirm(dialog: Dialog, label: string, labelMax: number): ConfirmationDialog {
  return {
    title: plainText(dialog.title),
    text: plainText(dialog.text),
    confirm: plainText(dialog.confirm ?? clip(label, Math.min(MAX_CONFIRM_BUTTON, labelMax))),
    deny: plainText(CONFIRM_DENY),
    style: dialog.style,
  };
}

/**
 * Button labels share the buttons budget, dialogs included: a few choices get the full 75
 * characters, dozens of them get less, so the card keeps inside Slack's total text size.
 */
function labelAllowance(dialogs: readonly (Dialog | undefined)[], budget: CardBudget): number {
  let fixed = 0;
  let labels = dialogs.length;
  for (const dialog of dialogs) {
    if (!dialog) continue;
    fixed += dialog.title.length + dialog.text.length + CONFIRM_DENY.length + (dialog.confirm?.length ?? 0);
    if (dialog.confirm === undefined) labels += 1;
  }
  const per = Math.floor((budget.buttons - fixed) / Math.max(1, labels));
  return Math.min(MAX_BUTTON_TEXT, Math.max(MIN_LABEL, per));
}

function button(
  record: ApprovalRecord,
  choice: ApprovalChoice,
  index: number,
  labelMax: number,
  asked: string,
  dialog: Dialog | undefined,
): Button | undefined {
  const choiceOnly = { s: record.currentRequirementId.sourceIndex, c: choice.choiceId, d: asked };
  // Spelled out, not `{ ...choiceOnly, a }` (docs/performance.md, "Object shapes").
  const withApproval = encodeChoiceValue({
    s: choiceOnly.s,
    c: choiceOnly.c,
    a: record.approvalId,
    d: asked,
  });
  const value = withApproval.length <= MAX_BUTTON_VALUE ? withApproval : encodeChoiceValue(choiceOnly);
  // A choiceId too long for a button value cannot be carried by a click at all.
  if (value.length > MAX_BUTTON_VALUE) return undefined;
  const label = labelOf(choice, index);
  const b: Button = {
    type: 'button',
    action_id: `${CHOICE_ACTION_PREFIX}${index}`,
    text: plainText(clip(label, labelMax)),
    value,
  };
  const tone = decisionTone(choice.decision);
  if (tone === 'approve') b.style = 'primary';
  if (tone === 'reject') b.style = 'danger';
  if (dialog) b.confirm = confirm(dialog, label, labelMax);
  return b;
}

/**
 * First, for each choice whose label could mislead, what it does in the bot's words: those lines
 * are the last the budget may cut. Then each choice's rulePreview, verbatim ("<label>:
 * <rulePreview>", or "Rule: <rulePreview>" when the label already is the preview), and the full
 * label of any choice whose button had to cut it: a reviewer must be able to read what they are
 * about to click.
 */
function detailLines(
  choices: readonly ApprovalChoice[],
  misleading: readonly (Misleading | undefined)[],
  labelMax: number,
  budget: CardBudget,
): string[] {
  const lines: string[] = [];
  choices.forEach((choice, i) => {
    const effect = misleading[i]?.effect;
    if (effect === undefined) return;
    const shown = truncateProse(labelOf(choice, i), Math.floor(budget.previewLine / 2));
    lines.push(`:warning: “${shown}” ${effect}`);
  });
  choices.forEach((choice, i) => {
    const label = labelOf(choice, i);
    if (choice.rulePreview !== undefined && choice.rulePreview === label) {
      // Hosts often label a rule choice with its own preview: say it once.
      lines.push(`Rule: ${truncateProse(choice.rulePreview, budget.previewLine - 6)}`);
    } else if (choice.rulePreview !== undefined && choice.rulePreview !== '') {
      const shown = truncateProse(label, Math.floor(budget.previewLine / 2));
      lines.push(
        `${shown}: ${truncateProse(choice.rulePreview, Math.max(40, budget.previewLine - shown.length - 2))}`,
      );
    } else if (!fitsWithin(label, labelMax)) {
      lines.push(truncateProse(label, budget.previewLine));
    }
  });
  return lines;
}

/** One button per scope of the offer, each carrying the once-choice of this stage and its scope. */
function rememberButtons(record: ApprovalRecord, offer: RememberOffer, asked: string): Button[] {
  return offer.scopes.flatMap((scope, i): Button[] => {
    const value = encodeChoiceValue({
      s: record.currentRequirementId.sourceIndex,
      c: offer.choiceId,
      a: record.approvalId,
      k: scopeToken(scope),
      d: asked,
    });
    if (value.length > MAX_BUTTON_VALUE) return [];
    return [
      {
        type: 'button',
        action_id: `${REMEMBER_ACTION_PREFIX}${i}`,
        text: plainText(clip(scopeLabel(scope), MAX_BUTTON_TEXT)),
        value,
      },
    ];
  });
}

/**
 * The pending card's buttons: exactly the offered choices, in order, each action_id carrying its
 * index and each value the requirement it was rendered for and the question it shows
 * (questionDigest: a press decides only while that is still asked). Block ids carry the record
 * version, so every update gets fresh ones. Rule previews and cut labels are shown in full just
 * above. The card, the escalation DM and the full view all take their buttons from here.
 */
export function renderChoices(
  record: ApprovalRecord,
  budget: CardBudget,
  maxChoices: number,
  remember?: RememberOffer,
): KnownBlock[] {
  const choices = record.availableChoices;
  if (choices.length === 0) {
    return [section('The host offered no choices for this step. Decide in the agent itself.')];
  }
  const blocks: KnownBlock[] = [];
  const shown = choices.slice(0, Math.min(maxChoices, MAX_SHOWN_CHOICES));

  // A label is judged as its button shows it (misleadingLabel), and how much a button shows
  // depends on the dialogs sharing the budget: from the most a button holds, shrink until the
  // labels judged are the labels drawn. Each pass cuts more or stops; MIN_LABEL ends it.
  let labelMax = MAX_BUTTON_TEXT;
  let misleading: (Misleading | undefined)[];
  let dialogs: (Dialog | undefined)[];
  for (;;) {
    const max = labelMax;
    misleading = shown.map((choice, i) => misleadingLabel(choice, labelOf(choice, i), max));
    dialogs = shown.map((choice, i) => dialogOf(choice, misleading[i]));
    const allowed = labelAllowance(dialogs, budget);
    if (allowed >= labelMax) break;
    labelMax = allowed;
  }
  const details = detailLines(shown, misleading, labelMax, budget);
  if (details.length > 0) {
    const lines = fitLines(details.length, (i) => details[i]!, budget.previews, ['choice', 'choices']);
    blocks.push(section(`*About these choices*\n${lines.join('\n')}`));
  }

  const asked = questionDigest(record);
  const buttons: Button[] = [];
  shown.forEach((choice, i) => {
    const b = button(record, choice, i, labelMax, asked, dialogs[i]);
    if (b) buttons.push(b);
  });
  for (let start = 0; start < buttons.length; start += MAX_ACTIONS_ELEMENTS) {
    const actions: ActionsBlock = {
      type: 'actions',
      block_id: `${CHOICE_BLOCK_PREFIX}v${record.version}_${start / MAX_ACTIONS_ELEMENTS}`,
      elements: buttons.slice(start, start + MAX_ACTIONS_ELEMENTS),
    };
    blocks.push(actions);
  }
  // The bot's own buttons, apart from the host's choices: those stay exactly what the host offered.
  const offered =
    remember && shown.some((c) => c.choiceId === remember.choiceId)
      ? rememberButtons(record, remember, asked)
      : [];
  if (remember && offered.length > 0) {
    blocks.push(context([rememberHeading(remember.capabilities, remember.caller)]), {
      type: 'actions',
      block_id: `${REMEMBER_BLOCK_PREFIX}v${record.version}`,
      elements: offered,
    });
  }

  const notes: string[] = [];
  const tooMany = choices.length - shown.length;
  if (tooMany > 0) {
    notes.push(
      `${tooMany} more ${tooMany === 1 ? 'choice is' : 'choices are'} not shown here (more than one Slack message can hold). Decide in the agent itself to pick ${tooMany === 1 ? 'it' : 'one of them'}.`,
    );
  }
  const unsendable = shown.length - buttons.length;
  if (unsendable > 0) {
    notes.push(
      `${unsendable} ${unsendable === 1 ? 'choice has' : 'choices have'} an id too long for a Slack button and ${unsendable === 1 ? 'is' : 'are'} not shown. Decide in the agent itself to pick ${unsendable === 1 ? 'it' : 'one of them'}.`,
    );
  }
  if (notes.length > 0) blocks.push(context(notes));
  return blocks;
}
