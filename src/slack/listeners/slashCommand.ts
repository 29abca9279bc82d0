import type { App } from '@slack/bolt';
import type { WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import { section } from '../../cards/blocks.js';
import {
  MAX_LISTED,
  renderHelp,
  renderNoAccess,
  renderPending,
  renderRevokeUsage,
  renderWhoami,
} from '../../cards/renderCommandAnswers.js';
import { renderChannelGrants } from '../../cards/renderGrantList.js';
import { renderStats } from '../../cards/renderStats.js';
import type { RenderedMessage } from '../../domain/messages.js';
import type { Authorizer } from '../../relay/deciding/authorizer.js';
import type { GrantLists } from '../../relay/grants/grantLists.js';
import type { GrantRevoker } from '../../relay/grants/grantRevoker.js';
import { answerInPrivate, ephemeral } from '../answerInPrivate.js';
import type { awayCommands } from '../awayCommand.js';
import { everyRoute, type RouteStandingsOptions, routeStandings } from '../routeStandings.js';
import { parseStatsArgs, statsFor, type UserStatsOptions } from '../userStats.js';
import type { WaitingApprovals } from '../waitingApprovals.js';
import { revokeFor } from './revokeButton.js';

export interface SlashCommandOptions {
  /** Where cards go when no route says otherwise. */
  channel: string;
  authorizer: Authorizer;
  waiting: WaitingApprovals;
  standings: Omit<RouteStandingsOptions, 'authorizer'>;
  grants: GrantLists;
  revoker: GrantRevoker;
  /** Decision analytics (`stats`); without it the subcommand is not offered. */
  stats?: UserStatsOptions;
  /** A grant was revoked (Homes that list it are published again). */
  onRevoked: () => void;
  /** `away` and `back` (awayCommand.ts); without them, they are unknown commands. */
  away?: ReturnType<typeof awayCommands>;
  /** The shared Web API client: an answer the response_url does not take goes through it. */
  web: WebClient;
  logger: Logger;
}

/** What a lookup needs of the command. */
interface Typed {
  userId: string;
  channelId: string;
  /** The words after the subcommand. */
  args: string[];
}

/**
 * /countersign. Answers that need no lookup come back in the ack itself; `pending`, `whoami`,
 * `grants` and `revoke <id>` read Redis (and Slack for group members and links), and `help` (or
 * an unknown command) asks Slack who the user is, so they ack at once, within Slack's 3 s, and
 * answer through the command's response_url when the work is done (or, should that fail, in an
 * ephemeral message: answerInPrivate).
 */
export function registerSlashCommand(app: App, options: SlashCommandOptions): void {
  const { channel, authorizer, waiting, grants, revoker, logger } = options;
  // A stranger no route lets in (or one Slack does not confirm now) is told only that, and why;
  // one some route lets in is not told where cards go when no route says otherwise.
  const help =
    (unknown: string | undefined) =>
    async ({ userId }: Typed): Promise<RenderedMessage> => {
      const routes = everyRoute(options.standings).map((route) => route.name);
      const stranger = await authorizer.asStranger(userId, routes);
      if (stranger && stranger.letIn.length === 0) return renderNoAccess(stranger.refused);
      return renderHelp(stranger ? undefined : channel, unknown);
    };
  const lookups: Record<string, (typed: Typed) => Promise<RenderedMessage>> = {
    pending: async ({ userId }) =>
      renderPending(await waiting.for(userId, MAX_LISTED), new Date(), await authorizer.actsAsAdmin(userId)),
    whoami: async ({ userId }) =>
      renderWhoami(
        userId,
        await routeStandings(userId, { ...options.standings, authorizer }),
        await authorizer.actsAsAdmin(userId),
      ),
    grants: async ({ userId, channelId }) => renderChannelGrants(await grants.inChannel(userId, channelId)),
    ...(options.stats ? { stats: statsLookup(options.stats) } : {}),
    revoke: async ({ userId, args }) => {
      const { text, outcome } = await revokeFor(revoker, args[0]!, userId, 'command', logger);
      if (outcome?.kind === 'revoked') options.onRevoked();
      return { text, blocks: [section(text)] };
    },
    ...(options.away ? { away: options.away.away, back: options.away.back } : {}),
  };
  app.command('/countersign', async ({ command, ack, respond }) => {
    const [first = '', ...args] = command.text.trim().split(/\s+/);
    const asked = first.toLowerCase();
    if (asked === 'revoke' && args.length !== 1) {
      await ack(ephemeral(renderRevokeUsage()));
      return;
    }
    // Anything unknown is answered with help, and named `help` here: what was typed is not logged.
    const known = Object.hasOwn(lookups, asked);
    const word = known ? asked : 'help';
    const lookup = known ? lookups[asked]! : help(asked === '' || asked === 'help' ? undefined : asked);
    await ack();
    let answer: RenderedMessage;
    try {
      answer = await lookup({ userId: command.user_id, channelId: command.channel_id, args });
    } catch (err) {
      logger.warn({ err, userId: command.user_id, subcommand: word }, '/countersign could not answer');
      answer = {
        text: `Countersign could not look that up just now (${word}): try again in a moment.`,
        blocks: [],
      };
    }
    await answerInPrivate(
      answer,
      {
        userId: command.user_id,
        channelId: command.channel_id,
        what: '/countersign',
        about: { subcommand: word },
      },
      { respond, web: options.web, logger },
    );
  });
}

/** The words a user who may see no stats reads, whichever route they named. */
export const NO_STATS_TEXT =
  'Decision stats are shown to the approvers of a route and to admins: there are none here you may see.';

/** `/countersign stats [route] [7d|30d]`: the user's routes only, as a click would be checked. */
function statsLookup(stats: UserStatsOptions) {
  return async ({ userId, args }: Typed): Promise<RenderedMessage> => {
    const view = await statsFor(userId, parseStatsArgs(args), stats);
    return view ? renderStats(view) : { text: NO_STATS_TEXT, blocks: [section(NO_STATS_TEXT)] };
  };
}
