import type { KnownBlock, ModalView, PlainTextOption } from '@slack/types';
import { context, plainText, section } from './blocks.js';
import { clip, codeBlock } from './escape.js';
import {
  FEEDBACK_BLOCK_ID,
  FEEDBACK_INPUT_ACTION_ID,
  FEEDBACK_VIEW_CALLBACK_ID,
  type FeedbackModalMetadata,
  QUICK_REASON_ACTION_ID,
  QUICK_REASON_BLOCK_ID,
} from './ids.js';
import { MAX_PRIVATE_METADATA } from './limits.js';
import { clipProse } from './prose.js';

/** Longest reason the modal accepts; it goes to the agent as `feedback`. */
export const FEEDBACK_MAX_LENGTH = 2000;
/** How much of the command being rejected the modal shows: enough to recognise it. */
const SUBJECT_MAX_LENGTH = 500;
/** Radio buttons show every reason at once, up to Block Kit's 10; past that, a menu. */
const MAX_RADIO_OPTIONS = 10;
/** Slack's limits on an option: its label, and its value (quick reasons are at most this long). */
const MAX_OPTION_TEXT = 75;

export interface FeedbackModalArgs {
  metadata: FeedbackModalMetadata;
  choiceLabel: string;
  tool: string;
  /** The command or subject being rejected, in a few words (renderCard's subjectSummary). */
  subject?: string;
  /** The route's rule: required means the submit is refused until a reason is given. */
  rejectReason?: 'required' | 'optional';
  /** The route's quick reasons, offered as options. */
  quickReasons?: readonly string[];
}

/** The route's quick reasons as options (the "Reject all" modal offers them too). */
export function quickReasonsBlock(reasons: readonly string[]): KnownBlock {
  const options: PlainTextOption[] = reasons.map((reason) => ({
    text: plainText(clip(reason, MAX_OPTION_TEXT)),
    value: reason,
  }));
  return {
    type: 'input',
    block_id: QUICK_REASON_BLOCK_ID,
    optional: true,
    label: plainText('Quick reason'),
    element:
      options.length <= MAX_RADIO_OPTIONS
        ? { type: 'radio_buttons', action_id: QUICK_REASON_ACTION_ID, options }
        : {
            type: 'static_select',
            action_id: QUICK_REASON_ACTION_ID,
            placeholder: plainText('Pick a reason'),
            options,
          },
  };
}

/**
 * The modal a choice that accepts feedback opens: what is being rejected, the route's quick
 * reasons, and a reason of one's own, sent with the decision. A quick reason and a typed one
 * together go as "quick reason: typed reason". The reason field stays optional for Slack, so
 * that a quick reason alone can be sent; a required reason is enforced at submit
 * (response_action errors). private_metadata holds only what finds the card again; the relay
 * re-reads the record, and checks the user again, on submit.
 */
export function renderFeedbackModal(args: FeedbackModalArgs): ModalView {
  const privateMetadata = JSON.stringify(args.metadata);
  // Cutting JSON would make it unreadable on submit; a choiceId this long is a host bug.
  if (privateMetadata.length > MAX_PRIVATE_METADATA) {
    throw new Error(
      `feedback modal metadata is ${privateMetadata.length} chars, over Slack's ${MAX_PRIVATE_METADATA}`,
    );
  }
  const quickReasons = args.quickReasons ?? [];
  const required = args.rejectReason === 'required';
  return {
    type: 'modal',
    callback_id: FEEDBACK_VIEW_CALLBACK_ID,
    title: plainText('Add a reason'),
    submit: plainText('Send'),
    close: plainText('Cancel'),
    private_metadata: privateMetadata,
    blocks: [
      context([
        `You chose *${clipProse(args.choiceLabel, 200)}* for ${clipProse(args.tool, 200)}. The agent sees the reason you give.`,
      ]),
      ...(args.subject ? [section(codeBlock(args.subject, SUBJECT_MAX_LENGTH))] : []),
      ...(quickReasons.length > 0 ? [quickReasonsBlock(quickReasons)] : []),
      reasonInput(required, quickReasons.length > 0),
    ],
  };
}

/**
 * The reason typed, optional for Slack so that a quick reason alone can be sent: a required one
 * is enforced at submit (response_action errors), by the "Reject all" modal too.
 */
export function reasonInput(required: boolean, quickReasons: boolean): KnownBlock {
  return {
    type: 'input',
    block_id: FEEDBACK_BLOCK_ID,
    optional: true,
    label: plainText(required ? 'Reason (required)' : 'Reason (optional)'),
    ...(quickReasons
      ? { hint: plainText('Pick a quick reason, type one, or both: what you type is added after it.') }
      : {}),
    element: {
      type: 'plain_text_input',
      action_id: FEEDBACK_INPUT_ACTION_ID,
      multiline: true,
      max_length: FEEDBACK_MAX_LENGTH,
      placeholder: plainText('Tell the agent why, or what to do instead'),
    },
  };
}

/**
 * The reason typed into the feedback modal, from `view.state.values`; undefined when left empty
 * or when the payload does not hold our input.
 */
export function readFeedback(stateValues: unknown): string | undefined {
  if (typeof stateValues !== 'object' || stateValues === null) return undefined;
  const block = (stateValues as Record<string, unknown>)[FEEDBACK_BLOCK_ID];
  if (typeof block !== 'object' || block === null) return undefined;
  const input = (block as Record<string, unknown>)[FEEDBACK_INPUT_ACTION_ID];
  if (typeof input !== 'object' || input === null) return undefined;
  const value = (input as Record<string, unknown>).value;
  if (typeof value !== 'string') return undefined;
  const trimmed = value.trim();
  return trimmed === '' ? undefined : trimmed;
}

/** The quick reason picked in the modal, from `view.state.values`; undefined when none. */
export function readQuickReason(stateValues: unknown): string | undefined {
  const picked = (stateValues as Record<string, Record<string, { selected_option?: { value?: unknown } }>>)?.[
    QUICK_REASON_BLOCK_ID
  ]?.[QUICK_REASON_ACTION_ID]?.selected_option?.value;
  return typeof picked === 'string' && picked.trim() !== '' ? picked.trim() : undefined;
}

/** The reason sent with the decision: the quick reason, the typed one, or "quick: typed". */
export function readReason(stateValues: unknown): string | undefined {
  const quick = readQuickReason(stateValues);
  const typed = readFeedback(stateValues);
  return quick && typed ? `${quick}: ${typed}` : (quick ?? typed);
}
