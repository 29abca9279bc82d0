import type { RevokeRefused } from '../domain/authorization.js';
import type { Grant } from '../domain/grants/grant.js';
import type { RevokeOutcome } from '../domain/grants/revocation.js';
import { channelLink } from './channelLink.js';
import { clip, inlineCode } from './escape.js';
import { mentionUser } from './mentionUser.js';
import { mentionGroup } from './renderCommandAnswers.js';
import { callerText, capabilityList } from './renderGrant.js';
import { slackDate } from './slackDate.js';

// What a revocation says: the line in the grant's channel, and the answer only the person who
// asked sees. Everything from the agent (tool, capabilities, ids) is shown as escaped code.

function when(iso: string | undefined): string {
  return iso ? (slackDate(iso) ?? clip(iso, 40)) : '';
}

/** `git push` … in session `s1` · sandbox `default`: what the grant allowed. */
function grantWhat(grant: Grant): string {
  return `${inlineCode(grant.tool || '(no tool name)', 60)} ${capabilityList(grant.capabilities)} ${callerText(grant.caller)} · sandbox ${inlineCode(grant.sandboxMode, 40)}`;
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
}): string {
  const { grant } = input;
  const by = input.byName ? clip(input.byName, 80) : mentionUser(input.by);
  const grantedBy = input.grantedByName ? clip(input.grantedByName, 80) : mentionUser(grant.grantedBy);
  return (
    `:no_entry_sign: Grant ${inlineCode(grant.grantId, 60)} was revoked by ${by}: ${grantWhat(grant)} ` +
    `(granted by ${grantedBy}, used ${grant.uses === 1 ? 'once' : `${grant.uses} times`}). ` +
    'Requests it answered are asked on their cards again.'
  );
}

/** "those who may decide on route deploys (…) or an admin": who may revoke what this person may not. */
function whoMayRevoke(refused: RevokeRefused): string {
  const { route } = refused;
  const name = `*${clip(route.route, 80)}*`;
  switch (route.why) {
    case 'routeGone':
      return `an admin (its route ${inlineCode(route.route, 80)} is no longer configured)`;
    case 'notApprover':
    case 'notRiskApprover': {
      const approvers = [
        ...route.approvers.users.map(mentionUser),
        ...route.approvers.usergroups.map(mentionGroup),
      ];
      return `those who may decide on route ${name} (${approvers.join(', ')}) or an admin`;
    }
    case 'notChannelMember':
      return `the members of ${channelLink(route.channel)}, whose members decide on route ${name}, or an admin`;
    case 'external':
      return `members of this Slack workspace who may decide on route ${name}`;
    case 'guest':
      return `those who may decide on route ${name}, which guests may not`;
    case 'deactivated':
      return `those who may decide on route ${name}, which a deactivated account may not`;
    case 'unverified':
      return `those Slack confirms may decide on route ${name} (it did not answer just now: try again in a minute)`;
    // The owner rule is left out of revoking (authorizeRevoke): this is only for the type's sake.
    case 'selfApproval':
      return 'an admin';
  }
}

/** The answer only the person who tried to revoke sees. */
export function revokeAnswer(outcome: RevokeOutcome): string {
  if (outcome.kind === 'unknown') {
    return `There is no grant ${inlineCode(outcome.grantId, 80)}: check the id in \`/countersign grants\`. A grant that expired a while ago is removed and cannot be found any more.`;
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
    case 'refused':
      return `You may not revoke grant ${id}: only ${whoMayRevoke(outcome.refused)} may. Nothing was changed.`;
  }
}
