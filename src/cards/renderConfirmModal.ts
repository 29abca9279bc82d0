import type { ModalView } from '@slack/types';
import type { TypedConfirmation } from '../domain/typedConfirmation.js';
import { context, plainText, section } from './blocks.js';
import { clip, codeBlock, inlineCode } from './escape.js';
import {
  CONFIRM_BLOCK_ID,
  CONFIRM_INPUT_ACTION_ID,
  CONFIRM_VIEW_CALLBACK_ID,
  type FeedbackModalMetadata,
} from './ids.js';
import { MAX_PRIVATE_METADATA } from './limits.js';
import { clipProse } from './prose.js';
import { targetName } from './renderUserMessages.js';

/** How much of the request the modal shows: enough to recognise it. */
const SUBJECT_MAX_LENGTH = 500;
/** Risk rules named in the modal; more are counted, not listed. */
const MAX_RULES_SHOWN = 3;

export interface ConfirmModalArgs {
  /** Only what finds the card again: the approval is re-read, and everything checked, on submit. */
  metadata: FeedbackModalMetadata;
  confirmation: TypedConfirmation;
  choiceLabel: string;
  tool: string;
  /** The request in a few words (subjectSummary). */
  subject?: string;
}

/**
 * The modal an approving press opens when a risk rule asks for a typed confirmation, as GitHub
 * asks for a repository's name before deleting it: it names the risk, shows the request and the
 * word to type. Every piece of agent text is escaped. The submit is checked in full (who may
 * decide, the approval as Redis holds it, the text typed) before anything is decided.
 */
export function renderConfirmModal(args: ConfirmModalArgs): ModalView {
  const privateMetadata = JSON.stringify(args.metadata);
  if (privateMetadata.length > MAX_PRIVATE_METADATA) {
    throw new Error(
      `confirm modal metadata is ${privateMetadata.length} chars, over Slack's ${MAX_PRIVATE_METADATA}`,
    );
  }
  const { risks, target } = args.confirmation;
  const named = risks
    .slice(0, MAX_RULES_SHOWN)
    .map((risk) => `:warning: *${clip(risk.warning, 150)}* (risk rule ${inlineCode(risk.name, 100)})`);
  const more = risks.length - named.length;
  return {
    type: 'modal',
    callback_id: CONFIRM_VIEW_CALLBACK_ID,
    title: plainText('Confirm approval'),
    submit: plainText('Approve'),
    close: plainText('Cancel'),
    private_metadata: privateMetadata,
    blocks: [
      section([...named, ...(more > 0 ? [`and ${more} more risk rules`] : [])].join('\n')),
      context([
        `You chose *${clipProse(args.choiceLabel, 200)}* for ${clipProse(args.tool, 200)}. Nothing is sent to the agent until you type ${targetName(args.confirmation)} below.`,
      ]),
      ...(args.subject ? [section(codeBlock(args.subject, SUBJECT_MAX_LENGTH))] : []),
      section(`To approve, type ${targetName(args.confirmation)}:\n${codeBlock(target.text, 300)}`),
      {
        type: 'input',
        block_id: CONFIRM_BLOCK_ID,
        label: plainText(`Type ${targetName(args.confirmation)} to approve`),
        element: {
          type: 'plain_text_input',
          action_id: CONFIRM_INPUT_ACTION_ID,
          max_length: 300,
        },
      },
    ],
  };
}

/** What was typed in the confirmation modal, from `view.state.values`; '' when nothing. */
export function readConfirmation(stateValues: unknown): string {
  const value = (stateValues as Record<string, Record<string, { value?: unknown }>> | undefined)?.[
    CONFIRM_BLOCK_ID
  ]?.[CONFIRM_INPUT_ACTION_ID]?.value;
  return typeof value === 'string' ? value : '';
}
