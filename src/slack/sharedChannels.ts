import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { ChannelIdOf } from './channelMembers.js';

// A card is read by everyone in its channel. Who may decide is checked at each press, but who
// may read is the channel's: in a channel shared with another organization (Slack Connect) or
// another workspace of the organization, people of the other side read every card, line and
// summary posted there, on a route that does not let them decide (allowExternal off). Slack says
// so in conversations.info; nothing here refuses to post (the approvals would stall), but the
// operator is told once, at start-up, which routes post where strangers read.

export interface RouteChannel {
  name: string;
  channel: string;
  /** Whether the route lets users of another team or enterprise decide (and so read) its approvals. */
  allowExternal: boolean;
}

/**
 * Warns of each route whose channel Slack says is shared beyond the bot's own workspace. A
 * `#name` is asked for by its ID (conversations.info takes IDs only); one whose ID is not known
 * (the bot is not in it) is passed over: its cards cannot be posted either. Never rejects.
 */
export async function warnSharedChannels(
  client: Pick<WebClient, 'conversations'>,
  routes: readonly RouteChannel[],
  logger: Logger,
  channelIds: ChannelIdOf,
): Promise<void> {
  const strict = new Map<string, string[]>();
  const ids = await Promise.all(
    routes.map((route) =>
      route.allowExternal ? undefined : channelIds.id(route.channel).catch(() => undefined),
    ),
  );
  routes.forEach((route, i) => {
    const channel = ids[i];
    if (channel !== undefined) strict.set(channel, [...(strict.get(channel) ?? []), route.name]);
  });
  await Promise.all(
    [...strict].map(async ([channel, names]) => {
      try {
        const { channel: info } = await client.conversations.info({ channel });
        if (!info?.is_ext_shared && !info?.is_org_shared && !info?.is_shared) return;
        logger.warn(
          { channel, routes: names },
          `channel ${channel} is shared with another workspace or organization: its people read every card posted there, though routes ${names.map((n) => JSON.stringify(n)).join(', ')} do not let them decide (allowExternal); use a channel of this workspace only`,
        );
      } catch (err) {
        // Not knowing says nothing: the cards' own calls say whether the channel can be reached.
        logger.debug({ err, channel }, 'could not read whether a route channel is shared');
      }
    }),
  );
}
