import type { Logger } from 'pino';
import type { RouteRules } from '../routing/route.js';
import type { ApprovalRecord } from '../store/record.js';
import {
  type ApprovalAuthority,
  type Authorization,
  approversFor,
  authorize,
  authorizeRevoke,
  groupsToAsk,
  type RevokeAuthorization,
} from './authorization.js';

/** Members of Slack user groups. slack/ implements it (cached in Redis, shared by replicas). */
export interface GroupDirectory {
  members(usergroupId: string): Promise<ReadonlySet<string>>;
}

export interface AuthorizerOptions {
  /** The rules of a route by the name stored on a record; undefined for a route now gone. */
  rulesOf: (route: string | undefined) => RouteRules | undefined;
  admins: readonly string[];
  /** The Slack user whose agent a host runs. */
  ownerOf: (hostId: string) => string | undefined;
  groups: GroupDirectory;
  logger: Logger;
}

/** What of a record says who may decide it. */
type Decidable = Pick<ApprovalRecord, 'route' | 'protectedWrite' | 'hostId' | 'risks'>;

/** Who may decide on a card, as the card shows it. */
export interface ShownApprovers {
  /** Undefined: anyone in the channel. */
  users?: string[];
  usergroups?: string[];
  /** The host's owner may not decide. */
  notOwner?: string;
}

/**
 * Checks a user against the rules of the route stored on an approval's record, before anything
 * is claimed or sent. The same check serves clicks, modals, the slash command and App Home.
 */
export class Authorizer {
  constructor(private readonly options: AuthorizerOptions) {}

  authority(record: Decidable): ApprovalAuthority {
    const owner = this.options.ownerOf(record.hostId);
    const riskApprovers = record.risks?.flatMap(({ name, approvers }) =>
      approvers ? [{ risk: name, approvers }] : [],
    );
    return {
      route: record.route ?? '(none)',
      rules: this.options.rulesOf(record.route),
      protectedWrite: record.protectedWrite,
      ...(owner ? { owner } : {}),
      ...(riskApprovers?.length ? { riskApprovers } : {}),
    };
  }

  /**
   * How many distinct approvers must pick the same approving choice: the route's quorum, raised
   * by the risk rules the request matched.
   */
  quorum(record: Decidable): number {
    const route = this.options.rulesOf(record.route)?.quorum ?? 1;
    return Math.max(route, ...(record.risks ?? []).map((risk) => risk.quorum ?? 1));
  }

  /** The Slack user whose agent asks, if the host names one. */
  ownerOf(record: Pick<ApprovalRecord, 'hostId'>): string | undefined {
    return this.options.ownerOf(record.hostId);
  }

  /** Whether `userId` may decide `record`. */
  async check(userId: string, record: Decidable): Promise<Authorization> {
    return this.decide(this.authority(record), userId);
  }

  /**
   * Whether `userId` may revoke `grant`: its granter, or one who may decide on its route. Grants
   * are never made for protected writes, so the route's ordinary approvers apply.
   */
  async mayRevoke(userId: string, grant: { grantedBy: string; route: string }): Promise<RevokeAuthorization> {
    // The granter needs no look-up of user groups.
    if (grant.grantedBy === userId) return { allowed: true, because: 'granter' };
    return authorizeRevoke(grant, userId, await this.onRoute(userId, grant.route));
  }

  /** Whether `userId` may decide the ordinary approvals of a route (and so revoke its grants). */
  async decidesOn(userId: string, route: string): Promise<boolean> {
    return (await this.onRoute(userId, route)).allowed;
  }

  /** A route's ordinary rules for `userId`, without the owner rule (which needs an approval's host). */
  private onRoute(userId: string, route: string): Promise<Authorization> {
    // A grant of a record without a route ('') was made under the rules such a record has.
    const name = route === '' ? undefined : route;
    return this.decide(
      { route: route || '(none)', rules: this.options.rulesOf(name), protectedWrite: false },
      userId,
    );
  }

  /**
   * A user group whose members cannot be read (Slack away, a missing scope) counts as not
   * containing the user: a refusal is safe, a wrong approval not.
   */
  private async decide(authority: ApprovalAuthority, userId: string): Promise<Authorization> {
    const memberOf = new Set<string>();
    await Promise.all(
      groupsToAsk(authority, userId, this.options.admins).map(async (group) => {
        try {
          if ((await this.options.groups.members(group)).has(userId)) memberOf.add(group);
        } catch (err) {
          this.options.logger.warn({ err, usergroup: group }, 'could not read user group members');
        }
      }),
    );
    return authorize(authority, userId, this.options.admins, memberOf);
  }

  isAdmin(userId: string): boolean {
    return this.options.admins.includes(userId);
  }

  /** Who may decide `record`, for its card. Pure apart from reading the config. */
  shown(record: Decidable): ShownApprovers {
    const authority = this.authority(record);
    const notOwner =
      authority.rules && !authority.rules.allowSelfApproval && authority.owner
        ? { notOwner: authority.owner }
        : {};
    if (authority.riskApprovers) {
      // Several rules naming approvers: each must allow, so every one of their lists is shown.
      const users = [...new Set(authority.riskApprovers.flatMap((r) => r.approvers.users))];
      const usergroups = [...new Set(authority.riskApprovers.flatMap((r) => r.approvers.usergroups))];
      return { users, usergroups, ...notOwner };
    }
    if (!authority.rules) return { users: [...this.options.admins], usergroups: [], ...notOwner };
    const approvers = approversFor(authority.rules, authority.protectedWrite);
    if (!approvers) return notOwner;
    return { users: approvers.users, usergroups: approvers.usergroups, ...notOwner };
  }
}
