import type { Button, ContextBlock, SectionBlock } from '@slack/types';
import type { Grant } from '../domain/grants/grant.js';
import type { ChannelGrants } from '../domain/grants/listing.js';
import { GRANT_LIST_LIMIT } from '../domain/grants/listing.js';
import type { RenderedMessage } from '../domain/messages.js';
import { context, plainText, section } from './blocks.js';
import { channelLink } from './channelLink.js';
import { REVOKE_GRANT_ACTION_ID } from './ids.js';
import { countBlockText, MAX_TOTAL_BLOCK_TEXT } from './limits.js';
import { grantListLine } from './renderGrant.js';

// Lists of live grants, each with its Revoke button: /countersign grants (an ephemeral message)
// and the Grants section of App Home. Pure; relay/grantLists.ts picks the grants.

/** A message holds 50 blocks: one per grant, and a few around them. */
export const MAX_LISTED_GRANTS = 20;

const HOW_TO_REVOKE =
  'Revoke a grant with its button or `/countersign revoke &lt;grant-id&gt;`: the requests it answered are asked on their cards again. Grants kept by the host have no button: the host keeps its own rule, and MSP cannot revoke it, so remove it on the host side.';

export function revokeButton(grantId: string): Button {
  return {
    type: 'button',
    action_id: REVOKE_GRANT_ACTION_ID,
    value: grantId,
    text: plainText('Revoke'),
    style: 'danger',
    confirm: {
      title: plainText('Revoke this grant?'),
      text: plainText(`Requests grant ${grantId} answered will be asked on their cards again.`),
      confirm: plainText('Revoke'),
      deny: plainText('Keep it'),
    },
  };
}

/** One grant: its line, and a Revoke button unless the host keeps it. */
function grantBlock(grant: Grant, now: Date): SectionBlock {
  const block = section(grantListLine(grant, undefined, now));
  if (grant.holder === 'bot') block.accessory = revokeButton(grant.grantId);
  return block;
}

/**
 * At most `max` grants, and no more than `maxChars` characters of text between them (a message's
 * blocks share one budget), then a line counting the rest.
 */
export function grantBlocks(
  grants: readonly Grant[],
  max: number,
  maxChars = Number.POSITIVE_INFINITY,
  /** What "expires in …" counts from. */
  now = new Date(),
): Array<SectionBlock | ContextBlock> {
  const blocks: Array<SectionBlock | ContextBlock> = [];
  let chars = 0;
  for (const grant of grants.slice(0, Math.max(0, max))) {
    const block = grantBlock(grant, now);
    chars += countBlockText(block);
    if (chars > maxChars) break;
    blocks.push(block);
  }
  if (grants.length > blocks.length) {
    blocks.push(context([`…and ${grants.length - blocks.length} more, older than these.`]));
  }
  return blocks;
}

/** `/countersign grants`: the live grants of the channel it was typed in, or all for an admin. */
export function renderChannelGrants(listing: ChannelGrants, now = new Date()): RenderedMessage {
  const { grants, scope } = listing;
  const where =
    scope.kind === 'all' ? 'in every channel (you are an admin)' : `in ${channelLink(scope.channel)}`;
  if (grants.length === 0) {
    const text = `No active grants ${where}.`;
    return { text, blocks: [section(text)] };
  }
  const count = `${grants.length}${grants.length >= GRANT_LIST_LIMIT ? '+' : ''}`;
  const text = `*${count} active grant${grants.length === 1 ? '' : 's'}* ${where}, newest first:`;
  // What the grants leave of the message's text budget: the lines around them, and a margin.
  const room = MAX_TOTAL_BLOCK_TEXT - text.length - HOW_TO_REVOKE.length - 200;
  return {
    text: text.replace(/\*/g, ''),
    blocks: [section(text), ...grantBlocks(grants, MAX_LISTED_GRANTS, room, now), context([HOW_TO_REVOKE])],
  };
}
