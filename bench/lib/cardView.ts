import { decodeChoiceValue } from '../../src/cards/ids.js';
import { CARD_EVENT_TYPE } from '../../src/slack/cardMetadata.js';
import type { SlackMessage } from '../../test/support/fakeSlack.js';

// What a person sees on a card, read back from the fake Slack's copy of the message: which
// approval it is (message metadata), its headline, the buttons still on it and whom it credits.
// The chaos audit judges cards by these alone, as a teammate would.

/** The first words of a card's text (`Approved: write_file — …`), one per phase of the card. */
export type Headline =
  | 'Approval needed'
  | 'Being decided'
  | 'Under automated review'
  | 'Cannot be decided from Slack now'
  | 'Approved'
  | 'Rejected'
  | 'Decided'
  | 'Timed out'
  | 'Resolved'
  | 'Superseded'
  | 'Orphaned'
  | 'unknown';

const HEADLINES: readonly Headline[] = [
  'Approval needed',
  'Being decided',
  'Under automated review',
  'Cannot be decided from Slack now',
  'Approved',
  'Rejected',
  'Decided',
  'Timed out',
  'Resolved',
  'Superseded',
  'Orphaned',
];

export interface CardButton {
  actionId: string;
  value: string;
  sourceIndex: number;
  choiceId: string;
}

export interface CardView {
  channel: string;
  ts: string;
  approvalId: string;
  headline: Headline;
  /** Choice buttons still on the card. */
  buttons: CardButton[];
  /** `*Decided by:*` as shown: a Slack user id when it is a mention, else the words. */
  decidedBy?: { userId: string } | { words: string };
  /** The card says another client holds the session (no buttons, by design). */
  heldElsewhere: boolean;
}

interface Block {
  type?: string;
  text?: { text?: string } | string;
  elements?: Array<Record<string, unknown>>;
}

function blockTexts(blocks: unknown[]): string[] {
  const out: string[] = [];
  for (const block of blocks as Block[]) {
    const text = typeof block.text === 'string' ? block.text : block.text?.text;
    if (typeof text === 'string') out.push(text);
  }
  return out;
}

function buttonsOf(blocks: unknown[]): CardButton[] {
  const out: CardButton[] = [];
  for (const block of blocks as Block[]) {
    if (block.type !== 'actions') continue;
    for (const el of block.elements ?? []) {
      if (el.type !== 'button' || typeof el.value !== 'string') continue;
      const value = decodeChoiceValue(el.value);
      if (!value) continue;
      out.push({ actionId: String(el.action_id), value: el.value, sourceIndex: value.s, choiceId: value.c });
    }
  }
  return out;
}

function headlineOf(text: string): Headline {
  return HEADLINES.find((h) => text.startsWith(`${h}:`)) ?? 'unknown';
}

const DECIDED_BY = /\*Decided by:\* ([^\n]+)/;
const MENTION = /^<@([UW][A-Z0-9]+)>$/;

/** The card as a person reads it; undefined for a message that is not a Countersign card. */
export function cardView(message: SlackMessage): CardView | undefined {
  const metadata = message.metadata as
    | { event_type?: unknown; event_payload?: { approval_id?: unknown } }
    | undefined;
  const approvalId = metadata?.event_payload?.approval_id;
  if (metadata?.event_type !== CARD_EVENT_TYPE || typeof approvalId !== 'string') return undefined;
  const texts = blockTexts(message.blocks);
  const credit = texts.map((t) => DECIDED_BY.exec(t)?.[1]).find((t) => t !== undefined);
  const mention = credit === undefined ? undefined : MENTION.exec(credit.trim());
  return {
    channel: message.channel,
    ts: message.ts,
    approvalId,
    headline: headlineOf(message.text),
    buttons: buttonsOf(message.blocks),
    ...(credit === undefined
      ? {}
      : { decidedBy: mention ? { userId: mention[1]! } : { words: credit.trim() } }),
    heldElsewhere: texts.some((t) => t.includes('holds this session')),
  };
}
