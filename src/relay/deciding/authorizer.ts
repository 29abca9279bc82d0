import type { Logger } from 'pino';
import {
  type ApprovalAuthority,
  type Authorization,
  approversFor,
  authorize,
  authorizeRevoke,
  groupsToAsk,
  inChannel,
  isFullMember,
  type Person,
  type Refused,
  type RevokeAuthorization,
  strangerRefusal,
  type Workspace,
} from '../../domain/authorization.js';
import type { Away } from '../../domain/away.js';
import type { ApprovalRecord } from '../../domain/record.js';
import type { RouteRules } from '../../domain/route.js';
import type { RouteInput } from '../../routing/router.js';

/** Members of Slack user groups. slack/ implements it (cached in Redis, shared by replicas). */
export interface GroupDirectory {
  members(usergroupId: string): Promise<ReadonlySet<string>>;
}

/** Who a Slack user is: their team and whether they are a guest. slack/ implements it (cached). */
export interface PeopleDirectory {
  person(userId: string): Promise<Person>;
}

/** Members of Slack channels. slack/ implements it (cached for at most five minutes). */
export interface ChannelDirectory {
  members(channel: string): Promise<ReadonlySet<string>>;
}

/** Who is away and named this user their delegate (store/awayStore.ts, in Redis). */
export interface StandIns {
  standingInFor(delegate: string): Promise<Away[]>;
}

/** A configured route as the Authorizer reads it. */
export interface RouteView {
  name: string;
  channel: string;
  rules: RouteRules;
}

/** What of a record says who may decide it. */
export type Decidable = Pick<ApprovalRecord, 'route' | 'protectedWrite' | 'hostId' | 'risks'> &
  Partial<Pick<ApprovalRecord, 'quorum' | 'slack' | 'tool' | 'subject' | 'sessionTitle'>>;

export interface AuthorizerOptions {
  /** The route a record names, with its rules and channel; undefined for a route now gone. */
  routeOf: (route: string | undefined) => RouteView | undefined;
  /** The route that would place the record now: its rules stand in for a route gone, with no admins. */
  placeNow: (record: Decidable) => RouteView;
  admins: readonly string[];
  /** The Slack user whose agent a host runs. */
  ownerOf: (hostId: string) => string | undefined;
  groups: GroupDirectory;
  people: PeopleDirectory;
  channels: ChannelDirectory;
  /** The bot's own team (auth.test); undefined until Slack has said, and then nobody may act. */
  workspace: () => Workspace | undefined;
  /** Who is away and whom they chose: a delegate may decide what they may. Without it, nobody stands in. */
  standIns?: StandIns;
  logger: Logger;
}

/** Refusals that say only that the user is not among the deciders (not a stranger, not unknown). */
const NOT_A_DECIDER: ReadonlySet<string> = new Set(['notApprover', 'notRiskApprover', 'routeGone']);

/**
 * Refusals a delegate's standing may lift: the user is not among those the rules name (or not in
 * the channel they name). Never selfApproval (delegation does not get round the owner rule), a
 * stranger or what Slack could not confirm.
 */
const DELEGABLE: ReadonlySet<string> = new Set([...NOT_A_DECIDER, 'notChannelMember']);

/** Who may decide on a card, as the card shows it. */
export interface ShownApprovers {
  /** Undefined: the members of the card's channel. */
  users?: string[];
  usergroups?: string[];
  /** The host's owner may not decide. */
  notOwner?: string;
}

/**
 * Checks a user against the rules of the route stored on an approval's record, before anything
 * is claimed or sent. The same check serves clicks, modals, the slash command, App Home, and who
 * sees and revokes grants. Strangers (another team, guests) are refused unless the route lets
 * them in; a route without approvers is its channel's members'; what Slack cannot confirm
 * refuses.
 */
export class Authorizer {
  constructor(private readonly options: AuthorizerOptions) {}

  authority(record: Decidable): ApprovalAuthority {
    const owner = this.options.ownerOf(record.hostId);
    const riskApprovers = record.risks?.flatMap(({ name, approvers }) =>
      approvers ? [{ risk: name, approvers }] : [],
    );
    const route = record.route ?? '(none)';
    const common = {
      route,
      protectedWrite: record.protectedWrite,
      ...(owner ? { owner } : {}),
      ...(riskApprovers?.length ? { riskApprovers } : {}),
    };
    const named = this.options.routeOf(record.route);
    if (named) return { ...common, rules: named.rules, channel: record.slack?.channel ?? named.channel };
    // The route is gone from the file: admins decide, and without admins the approvers of the
    // route that would place the record now. The host's owner never does (routeGone).
    if (this.options.admins.length > 0) return { ...common, rules: undefined, routeGone: true };
    const now = this.options.placeNow(record);
    return { ...common, rules: now.rules, routeGone: true, channel: now.channel };
  }

  /**
   * How many distinct approvers must pick the same approving choice: the route's quorum as the
   * record was placed with it, or as the route says now if that is more, raised by the risk
   * rules the request matched. A route gone keeps the record's, and the new route's if higher.
   */
  quorum(record: Decidable): number {
    const named = this.options.routeOf(record.route);
    const now = named ?? this.options.placeNow(record);
    return Math.max(
      record.quorum ?? 1,
      now.rules.quorum,
      ...(record.risks ?? []).map((risk) => risk.quorum ?? 1),
    );
  }

  /** The Slack user whose agent asks, if the host names one. */
  ownerOf(record: Pick<ApprovalRecord, 'hostId'>): string | undefined {
    return this.options.ownerOf(record.hostId);
  }

  /** Whether `userId` may decide `record`. */
  check(userId: string, record: Decidable): Promise<Authorization> {
    return this.decide(this.authority(record), userId);
  }

  /**
   * Whether `userId` may see `record` (its full text, a listing of it): as deciding, but the
   * host's owner is not barred from what their own agent asks.
   */
  maySee(userId: string, record: Decidable): Promise<Authorization> {
    const { owner: _owner, ...authority } = this.authority(record);
    return this.decide(authority, userId);
  }

  /**
   * Whether `userId` may read `record`'s card in full ("View full"): whoever may see it, and the
   * members of the card's channel, who have the card in front of them anyway. Never a stranger
   * the route does not let in.
   */
  async mayRead(userId: string, record: Decidable): Promise<Authorization> {
    const seeing = await this.maySee(userId, record);
    if (seeing.allowed || !NOT_A_DECIDER.has(seeing.why)) return seeing;
    const channel = record.slack?.channel;
    const members = await this.channelMembers(channel);
    return channel !== undefined && members?.has(userId)
      ? { allowed: true, because: 'channelMember', channel }
      : seeing;
  }

  /**
   * Whether `userId` may see and revoke `grant`: one who may decide on its route, in its channel.
   * Grants are never made for protected writes, so the route's ordinary approvers apply.
   */
  async mayRevoke(
    userId: string,
    grant: { grantedBy: string; route: string; channel: string },
  ): Promise<RevokeAuthorization> {
    return authorizeRevoke(grant, await this.onRoute(userId, grant.route, grant.channel));
  }

  /** Whether `userId` may decide the ordinary approvals of a route, in its configured channel. */
  async decidesOn(userId: string, route: string): Promise<boolean> {
    return (await this.onRoute(userId, route)).allowed;
  }

  /**
   * A route's ordinary rules for `userId`, without the owner rule (which needs an approval's host).
   * `channel`: where the route's cards are (a grant's), else the route's configured channel.
   * The user's own standing only: what rests on it (listing and revoking grants, the route's
   * statistics) is not deciding, and a delegate stands in to decide, nothing more.
   */
  private onRoute(userId: string, route: string, channel?: string): Promise<Authorization> {
    // A grant of a record without a route ('') was made under the rules such a record has.
    const name = route === '' ? undefined : route;
    const named = this.options.routeOf(name);
    const authority: ApprovalAuthority = named
      ? {
          route: route || '(none)',
          rules: named.rules,
          protectedWrite: false,
          channel: channel ?? named.channel,
        }
      : { route, rules: undefined, routeGone: true, protectedWrite: false };
    return this.decideAs(authority, userId);
  }

  /**
   * The user's own standing, else that of someone away who named them delegate: they may decide
   * what that person may, checked with the same rules (the owner rule binds the delegate as
   * themselves, and the person away is checked as the owner too). One hop: what the person away
   * may only as someone's delegate is not passed on.
   */
  private async decide(authority: ApprovalAuthority, userId: string): Promise<Authorization> {
    const own = await this.decideAs(authority, userId);
    if (own.allowed || !DELEGABLE.has(own.why) || !this.options.standIns) return own;
    // Strangers never stand in, whatever a route lets them do as themselves (allowGuests,
    // allowExternal); nor does an account since deactivated.
    if (!(await this.isMember(userId))) return own;
    let awayFor: Away[];
    try {
      awayFor = await this.options.standIns.standingInFor(userId);
    } catch (err) {
      this.options.logger.warn({ err, userId }, 'could not read whom a user stands in for');
      return own;
    }
    // Standing in for the request's owner is looked at last: where a quorum is needed the owner's
    // rights never count (clickVotes.ts), and someone else away may give the delegate a vote.
    const ordered = [...awayFor].sort(
      (a, b) => Number(a.userId === authority.owner) - Number(b.userId === authority.owner),
    );
    for (const away of ordered) {
      if (away.userId === userId) continue;
      // A deactivated account's rights pass to nobody, nor do a stranger's.
      if (!(await this.isMember(away.userId))) continue;
      const theirs = await this.decideAs(authority, away.userId);
      if (theirs.allowed && theirs.because !== 'delegate')
        return { allowed: true, because: 'delegate', for: away.userId, as: theirs };
    }
    return own;
  }

  /**
   * A user group, a user or a channel whose members cannot be read (Slack away, a missing scope)
   * counts as not allowing the user: a refusal is safe, a wrong approval not.
   */
  private async decideAs(authority: ApprovalAuthority, userId: string): Promise<Authorization> {
    const { people, logger } = this.options;
    const memberOf = new Set<string>();
    const [person] = await Promise.all([
      people.person(userId).catch((err: unknown) => {
        logger.warn({ err, userId }, 'could not read who a Slack user is');
        return undefined;
      }),
      this.readGroups(groupsToAsk(authority, userId, this.options.admins), userId, memberOf),
    ]);
    const workspace = this.options.workspace();
    const stranger = strangerRefusal(authority, person, workspace);
    if (stranger) return stranger;
    // A route that lets guests or another team in lets them in as its approvers: an admin who
    // has become one of them is checked as anyone else, user groups included.
    let admins = this.options.admins;
    if (this.isAdmin(userId) && !isFullMember(person, workspace)) {
      admins = [];
      await this.readGroups(groupsToAsk(authority, userId, admins), userId, memberOf);
    }
    const verdict = authorize(authority, userId, admins, memberOf);
    if (!verdict.allowed || verdict.because !== 'anyone')
      return inChannel(verdict, authority, userId, undefined);
    return inChannel(verdict, authority, userId, await this.channelMembers(authority.channel));
  }

  /** Adds to `memberOf` each of `asked` that holds `userId`; one Slack cannot read holds nobody. */
  private async readGroups(asked: readonly string[], userId: string, memberOf: Set<string>): Promise<void> {
    const { groups, logger } = this.options;
    await Promise.all(
      asked.map(async (group) => {
        if (memberOf.has(group)) return;
        try {
          if ((await groups.members(group)).has(userId)) memberOf.add(group);
        } catch (err) {
          logger.warn({ err, usergroup: group }, 'could not read user group members');
        }
      }),
    );
  }

  private async channelMembers(channel: string | undefined): Promise<ReadonlySet<string> | undefined> {
    if (channel === undefined) return undefined;
    try {
      return await this.options.channels.members(channel);
    } catch (err) {
      this.options.logger.warn({ err, channel }, 'could not read channel members');
      return undefined;
    }
  }

  /**
   * What Slack says of a user, and the bot's own workspace: for checks of people outside a route
   * (who may be away, who may stand in). Undefined where Slack did not say.
   */
  async whoIs(userId: string): Promise<{ person?: Person; workspace?: Workspace }> {
    const person = await this.options.people.person(userId).catch((err: unknown) => {
      this.options.logger.warn({ err, userId }, 'could not read who a Slack user is');
      return undefined;
    });
    const workspace = this.options.workspace();
    return { ...(person ? { person } : {}), ...(workspace ? { workspace } : {}) };
  }

  /**
   * Why `userId` is a stranger `record`'s route does not let in (a guest, another team or
   * enterprise, a deactivated account, or one Slack does not confirm now); undefined when they are
   * none. For what is told to a person the rules name without asking them to decide: the host's
   * owner, whose agent asks, is told how it went only while they are no such stranger.
   */
  async strangerTo(userId: string, record: Decidable): Promise<Refused | undefined> {
    const person = await this.options.people.person(userId).catch((err: unknown) => {
      this.options.logger.warn({ err, userId }, 'could not read who a Slack user is');
      return undefined;
    });
    return strangerRefusal(this.authority(record), person, this.options.workspace());
  }

  /**
   * Whether `userId` is a stranger (a guest, another team or enterprise, a deactivated account, or
   * one Slack does not confirm now), checked now against each of `routes` (names, as records give
   * them); undefined for a full member of the bot's own team. `refused` says why, as no route
   * widens it; `letIn` names the routes that let them in all the same (allowGuests,
   * allowExternal). What shows more than one approval (App Home, /countersign help) asks this
   * first: a stranger no route lets in is told only that, and why.
   */
  async asStranger(
    userId: string,
    routes: readonly string[],
  ): Promise<{ refused: Refused; letIn: string[] } | undefined> {
    const person = await this.options.people.person(userId).catch((err: unknown) => {
      this.options.logger.warn({ err, userId }, 'could not read who a Slack user is');
      return undefined;
    });
    const workspace = this.options.workspace();
    const refused = strangerRefusal({ route: '(none)', rules: undefined }, person, workspace);
    if (!refused) return undefined;
    const letIn = routes.filter((route) => {
      const view = this.options.routeOf(route);
      return (
        view !== undefined && strangerRefusal({ route, rules: view.rules }, person, workspace) === undefined
      );
    });
    return { refused, letIn };
  }

  isAdmin(userId: string): boolean {
    return this.options.admins.includes(userId);
  }

  /**
   * An admin as every check treats one: named in the config, and neither a stranger (a guest,
   * another team or enterprise) nor a user Slack has not confirmed. What admins see beyond any
   * route (every pending approval, every route's statistics) goes through this, as their
   * decisions go through the same stranger check.
   */
  async actsAsAdmin(userId: string): Promise<boolean> {
    return this.isAdmin(userId) && (await this.isMember(userId));
  }

  /**
   * Whether Slack says now that `userId` is a full member of the bot's own team: not a guest, not
   * of another team or enterprise, not deactivated, and known. What no route's rules widen: an
   * admin, a delegate.
   */
  async isMember(userId: string): Promise<boolean> {
    const person = await this.options.people.person(userId).catch((err: unknown) => {
      this.options.logger.warn({ err, userId }, 'could not read who a Slack user is');
      return undefined;
    });
    return isFullMember(person, this.options.workspace());
  }

  /** Who may decide `record`, for its card. Pure apart from reading the config. */
  shown(record: Decidable): ShownApprovers {
    const authority = this.authority(record);
    const selfBarred = !authority.rules || authority.routeGone || !authority.rules.allowSelfApproval;
    const notOwner = selfBarred && authority.owner ? { notOwner: authority.owner } : {};
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

/** What a record is routed on, for the route that would place it now (a route gone from the file). */
export function routeInputOf(record: Decidable): RouteInput {
  const workspaceRoot = record.subject?.workspaceRoot;
  return {
    hostId: record.hostId,
    tool: record.tool ?? '',
    ...(workspaceRoot ? { workspaceRoot } : {}),
    ...(record.sessionTitle ? { sessionTitle: record.sessionTitle } : {}),
    subjectKind: record.subject?.kind ?? '',
    protectedWrite: record.protectedWrite,
  };
}
