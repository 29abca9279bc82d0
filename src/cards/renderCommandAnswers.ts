import type { Authorization, Refused } from '../domain/authorization.js';
import type { RenderedMessage } from '../domain/messages.js';
import { packSections } from './blocks.js';
import { channelLink } from './channelLink.js';
import { clip } from './escape.js';
import { fitLines } from './fitLines.js';
import { MAX_TOTAL_BLOCK_TEXT } from './limits.js';
import { mentionUser } from './mentionUser.js';
import { noAccessText } from './renderUserMessages.js';
import { type WaitingApproval, waitingLine } from './renderWaiting.js';

// The answers of /countersign, each shown only to the user who typed it. Pure: the listener
// gathers the facts (slack/listeners/slashCommand.ts).

/** At most this many approvals in one answer: beyond, the message would pass Block Kit's limits. */
export const MAX_LISTED = 25;

/** Approvers named for one route in `whoami`; the rest are counted, so a line stays well within a section. */
const MAX_NAMED_APPROVERS = 10;

const COMMANDS: ReadonlyArray<[string, string]> = [
  ['pending', 'the approvals waiting for you to decide, with a link to each card'],
  ['whoami', 'the routes where you may decide, and why'],
  ['grants', 'the remembered approvals ("don\'t ask again") of this channel, each with a Revoke button'],
  ['revoke &lt;grant-id&gt;', 'revoke a remembered approval: its requests are asked on their cards again'],
  [
    'stats [route] [7d|30d]',
    'how long decisions take on your routes, by whom or what, and what was asked most',
  ],
  [
    'away until &lt;3d | 2026-12-24&gt; [delegate @user]',
    'you are away (at most 30 days): escalation passes you by, and your delegate is asked and may decide what you may',
  ],
  ['back', 'you are back: escalation reaches you again, and your delegate no longer stands in'],
  ['help', 'this list'],
];

/** The first line is the notification text; the blocks carry every line. */
function answer(lines: string[]): RenderedMessage {
  return { text: lines[0] ?? '', blocks: packSections(lines) };
}

/**
 * The commands, one line each; `unknown` (what the user typed) leads with one line saying so.
 * `channel` (where cards go when no route says otherwise) is left out for a stranger some route
 * lets in: it is not theirs to know.
 */
export function renderHelp(channel: string | undefined, unknown?: string): RenderedMessage {
  const lines = unknown === undefined ? [] : [`Unknown command \`${clip(unknown, 40)}\`.`];
  lines.push(
    channel === undefined
      ? 'Countersign is running. Commands:'
      : `Countersign is running. Approval cards are posted in ${channelLink(channel)}. Commands:`,
  );
  for (const [name, what] of COMMANDS) lines.push(`• \`/countersign ${name}\`: ${what}`);
  return answer(lines);
}

/** What a stranger no route lets in reads instead of help: that they have no access, and why. */
export function renderNoAccess(refused: Refused): RenderedMessage {
  return answer([noAccessText(refused)]);
}

/** `revoke` without exactly one grant id. */
export function renderRevokeUsage(): RenderedMessage {
  return answer([
    'Say which grant to revoke: `/countersign revoke &lt;grant-id&gt;`. `/countersign grants` lists the grant ids of a channel.',
  ]);
}

/** The pending approvals a user may decide, oldest first, each linked to its card. */
export function renderPending(items: readonly WaitingApproval[], now: Date, admin: boolean): RenderedMessage {
  if (items.length === 0) return answer(['Nothing is waiting for you to decide.']);
  const who = admin ? 'every approval waiting (you are an admin)' : 'waiting for you to decide';
  const lines = [`*${items.length} pending*, ${who}:`];
  for (const item of items.slice(0, MAX_LISTED)) lines.push(`• ${waitingLine(item, now)}`);
  if (items.length > MAX_LISTED) lines.push(`…and ${items.length - MAX_LISTED} more, newer than these.`);
  return answer(lines);
}

/** Where a user stands on one route: for its ordinary approvals and, when they differ, its protected writes. */
export interface RouteStanding {
  route: string;
  channel: string;
  ordinary: Authorization;
  /** Present when the route names protectedWriteApprovers. */
  protectedWrite?: Authorization;
  /** The route refuses the user their own agents' approvals (allowSelfApproval: false). */
  notOwnAgents: boolean;
}

const USERGROUP_ID = /^S[A-Z0-9]{2,40}$/;

/** `<!subteam^S…>` for a user group id; anything else escaped. */
export function mentionGroup(id: string): string {
  return USERGROUP_ID.test(id) ? `<!subteam^${id}>` : clip(id, 60);
}

/** The first approvers, then how many more: a route may name hundreds. */
function namedApprovers(mentions: readonly string[]): string {
  const named = mentions.slice(0, MAX_NAMED_APPROVERS).join(', ');
  const more = mentions.length - MAX_NAMED_APPROVERS;
  return more > 0 ? `${named} and ${more} more` : named;
}

function why(authorization: Authorization): string {
  if (!authorization.allowed) {
    switch (authorization.why) {
      case 'notApprover': {
        const { users, usergroups } = authorization.approvers;
        return `you may not decide: only ${namedApprovers([...users.map(mentionUser), ...usergroups.map(mentionGroup)])}`;
      }
      case 'notChannelMember':
        return `you may not decide: only members of ${channelLink(authorization.channel)} may`;
      case 'external':
        return 'you may not decide: you belong to another Slack workspace or organization';
      case 'guest':
        return 'you may not decide: guests may not';
      case 'deactivated':
        return 'you may not decide: Slack says your account is deactivated';
      case 'unverified':
        return 'not known now: Slack did not confirm who you are or who is in the channel';
      default:
        return 'you may not decide';
    }
  }
  switch (authorization.because) {
    case 'admin':
      return 'you may decide: you are an admin';
    case 'user':
      return 'you may decide: you are listed as an approver';
    case 'usergroup':
      return `you may decide: you are a member of ${mentionGroup(authorization.usergroup)}`;
    case 'channelMember':
      return 'you may decide: you are a member of its channel';
    case 'delegate':
      return `you may decide: you stand in for ${mentionUser(authorization.for)}, who is away`;
  }
}

/** Refusals that say who the user is, not what the route asks: the route is not named to them. */
const STRANGER_REASONS: ReadonlySet<string> = new Set(['external', 'guest', 'deactivated', 'unverified']);

function whyRefused(authorization: Authorization): string | undefined {
  return authorization.allowed ? undefined : authorization.why;
}

/** `whoami`: the routes where the user may decide and why, then the others. */
export function renderWhoami(
  userId: string,
  standings: readonly RouteStanding[],
  admin: boolean,
): RenderedMessage {
  const lines = [
    admin
      ? `${mentionUser(userId)}: you are an admin of Countersign, so you may decide on every route.`
      : `${mentionUser(userId)}: where you may decide.`,
  ];
  const allowed = (s: RouteStanding) => s.ordinary.allowed || s.protectedWrite?.allowed === true;
  // A stranger (a guest, another team, an account Slack does not confirm) learns nothing of a
  // route that refuses them as such: not its name, its channel or who decides there.
  const hidden = standings.filter((s) => !allowed(s) && STRANGER_REASONS.has(whyRefused(s.ordinary) ?? ''));
  const shown = standings.filter((s) => !hidden.includes(s));
  const listed = [...shown.filter(allowed), ...shown.filter((s) => !allowed(s))];
  const hiddenBy = new Map<string, number>();
  for (const s of hidden) hiddenBy.set(why(s.ordinary), (hiddenBy.get(why(s.ordinary)) ?? 0) + 1);
  const hiddenLines = [...hiddenBy].map(
    ([reason, count]) =>
      `• ${shown.length > 0 ? 'every other route' : count === 1 ? 'the one route' : `all ${count} routes`}: ${reason}.`,
  );
  // The routes get what the message's text budget leaves them, less a margin; the rest are counted.
  const around = [...lines, ...hiddenLines].reduce((chars, line) => chars + line.length + 1, 0);
  const room = MAX_TOTAL_BLOCK_TEXT - around - 200;
  lines.push(...fitLines(listed.length, (i) => standingLine(listed[i]!), room, ['route', 'routes']));
  lines.push(...hiddenLines);
  if (standings.length === 0) lines.push('No routes are configured.');
  return answer(lines);
}

/** One route the user is told about: who decides there, for ordinary approvals and protected writes. */
function standingLine(s: RouteStanding): string {
  const parts = [`*${clip(s.route, 80)}* in ${channelLink(s.channel)}: ${why(s.ordinary)}`];
  if (s.protectedWrite) parts.push(`protected writes: ${why(s.protectedWrite)}`);
  if (s.notOwnAgents) parts.push("never your own agents' approvals");
  return `• ${parts.join('; ')}.`;
}
