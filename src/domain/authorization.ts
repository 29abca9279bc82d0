import type { Approvers, RouteRules } from './route.js';

// Who may decide an approval, and who may see or revoke what a route holds: the rules of the
// route stored on its record, the admins, the host's owner, and what Slack says about the user
// (their team, whether they are a guest) and the route's channel (its members). Pure; the
// Authorizer (authorizer.ts) gathers what it reads.

/** Why a user may decide. */
export type Allowed =
  | { allowed: true; because: 'admin' }
  | { allowed: true; because: 'user' }
  | { allowed: true; because: 'usergroup'; usergroup: string }
  /** The route names no approvers, and the user is a member of its channel. */
  | { allowed: true; because: 'channelMember'; channel: string }
  /** Stands in for `for`, who is away and may decide (what they may is in `as`). */
  | { allowed: true; because: 'delegate'; for: string; as: Exclude<Allowed, { because: 'delegate' }> };

/** What Slack could not confirm, so that the user counts as not allowed. */
export type Unverified = 'workspace' | 'user' | 'channel';

/** Why a user may not decide. */
export type Refused =
  | { allowed: false; why: 'notApprover'; route: string; approvers: Approvers; protectedWrite: boolean }
  | { allowed: false; why: 'selfApproval'; route: string }
  /** The route the card was placed by is no longer configured: only admins may decide. */
  | { allowed: false; why: 'routeGone'; route: string }
  /** A risk rule the request matched names who may decide it, and not this user. */
  | { allowed: false; why: 'notRiskApprover'; route: string; risk: string; approvers: Approvers }
  /** A user of another Slack team or enterprise, on a route without allowExternal. */
  | { allowed: false; why: 'external'; route: string }
  /** A guest, on a route without allowGuests. */
  | { allowed: false; why: 'guest'; route: string }
  /** Slack says the account is deactivated: its earlier votes and new presses count for nothing. */
  | { allowed: false; why: 'deactivated'; route: string }
  /** The route names no approvers, and the user is not a member of its channel. */
  | { allowed: false; why: 'notChannelMember'; route: string; channel: string }
  /** Slack did not say who the user is, or who is in the channel: nothing is allowed on a guess. */
  | { allowed: false; why: 'unverified'; route: string; what: Unverified };

export type Authorization = Allowed | Refused;

/** The rules' verdict before the channel is asked: `anyone` means "any member of the channel". */
export type Verdict = Authorization | { allowed: true; because: 'anyone' };

/** What an approval's authorization depends on, apart from the user. */
export interface ApprovalAuthority {
  /** The route's name as stored on the record. */
  route: string;
  /**
   * The rules that apply. Undefined when the route is no longer configured and admins are: then
   * only they may decide.
   */
  rules: RouteRules | undefined;
  /**
   * The route is no longer configured: whoever may decide, the host's owner may not (the rule the
   * route had is not known, so the strictest applies).
   */
  routeGone?: boolean;
  protectedWrite: boolean;
  /** The Slack user whose agent asks (the host's `owner`). */
  owner?: string;
  /** Risk rules of the request that name approvers: these replace the route's, admins' too. */
  riskApprovers?: { risk: string; approvers: Approvers }[];
  /** The channel whose members may decide when the rules name no approvers. */
  channel?: string;
}

/** The bot's own Slack team and enterprise (auth.test). */
export interface Workspace {
  teamId: string;
  enterpriseId?: string;
}

/** What Slack says about a user (users.info). */
export interface Person {
  teamId?: string;
  enterpriseId?: string;
  /** `is_restricted` or `is_ultra_restricted`: a multi- or single-channel guest. */
  guest: boolean;
  /** `is_bot` (or the Slackbot): may never stand in for anyone (away.ts). */
  bot?: boolean;
  /** `deleted`: the account is deactivated, and is reached in nobody's place. */
  deactivated?: boolean;
}

/**
 * The approvers that apply: for a protected write the route's protectedWriteApprovers replace
 * its approvers; undefined means the members of the route's channel.
 */
export function approversFor(rules: RouteRules, protectedWrite: boolean): Approvers | undefined {
  return (protectedWrite ? rules.protectedWriteApprovers : undefined) ?? rules.approvers;
}

/** Whether a user belongs to another Slack team, or another enterprise, than the bot. */
export function isExternal(person: Person, workspace: Workspace): boolean {
  if (person.teamId !== workspace.teamId) return true;
  return (
    (person.enterpriseId ?? workspace.enterpriseId) !== undefined &&
    person.enterpriseId !== workspace.enterpriseId
  );
}

/**
 * Strangers get nothing unless the route says so: a user of another team or enterprise (unless
 * allowExternal), a guest (unless allowGuests), a deactivated account (never), or a user Slack
 * could not describe. Undefined when the user is none of these. A route that is gone allows neither.
 */
export function strangerRefusal(
  authority: Pick<ApprovalAuthority, 'route' | 'rules' | 'routeGone'>,
  person: Person | undefined,
  workspace: Workspace | undefined,
): Refused | undefined {
  const { route } = authority;
  if (!workspace) return { allowed: false, why: 'unverified', route, what: 'workspace' };
  if (!person) return { allowed: false, why: 'unverified', route, what: 'user' };
  // No route lets a deactivated account in: it may be deactivated because it was taken over.
  if (person.deactivated) return { allowed: false, why: 'deactivated', route };
  const rules = authority.routeGone ? undefined : authority.rules;
  if (isExternal(person, workspace) && !rules?.allowExternal)
    return { allowed: false, why: 'external', route };
  if (person.guest && !rules?.allowGuests) return { allowed: false, why: 'guest', route };
  return undefined;
}

/**
 * Whether `person` is a full member of the bot's own team: known, not deactivated, not a guest,
 * not of another team or enterprise. Only a full member is an admin or a delegate: a route's
 * allowGuests or allowExternal lets strangers in as its approvers, never as more.
 */
export function isFullMember(person: Person | undefined, workspace: Workspace | undefined): boolean {
  return strangerRefusal({ route: '(none)', rules: undefined }, person, workspace) === undefined;
}

/** The user groups whose membership could allow `userId`: ask only for these. */
export function groupsToAsk(
  authority: ApprovalAuthority,
  userId: string,
  admins: readonly string[],
): string[] {
  if (authority.riskApprovers?.length) {
    const asked = authority.riskApprovers.filter(({ approvers }) => !approvers.users.includes(userId));
    return [...new Set(asked.flatMap(({ approvers }) => approvers.usergroups))];
  }
  if (admins.includes(userId) || !authority.rules) return [];
  const approvers = approversFor(authority.rules, authority.protectedWrite);
  if (!approvers || approvers.users.includes(userId)) return [];
  return approvers.usergroups;
}

/**
 * Decides what the rules say of `userId`. `memberOf` holds the user groups (of those groupsToAsk
 * named) the user belongs to. The owner rule binds admins too: a four-eyes route means another
 * person looks, whoever the owner is. `anyone` still needs the channel's word (inChannel).
 */
export function authorize(
  authority: ApprovalAuthority,
  userId: string,
  admins: readonly string[],
  memberOf: ReadonlySet<string>,
): Verdict {
  const { rules, route } = authority;
  const selfBarred = !rules || authority.routeGone === true || !rules.allowSelfApproval;
  if (selfBarred && authority.owner === userId) {
    return { allowed: false, why: 'selfApproval', route };
  }
  // "Only they may decide": a rule that names approvers for a dangerous request is not widened
  // by the route, its protected-write approvers or the admins. Several such rules: all must allow.
  if (authority.riskApprovers?.length) {
    let allowed: Allowed = { allowed: true, because: 'user' };
    for (const { risk, approvers } of authority.riskApprovers) {
      if (approvers.users.includes(userId)) continue;
      const usergroup = approvers.usergroups.find((group) => memberOf.has(group));
      if (!usergroup) return { allowed: false, why: 'notRiskApprover', route, risk, approvers };
      allowed = { allowed: true, because: 'usergroup', usergroup };
    }
    return allowed;
  }
  if (admins.includes(userId)) return { allowed: true, because: 'admin' };
  if (!rules) return { allowed: false, why: 'routeGone', route };
  const approvers = approversFor(rules, authority.protectedWrite);
  if (!approvers) return { allowed: true, because: 'anyone' };
  if (approvers.users.includes(userId)) return { allowed: true, because: 'user' };
  const usergroup = approvers.usergroups.find((group) => memberOf.has(group));
  if (usergroup) return { allowed: true, because: 'usergroup', usergroup };
  return { allowed: false, why: 'notApprover', route, approvers, protectedWrite: authority.protectedWrite };
}

/**
 * A verdict of `anyone` settled by the channel: its members may decide, nobody else. `members`
 * undefined: Slack did not say (or the route has no channel to ask about), so nobody may.
 */
export function inChannel(
  verdict: Verdict,
  authority: Pick<ApprovalAuthority, 'route' | 'channel'>,
  userId: string,
  members: ReadonlySet<string> | undefined,
): Authorization {
  if (!verdict.allowed || verdict.because !== 'anyone') return verdict;
  const { route, channel } = authority;
  if (channel === undefined || members === undefined) {
    return { allowed: false, why: 'unverified', route, what: 'channel' };
  }
  return members.has(userId)
    ? { allowed: true, because: 'channelMember', channel }
    : { allowed: false, why: 'notChannelMember', route, channel };
}

/** Who may revoke a grant: whoever may see it (RevokeAuthorization says why not). */
export type RevokeAllowed = Allowed;

/** Why they may not: they may not decide on the grant's route (any more). */
export interface RevokeRefused {
  allowed: false;
  grantedBy: string;
  /** Why deciding on the grant's route is refused to them (never selfApproval, see below). */
  route: Refused;
}

export type RevokeAuthorization = RevokeAllowed | RevokeRefused;

/**
 * Who may see and revoke a grant: whoever may decide the ordinary approvals of its route
 * (`onRoute`, the route's rules checked for this user, admins and strangers included), its granter
 * too only while that holds. Taking a permission back needs no second pair of eyes, so the
 * Authorizer leaves the owner rule out of `onRoute`.
 */
export function authorizeRevoke(grant: { grantedBy: string }, onRoute: Authorization): RevokeAuthorization {
  if (onRoute.allowed) return onRoute;
  return { allowed: false, grantedBy: grant.grantedBy, route: onRoute };
}
