import type { Grant } from '../domain/grants/grant.js';
import type { GrantScope } from '../domain/grants/scope.js';
import type { GrantRef } from '../domain/record.js';
import { clip, inlineCode } from './escape.js';
import { mentionUser } from './mentionUser.js';
import { clipProse } from './prose.js';
import { formatTimeLeft, slackDate } from './slackDate.js';

// How grants read wherever they are shown: the card's "don't ask again" button and final state,
// the line a grant's use leaves in the channel, and the lists of /countersign grants and App Home.
// Capabilities, paths and commands come from the agent: they are only ever shown as code.

const CAPABILITY_VERBS: ReadonlyArray<[prefix: string, verb: string]> = [
  ['exec:', ''],
  ['file-write:', 'write '],
  ['file-read:', 'read '],
  ['net-connect:', 'connect to '],
  ['process:', 'process '],
  ['unix-socket:', 'socket '],
  ['tool:', 'tool '],
];

/**
 * What a tool grant covers beyond the call shown: its capability names the tool alone, so the
 * card's one call's arguments are not what is remembered.
 */
const TOOL_REACH = ', any arguments';

/** `git push`, write `/srv/a.ts`, connect to `https://api.example.com:443`; escaped mrkdwn. */
export function capabilityText(capability: string, max = 200): string {
  const known = CAPABILITY_VERBS.find(([prefix]) => capability.startsWith(prefix));
  if (!known) return inlineCode(capability, max);
  const text = `${known[1]}${inlineCode(capability.slice(known[0].length), max)}`;
  return known[0] === 'tool:' ? `${text}${TOOL_REACH}` : text;
}

/**
 * Whom a grant is bound to, as a phrase: "in this session", "for <@U…>’s agents", "on host `ci`".
 * `ownerName` names the owner where a mention would ping them (a new channel line).
 */
export function callerText(caller: string, thisSession?: string, ownerName?: string): string {
  const [kind, ...rest] = caller.split(':');
  const id = rest.join(':');
  if (kind === 'session') return thisSession === id ? 'in this session' : `in session ${inlineCode(id, 60)}`;
  if (kind === 'user') return `for ${ownerName ? clip(ownerName, 80) : mentionUser(id)}’s agents`;
  if (kind === 'host') return `on host ${inlineCode(id, 60)}`;
  return inlineCode(caller, 80);
}

function callerPlain(caller: string): string {
  if (caller.startsWith('session:')) return 'in this session';
  if (caller.startsWith('user:')) return 'for this owner';
  if (caller.startsWith('host:')) return 'on this host';
  return '';
}

/** 30 s, 30 min, 1 h 30 min, 8 h, 7 days: how long a new grant lasts. */
function durationText(ms: number): string {
  if (ms < 60_000) return `${Math.max(1, Math.round(ms / 1_000))} s`;
  const minutes = Math.round(ms / 60_000);
  if (minutes < 60) return `${Math.max(1, minutes)} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return minutes % 60 === 0 ? `${hours} h` : `${hours} h ${minutes % 60} min`;
  const days = Math.round(hours / 24);
  return `${days} days`;
}

/** Above the scope buttons: "*Approve and don't ask again:* `git push` in `/srv/repo` in this session" (mrkdwn). */
export function rememberHeading(capabilities: readonly string[], caller: string): string {
  const { acts, where } = splitWorkspace(capabilities);
  const what = acts.length === 1 ? capabilityText(acts[0]!, 60) : `${acts.length} capabilities`;
  return `*Approve and don't ask again:* ${what}${workspaceText(where, 60)} ${callerPlain(caller)}`.trimEnd();
}

/**
 * A shell grant's `in:<root>` is not a thing it may do but where it may: it reads after what it
 * qualifies ("`make install` in `/srv/a`"), not as one more item of a list.
 */
function splitWorkspace(capabilities: readonly string[]): { acts: string[]; where: string[] } {
  const acts: string[] = [];
  const where: string[] = [];
  for (const c of capabilities) (c.startsWith(WORKSPACE) ? where : acts).push(c);
  return { acts, where };
}

const WORKSPACE = 'in:';

/** " in `/srv/a`" for each workspace named; escaped mrkdwn. */
function workspaceText(where: readonly string[], max: number): string {
  return where.map((c) => ` in ${inlineCode(c.slice(WORKSPACE.length), max)}`).join('');
}

/** Every capability, in words: "`make install` in `/srv/a`", "write `/srv/a.ts`, `ls`". */
export function capabilitiesText(capabilities: readonly string[], max = 200): string {
  const { acts, where } = splitWorkspace(capabilities);
  return acts.map((c) => capabilityText(c, max)).join(', ') + workspaceText(where, max);
}

/** A scope button: "For 1 h", "For this session", "For the next 10 uses". */
export function scopeLabel(scope: GrantScope): string {
  switch (scope.kind) {
    case 'time':
      return `For ${durationText(scope.ms)}`;
    case 'session':
      return 'For this session';
    case 'uses':
      return scope.uses === 1 ? 'For the next use' : `For the next ${scope.uses} uses`;
  }
}

/** "2 uses left of 3" for a grant by uses. */
export function usesLeftText(usesLeft: number, maxUses?: number): string {
  const left = usesLeft === 1 ? '1 use left' : `${usesLeft} uses left`;
  return maxUses === undefined ? left : `${left} of ${maxUses}`;
}

function expiryText(expiresAt: string | undefined): string {
  if (!expiresAt) return 'kept by the host';
  return `until ${slackDate(expiresAt) ?? clip(expiresAt, 40)}`;
}

/** How to take a grant back, for every message that names one. */
export function revokeHint(grantId: string): string {
  return `Revoke: ${inlineCode(`/countersign revoke ${grantId}`, 120)}`;
}

/** A grant's one-line identity: `id` by @granter, [n uses left,] until <date>. */
export function grantRefText(ref: GrantRef, grantedByName?: string): string {
  const by = grantedByName ? clip(grantedByName, 80) : mentionUser(ref.grantedBy);
  const uses = ref.usesLeft === undefined ? '' : `${usesLeftText(ref.usesLeft)}, `;
  return `${inlineCode(ref.grantId, 60)} (granted by ${by}, ${uses}${expiryText(ref.expiresAt)})`;
}

/**
 * The compact line a grant's use leaves in the channel instead of a card: what was allowed, by
 * which grant and whose, until when, and how to revoke it. The granter is named, not pinged.
 */
export function renderGrantLine(input: {
  tool: string;
  capabilities: readonly string[];
  stage?: { position: number; total: number };
  grant: GrantRef;
  grantedByName?: string;
  hostId?: string;
}): string {
  const what = capabilitiesText(input.capabilities, 300);
  const stage =
    input.stage && input.stage.total > 1 ? ` (stage ${input.stage.position} of ${input.stage.total})` : '';
  const host = input.hostId ? ` on ${inlineCode(input.hostId, 60)}` : '';
  return (
    `:repeat: Approved by a remembered grant: ${inlineCode(input.tool || '(no tool name)', 80)}${host} — ${what}${stage}. ` +
    `Grant ${grantRefText(input.grant, input.grantedByName)}. ${revokeHint(input.grant.grantId)}`
  );
}

/** How many capabilities a grant's entry or line names: with the rest, it stays far within a section. */
const LISTED_CAPABILITIES = 10;

/** A grant's capabilities, the first ten of them, then how many more, then where. */
export function capabilityList(capabilities: readonly string[]): string {
  const { acts, where } = splitWorkspace(capabilities);
  const more = acts.length - LISTED_CAPABILITIES;
  const listed = acts.slice(0, LISTED_CAPABILITIES).map((c) => capabilityText(c, 120));
  // A grant is made of one request: it names one workspace at most.
  return listed.join(', ') + (more > 0 ? ` and ${more} more` : '') + workspaceText(where.slice(0, 1), 120);
}

/** One grant in a list (/countersign grants, App Home); under 2,500 characters, whatever it holds. */
export function grantListLine(
  grant: Grant,
  nameOf?: (userId: string) => string | undefined,
  now = new Date(),
): string {
  const caps = capabilityList(grant.capabilities);
  const uses = grant.uses === 1 ? 'used once' : `used ${grant.uses} times`;
  const holder =
    grant.holder === 'host'
      ? `\n:house: Kept by the host (${clipProse(grant.scope ?? 'rule', 30)}): ${inlineCode(grant.rulePreview ?? '', 200)} — remove it on the host side; MSP cannot revoke it.`
      : '';
  const name = nameOf?.(grant.grantedBy);
  return (
    `*${inlineCode(grant.tool, 60)}* ${caps} ${callerText(grant.caller)} · sandbox ${inlineCode(grant.sandboxMode, 40)}\n` +
    `${inlineCode(grant.grantId, 60)} · granted by ${name ? clip(name, 80) : mentionUser(grant.grantedBy)} · ${leftText(grant, now)} · ${uses}${holder}`
  );
}

/** What is left of a grant, in a list: its uses left, and the time left as of the listing. */
function leftText(grant: Grant, now: Date): string {
  if (!grant.expiresAt) return expiryText(grant.expiresAt);
  const expires = `expires ${formatTimeLeft(new Date(grant.expiresAt), now)} (${expiryText(grant.expiresAt)})`;
  const session = grant.lasts?.kind === 'session' ? 'for the session, ' : '';
  return grant.usesLeft === undefined
    ? `${session}${expires}`
    : `${usesLeftText(grant.usesLeft, grant.maxUses)} · ${expires}`;
}
