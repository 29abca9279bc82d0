// Whether each quorum of the file can be reached. Where the approvers that apply name users only,
// the people who can vote are known at start-up; a quorum larger than their number is never
// reached, and every approval it applies to waits for its timeout. A list with a user group is
// not counted (anyone may join the group), nor a route without approvers (its channel decides).
//
// Who votes follows authorization.ts and clickVotes.ts: a route's approvers (its
// protectedWriteApprovers for protected writes) and the admins; where a risk rule names
// approvers, those alone, admins not. A request's quorum is the highest of its route's and its
// risk rules'. The host's owner never counts toward a quorum above 1, nor decides at all where
// allowSelfApproval is false: counted once per host a route can match, the owner taken out.

import type { Approvers, RiskRule, Route } from '../../domain/route.js';
import { shown } from '../common.js';

/** A host as far as quorums go: whose agent it runs. */
export interface OwnedHost {
  id: string;
  owner?: string;
}

/** The users who alone may decide, or undefined when anyone may become one (a user group, a channel). */
function fixedUsers(approvers: Approvers | undefined): string[] | undefined {
  return approvers && approvers.usergroups.length === 0 ? approvers.users : undefined;
}

/** The fewest who can vote on any one host's requests, and the owner left out to get there. */
function fewestVoters(
  people: ReadonlySet<string>,
  hosts: readonly OwnedHost[],
  ownerBarred: boolean,
): { count: number; without?: OwnedHost } {
  const without = ownerBarred ? hosts.find((h) => h.owner !== undefined && people.has(h.owner)) : undefined;
  return without ? { count: people.size - 1, without } : { count: people.size };
}

interface Place {
  /** What needs the quorum: `routes[0]`, `routes[0] where risks[1] matches`. */
  where: string;
  quorum: number;
  /** The quorum as the message says it: `its quorum of 2`, `the quorum of 3 of risks[1]`. */
  said: string;
  people: ReadonlySet<string>;
  /** Who they are, as the message says it. */
  counted: string;
  hosts: readonly OwnedHost[];
  allowSelfApproval: boolean;
}

/** The quorum a route or risk rule sets itself (1 when it leaves it out). */
function own(quorum: number | undefined): Pick<Place, 'quorum' | 'said'> {
  return quorum === undefined
    ? { quorum: 1, said: 'its quorum of 1 (the default)' }
    : { quorum, said: `its quorum of ${quorum}` };
}

/** A quorum another part of the file sets, higher than the place's own. */
function raisedBy(quorum: number, of: string): Pick<Place, 'quorum' | 'said'> {
  return { quorum, said: `the quorum of ${quorum} of ${of}` };
}

function problemAt(place: Place): string | undefined {
  const ownerBarred = place.quorum > 1 || !place.allowSelfApproval;
  const { count, without } = fewestVoters(place.people, place.hosts, ownerBarred);
  if (place.quorum <= count) return undefined;
  const why = place.quorum > 1 ? 'who never counts toward a quorum' : 'as allowSelfApproval is false';
  const less = without ? `, less ${without.owner}, host ${shown(without.id)}'s owner, ${why}` : '';
  const who = count === 0 ? 'nobody' : `only ${count}`;
  return `${place.where} can never reach ${place.said}: ${who} can vote (${place.counted}${less}): name more users or a user group, or lower the quorum`;
}

/** The hosts `route` can match: all the file lists, or those its match names. */
function hostsOf(route: Route, hosts: readonly OwnedHost[]): OwnedHost[] {
  const named = route.match?.hosts;
  return named ? hosts.filter((h) => named.includes(h.id)) : [...hosts];
}

/**
 * The first quorum of the file that cannot be reached, said in one line; undefined when all can.
 * `hosts`: the file's (without them, the one host of MSP_HOST_COMMAND has no owner).
 */
export function unreachableQuorum(
  routes: readonly Route[],
  risks: readonly RiskRule[],
  hosts: readonly OwnedHost[],
  admins: readonly string[],
): string | undefined {
  const places: Place[] = [];
  // Each risk rule that names users only, on any route: its own quorum, with no route's rules.
  risks.forEach((risk, j) => {
    const users = fixedUsers(risk.approvers);
    if (!users) return;
    places.push({
      where: `risks[${j}]`,
      ...own(risk.quorum),
      people: new Set(users),
      counted: `the users of risks[${j}].approvers, not the admins`,
      hosts,
      allowSelfApproval: true,
    });
  });
  routes.forEach((route, i) => {
    const routeQuorum = route.quorum ?? 1;
    const allowSelfApproval = route.allowSelfApproval ?? true;
    const routeHosts = hostsOf(route, hosts);
    const protectedWrite = route.match?.protectedWrite;
    // The lists that apply on the route: for protected writes, protectedWriteApprovers if any.
    const lists: { of: string; key: string; approvers: Approvers | undefined }[] = [];
    if (protectedWrite !== true) lists.push({ of: '', key: 'approvers', approvers: route.approvers });
    if (protectedWrite !== false && (route.protectedWriteApprovers || protectedWrite === true)) {
      const key = route.protectedWriteApprovers ? 'protectedWriteApprovers' : 'approvers';
      lists.push({
        of: ' (protected writes)',
        key,
        approvers: route.protectedWriteApprovers ?? route.approvers,
      });
    }
    for (const list of lists) {
      const users = fixedUsers(list.approvers);
      if (!users) continue;
      const people = new Set([...users, ...admins]);
      const counted = `the users of routes[${i}].${list.key} and the admins`;
      const common = { people, counted, hosts: routeHosts, allowSelfApproval };
      places.push({
        ...common,
        where: `routes[${i}]${list.of}`,
        ...own(route.quorum),
      });
      // A risk rule without approvers raises the quorum of the route's own approvers.
      risks.forEach((risk, j) => {
        if (risk.approvers || risk.quorum === undefined || risk.quorum <= routeQuorum) return;
        places.push({
          ...common,
          where: `routes[${i}]${list.of} where risks[${j}] matches`,
          ...raisedBy(risk.quorum, `risks[${j}]`),
        });
      });
    }
    // A risk rule that names users only, on this route: the route's quorum may be the higher.
    risks.forEach((risk, j) => {
      const users = fixedUsers(risk.approvers);
      if (!users) return;
      places.push({
        where: `risks[${j}] on routes[${i}]`,
        ...(routeQuorum > (risk.quorum ?? 1) ? raisedBy(routeQuorum, `routes[${i}]`) : own(risk.quorum)),
        people: new Set(users),
        counted: `the users of risks[${j}].approvers, not the admins`,
        hosts: routeHosts,
        allowSelfApproval,
      });
    });
  });
  for (const place of places) {
    const problem = problemAt(place);
    if (problem) return problem;
  }
  return undefined;
}
