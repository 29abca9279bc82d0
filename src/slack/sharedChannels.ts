import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';

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

/** Warns of each route whose channel Slack says is shared beyond the bot's own workspace. Never rejects. */
export async function warnSharedChannels(
  client: Pick<WebClient, 'conversations'>,
  routes: readonly RouteChannel[],
  logger: Logger,
): Promise<void> {
  const strict = new Map<string, string[]>();
  for (const route of routes) {
    if (route.allowExternal || route.channel.startsWith('#')) continue;
    strict.set(route.channel, [...(strict.get(route.channel) ?? []), route.name]);
  }
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
