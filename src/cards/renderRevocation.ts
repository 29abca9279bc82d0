import type { Grant } from '../domain/grants/grant.js';
import type { RevokeOutcome } from '../domain/grants/revocation.js';
import { clip, inlineCode } from './escape.js';
import { mentionUser } from './mentionUser.js';
import { callerText, capabilityList } from './renderGrant.js';
import { slackDate } from './slackDate.js';

// What a revocation says: the line in the grant's channel, and the answer only the person who
// asked sees. Everything from the agent (tool, capabilities, ids) is shown as escaped code.

function when(iso: string | undefined): string {
  return iso ? (slackDate(iso) ?? clip(iso, 40)) : '';
}

/** `git push` … in session `s1` · sandbox `default`: what the grant allowed. */
function grantWhat(grant: Grant, ownerName?: string): string {
  return `${inlineCode(grant.tool || '(no tool name)', 60)} ${capabilityList(grant.capabilities)} ${callerText(grant.caller, undefined, ownerName)} · sandbox ${inlineCode(grant.sandboxMode, 40)}`;
}

/**
 * The line in the grant's channel: who revoked which grant and what it allowed. People are named
 * when their names are known, so that nobody is pinged by it.
 */
export function renderRevokedLine(input: {
  grant: Grant;
  by: string;
  byName?: string;
  grantedByName?: string;
  /** The name of the user an owner's grant (`user:…`) is bound to. */
  ownerName?: string;
}): string {
  const { grant } = input;
  const by = input.byName ? clip(input.byName, 80) : mentionUser(input.by);
  const grantedBy = input.grantedByName ? clip(input.grantedByName, 80) : mentionUser(grant.grantedBy);
  return (
    `:no_entry_sign: Grant ${inlineCode(grant.grantId, 60)} was revoked by ${by}: ${grantWhat(grant, input.ownerName)} ` +
    `(granted by ${grantedBy}, used ${grant.uses === 1 ? 'once' : `${grant.uses} times`}). ` +
    'Requests it answered are asked on their cards again.'
  );
}

/** The answer only the person who tried to revoke sees. */
export function revokeAnswer(outcome: RevokeOutcome): string {
  // Refused and unknown read the same: who may not revoke a grant may not see it either (not its
  // route nor who decides on it), and must not learn from the answer which ids name a grant.
  if (outcome.kind === 'unknown' || outcome.kind === 'refused') {
    return `There is no grant ${inlineCode(outcome.grantId, 80)} that you may revoke: check the id in \`/countersign grants\`, which lists those you may. A grant that expired a while ago is removed and cannot be found any more.`;
  }
  const { grant } = outcome;
  const id = inlineCode(grant.grantId, 60);
  switch (outcome.kind) {
    case 'revoked':
      return `:white_check_mark: You revoked grant ${id}: ${grantWhat(grant)}. Requests it answered are asked on their cards again; the channel was told.`;
    case 'expired':
      return `Grant ${id} already expired ${when(grant.expiresAt)}: there is nothing to revoke.`;
    case 'alreadyRevoked':
      if (grant.replacedBy) {
        const next = inlineCode(grant.replacedBy, 60);
        return `Grant ${id} was replaced by grant ${next}${grant.revokedBy ? ` of ${mentionUser(grant.revokedBy)}` : ''} ${when(grant.revokedAt)}, who pressed "don't ask again" for the same request: it answers nothing any more. To stop that request being answered, revoke ${next}.`;
      }
      return `Grant ${id} was already revoked${grant.revokedBy ? ` by ${mentionUser(grant.revokedBy)}` : ''} ${when(grant.revokedAt)}: there is nothing more to do.`;
    case 'spent': {
      const uses = grant.maxUses === 1 ? 'its one use' : `all ${grant.maxUses ?? grant.uses} of its uses`;
      const last = grant.lastUsedAt ? `, the last ${when(grant.lastUsedAt)}` : '';
      return `Grant ${id} was already used up (${uses} spent${last}): it answers nothing any more, so there is nothing to revoke.`;
    }
    case 'hostHeld':
      return `Grant ${id} is kept by the agent host (its own rule: ${inlineCode(grant.rulePreview ?? '', 200)}). Countersign cannot revoke it, since MSP has no call for that: remove the rule on the host side. Nothing was changed.`;
  }
}
