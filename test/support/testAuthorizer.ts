// An Authorizer for tests that run without Slack: the route rules, admins, owners and user groups
// a test names, and a workspace (team T1) whose people (WORKSPACE_PEOPLE, and any the test adds)
// are members of every channel, not guests, unless the test says otherwise.

import type { Logger } from 'pino';
import pino from 'pino';
import type { Person, Workspace } from '../../src/domain/authorization.js';
import type { Away } from '../../src/domain/away.js';
import { OPEN_RULES, type RouteRules } from '../../src/domain/route.js';
import { Authorizer, type Decidable, type RouteView } from '../../src/relay/deciding/authorizer.js';
import { WORKSPACE_PEOPLE } from './fakeSlack.js';

export const TEST_WORKSPACE: Workspace = { teamId: 'T1' };

export interface TestAuthorizerOptions {
  /** The rules of the routes by name; a record without a route (or '(SLACK_CHANNEL)') is open. */
  rulesOf?: (route: string | undefined) => RouteRules | undefined;
  /** The channel of each route (default C0TEST). */
  channelOf?: (route: string) => string;
  /** Where a record whose route is gone would go now (default: an open route in C0TEST). */
  placeNow?: (record: Decidable) => RouteView;
  admins?: string[];
  ownerOf?: (hostId: string) => string | undefined;
  /** Members of user groups; a group not listed has none. Or a function that may throw. */
  groups?: Record<string, string[]> | ((usergroup: string) => Promise<ReadonlySet<string>>);
  /** What Slack says of users; anyone not listed is a member of T1, not a guest. */
  people?: Record<string, Person> | ((userId: string) => Promise<Person>);
  /** Members of channels; a channel not listed has WORKSPACE_PEOPLE. */
  channels?: Record<string, string[]> | ((channel: string) => Promise<ReadonlySet<string>>);
  workspace?: Workspace | undefined;
  /** Who is away, by delegate (or a function that may throw); nobody when absent. */
  standIns?: Record<string, Away[]> | ((delegate: string) => Promise<Away[]>);
  logger?: Logger;
}

export function testAuthorizer(options: TestAuthorizerOptions = {}): Authorizer {
  const rulesOf = options.rulesOf ?? (() => OPEN_RULES);
  const channelOf = options.channelOf ?? (() => 'C0TEST');
  const { groups, people, channels } = options;
  return new Authorizer({
    routeOf: (route) => {
      const rules = rulesOf(route);
      return rules && { name: route ?? '(SLACK_CHANNEL)', channel: channelOf(route ?? ''), rules };
    },
    placeNow: options.placeNow ?? (() => ({ name: 'now', channel: 'C0TEST', rules: OPEN_RULES })),
    admins: options.admins ?? [],
    ownerOf: options.ownerOf ?? (() => undefined),
    groups: {
      members: typeof groups === 'function' ? groups : async (group) => new Set(groups?.[group] ?? []),
    },
    people: {
      person:
        typeof people === 'function'
          ? people
          : async (userId) => people?.[userId] ?? { teamId: 'T1', guest: false },
    },
    channels: {
      members:
        typeof channels === 'function'
          ? channels
          : async (channel) => new Set(channels?.[channel] ?? WORKSPACE_PEOPLE),
    },
    workspace: () => ('workspace' in options ? options.workspace : TEST_WORKSPACE),
    ...(options.standIns
      ? {
          standIns: {
            standingInFor:
              typeof options.standIns === 'function'
                ? options.standIns
                : async (delegate: string) => (options.standIns as Record<string, Away[]>)[delegate] ?? [],
          },
        }
      : {}),
    logger: options.logger ?? pino({ level: 'silent' }),
  });
}
