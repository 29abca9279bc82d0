import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { ShownApproverNames } from '../cards/renderApprovers.js';
import type { RouteRules } from '../domain/route.js';
import type { ShownApprovers } from '../relay/deciding/authorizer.js';
import { RETRY_POLICIES, retrySlackCall } from './slackRetry.js';

/** How often the names are read again: people rename themselves, groups change handles. */
export const NAMES_REFRESH_MS = 10 * 60_000;

export interface ApproverNamesOptions {
  /** The user IDs the config file names (approvers, protectedWriteApprovers, admins, owners). */
  users: readonly string[];
  /** The user group IDs it names. */
  usergroups: readonly string[];
  logger: Logger;
}

/**
 * Names of the configured approvers, for the card's "Approvers:" line. A card must not ping
 * anyone, so it shows names, never `<@U…>` mentions. Every ID is known from the config file, so
 * they are all read at start-up and kept in memory; an ID whose name is unknown shows as itself.
 */
export class ApproverNames {
  private readonly userNames = new Map<string, string>();
  private readonly handles = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly web: WebClient,
    private readonly options: ApproverNamesOptions,
  ) {}

  user(userId: string): string {
    return this.userNames.get(userId) ?? userId;
  }

  usergroup(usergroupId: string): string {
    return this.handles.get(usergroupId) ?? usergroupId;
  }

  /** The card's approvers line: Authorizer.shown() with names for IDs. */
  shown(shown: ShownApprovers): ShownApproverNames | undefined {
    const notOwner = shown.notOwner === undefined ? {} : { notOwner: this.user(shown.notOwner) };
    if (shown.users === undefined) return shown.notOwner === undefined ? undefined : notOwner;
    const names = [
      ...shown.users.map((id) => this.user(id)),
      ...(shown.usergroups ?? []).map((id) => this.usergroup(id)),
    ];
    return { names, ...notOwner };
  }

  /** Reads every name now, then every NAMES_REFRESH_MS until stop(). Never rejects. */
  async start(): Promise<void> {
    await this.refresh();
    this.timer = setInterval(() => void this.refresh(), NAMES_REFRESH_MS);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
  }

  async refresh(): Promise<void> {
    await Promise.all([
      ...this.options.users.map((userId) => this.readUser(userId)),
      ...(this.options.usergroups.length > 0 ? [this.readHandles()] : []),
    ]);
  }

  private async readUser(userId: string): Promise<void> {
    try {
      const { user } = await retrySlackCall(
        () => this.web.users.info({ user: userId }),
        RETRY_POLICIES.interactive,
      );
      const name = user?.profile?.display_name || user?.profile?.real_name || user?.real_name || user?.name;
      if (name) this.userNames.set(userId, name);
    } catch (err) {
      this.options.logger.warn({ err, userId }, 'could not read an approver’s name; the card shows the ID');
    }
  }

  private async readHandles(): Promise<void> {
    try {
      const { usergroups } = await retrySlackCall(
        () => this.web.usergroups.list({}),
        RETRY_POLICIES.interactive,
      );
      for (const group of usergroups ?? []) {
        if (group.id && group.handle) this.handles.set(group.id, group.handle);
      }
    } catch (err) {
      this.options.logger.warn({ err }, 'could not read user group handles; the card shows their IDs');
    }
  }
}

/** Every user and user group a card may name: the routes' approvers, the admins, the owners. */
export function namedInConfig(
  rules: readonly Pick<RouteRules, 'approvers' | 'protectedWriteApprovers'>[],
  people: readonly string[],
): { users: string[]; usergroups: string[] } {
  const users = new Set(people);
  const usergroups = new Set<string>();
  for (const rule of rules) {
    for (const approvers of [rule.approvers, rule.protectedWriteApprovers]) {
      for (const id of approvers?.users ?? []) users.add(id);
      for (const id of approvers?.usergroups ?? []) usergroups.add(id);
    }
  }
  return { users: [...users], usergroups: [...usergroups] };
}
