// What the COUNTERSIGN_CONFIG file says about routes and hosts, once checked (configFile.ts).

import type { CallerScope } from './grants/grant.js';
import type { GrantScope } from './grants/scope.js';

/** Who may decide on a route: Slack user IDs (U…/W…) and user group IDs (S…). */
export interface Approvers {
  users: string[];
  usergroups: string[];
}

export interface RouteMatch {
  /** hostId, exact. */
  hosts?: string[];
  /** Globs on the tool name. */
  tools?: string[];
  /** Globs on the workspaceRoot (the subject's own, else the session's). */
  workspaces?: string[];
  /** Globs on the session's title (or its name when it has no title). */
  sessionTitles?: string[];
  /** Subject kinds, exact: shell, fileAccess, network, … */
  subjects?: string[];
  protectedWrite?: boolean;
}

/** A route's rules for who may decide, and how a rejection is asked for. */
export interface RouteRules {
  /** Absent: the members of the route's channel may decide. */
  approvers?: Approvers;
  /** For approvals with protectedWrite, these replace `approvers`. */
  protectedWriteApprovers?: Approvers;
  /** false: the host's owner may not decide their own agent's approvals here. */
  allowSelfApproval: boolean;
  rejectReason: 'required' | 'optional';
  quickReasons: string[];
  /** Distinct approvers who must pick the same approving choice before it is sent (1: any one). */
  quorum: number;
  /**
   * Users of another Slack team or enterprise (Slack Connect) may decide, see and revoke here, as
   * any other user the route lets. Off by default: strangers get nothing unless a route says so.
   */
  allowExternal: boolean;
  /** Guests (multi- and single-channel) may decide, see and revoke here. Off by default. */
  allowGuests: boolean;
}

/** A route's "don't ask again" grants (`routes[].grants`); left-out keys take the environment's. */
export interface RouteGrants {
  enabled: boolean;
  /** How long a grant made from a card lasts, and the most any may. */
  ttlMs: number;
  maxTtlMs: number;
  /** Whom a grant is bound to: the session, the host's owner, or the host. */
  caller: CallerScope;
  /** The scopes "don't ask again" offers, in order (`choices`); left out: see defaultChoices. */
  choices: GrantScope[];
}

/** Who is on call for a route (`routes[].oncall`): exactly one source. */
export type OncallSource =
  | { kind: 'usergroup'; usergroup: string }
  | {
      kind: 'rotation';
      users: string[];
      /** ms since the epoch of the first handover. */
      startMs: number;
      everyMs: number;
      /** IANA zone: handovers keep the start's wall-clock time across DST changes. */
      timezone: string;
    }
  | { kind: 'pagerduty'; scheduleId?: string; escalationPolicyId?: string };

export type EscalationAction = 'remind' | 'mention' | 'dm' | 'page' | 'timeout';

/** One step of a route's escalation ladder (`routes[].escalation[]`). */
export interface EscalationStep {
  /** Since the card was posted. */
  afterMs: number;
  action: EscalationAction;
  /** mention and dm: `oncall`, a user ID (U…/W…) or a user group ID (S…). */
  target?: string;
  /** mention: the thread reply is also shown in the channel. */
  broadcast?: boolean;
  /** page: overrides PAGERDUTY_ROUTING_KEY. */
  routingKey?: string;
  /**
   * page: the page carries the request (the command or title, the session's title), hidden
   * characters marked. Off by default: PagerDuty's on-call, and whoever reads the service's
   * incidents, may be people no route lets see it.
   */
  includeRequest?: boolean;
}

/** A route of the file; a rule left out takes its default (OPEN_RULES). */
export interface Route extends Partial<RouteRules> {
  name?: string;
  channel: string;
  /** Absent when the route catches everything (no `match`; an empty one is refused at start-up). */
  match?: RouteMatch;
  grants?: Partial<RouteGrants>;
  oncall?: OncallSource;
  /** Ordered by afterMs; absent or empty: nobody is reminded. */
  escalation?: EscalationStep[];
  /** `sla`: how long an approval may wait for a decision before it counts as late. */
  slaMs?: number;
}

/**
 * The rules of a route that says nothing about who may decide: the members of its channel, but
 * never users of another team or guests.
 */
export const OPEN_RULES: RouteRules = {
  allowSelfApproval: true,
  rejectReason: 'optional',
  quickReasons: [],
  quorum: 1,
  allowExternal: false,
  allowGuests: false,
};

/** A `risks[].match.programs` entry: a program run with a subcommand and flags (programs.ts). */
export interface ProgramMatch {
  /** Compared with the base name of argv[0], ignoring case: `/usr/bin/git` is `git`. */
  program: string;
  /** The program's first operand (`push`), ignoring case. */
  subcommand?: string;
  /** Any one anywhere after the program: `--force` (also `--force=…`, `--forc`), `-f` (also `-uf`). */
  flags?: string[];
  /** Globs, any one on any operand after the subcommand: `+*` is a force-pushed refspec. */
  args?: string[];
}

/** What a risk rule matches (`risks[].match`): any one per field, every listed field. */
export interface RiskMatch {
  /** Globs on a shell stage's argv joined by spaces (the command when the host sent no stages). */
  commands?: string[];
  /** Globs on a file path, normalized and resolved against the workspace root (riskPaths.ts). */
  paths?: string[];
  /** On the programs a shell subject runs, wrappers looked through (invocations.ts). */
  programs?: ProgramMatch[];
  /** Globs on a network target's host, in lower case without a trailing dot (hostNames.ts). */
  targets?: string[];
  /** Globs on the tool name. */
  tools?: string[];
}

/** A top-level `risks` entry: requests that need more care than their route gives. */
export interface RiskRule {
  name: string;
  match: RiskMatch;
  /** Shown on the card: "⚠ <warning>". */
  warning: string;
  /** Raises the route's quorum for a matching request. */
  quorum?: number;
  /** Replace the route's approvers for a matching request: only they may decide. */
  approvers?: Approvers;
  /** `type`: approving opens a modal where the approver types the request's target first. */
  confirm?: 'type';
}

/** One MSP host the bot runs and supervises on its own. */
export interface HostSpec {
  id: string;
  /** Run with /bin/sh -c. */
  command: string;
  sandboxMode: string;
  cwd?: string;
  /** Added to what this host inherits of the bot's environment (config/hostEnvironment.ts). */
  env?: Record<string, string>;
  /** The Slack user whose agent this host runs. */
  owner?: string;
}

/** What the file holds, checked. */
export interface ConfigFile {
  /** Absent when the file lists no hosts: MSP_HOST_COMMAND is the one host. */
  hosts?: HostSpec[];
  routes: Route[];
  admins: string[];
  risks: RiskRule[];
}
