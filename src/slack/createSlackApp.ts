import { App, SocketModeReceiver } from '@slack/bolt';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { toBoltLogger } from '../log.js';
import type { ClickHandler } from '../relay/clickHandler.js';
import { type HealthProbe, healthRoutes } from './healthRoutes.js';
import { registerAppHome } from './listeners/appHome.js';
import { registerChoiceButton } from './listeners/choiceButton.js';
import { registerFeedbackSubmission } from './listeners/feedbackSubmission.js';
import { registerSlashCommand } from './listeners/slashCommand.js';
import { createSlackFetch } from './slackFetch.js';

export interface BotIdentity {
  botId?: string;
  botUserId?: string;
}

export interface SlackAppOptions {
  config: Config;
  logger: Logger;
  clicks: ClickHandler;
  health: HealthProbe;
  /** Filled in once auth.test has answered; until then Bolt runs without it. */
  identity: () => BotIdentity;
}

/** The Bolt app: Socket Mode when an app token is set, otherwise HTTP on PORT. */
export function createSlackApp({ config, logger, clicks, health, identity }: SlackAppOptions): App {
  const boltLogger = toBoltLogger(logger.child({ component: 'bolt' }));
  const customRoutes = healthRoutes(health);
  const common = {
    authorize: async () => ({ botToken: config.slack.botToken, ...identity() }),
    logger: boltLogger,
    // Listener calls answer a person who is waiting: fail fast rather than retry for minutes.
    clientOptions: {
      slackApiUrl: config.slack.apiUrl,
      fetch: createSlackFetch(),
      timeout: 10_000,
      rejectRateLimitedCalls: true,
      retryConfig: { retries: 2, factor: 2, minTimeout: 250, maxTimeout: 1_000 },
    },
  };
  const app =
    config.slack.mode === 'socket'
      ? new App({
          ...common,
          receiver: new SocketModeReceiver({
            appToken: config.slack.appToken!,
            logger: boltLogger,
            customRoutes,
            installerOptions: {
              port: config.port,
              // The socket itself is a long-lived connection: ride out a Slack outage (about
              // half an hour of retries) instead of giving up on the first reconnect.
              clientOptions: {
                slackApiUrl: config.slack.apiUrl,
                timeout: 10_000,
                retryConfig: { retries: 10, factor: 1.96821, randomize: true },
              },
            },
          }),
        })
      : new App({ ...common, signingSecret: config.slack.signingSecret!, customRoutes });
  registerChoiceButton(app, clicks, logger);
  registerFeedbackSubmission(app, clicks, logger);
  registerSlashCommand(app, config.slack.channel);
  registerAppHome(app, config.slack.channel, health, logger);
  app.error(async (err) => {
    logger.error({ err }, 'slack listener failed');
  });
  return app;
}
