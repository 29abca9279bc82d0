import type { Logger } from 'pino';
import type { Approvers, OncallSource } from '../../domain/route.js';
import { rotationUser } from '../../routing/rotation.js';
import type { GroupDirectory } from '../deciding/authorizer.js';

/** Whom the on-call steps reach: people (the first is DMed) and, for a mention, perhaps a group. */
export interface OnCall {
  users: string[];
  /** Mentioned instead of the users when the source is a user group. */
  usergroup?: string;
  /** Where the answer came from; `approvers` when the source failed (or there is none). */
  source: OncallSource['kind'] | 'approvers';
  /** A delegate among `users` → the person away they are asked in place of (awayFilter.ts). */
  inPlaceOf?: Record<string, string>;
  /** Nobody is reached because these people are away with nobody standing in (awayFilter.ts). */
  allAway?: string[];
  /** Nobody is DMed because these people may not decide the approval (escalationSteps.ts, reachable). */
  refused?: string[];
}

/** PagerDuty's answer as Slack user IDs (PagerDuty users found by email), cached briefly. */
export interface PagerDutyOnCall {
  slackUsers(source: { scheduleId?: string; escalationPolicyId?: string }): Promise<string[]>;
}

export interface OncallResolverOptions {
  groups: GroupDirectory;
  pagerDuty?: PagerDutyOnCall;
  logger: Logger;
  now?: () => Date;
}

/** Works out who is on call for a route; never fails: a failing source falls back to the approvers. */
export class OncallResolver {
  private readonly now: () => Date;

  constructor(private readonly options: OncallResolverOptions) {
    this.now = options.now ?? (() => new Date());
  }

  async resolve(
    source: OncallSource | undefined,
    approvers: Approvers | undefined,
    approvalId: string,
  ): Promise<OnCall> {
    if (source) {
      try {
        const found = await this.fromSource(source);
        if (found.users.length > 0 || found.usergroup) return found;
        throw new Error('nobody is on call');
      } catch (err) {
        this.options.logger.warn(
          { approvalId, source: source.kind, err: err instanceof Error ? err.message : String(err) },
          'on-call source failed; reaching the route approvers instead',
        );
      }
    }
    return this.fromApprovers(approvers);
  }

  /** A user group's members (for passing by those away, see awayFilter.ts). */
  async members(usergroup: string): Promise<string[]> {
    return [...(await this.options.groups.members(usergroup))];
  }

  private async fromSource(source: OncallSource): Promise<OnCall> {
    switch (source.kind) {
      case 'usergroup': {
        const members = await this.options.groups.members(source.usergroup);
        return { users: [...members], usergroup: source.usergroup, source: 'usergroup' };
      }
      case 'rotation':
        return { users: [rotationUser(source, this.now())], source: 'rotation' };
      case 'pagerduty': {
        if (!this.options.pagerDuty) throw new Error('PagerDuty is not configured');
        return { users: await this.options.pagerDuty.slackUsers(source), source: 'pagerduty' };
      }
    }
  }

  private async fromApprovers(approvers: Approvers | undefined): Promise<OnCall> {
    const users = [...(approvers?.users ?? [])];
    for (const group of approvers?.usergroups ?? []) {
      try {
        for (const member of await this.options.groups.members(group))
          if (!users.includes(member)) users.push(member);
      } catch (err) {
        this.options.logger.warn({ usergroup: group, err }, 'could not read an approvers group');
      }
    }
    const group = approvers?.usergroups[0];
    return {
      users,
      ...(group && (approvers?.users.length ?? 0) === 0 ? { usergroup: group } : {}),
      source: 'approvers',
    };
  }
}
