import { createHash } from 'node:crypto';
import picomatch from 'picomatch';
import { stringify } from 'safe-stable-stringify';
import { defaultChoices } from '../domain/grants/scope.js';
import {
  type EscalationStep,
  type OncallSource,
  OPEN_RULES,
  type Route,
  type RouteGrants,
  type RouteRules,
} from '../domain/route.js';
import { globOptions } from './globs.js';
import { directoryNamedBy } from './workspaceRoot.js';

/** What an approval is routed on. */
export interface RouteInput {
  hostId: string;
  tool: string;
  workspaceRoot?: string;
  /** The session's title, or its name when it has no title. */
  sessionTitle?: string;
  subjectKind: string;
  protectedWrite: boolean;
}

type Test = (input: RouteInput) => boolean;

/** All of a route's match fields must hold; a route without any catches everything. */
function compile(route: Route): Test {
  const tests: Test[] = [];
  const { hosts, tools, workspaces, sessionTitles, subjects, protectedWrite } = route.match ?? {};
  if (hosts) {
    const ids = new Set(hosts);
    tests.push((input) => ids.has(input.hostId));
  }
  if (tools) {
    const isTool = picomatch(tools, globOptions('routes.tools'));
    tests.push((input) => isTool(input.tool));
  }
  if (workspaces) {
    // As written, case too: a case variant (`/SRV/PROD` on macOS) falls to a later route (globs.ts).
    const isWorkspace = picomatch(workspaces, globOptions('routes.workspaces'));
    tests.push((input) => {
      // Unknown workspace never matches: a route scoped to some workspaces must not catch the rest.
      if (input.workspaceRoot === undefined) return false;
      // A root whose spelling names no directory (`~/x`, `/proc/self/cwd`) may be any: it matches
      // every workspace route, so the first one takes it and a strict one is never dodged.
      const directory = directoryNamedBy(input.workspaceRoot);
      return directory === undefined || isWorkspace(directory);
    });
  }
  if (sessionTitles) {
    // A title is free text, not a path: `*` must cross "/" too.
    const isTitle = picomatch(sessionTitles, globOptions('routes.sessionTitles'));
    tests.push((input) => input.sessionTitle !== undefined && isTitle(input.sessionTitle));
  }
  if (subjects) {
    const kinds = new Set(subjects);
    tests.push((input) => kinds.has(input.subjectKind));
  }
  if (protectedWrite !== undefined) tests.push((input) => input.protectedWrite === protectedWrite);
  return (input) => tests.every((test) => test(input));
}

/** The route an approval's card follows: its name (stored with the record) and its channel. */
export interface ChosenRoute {
  name: string;
  channel: string;
}

/** A route with its rules, as the Authorizer reads it. */
export interface RouteView extends ChosenRoute {
  rules: RouteRules;
}

/** What the record says when no route of the file matched: the card went to SLACK_CHANNEL. */
export const FALLBACK_ROUTE_NAME = '(SLACK_CHANNEL)';

/**
 * What records and grants call a route: its `name`, else a digest of its own definition
 * (`unnamed-1a2b3c4d`), never its place in the file, which would hand its records and grants to
 * whichever route comes to stand there. An unnamed route moved keeps its name; changed or removed,
 * its records are of a route gone from the file (admins decide) and its grants answer nothing.
 */
export function routeName(route: Route): string {
  if (route.name !== undefined) return route.name;
  // Keys sorted and durations in ms: one definition, one digest, however the file spells it. A
  // paging key is a secret and says nothing of who decides: it is left out.
  const definition = stringify(route, (key, value) => (key === 'routingKey' ? undefined : value)) ?? '';
  return `unnamed-${createHash('sha256').update(definition).digest('hex').slice(0, 8)}`;
}

/**
 * Names only Countersign gives, which a route of the file may not take: any in parentheses (the
 * fallback's `(SLACK_CHANNEL)`), an unnamed route's, and `routes[2]`, what earlier releases
 * called an unnamed route by its place (records and grants stored then may still say it).
 */
export function isReservedRouteName(name: string): boolean {
  return /^(?:\(.*\)|unnamed-[0-9a-f]{8}|routes\[\d+\])$/is.test(name);
}

/**
 * What a route's grants are when neither the file nor the environment says otherwise. Choices
 * left out are derived from the route's ttl and maxTtl (defaultChoices): 1 h, 8 h, session.
 */
export const DEFAULT_ROUTE_GRANTS: Omit<RouteGrants, 'choices'> & Partial<Pick<RouteGrants, 'choices'>> = {
  enabled: true,
  ttlMs: 8 * 3_600_000,
  maxTtlMs: 7 * 86_400_000,
  caller: 'session',
};

type GrantDefaults = typeof DEFAULT_ROUTE_GRANTS;

interface CompiledRoute extends ChosenRoute {
  rules: RouteRules;
  grants: RouteGrants;
  oncall: OncallSource | undefined;
  escalation: EscalationStep[];
  slaMs: number | undefined;
  matches: Test;
  /** No `match`: every approval stops here, and the fallback is never used. */
  catchesAll: boolean;
}

/** Picks the route, and so the channel, of an approval card; later, the rules of that route. */
export class Router {
  private readonly routes: CompiledRoute[];
  private readonly byName = new Map<string, CompiledRoute>();
  private readonly fallback: ChosenRoute;
  private readonly grantDefaults: GrantDefaults;

  /** `grantDefaults`: the environment's (COUNTERSIGN_GRANT_TTL, …), for every key a route leaves out. */
  constructor(routes: Route[], fallbackChannel: string, grantDefaults: GrantDefaults = DEFAULT_ROUTE_GRANTS) {
    this.grantDefaults = grantDefaults;
    this.routes = routes.map((route) => ({
      name: routeName(route),
      channel: route.channel,
      rules: {
        ...(route.approvers ? { approvers: route.approvers } : {}),
        ...(route.protectedWriteApprovers ? { protectedWriteApprovers: route.protectedWriteApprovers } : {}),
        allowSelfApproval: route.allowSelfApproval ?? OPEN_RULES.allowSelfApproval,
        rejectReason: route.rejectReason ?? OPEN_RULES.rejectReason,
        quickReasons: route.quickReasons ?? OPEN_RULES.quickReasons,
        quorum: route.quorum ?? OPEN_RULES.quorum,
        allowExternal: route.allowExternal ?? OPEN_RULES.allowExternal,
        allowGuests: route.allowGuests ?? OPEN_RULES.allowGuests,
      },
      grants: withQuorum(withCappedTtl({ ...grantDefaults, ...route.grants }), route.quorum),
      oncall: route.oncall,
      escalation: route.escalation ?? [],
      slaMs: route.slaMs,
      matches: compile(route),
      catchesAll: route.match === undefined,
    }));
    // Start-up refuses two routes of one name (configFile.ts). Two unnamed routes alike share
    // theirs: the first is the one a record names, and the second never matches anything else.
    for (const route of this.routes) if (!this.byName.has(route.name)) this.byName.set(route.name, route);
    this.fallback = { name: FALLBACK_ROUTE_NAME, channel: fallbackChannel };
  }

  /** The first matching route, else the fallback. */
  routeFor(input: RouteInput): ChosenRoute {
    const route = this.routes.find((r) => r.matches(input));
    return route ? { name: route.name, channel: route.channel } : this.fallback;
  }

  /** The channel of routeFor(input). */
  channelFor(input: RouteInput): string {
    return this.routeFor(input).channel;
  }

  /** routeFor(input), with the route's rules. */
  placeNow(input: RouteInput): RouteView {
    const route = this.routes.find((r) => r.matches(input));
    return route ? { name: route.name, channel: route.channel, rules: route.rules } : this.fallbackView();
  }

  /**
   * The route a record names, with its rules and channel; the fallback for a record of no route.
   * Undefined for a route no longer in the file: the caller fails closed (see rulesOf).
   */
  named(routeName: string | undefined): RouteView | undefined {
    if (routeName === undefined || routeName === FALLBACK_ROUTE_NAME) return this.fallbackView();
    const route = this.byName.get(routeName);
    return route && { name: route.name, channel: route.channel, rules: route.rules };
  }

  private fallbackView(): RouteView {
    return { ...this.fallback, rules: OPEN_RULES };
  }

  /**
   * The rules of the route a record names; the fallback's (anyone may decide) for a record of no
   * route. Undefined for a route no longer in the file (it changed across a restart): the caller
   * fails closed rather than opening a restricted approval to everyone.
   */
  rulesOf(routeName: string | undefined): RouteRules | undefined {
    if (routeName === undefined || routeName === FALLBACK_ROUTE_NAME) return OPEN_RULES;
    return this.byName.get(routeName)?.rules;
  }

  /**
   * The grants of the route a record names; the environment's for a record of no route. Undefined
   * (no grants) for a route no longer in the file, as rulesOf() fails closed.
   */
  grantsOf(routeName: string | undefined): RouteGrants | undefined {
    if (routeName === undefined || routeName === FALLBACK_ROUTE_NAME)
      return withCappedTtl(this.grantDefaults);
    return this.byName.get(routeName)?.grants;
  }

  /** The escalation ladder of the route a record names; none for the fallback or a route gone from the file. */
  escalationOf(routeName: string | undefined): readonly EscalationStep[] {
    if (routeName === undefined) return [];
    return this.byName.get(routeName)?.escalation ?? [];
  }

  /** The `sla` of the route a record names (ms), when it has one; none for the fallback. */
  slaOf(routeName: string | undefined): number | undefined {
    if (routeName === undefined) return undefined;
    return this.byName.get(routeName)?.slaMs;
  }

  /** Who is on call for the route a record names, when the route says. */
  oncallOf(routeName: string | undefined): OncallSource | undefined {
    if (routeName === undefined) return undefined;
    return this.byName.get(routeName)?.oncall;
  }

  /**
   * Names of the routes whose channel's members decide (start-up warns about them): no
   * `approvers`, so at least their approvals that are not protected writes are open to the
   * channel. The fallback too, when a card can reach it (no route of the file catches everything).
   */
  openRoutes(): string[] {
    const open = this.routes.filter((r) => !r.rules.approvers).map((r) => r.name);
    return this.routes.some((r) => r.catchesAll) ? open : [...open, FALLBACK_ROUTE_NAME];
  }

  /** Whether any route names who may decide (else every route is its channel members'). */
  namesApprovers(): boolean {
    return this.routes.some((r) => r.rules.approvers || r.rules.protectedWriteApprovers);
  }

  /** Every configured route, in order, with its rules: for /countersign whoami. */
  all(): ReadonlyArray<ChosenRoute & { rules: RouteRules }> {
    return this.routes.map(({ name, channel, rules }) => ({ name, channel, rules }));
  }
}

/**
 * A route that needs several approvers remembers no grants: one person's "don't ask again" would
 * let later requests through that two people are meant to look at.
 */
function withQuorum(grants: RouteGrants, quorum: number | undefined): RouteGrants {
  return quorum !== undefined && quorum > 1 ? { ...grants, enabled: false } : grants;
}

/**
 * A TTL left to the environment may be longer than the route's own maximum: the maximum wins.
 * Choices left out follow the route's TTL (start-up checked the ones given against the maximum).
 */
function withCappedTtl(grants: GrantDefaults): RouteGrants {
  const ttlMs = Math.min(grants.ttlMs, grants.maxTtlMs);
  return { ...grants, ttlMs, choices: grants.choices ?? defaultChoices(ttlMs, grants.maxTtlMs) };
}
