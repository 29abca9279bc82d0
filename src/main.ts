import { Redis } from 'ioredis';
import { v7 as uuidv7 } from 'uuid';
import { renderCard } from './cards/renderCard.js';
import { ConfigError, loadConfig, redactedConfig } from './config.js';
import { createLogger, toBoltLogger } from './log.js';
import { HostSupervisor } from './msp/hostSupervisor.js';
import { ClickHandler } from './relay/clickHandler.js';
import { Decider } from './relay/decider.js';
import { RecordKeeper } from './relay/recordKeeper.js';
import { Relay } from './relay/relay.js';
import { Router } from './routing/router.js';
import { type BotIdentity, createSlackApp } from './slack/createSlackApp.js';
import { SlackCardChannel } from './slack/slackCardChannel.js';
import { classifySlackError } from './slack/slackFailures.js';
import { createSlackFetch } from './slack/slackFetch.js';
import { createWebClient } from './slack/webClient.js';
import { ApprovalStore } from './store/approvalStore.js';
import { RedisHealth } from './store/redisHealth.js';
import { RedisSessionMemory } from './store/sessionMemory.js';
import { VERSION } from './version.js';

/** How long SIGTERM waits for decisions in flight (Docker's default stop grace is 10 s). */
const DRAIN_TIMEOUT_MS = 8_000;

function readConfig() {
  try {
    return loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`countersign: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
}

async function main(): Promise<void> {
  const config = readConfig();
  const logger = createLogger({ level: config.logLevel, pretty: process.stdout.isTTY === true });

  // Commands wait while Redis is away instead of failing: an approval event held in memory for a
  // while is better than one dropped. /readyz says Redis is down meanwhile.
  const redis = new Redis(config.redisUrl, {
    maxRetriesPerRequest: null,
    retryStrategy: (times) => Math.min(times * 200, 5_000),
  });
  let redisErrorLogged = false;
  redis.on('error', (err) => {
    if (!redisErrorLogged) logger.error({ err: err.message }, 'redis unreachable; retrying');
    redisErrorLogged = true;
  });
  redis.on('ready', () => {
    if (redisErrorLogged) logger.info('redis reachable again');
    redisErrorLogged = false;
  });

  const store = new ApprovalStore(redis, { resolvedTtlMs: config.resolvedTtlMs });
  const redisHealth = new RedisHealth(redis, { logger });
  // One Web API client and one connection pool for every Slack call: cards, notes, listeners.
  const slackTransport = createSlackFetch();
  const slackClient = createWebClient({
    token: config.slack.botToken,
    apiUrl: config.slack.apiUrl,
    timeoutMs: config.slack.apiTimeoutMs,
    fetch: slackTransport,
    logger: toBoltLogger(logger.child({ component: 'slack-web-api' })),
  });
  let slackUp = false;
  const cardChannel = new SlackCardChannel(slackClient, logger, {
    onFatal: () => {
      slackUp = false;
    },
  });

  const router = new Router(config.routes, config.slack.channel);
  const keeper = new RecordKeeper({
    store,
    cards: cardChannel,
    render: (record, now) => renderCard(record, { now }),
    logger,
  });
  // Hosts by id. The Decider and the Relay look a host up when they need it, so nothing here
  // has to exist before the rest is wired.
  const hosts = new Map<string, HostSupervisor>();
  const decider = new Decider({
    keeper,
    store,
    host: (hostId) => hosts.get(hostId),
    logger,
    newCommandId: () => uuidv7(),
  });
  const relay = new Relay({
    keeper,
    store,
    decider,
    host: (hostId) => hosts.get(hostId),
    logger,
    routeFor: (input) => router.routeFor(input),
    sandboxMode: config.msp.sandboxMode,
    redis: redisHealth,
    maxBufferedEvents: config.hostEventBuffer,
  });
  const host = new HostSupervisor({
    hostId: config.msp.hostId,
    command: config.msp.hostCommand,
    logger: logger.child({ hostId: config.msp.hostId }),
    clientVersion: VERSION,
    onEvent: (event) => relay.handleHostEvent(event),
    sessionMemory: new RedisSessionMemory(redis),
    decideTimeoutMs: config.msp.requestTimeoutMs,
    requestTimeoutMs: config.msp.requestTimeoutMs,
  });
  hosts.set(host.hostId, host);
  const clicks = new ClickHandler({ store, decider, keeper, notifier: cardChannel, logger });

  const identity: BotIdentity = {};
  const app = createSlackApp({
    config,
    logger,
    clicks,
    identity: () => identity,
    web: slackClient,
    transport: slackTransport,
    health: {
      redis: () => redis.status === 'ready' && redisHealth.available(),
      slack: () => slackUp,
      hosts: () => host.isUp(),
    },
  });

  let stopping = false;
  const shutdown = async (code: number, reason: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ reason }, 'shutting down');
    try {
      await app.stop();
      // Decisions in flight get a while to finish; one that does not is still safe: its claim
      // and commandId are in Redis and the next start replays it.
      const drained = await Promise.race([
        Promise.all([clicks.drain(), decider.drain()]).then(() => true),
        new Promise<false>((resolve) => setTimeout(() => resolve(false), DRAIN_TIMEOUT_MS).unref()),
      ]);
      if (!drained)
        logger.warn({ timeoutMs: DRAIN_TIMEOUT_MS }, 'decisions still in flight; leaving them to replay');
      await relay.idle();
      keeper.stop();
      await host.stop();
      // Stopping a non-durable host orphans its cards; let that reach Slack before Redis goes.
      await relay.idle();
      redisHealth.stop();
      await redis.quit();
    } catch (err) {
      logger.error({ err }, 'error while shutting down');
      code = code || 1;
    }
    logger.flush();
    process.exit(code);
  };
  // Nothing may die silently: a stray rejection (for example a Socket Mode reconnect that ran
  // out of retries) is logged and the process shuts down cleanly for its supervisor to restart.
  process.on('unhandledRejection', (reason) => {
    logger.fatal({ err: reason }, 'unhandled rejection');
    void shutdown(1, 'unhandled rejection');
  });
  process.on('SIGTERM', () => void shutdown(0, 'SIGTERM'));
  process.on('SIGINT', () => void shutdown(0, 'SIGINT'));

  await app.start(config.port);
  logger.info({ version: VERSION, config: redactedConfig(config) }, 'countersign listening');

  redisHealth.start();
  void checkSlackAuth();
  await host.start();

  async function checkSlackAuth(): Promise<void> {
    for (let attempt = 1; !stopping; attempt++) {
      try {
        const auth = await slackClient.auth.test();
        identity.botId = auth.bot_id;
        identity.botUserId = auth.user_id;
        slackUp = true;
        logger.info({ team: auth.team, botUserId: auth.user_id }, 'slack auth ok');
        return;
      } catch (err) {
        const failure = classifySlackError(err);
        if (failure.kind === 'fatal') {
          logger.fatal({ error: failure.error }, 'slack refused the bot token');
          await shutdown(1, `slack auth failed: ${failure.error}`);
          return;
        }
        logger.warn({ failure, attempt }, 'slack auth.test failed; retrying');
        await new Promise((resolve) => setTimeout(resolve, Math.min(attempt * 1_000, 30_000)));
      }
    }
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`countersign: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
