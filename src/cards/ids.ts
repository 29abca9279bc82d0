// Every block_id, action_id and callback_id the bot's surfaces use lives here, so listeners and
// renderers cannot drift apart.

/** action_id of a choice button is `${CHOICE_ACTION_PREFIX}${index}`; Bolt listens on the pattern. */
export const CHOICE_ACTION_PREFIX = 'cs_choice_';
export const CHOICE_ACTION_PATTERN = /^cs_choice_\d+$/;

/**
 * The bot's own "approve and don't ask again": one button per scope the route offers, action_id
 * `${REMEMBER_ACTION_PREFIX}${index}`, its value a ChoiceButtonValue naming the scope (`k`).
 */
export const REMEMBER_ACTION_PREFIX = 'cs_remember_';
/**
 * The single button of cards posted before scopes existed. Still taken, so that a press on one is
 * answered with why it changed nothing rather than left unanswered: it names no scope (`k`), and
 * is refused (ClickHandler).
 */
export const REMEMBER_ACTION_ID = 'cs_remember';
export const REMEMBER_ACTION_PATTERN = /^cs_remember(?:_\d+)?$/;
/** block_id of its actions block, apart from the host's choices: `${REMEMBER_BLOCK_PREFIX}v${version}`. */
export const REMEMBER_BLOCK_PREFIX = 'cs_remember_';
/** A Revoke button in a grants list (/countersign grants, App Home); its value is the grantId. */
export const REVOKE_GRANT_ACTION_ID = 'cs_revoke_grant';

/** "View full" on a card whose text was shortened; its value is the approvalId. */
export const VIEW_FULL_ACTION_ID = 'cs_view_full';
/** block_id of its actions block: `${VIEW_FULL_BLOCK_PREFIX}v${version}`. */
export const VIEW_FULL_BLOCK_PREFIX = 'cs_view_full_';
/** The modal it opens; its choice buttons are the card's (CHOICE_ACTION_PREFIX). */
export const FULL_VIEW_CALLBACK_ID = 'cs_full_view';

/**
 * private_metadata of the full view: the card it was opened from. A choice pressed in the modal
 * has no message of its own; it is the card's click, found again from here.
 */
export interface FullViewMetadata {
  channel: string;
  ts: string;
  approvalId: string;
}

export const FEEDBACK_VIEW_CALLBACK_ID = 'cs_feedback';
export const FEEDBACK_BLOCK_ID = 'cs_feedback_block';
export const FEEDBACK_INPUT_ACTION_ID = 'cs_feedback_input';
/** The typed confirmation a risk rule's `confirm: type` asks for before approving. */
export const CONFIRM_VIEW_CALLBACK_ID = 'cs_confirm';
export const CONFIRM_BLOCK_ID = 'cs_confirm_block';
export const CONFIRM_INPUT_ACTION_ID = 'cs_confirm_input';
/** The route's quick reasons in the reject modal. */
export const QUICK_REASON_BLOCK_ID = 'cs_quick_reason_block';
export const QUICK_REASON_ACTION_ID = 'cs_quick_reason';

/**
 * What a choice button carries. It is only a hint of which button was pressed: the relay
 * re-reads the approval from Redis by (channel, ts) and checks the choice is still offered.
 */
export interface ChoiceButtonValue {
  /** sourceIndex of the requirement the button was rendered for */
  s: number;
  /** choiceId */
  c: string;
  /**
   * approvalId: lets a click read the record in the same round trip as the message mapping,
   * which it is still checked against. Left out when it would not fit in a button value.
   */
  a?: string;
  /** A "don't ask again" button: the scope it grants (scopeToken). */
  k?: string;
  /**
   * The question the button was shown with (questionDigest): a press decides only while the
   * approval still asks exactly that. Absent on cards posted before it was carried, whose presses
   * are refused (docs/security.md).
   */
  d?: string;
}

export function encodeChoiceValue(value: ChoiceButtonValue): string {
  return JSON.stringify(value);
}

export function decodeChoiceValue(raw: string | undefined): ChoiceButtonValue | undefined {
  if (!raw) return undefined;
  try {
    const v = JSON.parse(raw) as Partial<ChoiceButtonValue>;
    if (typeof v.s === 'number' && Number.isInteger(v.s) && typeof v.c === 'string')
      return {
        s: v.s,
        c: v.c,
        ...(typeof v.a === 'string' ? { a: v.a } : {}),
        ...(typeof v.k === 'string' ? { k: v.k } : {}),
        ...(typeof v.d === 'string' ? { d: v.d } : {}),
      };
  } catch {
    // fall through: a value we did not write
  }
  return undefined;
}

/** private_metadata of the feedback modal: enough to find the card again. */
export interface FeedbackModalMetadata {
  channel: string;
  ts: string;
  sourceIndex: number;
  choiceId: string;
  /** The approval the modal was opened for; checked against the message's own mapping on submit. */
  approvalId?: string;
  /** The question as the modal showed it (questionDigest), where what was shown must still hold. */
  askedAs?: string;
}

/** block_id of the n-th actions block of choices: `${CHOICE_BLOCK_PREFIX}v${version}_${n}`. */
export const CHOICE_BLOCK_PREFIX = 'cs_choices_';

/** Batch triage summary buttons (renderBatchSummary.ts); their value names the group and its members. */
export const BATCH_APPROVE_ACTION_ID = 'cs_batch_approve';
export const BATCH_REJECT_ACTION_ID = 'cs_batch_reject';
export const BATCH_REVIEW_ACTION_ID = 'cs_batch_review';
/** The "Reject all" reason modal. */
export const BATCH_REJECT_VIEW_CALLBACK_ID = 'cs_batch_reject_view';
