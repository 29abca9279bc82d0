import { createServer, type RequestListener } from 'node:http';
import {
  App,
  type Logger as BoltLogger,
  type CodedError,
  type CustomRoute,
  ErrorCode,
  HTTPModuleFunctions,
  HTTPReceiver,
  SocketModeReceiver,
} from '@slack/bolt';
import type { FetchFunction, WebClient } from '@slack/web-api';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Authorizer } from '../relay/deciding/authorizer.js';
import type { ClickHandler } from '../relay/deciding/clickHandler.js';
import type { GrantLists } from '../relay/grants/grantLists.js';
import type { GrantRevoker } from '../relay/grants/grantRevoker.js';
import type { Router } from '../routing/router.js';
import type { AwayStore } from '../store/awayStore.js';
import { toBoltLogger } from '../util/log.js';
import { LogBudget } from '../util/logBudget.js';
import { awayCommands } from './awayCommand.js';
import { choicePressRoute } from './choicePressRoute.js';
import { type HealthProbe, healthRoutes } from './healthRoutes.js';
import { close, exactRoutes, healthServer, listen, SERVER_LIMITS } from './healthServer.js';
import type { HomeTab } from './homeTab.js';
import { type BatchButtonsOptions, registerBatchButtons } from './listeners/batchButtons.js';
import { choicePresses, registerChoiceButton } from './listeners/choiceButton.js';
import { registerConfirmSubmission } from './listeners/confirmSubmission.js';
import { registerFeedbackSubmission } from './listeners/feedbackSubmission.js';
import { registerHomeOpened } from './listeners/homeOpened.js';
import { registerRevokeButton } from './listeners/revokeButton.js';
import { registerSlashCommand } from './listeners/slashCommand.js';
import { type FullTextReader, registerViewFullButton } from './listeners/viewFullButton.js';
import { observedFetch, type SlackReachability } from './slackReachability.js';
import { slackViews } from './slackViews.js';
import type { UserStatsOptions } from './userStats.js';
import type { WaitingApprovals } from './waitingApprovals.js';

export interface BotIdentity {
  botId?: string;
  botUserId?: string;
  /** The bot's own Slack team and enterprise: a user of any other is a stranger. */
  teamId?: string;
  enterpriseId?: string;
  /** The workspace's address (auth.test `url`): a card's link is built from it (Permalinks). */
  workspaceUrl?: string;
}

export interface SlackAppOptions {
  config: Config;
  logger: Logger;
  clicks: ClickHandler;
  /** What "View full" reads: a card's record and the full text kept for it. */
  fullText: FullTextReader;
  health: HealthProbe;
  /** GET /metrics (metrics/metricsRoute.ts): on METRICS_PORT alone, never on PORT; off without it. */
  metrics: CustomRoute;
  /** Filled in once auth.test has answered; until then Bolt runs without it. */
  identity: () => BotIdentity;
  /** The process's one Web API client (webClient.ts): every listener calls through it. */
  web: WebClient;
  /** Its transport, for the few requests Bolt makes that are not Web API calls. */
  transport: FetchFunction;
  /** Told how the Socket Mode connection's calls to Slack go. */
  reachability: SlackReachability;
  /**
   * What /countersign and App Home show each user: who may decide what, what waits, which grants
   * they see; and who revokes grants for them.
   */
  team: {
    authorizer: Authorizer;
    router: Router;
    waiting: WaitingApprovals;
    home: HomeTab;
    grants: GrantLists;
    revoker: GrantRevoker;
    /** Decision analytics: /countersign stats. */
    stats?: UserStatsOptions;
    /** Who is away (`/countersign away`, `back`). */
    away?: AwayStore;
  };
  /** Batch triage: the summary cards' buttons (listeners/batchButtons.ts). */
  batch?: Pick<BatchButtonsOptions, 'decider' | 'triage' | 'forms'>;
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

/** Where Slack sends events and interactions in HTTP mode (manifest.yml): Bolt's and the press route's. */
const SLACK_EVENTS_PATH = '/slack/events';

/** The longest unknown path a log line quotes: whoever reaches PORT chooses it. */
const LOGGED_PATH_MAX = 200;

/**
 * Bolt's receiver as a request listener, answering what it does not serve as Bolt's own server
 * would (404), but for the log: Bolt writes a line per request to a path it does not serve, and in
 * HTTP mode PORT is public, so scanners (and a scraper still pointed at PORT's old /metrics) chose
 * how many. Those lines go through a budget (LogBudget), so that a wrong request URL in the Slack
 * app's settings still shows, and without the query string, which may carry what was never meant
 * for a log.
 */
function boltListener(receiver: HTTPReceiver, boltLogger: BoltLogger, logger: Logger): RequestListener {
  const unknownPaths = new LogBudget(logger, {
    level: 'info',
    summary: `more requests to paths PORT does not serve (it serves ${SLACK_EVENTS_PATH}, /healthz and /readyz)`,
  });
  return (req, res) => {
    try {
      receiver.requestListener(req, res);
    } catch (error) {
      if ((error as CodedError).code === ErrorCode.HTTPReceiverDeferredRequestError) {
        const path = (req.url ?? '').split('?')[0]!.slice(0, LOGGED_PATH_MAX);
        unknownPaths.write(
          { method: req.method, path },
          'request to a path PORT does not serve; answered 404',
        );
        res.writeHead(404);
        res.end();
        return;
      }
      HTTPModuleFunctions.defaultDispatchErrorHandler({
        error: error as Error,
        logger: boltLogger,
        request: req,
        response: res,
      });
    }
  };
}

/**
 * The Socket Mode client's log, less its error line for a failed apps.connections.open (at
 * debug): the bot says that itself, once and with the fix (Slack refused the app token:
 * assemble.ts; Slack unreachable: SlackReachability), and two lines for one mistake are a flood.
 */
function socketModeLogger(logger: BoltLogger): BoltLogger {
  return {
    ...logger,
    error: (...msg: unknown[]) =>
      typeof msg[0] === 'string' && msg[0].startsWith('Failed to retrieve a new WSS URL')
        ? logger.debug(...msg)
        : logger.error(...msg),
  };
}

/** The Bolt app: Socket Mode when an app token is set, otherwise HTTP on PORT. */
export function createSlackApp(options: SlackAppOptions): SlackService {
  const { config, logger, clicks, fullText, health, identity, web, transport, reachability, team } = options;
  const boltLogger = toBoltLogger(logger.child({ component: 'bolt' }));
  // PORT's /readyz says ready or not alone, with or without METRICS_PORT: in HTTP mode it is the
  // port Slack reaches, and so public. The reasons are on METRICS_PORT when it is set, and in the
  // log (readinessLog.ts) either way. /healthz and /readyz's status stay on PORT (the image's
  // health check and the probes call them there). /metrics is on METRICS_PORT alone: its labels
  // name the routes and the hosts, it says which hosts this replica runs, and it counts cards,
  // decisions and refusals. PORT answers it 404, as any path it does not serve, in Socket Mode too, where PORT is not public
  // by design but is published for the health check (the image, Compose, a Service), and a port
  // exposed by mistake should say no more there than in HTTP mode.
  const metricsServer =
    config.metricsPort === undefined
      ? undefined
      : healthServer([...healthRoutes(health, 'full'), options.metrics], logger);
  const portRoutes = healthRoutes(health, 'readyOnly');
  const metricsPort = {
    start: async () => {
      if (metricsServer === undefined) return;
      await listen(metricsServer, config.metricsPort!, 'METRICS_PORT');
      metricsServer.on('error', (err) => logger.error({ err }, 'metrics server failed'));
    },
    stop: async () => {
      if (metricsServer !== undefined) await close(metricsServer);
    },
    /** Once PORT listens: a port in use stops start-up with its one line, and nothing else. */
    listening: () => {
      // An operator who scraped PORT before finds why it answers 404, and the fix, here.
      if (metricsServer === undefined) {
        logger.info(
          '/metrics is off: set METRICS_PORT (e.g. 9464) to serve it on a port of its own; PORT never serves it',
        );
      }
    },
  };
  const common = {
    // No bot token in the result: with one, Bolt would build a client per token for the
    // listeners. They get the shared client instead; the identity lets Bolt ignore our own events.
    authorize: async () => identity(),
    // No conversation context is read: without a store Bolt skips a lookup on every click.
    convoStore: false as const,
    logger: boltLogger,
    clientOptions: {
      slackApiUrl: config.slack.apiUrl,
      fetch: refuseWebApiCalls(config.slack.apiUrl, transport),
      retryConfig: { retries: 0 },
    },
  };
  const socketReceiver =
    config.slack.mode === 'socket'
      ? new SocketModeReceiver({
          appToken: config.slack.appToken!,
          logger: socketModeLogger(boltLogger),
          installerOptions: {
            // The app-level token's own client (apps.connections.open only), over the shared pool,
            // watched: an unreachable Slack is said once, with the cause. The socket is a
            // long-lived connection: ride out a Slack outage (about half an hour of retries)
            // instead of giving up on the first reconnect.
            clientOptions: {
              slackApiUrl: config.slack.apiUrl,
              fetch: observedFetch(transport, reachability),
              timeout: 10_000,
              retryConfig: { retries: 10, factor: 1.96821, randomize: true },
            },
          },
        })
      : undefined;
  // In HTTP mode the server is ours (see below); Bolt's receiver serves what it passes on.
  const httpReceiver =
    socketReceiver === undefined
      ? new HTTPReceiver({
          signingSecret: config.slack.signingSecret!,
          endpoints: [SLACK_EVENTS_PATH],
          logger: boltLogger,
        })
      : undefined;
  const app = new App({ ...common, receiver: socketReceiver ?? httpReceiver! });
  const views = slackViews(web);
  const press = choicePresses(clicks, views, logger);
  registerChoiceButton(app, press);
  registerFeedbackSubmission(app, clicks, logger);
  registerConfirmSubmission(app, clicks, logger);
  registerViewFullButton(app, { reader: fullText, views, clicks, authorizer: team.authorizer, logger });
  registerSlashCommand(app, {
    channel: config.slack.channel,
    authorizer: team.authorizer,
    waiting: team.waiting,
    standings: {
      router: team.router,
      routes: config.routes,
      fallbackChannel: config.slack.channel,
      hosts: config.msp.hosts,
    },
    grants: team.grants,
    revoker: team.revoker,
    onRevoked: () => team.home.grantsChanged(),
    ...(team.stats ? { stats: team.stats } : {}),
    ...(team.away
      ? {
          away: awayCommands({
            store: team.away,
            authorizer: team.authorizer,
            onChanged: (users) => team.home.awayChanged(users),
          }),
        }
      : {}),
    web,
    logger,
  });
  registerRevokeButton(app, { revoker: team.revoker, home: team.home, web, logger });
  registerHomeOpened(app, team.home, logger);
  if (options.batch) registerBatchButtons(app, { ...options.batch, views, web, logger });
  app.error(async (err) => {
    logger.error({ err }, 'slack listener failed');
  });

  if (httpReceiver !== undefined) {
    // The health routes are matched as the health server matches them, not by Bolt's custom
    // routes (which take `/HEALTHZ` and `/healthz/` too); choice presses are taken before
    // Bolt's dispatch (choicePressRoute.ts).
    const server = createServer(
      SERVER_LIMITS,
      exactRoutes(
        portRoutes,
        logger,
        choicePressRoute({
          signingSecret: config.slack.signingSecret!,
          path: SLACK_EVENTS_PATH,
          press,
          bolt: boltListener(httpReceiver, boltLogger, logger),
          logger,
        }),
      ),
    );
    return {
      bolt: app,
      start: async () => {
        await metricsPort.start();
        await listen(server, config.port);
        server.on('error', (err) => logger.error({ err }, 'HTTP server failed'));
        metricsPort.listening();
        return { connected: Promise.resolve() };
      },
      stop: async () => {
        await Promise.all([close(server), metricsPort.stop()]);
      },
    };
  }
  // Socket Mode has no HTTP receiver to carry the health routes: they get a server of their own.
  const server = healthServer(portRoutes, logger);
  return {
    bolt: app,
    // PORT first: the socket can take minutes to connect while Slack is away, and a port in use
    // must stop start-up before anything else runs.
    start: async () => {
      await metricsPort.start();
      await listen(server, config.port);
      server.on('error', (err) => logger.error({ err }, 'health server failed'));
      metricsPort.listening();
      return { connected: app.start().then(() => undefined) };
    },
    stop: async () => {
      await Promise.all([app.stop(), close(server), metricsPort.stop()]);
    },
  };
}
