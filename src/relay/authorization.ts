import type { Approvers, RouteRules } from '../routing/route.js';

// Who may decide an approval: the rules of the route stored on its record, the admins, and the
// host's owner. Pure; the Authorizer (authorizer.ts) gathers what it reads.

/** Why a user may decide. */
export type Allowed =
  | { allowed: true; because: 'admin' }
  | { allowed: true; because: 'user' }
  | { allowed: true; because: 'usergroup'; usergroup: string }
  /** The route names no approvers: anyone in its channel may decide. */
  | { allowed: true; because: 'anyone' };

/** Why a user may not decide. */
export type Refused =
  | { allowed: false; why: 'notApprover'; route: string; approvers: Approvers; protectedWrite: boolean }
  | { allowed: false; why: 'selfApproval'; route: string }
  /** The route the card was placed by is no longer configured: only admins may decide. */
  | { allowed: false; why: 'routeGone'; route: string }
  /** A risk rule the request matched names who may decide it, and not this user. */
  | { allowed: false; why: 'notRiskApprover'; route: string; risk: string; approvers: Approvers };

export type Authorization = Allowed | Refused;

/** What an approval's authorization depends on, apart from the user. */
export interface ApprovalAuthority {
  /** The route's name as stored on the record. */
  route: string;
  /** Undefined when that route is no longer configured. */
  rules: RouteRules | undefined;
  protectedWrite: boolean;
  /** The Slack user whose agent asks (the host's `owner`). */
  owner?: string;
  /** Risk rules of the request that name approvers: these replace the route's, admins' too. */
  riskApprovers?: { risk: string; approvers: Approvers }[];
}

/**
 * The approvers that apply: for a protected write the route's protectedWriteApprovers replace
 * its approvers; undefined means anyone in the channel.
 */
export function approversFor(rules: RouteRules, protectedWrite: boolean): Approvers | undefined {
  return (protectedWrite ? rules.protectedWriteApprovers : undefined) ?? rules.approvers;
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
 * Decides whether `userId` may decide. `memberOf` holds the user groups (of those groupsToAsk
 * named) the user belongs to. The owner rule binds admins too: a four-eyes route means another
 * person looks, whoever the owner is.
 */
export function authorize(
  authority: ApprovalAuthority,
  userId: string,
  admins: readonly string[],
  memberOf: ReadonlySet<string>,
): Authorization {
  const { rules, route } = authority;
  if (rules && !rules.allowSelfApproval && authority.owner === userId) {
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

/** Why a user may revoke a grant: they granted it, or they may decide on its route. */
export type RevokeAllowed = { allowed: true; because: 'granter' } | Allowed;

/** Why they may not: neither the granter nor one who may decide on the grant's route. */
export interface RevokeRefused {
  allowed: false;
  grantedBy: string;
  /** Why deciding on the grant's route is refused to them (never selfApproval, see below). */
  route: Refused;
}

export type RevokeAuthorization = RevokeAllowed | RevokeRefused;

/**
 * Who may revoke a grant: its granter, and whoever may decide on its route (`onRoute`, the route's
 * ordinary rules checked for this user, admins included). Taking a permission back needs no
 * second pair of eyes, so the Authorizer leaves the owner rule out of `onRoute`.
 */
export function authorizeRevoke(
  grant: { grantedBy: string },
  userId: string,
  onRoute: Authorization,
): RevokeAuthorization {
  if (grant.grantedBy === userId) return { allowed: true, because: 'granter' };
  if (onRoute.allowed) return onRoute;
  return { allowed: false, grantedBy: grant.grantedBy, route: onRoute };
}
