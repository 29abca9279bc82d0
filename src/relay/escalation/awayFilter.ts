import type { Away } from '../../domain/away.js';
import type { OnCall } from './oncall.js';

// Escalation passes by whoever is away (`/countersign away`): no mention, no DM, and no page when
// everyone PagerDuty has on call is away (escalationSteps.ts, standInForPage). Their delegate
// is reached in their place, unless the delegate is away too (one hop: a delegate's delegate is
// not asked). Read from Redis at the moment a step fires, so every replica agrees.

/**
 * A step found nobody to reach because everyone it would reach is away with nobody standing in:
 * the escalation falls through to its next step at once (Escalator).
 */
export class EveryoneAway extends Error {
  constructor(readonly away: readonly string[]) {
    super('everyone this step would reach is away, with nobody standing in');
  }
}

/** Who is away now, among some users (store/awayStore.ts). */
export interface AwayLookup {
  whoIsAway(userIds: readonly string[]): Promise<Map<string, Away>>;
}

/** The users a step reaches once those away are replaced by their delegates. */
export interface Present {
  target: OnCall;
  /** Those passed by because they are away. */
  skipped: string[];
}

/**
 * Whether a delegate may stand in now: a full member of the team, as Slack says at this moment (a
 * guest since, gone to another team, or unknown to Slack stands in for nobody, so the request's
 * text is never sent to them). They were checked when named; people change.
 */
export type MayStandIn = (userId: string) => Promise<boolean>;

/**
 * `found` without the people away, each replaced by their delegate (once, in their place in the
 * order, so that the DM goes where it would have gone). A user group mentioned as a group would
 * ping its members away too: when one of them is away, its members are named one by one instead.
 * `members`: the group's members, when `found` names a group but no users. Only the delegates
 * who would be reached are asked `mayStandIn`: not those away themselves, nor their delegates.
 */
export async function withoutAway(
  found: OnCall,
  away: AwayLookup,
  members: (usergroup: string) => Promise<readonly string[]>,
  mayStandIn: MayStandIn = async () => true,
): Promise<Present> {
  const users =
    found.users.length === 0 && found.usergroup ? [...(await members(found.usergroup))] : found.users;
  const absent = await away.whoIsAway(users);
  if (absent.size === 0) return { target: found, skipped: [] };
  const delegates = [...new Set([...absent.values()].flatMap((a) => (a.delegate ? [a.delegate] : [])))];
  const delegatesAway = await away.whoIsAway(delegates);
  const present = delegates.filter((d) => !delegatesAway.has(d));
  const allowed = await Promise.all(present.map((d) => mayStandIn(d)));
  const standing = new Set(present.filter((_, i) => allowed[i]));
  const reached: string[] = [];
  const inPlaceOf: Record<string, string> = {};
  for (const user of users) {
    const theirs = absent.get(user);
    const who = theirs ? theirs.delegate : user;
    if (who === undefined || (theirs && !standing.has(who)) || reached.includes(who)) continue;
    reached.push(who);
    if (theirs) inPlaceOf[who] = user;
  }
  const { usergroup: _group, ...rest } = found;
  return { target: { ...rest, users: reached, inPlaceOf }, skipped: [...absent.keys()] };
}
