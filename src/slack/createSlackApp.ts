import { App, SocketModeReceiver } from '@slack/bolt';
import type { FetchFunction, WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { toBoltLogger } from '../log.js';
import type { ClickHandler } from '../relay/clickHandler.js';
import { type HealthProbe, healthRoutes } from './healthRoutes.js';
import { registerAppHome } from './listeners/appHome.js';
import { registerChoiceButton } from './listeners/choiceButton.js';
import { registerFeedbackSubmission } from './listeners/feedbackSubmission.js';
import { registerSlashCommand } from './listeners/slashCommand.js';
import { slackViews } from './slackViews.js';

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
  /** The process's one Web API client (webClient.ts): every listener calls through it. */
  web: WebClient;
  /** Its transport, for the few requests Bolt makes that are not Web API calls. */
  transport: FetchFunction;
}

/**
 * Bolt always builds a Web API client of its own (app.client). It is given this fetch, so that
 * it can never make a Web API call beside the shared client, with another pool and other retries;
 * a response_url request (respond()) still goes out, over the shared pool.
 */
function refuseWebApiCalls(apiUrl: string, transport: FetchFunction): FetchFunction {
  return async (url, init) => {
    if (String(url).startsWith(apiUrl)) {
      throw new Error(
        "Bolt's own Web API client is not used: call Slack through the shared client (src/slack/webClient.ts)",
      );
    }
    return transport(url, init);
  };
}

/** The Bolt app: Socket Mode when an app token is set, otherwise HTTP on PORT. */
export function createSlackApp(options: SlackAppOptions): App {
  const { config, logger, clicks, health, identity, web, transport } = options;
  const boltLogger = toBoltLogger(logger.child({ component: 'bolt' }));
  const customRoutes = healthRoutes(health);
  const common = {
    // No bot token in the result: with one, Bolt would build a client per token for the
    // listeners. They get the shared client instead; the identity lets Bolt ignore our own events.
    authorize: async () => identity(),
    logger: boltLogger,
    clientOptions: {
      slackApiUrl: config.slack.apiUrl,
      fetch: refuseWebApiCalls(config.slack.apiUrl, transport),
      retryConfig: { retries: 0 },
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
              // The app-level token's own client (apps.connections.open only), over the shared pool.
              // The socket is a long-lived connection: ride out a Slack outage (about half an hour
              // of retries) instead of giving up on the first reconnect.
              clientOptions: {
                slackApiUrl: config.slack.apiUrl,
                fetch: transport,
                timeout: 10_000,
                retryConfig: { retries: 10, factor: 1.96821, randomize: true },
              },
            },
          }),
        })
      : new App({ ...common, signingSecret: config.slack.signingSecret!, customRoutes });
  const views = slackViews(web);
  registerChoiceButton(app, clicks, views, logger);
  registerFeedbackSubmission(app, clicks, logger);
  registerSlashCommand(app, config.slack.channel);
  registerAppHome(app, config.slack.channel, health, views, logger);
  app.error(async (err) => {
    logger.error({ err }, 'slack listener failed');
  });
  return app;
}
