import type { App } from '@slack/bolt';
import type { Logger } from 'pino';
import type { HealthProbe } from '../healthRoutes.js';
import type { SlackViews } from '../slackViews.js';
import { channelLink } from './slashCommand.js';

/** App Home: where the cards are and whether the bot's parts are up. Richer views come later. */
export function registerAppHome(
  app: App,
  channel: string,
  health: HealthProbe,
  views: SlackViews,
  logger: Logger,
): void {
  app.event('app_home_opened', async ({ event }) => {
    if (event.tab !== 'home') return;
    const status = (up: boolean) => (up ? ':large_green_circle: up' : ':red_circle: down');
    try {
      await views.publish(event.user, {
        type: 'home',
        blocks: [
          { type: 'header', text: { type: 'plain_text', text: 'Countersign' } },
          {
            type: 'section',
            text: {
              type: 'mrkdwn',
              text: `Approval requests from your agents are posted in ${channelLink(channel)}. Decide on each card with one click.`,
            },
          },
          {
            type: 'context',
            elements: [
              { type: 'mrkdwn', text: `Agent host: ${status(health.hosts())}` },
              { type: 'mrkdwn', text: `Redis: ${status(health.redis())}` },
            ],
          },
        ],
      });
    } catch (err) {
      logger.warn({ err, userId: event.user }, 'could not publish the App Home');
    }
  });
}
