import type { WebClient } from '@slack/web-api';
import type { Person } from '../domain/authorization.js';
import type { PeopleDirectory } from '../relay/deciding/authorizer.js';
import type { LookupCache } from '../store/lookupCache.js';
import { SharedLookups } from './sharedLookups.js';
import { RETRY_POLICIES, retrySlackCall } from './slackRetry.js';

/** The parts of a users.info answer that say whether a user is a stranger. */
interface SlackUser {
  id?: string;
  team_id?: string;
  is_restricted?: boolean;
  is_ultra_restricted?: boolean;
  is_bot?: boolean;
  deleted?: boolean;
  enterprise_user?: { enterprise_id?: string };
}

/** What users.info says of a user's team and guest status. */
export function personOf(user: SlackUser | undefined): Person {
  if (!user) throw new Error('users.info answered without a user');
  const enterpriseId = user.enterprise_user?.enterprise_id;
  return {
    ...(user.team_id ? { teamId: user.team_id } : {}),
    ...(enterpriseId ? { enterpriseId } : {}),
    guest: user.is_restricted === true || user.is_ultra_restricted === true,
    ...(user.is_bot === true || user.id === 'USLACKBOT' ? { bot: true } : {}),
    ...(user.deleted === true ? { deactivated: true } : {}),
  };
}

/**
 * Who Slack users are (their team, their enterprise, guest or not), from `users.info`, shared by
 * replicas and kept for a short while (SharedLookups): one lookup per user, whatever they click.
 */
export class SlackPeopleDirectory implements PeopleDirectory {
  private readonly lookups: SharedLookups<Person>;

  constructor(web: WebClient, cache: LookupCache, options: { ttlMs: number }) {
    this.lookups = new SharedLookups({
      cache,
      ttlMs: options.ttlMs,
      ask: async (userId) => {
        const answer = await retrySlackCall(
          () => web.users.info({ user: userId }),
          RETRY_POLICIES.interactive,
        );
        return personOf(answer.user as SlackUser | undefined);
      },
      encode: (person) => person,
      decode: (json) => json as Person,
    });
  }

  /** Rejects when neither Redis nor Slack can say: the Authorizer then refuses the user. */
  person(userId: string): Promise<Person> {
    return this.lookups.get(userId);
  }
}
