import type { App, RespondArguments } from '@slack/bolt';
import type { Logger } from 'pino';
import {
  MAX_LISTED,
  renderGrants,
  renderHelp,
  renderPending,
  renderWhoami,
} from '../../cards/renderCommandAnswers.js';
import type { Authorizer } from '../../relay/authorizer.js';
import type { RenderedMessage } from '../../relay/ports.js';
import { type RouteStandingsOptions, routeStandings } from '../routeStandings.js';
import type { WaitingApprovals } from '../waitingApprovals.js';

export interface SlashCommandOptions {
  /** Where cards go when no route says otherwise. */
  channel: string;
  authorizer: Authorizer;
  waiting: WaitingApprovals;
  standings: Omit<RouteStandingsOptions, 'authorizer'>;
  logger: Logger;
}

function ephemeral(message: RenderedMessage): RespondArguments {
  return { response_type: 'ephemeral', text: message.text, blocks: message.blocks } as RespondArguments;
}

/**
 * /countersign. Answers that need no lookup come back in the ack itself; `pending` and `whoami`
 * read Redis (and Slack for group members and links), so they ack at once, within Slack's 3 s,
 * and answer through the command's response_url when the work is done.
 */
export function registerSlashCommand(app: App, options: SlashCommandOptions): void {
  const { channel, authorizer, waiting, logger } = options;
  const lookups: Record<string, (userId: string) => Promise<RenderedMessage>> = {
    pending: async (userId) =>
      renderPending(await waiting.for(userId, MAX_LISTED), new Date(), authorizer.isAdmin(userId)),
    whoami: async (userId) =>
      renderWhoami(
        userId,
        await routeStandings(userId, { ...options.standings, authorizer }),
        authorizer.isAdmin(userId),
      ),
  };
  app.command('/countersign', async ({ command, ack, respond }) => {
    const word = command.text.trim().split(/\s+/)[0]?.toLowerCase() ?? '';
    const lookup = Object.hasOwn(lookups, word) ? lookups[word] : undefined;
    if (!lookup) {
      const answer =
        word === 'grants'
          ? renderGrants()
          : renderHelp(channel, word === '' || word === 'help' ? undefined : word);
      await ack(ephemeral(answer));
      return;
    }
    await ack();
    let answer: RenderedMessage;
    try {
      answer = await lookup(command.user_id);
    } catch (err) {
      logger.warn({ err, userId: command.user_id, subcommand: word }, '/countersign could not answer');
      answer = {
        text: `Countersign could not look that up just now (${word}): try again in a moment.`,
        blocks: [],
      };
    }
    await respond(ephemeral(answer)).catch((err: unknown) => {
      logger.warn({ err, userId: command.user_id }, 'could not answer /countersign through its response_url');
    });
  });
}
