import { App, SocketModeReceiver } from '@slack/bolt';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { toBoltLogger } from '../log.js';
import type { ClickHandler } from '../relay/clickHandler.js';
import { type HealthProbe, healthRoutes } from './healthRoutes.js';
import { close, healthServer, listen, portError } from './healthServer.js';
import { registerAppHome } from './listeners/appHome.js';
import { registerChoiceButton } from './listeners/choiceButton.js';
import { registerFeedbackSubmission } from './listeners/feedbackSubmission.js';
import { registerSlashCommand } from './listeners/slashCommand.js';
import { createSlackFetch } from './slackFetch.js';
import { observedFetch, type SlackReachability } from './slackReachability.js';

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
  /** Told how the Socket Mode connection's calls to Slack go. */
  reachability: SlackReachability;
}

export interface SlackService {
  readonly bolt: App;
  /**
   * Listens on PORT, and rejects with a ConfigError naming PORT when it cannot. In Socket Mode
   * the connection to Slack is opened next, in the background: `connected` settles with it.
   */
  start(): Promise<{ connected: Promise<void> }>;
  stop(): Promise<void>;
}

/** The Bolt app: Socket Mode when an app token is set, otherwise HTTP on PORT. */
export function createSlackApp({
  config,
  logger,
  clicks,
  health,
  identity,
  reachability,
}: SlackAppOptions): SlackService {
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
  const socketReceiver =
    config.slack.mode === 'socket'
      ? new SocketModeReceiver({
          appToken: config.slack.appToken!,
          logger: boltLogger,
          installerOptions: {
            // The socket itself is a long-lived connection: ride out a Slack outage (about
            // half an hour of retries) instead of giving up on the first reconnect.
            clientOptions: {
              slackApiUrl: config.slack.apiUrl,
              // Its own transport, watched: an unreachable Slack is said once, with the cause.
              fetch: observedFetch(createSlackFetch(), reachability),
              timeout: 10_000,
              retryConfig: { retries: 10, factor: 1.96821, randomize: true },
            },
          },
        })
      : undefined;
  const app =
    socketReceiver === undefined
      ? new App({ ...common, signingSecret: config.slack.signingSecret!, customRoutes })
      : new App({ ...common, receiver: socketReceiver });
  registerChoiceButton(app, clicks, logger);
  registerFeedbackSubmission(app, clicks, logger);
  registerSlashCommand(app, config.slack.channel);
  registerAppHome(app, config.slack.channel, health, logger);
  app.error(async (err) => {
    logger.error({ err }, 'slack listener failed');
  });

  if (socketReceiver === undefined) {
    return {
      bolt: app,
      start: async () => {
        await Promise.resolve(app.start(config.port)).catch((err: unknown) => {
          throw portError(err, config.port);
        });
        return { connected: Promise.resolve() };
      },
      stop: async () => {
        await app.stop();
      },
    };
  }
  // Socket Mode has no HTTP receiver to carry the health routes: they get a server of their own.
  const server = healthServer(customRoutes);
  return {
    bolt: app,
    // PORT first: the socket can take minutes to connect while Slack is away, and a port in use
    // must stop start-up before anything else runs.
    start: async () => {
      await listen(server, config.port);
      server.on('error', (err) => logger.error({ err }, 'health server failed'));
      return { connected: app.start().then(() => undefined) };
    },
    stop: async () => {
      await Promise.all([app.stop(), close(server)]);
    },
  };
}
