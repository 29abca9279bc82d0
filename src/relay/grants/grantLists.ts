import type { RevokeAuthorization } from '../../domain/authorization.js';
import type { Grant, GrantStore } from '../../domain/grants/grant.js';
import type { ChannelGrants } from '../../domain/grants/listing.js';

export interface GrantListsOptions {
  grants: Pick<GrantStore, 'list'>;
  authorizer: {
    actsAsAdmin(userId: string): Promise<boolean>;
    decidesOn(userId: string, route: string): Promise<boolean>;
    mayRevoke(userId: string, grant: Grant): Promise<RevokeAuthorization>;
  };
  /** Every route a card may follow (the fallback too, when it can be used), with its channel. */
  routes: () => ReadonlyArray<{ name: string; channel: string }>;
  /**
   * The ID of a route's channel, which may be a `#name`: grants are kept under their card's
   * channel, an ID. Rejects when it is not known.
   */
  channelId: (channel: string) => Promise<string>;
  now?: () => Date;
}

/**
 * Which live grants a person is shown: in `/countersign grants`, those of the channel they typed
 * it in; in App Home, their own and those of the channels of routes where they may decide. Admins
 * see every grant in both. Of these, only the grants the person may revoke are shown (who may see
 * a grant is who may revoke it: its route's deciders, in its channel); GrantRevoker checks each
 * revocation again.
 */
export class GrantLists {
  private readonly now: () => Date;

  constructor(private readonly options: GrantListsOptions) {
    this.now = options.now ?? (() => new Date());
  }

  async inChannel(userId: string, channel: string): Promise<ChannelGrants> {
    const { grants, authorizer } = this.options;
    const shown = this.shownTo(userId);
    if (await authorizer.actsAsAdmin(userId))
      return { grants: await grants.list({ shown }, this.now()), scope: { kind: 'all' } };
    return {
      grants: await grants.list({ channels: [channel], shown }, this.now()),
      scope: { kind: 'channel', channel },
    };
  }

  /** Newest first; the store caps each listing at the newest 100 the person may see. */
  async forHome(userId: string): Promise<Grant[]> {
    const { grants, authorizer } = this.options;
    const now = this.now();
    const shown = this.shownTo(userId);
    if (await authorizer.actsAsAdmin(userId)) return grants.list({ shown }, now);
    const channels = await this.channelsOf(userId);
    const [own, theirs] = await Promise.all([
      grants.list({ grantedBy: userId, shown }, now),
      grants.list({ channels, shown }, now),
    ]);
    const byId = new Map([...own, ...theirs].map((g) => [g.grantId, g]));
    return [...byId.values()].sort((a, b) => cmp(b.createdAt, a.createdAt) || cmp(b.grantId, a.grantId));
  }

  /**
   * Which grants `userId` may see (GrantListFilter.shown), checked while the store reads, so that
   * grants of routes they do not decide on never fill a listing: one check per route and channel,
   * against the rules of the grant's own route, however many grants share them.
   */
  private shownTo(userId: string): (listed: readonly Grant[]) => Promise<boolean[]> {
    const checks = new Map<string, Promise<boolean>>();
    const mayRevoke = (grant: Grant) => {
      const key = `${grant.route}\u0000${grant.channel}`;
      let check = checks.get(key);
      if (!check) {
        check = this.options.authorizer.mayRevoke(userId, grant).then((answer) => answer.allowed);
        checks.set(key, check);
      }
      return check;
    };
    return (listed) => Promise.all(listed.map(mayRevoke));
  }

  /** The channels of the routes where `userId` may decide their ordinary approvals. */
  private async channelsOf(userId: string): Promise<string[]> {
    const routes = this.options.routes();
    const decides = await Promise.all(
      routes.map((route) => this.options.authorizer.decidesOn(userId, route.name)),
    );
    const channels = await Promise.all(
      routes
        .filter((_, i) => decides[i])
        // Deciding there asked the channel by its ID a moment ago; if it is not known now, that
        // channel's grants are not listed (the user's own still are): nothing is shown unchecked.
        .map((route) => this.options.channelId(route.channel).catch(() => undefined)),
    );
    return [...new Set(channels.filter((id): id is string => id !== undefined))];
  }
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
