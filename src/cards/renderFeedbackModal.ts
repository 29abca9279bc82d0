import type { ModalView } from '@slack/types';
import { context, plainText } from './blocks.js';
import { clip } from './escape.js';
import {
  FEEDBACK_BLOCK_ID,
  FEEDBACK_INPUT_ACTION_ID,
  FEEDBACK_VIEW_CALLBACK_ID,
  type FeedbackModalMetadata,
} from './ids.js';
import { MAX_PRIVATE_METADATA } from './limits.js';

/** Longest reason the modal accepts; it goes to the agent as `feedback`. */
export const FEEDBACK_MAX_LENGTH = 2000;

/**
 * The modal a choice that accepts feedback opens: one optional reason, sent with the decision.
 * private_metadata holds only what finds the card again; the relay re-reads the record on submit.
 */
export function renderFeedbackModal(args: {
  metadata: FeedbackModalMetadata;
  choiceLabel: string;
  tool: string;
}): ModalView {
  const privateMetadata = JSON.stringify(args.metadata);
  // Cutting JSON would make it unreadable on submit; a choiceId this long is a host bug.
  if (privateMetadata.length > MAX_PRIVATE_METADATA) {
    throw new Error(
      `feedback modal metadata is ${privateMetadata.length} chars, over Slack's ${MAX_PRIVATE_METADATA}`,
    );
  }
  return {
    type: 'modal',
    callback_id: FEEDBACK_VIEW_CALLBACK_ID,
    title: plainText('Add a reason'),
    submit: plainText('Send'),
    close: plainText('Cancel'),
    private_metadata: privateMetadata,
    blocks: [
      context([
        `You chose *${clip(args.choiceLabel, 200)}* for ${clip(args.tool, 200)}. The agent sees the reason you give.`,
      ]),
      {
        type: 'input',
        block_id: FEEDBACK_BLOCK_ID,
        optional: true,
        label: plainText('Reason (optional)'),
        element: {
          type: 'plain_text_input',
          action_id: FEEDBACK_INPUT_ACTION_ID,
          multiline: true,
          max_length: FEEDBACK_MAX_LENGTH,
          placeholder: plainText('Tell the agent why, or what to do instead'),
        },
      },
    ],
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
