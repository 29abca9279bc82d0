import type { ActionsBlock, KnownBlock, ModalView } from '@slack/types';
import { argsParts, subjectParts } from '../domain/fullParts.js';
import type { FullPart, FullTextOf } from '../domain/fullText.js';
import type { ApprovalRecord, IntakePart } from '../domain/record.js';
import { prettyArgs } from '../util/toJson.js';
import { context, divider, plainText, section } from './blocks.js';
import { BUDGET_LEVELS } from './budget.js';
import { codeBlocks, inlineCode } from './escape.js';
import {
  FULL_VIEW_CALLBACK_ID,
  type FullViewMetadata,
  VIEW_FULL_ACTION_ID,
  VIEW_FULL_BLOCK_PREFIX,
} from './ids.js';
import { MAX_BLOCKS_PER_VIEW, MAX_BUTTON_VALUE, MAX_PRIVATE_METADATA, MAX_SECTION_TEXT } from './limits.js';
import { clipProse } from './prose.js';
import { MAX_SHOWN_CHOICES, renderChoices } from './renderChoices.js';

// "View full": the whole command, stages, path or arguments of a request whose card had to
// shorten them, over as many sections as a modal holds, with the card's own choice buttons.

const TITLE = 'Full request';
/** Room in a section for its part's label line ("*Current lock holder*\n"), besides the code. */
const LABEL_ROOM = 40;
const CODE_BLOCK_MAX = MAX_SECTION_TEXT - LABEL_ROOM;
/** Blocks besides the text: the intro and the "not shown" note. */
const FRAME_BLOCKS = 2;

function wasCut(part: IntakePart | undefined): boolean {
  return part !== undefined && (part.truncated || (part.stagesOmitted ?? 0) > 0);
}

/** Intake cut the subject or the arguments: the record itself does not hold all of them. */
export function intakeCut(record: Pick<ApprovalRecord, 'intake'>): boolean {
  const parts = record.intake?.parts;
  return wasCut(parts?.subject) || wasCut(parts?.rawArgs);
}

/** The card's "View full" button, in an actions block of its own. */
export function viewFullBlock(record: Pick<ApprovalRecord, 'approvalId' | 'version'>): ActionsBlock {
  return {
    type: 'actions',
    block_id: `${VIEW_FULL_BLOCK_PREFIX}v${record.version}`,
    elements: [
      {
        type: 'button',
        action_id: VIEW_FULL_ACTION_ID,
        text: plainText('View full'),
        // A hint only: the card's own message mapping says which approval it shows.
        ...(record.approvalId.length <= MAX_BUTTON_VALUE ? { value: record.approvalId } : {}),
      },
    ],
  };
}

/**
 * What the modal shows: the subject, then the arguments, as the card orders them. A part intake
 * cut comes from the full text kept for it, when there is one; otherwise from the record.
 */
function partsOf(record: ApprovalRecord, full: FullTextOf): { parts: FullPart[]; omitted: number } {
  const cut = record.intake?.parts;
  const subject = wasCut(cut?.subject) ? full.subject : undefined;
  const args = wasCut(cut?.rawArgs) ? full.rawArgs : undefined;
  return {
    parts: [
      ...(subject?.parts ?? subjectParts(record.subject)),
      ...(args?.parts ?? argsParts(prettyArgs(record.rawArgs))),
    ],
    omitted: (subject?.omitted ?? 0) + (args?.omitted ?? 0),
  };
}

/** Each part as code blocks, as many as `maxBlocks` allows; what is left is counted. */
function partBlocks(
  parts: readonly FullPart[],
  maxBlocks: number,
): { blocks: KnownBlock[]; omitted: number } {
  const blocks: KnownBlock[] = [];
  let omitted = 0;
  parts.forEach((part, p) => {
    const fitted = codeBlocks(part.text, CODE_BLOCK_MAX, maxBlocks - blocks.length);
    omitted += fitted.omitted;
    fitted.blocks.forEach((code, i) => {
      const text = i === 0 ? `*${part.label}*\n${code}` : code;
      blocks.push({ ...section(text), block_id: `cs_full_${p}_${i}` });
    });
  });
  return { blocks, omitted };
}

export function notShownNote(omitted: number): string {
  return `${omitted} character${omitted === 1 ? '' : 's'} not shown: more than one Slack view can hold.`;
}

export interface FullViewArgs {
  record: ApprovalRecord;
  /** The full text kept for the record, where intake cut it. */
  full: FullTextOf;
  /** The card it was opened from. */
  metadata: FullViewMetadata;
}

/**
 * The "View full" modal: every text of the request, escaped and masked, split over sections of
 * at most 3,000 characters within the modal's 100 blocks, with "N characters not shown" past
 * that. While the request is pending it carries the card's choice buttons (same action ids and
 * values), and its private_metadata names the card, so a press decides as one on the card.
 */
export function renderFullView({ record, full, metadata }: FullViewArgs): ModalView {
  const privateMetadata = JSON.stringify(metadata);
  const fits = privateMetadata.length <= MAX_PRIVATE_METADATA;
  const intro = [`*Tool:* ${inlineCode(record.tool, 200)} · secrets are masked.`];
  let choices: KnownBlock[] = [];
  if (record.phase === 'pending' && fits) {
    choices = [divider(), ...renderChoices(record, BUDGET_LEVELS[0]!, MAX_SHOWN_CHOICES)];
  } else if (record.phase === 'pending') {
    intro.push('Decide on the card itself: this view cannot carry its buttons.');
  }
  const { parts, omitted: notKept } = partsOf(record, full);
  const room = MAX_BLOCKS_PER_VIEW - FRAME_BLOCKS - choices.length;
  const text = partBlocks(parts, room);
  const omitted = notKept + text.omitted;
  const blocks: KnownBlock[] = [context(intro), ...text.blocks];
  if (omitted > 0) blocks.push(context([notShownNote(omitted)]));
  blocks.push(...choices);
  return {
    type: 'modal',
    callback_id: FULL_VIEW_CALLBACK_ID,
    title: plainText(TITLE),
    close: plainText('Close'),
    ...(fits ? { private_metadata: privateMetadata } : {}),
    blocks,
  };
}

/** The full view, its buttons gone, saying only `text`. */
function fullViewNote(text: string): ModalView {
  return {
    type: 'modal',
    callback_id: FULL_VIEW_CALLBACK_ID,
    title: plainText(TITLE),
    close: plainText('Close'),
    blocks: [section(text)],
  };
}

/** The modal once a choice was pressed in it: the card shows what came of it. */
export function renderFullViewSent(choiceLabel: string): ModalView {
  return fullViewNote(
    `You chose *${clipProse(choiceLabel, 200)}*. The card in the channel shows how it went; if the choice could not be made, Countersign tells you there.`,
  );
}

/**
 * The modal once a press in it was refused because the question changed since it opened: every
 * button it holds carries the question it was drawn for, so each would be refused alike.
 */
export function renderFullViewOutdated(): ModalView {
  return fullViewNote(
    'The question changed while this view was open (a stage advanced, or the command, the choices or what the card marks changed), so nothing was decided. The card in the channel shows the current question: decide there, or open *View full* again to read it whole.',
  );
}
