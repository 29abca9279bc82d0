import { App } from '@slack/bolt';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { toBoltLogger } from '../log.js';
import type { ClickHandler } from '../relay/clickHandler.js';
import { type HealthProbe, healthRoutes } from './healthRoutes.js';
import { registerChoiceButton } from './listeners/choiceButton.js';
import { registerFeedbackSubmission } from './listeners/feedbackSubmission.js';

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
  const common = {
    authorize: async () => ({ botToken: config.slack.botToken, ...identity() }),
    logger: toBoltLogger(logger.child({ component: 'bolt' })),
    clientOptions: {
      slackApiUrl: config.slack.apiUrl,
      timeout: 10_000,
      rejectRateLimitedCalls: true,
      retryConfig: { retries: 2, factor: 2, minTimeout: 250, maxTimeout: 1_000 },
    },
    customRoutes: healthRoutes(health),
  };
  const app =
    config.slack.mode === 'socket'
      ? new App({
          ...common,
          socketMode: true,
          appToken: config.slack.appToken!,
          installerOptions: { port: config.port },
        })
      : new App({ ...common, signingSecret: config.slack.signingSecret! });
  registerChoiceButton(app, clicks, logger);
  registerFeedbackSubmission(app, clicks, logger);
  app.error(async (err) => {
    logger.error({ err }, 'slack listener failed');
  });
  return app;
}
