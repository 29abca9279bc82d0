import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { configSecrets, redactedConfig } from '../config/configSecrets.js';
import { sleep } from '../msp/backoff.js';
import type { ClickHandler } from '../relay/deciding/clickHandler.js';
import type { Decider } from '../relay/deciding/decider.js';
import type { GrantAnswerer } from '../relay/grants/grantAnswerer.js';
import type { GrantMaker } from '../relay/grants/grantMaker.js';
import type { HostEventHandler } from '../relay/hostEvents/hostEventHandler.js';
import { FenceBook } from '../replicas/fenceBook.js';
import { routeName } from '../routing/router.js';
import { createSlackApp } from '../slack/createSlackApp.js';
import { metricsRoute } from '../slack/metrics/metricsRoute.js';
import { PendingApprovals } from '../slack/metrics/pendingApprovals.js';
import { PromMetrics } from '../slack/metrics/promMetrics.js';
import { ReadinessLog } from '../slack/readinessLog.js';
import { warnSharedChannels } from '../slack/sharedChannels.js';
import { classifySlackError } from '../slack/slackFailures.js';
import { describeSlackFailure } from '../slack/slackReachability.js';
import { secretScrubber } from '../util/log.js';
import { VERSION } from '../version.js';
import { wireBatching } from './batching.js';
import { wireDeciding } from './deciding.js';
import { wireEscalation } from './escalation.js';
import { wireGrants } from './grants.js';
import { wireHealth } from './health.js';
import { wireHome } from './home.js';
import { wireHostEvents } from './hostEvents.js';
import { wireHosts } from './hosts.js';
import { Late } from './late.js';
import { wireNotices } from './notices.js';
import { wireRecords } from './records.js';
import { wireRedis } from './redis.js';
import { wireReplicas } from './replicas.js';
import { wireRouting } from './routing.js';
import type { ShutdownSteps } from './shutdown.js';
import { wireSlack } from './slack.js';

/** How the running process is ended: shutdown(code, reason), once (wiring/shutdown.ts). */
export type Shutdown = (code: number, reason: string) => Promise<void>;

export interface StartOptions {
  /** When the process started: cards an earlier process left behind are those before it. */
  startedAt: Date;
  /** Whether shutdown has begun. */
  stopping: () => boolean;
  shutdown: Shutdown;
}

/** Countersign, built and not yet started. */
export interface Countersign {
  /**
   * Starts the parts in order; rejects with a ConfigError when the port cannot be listened on,
   * or when Redis refuses the bot (its password, user or database) within the first seconds.
   */
  start(options: StartOptions): Promise<void>;
  /** The shutdown stages, each over the parts it stops, in createShutdown's order. */
  stages: Omit<ShutdownSteps, 'logger' | 'exit' | 'budget'>;
  /** Whatever way the process ends, the hosts' process groups do not outlive it. */
  killHosts(): void;
}

/** Builds every part, capability by capability (each wiring file), and nothing runs yet. */
export function assemble(config: Config, logger: Logger): Countersign {
  const shownConfig = redactedConfig(config);
  // Every series of /metrics, at 0 from here on; the parts below count into it as they work.
  const metrics = new PromMetrics({
    routes: config.routes.map(routeName),
    hosts: config.msp.hosts.map((h) => h.id),
  });
  const { redis, redisHealth, ...redisPart } = wireRedis(config, logger, shownConfig.redisUrl);
  redis.on('error', () => metrics.redisError());
  const slack = wireSlack(config, logger, metrics);
  const { slackClient, cardChannel } = slack;
  // Which hosts this replica holds, and with which fencing token: the lease owner (replicas.ts)
  // writes it; the store, the keeper, the hosts and the deciders built before it read it.
  const fences = new FenceBook();
  // The circles (late.ts): each of these parts is built on top of one that needs it back.
  const later = {
    grantMaker: new Late<GrantMaker>('the grant maker'),
    relay: new Late<HostEventHandler>('the host event handler'),
    decider: new Late<Decider>('the decider'),
    clicks: new Late<ClickHandler>('the click handler'),
    grantAnswerer: new Late<GrantAnswerer>('the grant answerer'),
  };

  const { router, owners, groups, authorizer, risks, approverNames, away } = wireRouting({
    config,
    logger,
    redis,
    slackClient,
    identity: slack.identity,
    channelIds: slack.channelIds,
  });
  const { store, activity, auditTrail, followers, keeper, resolveNotice, writtenDecisions } = wireRecords({
    config,
    logger,
    redis,
    fences,
    cardChannel,
    router,
    authorizer,
    approverNames,
    grantMaker: later.grantMaker,
    metrics,
  });
  const { noticeSender, noticeLedger, notices } = wireNotices({
    config,
    logger,
    redis,
    slackClient,
    cardCalls: slack.cardCalls,
    postPacer: slack.postPacer,
    activity,
    auditTrail,
    resolveNotice,
    writtenDecisions,
    owners,
    authorizer,
    slaOf: (route) => router.slaOf(route),
  });
  const grants = wireGrants({
    config,
    logger,
    redis,
    keeper,
    store,
    router,
    authorizer,
    channelIds: slack.channelIds,
    noticeSender,
    auditTrail,
  });
  later.grantMaker.set(grants.grantMaker);
  const hosts = wireHosts({ config, logger, redis, fences, relay: later.relay });
  const { replicaId, forwarding, ownership } = wireReplicas({
    config,
    logger,
    redis,
    fences,
    store,
    keeper,
    hosts,
    decider: later.decider,
    clicks: later.clicks,
    grantAnswerer: later.grantAnswerer,
  });
  const { decider, grantAnswerer, clicks } = wireDeciding({
    logger,
    store,
    keeper,
    activity,
    auditTrail,
    hosts,
    fences,
    forwarding,
    router,
    authorizer,
    grantStore: grants.grantStore,
    grantMaker: grants.grantMaker,
    grantLines: grants.grantLines,
    noticeLedger,
    cardChannel,
    metrics,
  });
  later.decider.set(decider);
  later.clicks.set(clicks);
  later.grantAnswerer.set(grantAnswerer);
  const escalation = wireEscalation({
    config,
    logger,
    redis,
    slackClient,
    store,
    keeper,
    decider,
    router,
    groups,
    away,
    mayStandIn: (userId) => authorizer.isMember(userId),
    mayDecide: (userId, record) => authorizer.check(userId, record),
    shown: (record) => authorizer.shown(record),
    noticeSender,
    metrics,
  });
  const { escalator } = escalation;
  const relay = later.relay.set(
    wireHostEvents({
      config,
      logger,
      store,
      keeper,
      auditTrail,
      redisHealth,
      hosts,
      fences,
      decider,
      grantAnswerer,
      router,
      risks,
      owners,
      metrics,
      followers,
      noticeSender,
    }),
  );
  const health = wireHealth({
    redis: redisPart,
    slack,
    hosts,
    ownership,
    replicaId,
    activity,
    auditTrail,
    escalationFailures: escalation.failures,
    // What the log hides, /readyz hides too.
    scrub: secretScrubber(configSecrets(config)) ?? ((text) => text),
  });
  const { waiting, home, stats } = wireHome({
    config,
    logger,
    redis,
    slackClient,
    store,
    authorizer,
    router,
    grantLists: grants.grantLists,
    away,
    health,
    permalinks: slack.permalinks,
  });
  // Followers of the records' stored changes, told in this order.
  followers.add(grantAnswerer);
  followers.add(grants.grantMaker);
  followers.add(notices);
  followers.add(home);
  followers.add(escalator);
  const pending = new PendingApprovals({
    ownedHosts: () => ownership.standings().flatMap((s) => (s.role === 'owner' ? [s.hostId] : [])),
    openIds: (hostId) => store.openApprovalIds(hostId),
    record: (approvalId) => store.get(approvalId),
  });
  followers.add(pending);
  const batching = wireBatching({
    logger,
    redis,
    cardCalls: slack.cardCalls,
    store,
    authorizer,
    clicks,
    permalinks: slack.permalinks,
    postPacer: slack.postPacer,
  });
  followers.add(batching.triage);
  metrics.observe({ probe: health, pending });
  // PORT's /readyz says ready or not alone: the log says when that changes, and why.
  const readinessLog = new ReadinessLog(health, logger);

  const app = createSlackApp({
    config,
    logger,
    clicks,
    fullText: store,
    identity: () => slack.identity,
    web: slackClient,
    transport: slack.slackTransport,
    reachability: slack.reachability,
    health,
    metrics: metricsRoute(metrics, logger),
    team: {
      authorizer,
      router,
      waiting,
      home,
      grants: grants.grantLists,
      revoker: grants.revoker,
      stats,
      away,
    },
    batch: { decider: batching.batchDecider, triage: batching.triage, forms: batching.rejectForms },
  });

  return {
    async start({ startedAt, stopping, shutdown }) {
      const { connected } = await app.start();
      logger.info({ version: VERSION, config: shownConfig }, 'countersign listening');
      readinessLog.start();
      // Watched at once: Slack refuses a wrong app token within a second, and a rejection
      // nobody listens to yet is an unhandled one (a stack trace instead of this line).
      void connected.catch((err: unknown) => {
        const cause = describeSlackFailure(err);
        const kind = classifySlackError(err).kind;
        const refused = kind === 'fatal' || kind === 'refused';
        logger.fatal(
          { error: cause },
          refused
            ? `Slack refused the Socket Mode connection (${cause}): check SLACK_APP_TOKEN, an app-level token (xapp-…) with the connections:write scope`
            : `Socket Mode could not connect to Slack after retrying: ${cause}`,
        );
        void shutdown(1, 'socket mode connection failed');
      });

      // Redis away at start-up must not hold the rest back for long: /readyz says it is down.
      // Redis refusing the bot (a wrong password, a user without permissions, a database it
      // does not have) is a mistake in the settings: a ConfigError from here, one line. Met
      // later, once Redis answers at last, it ends the process the same way.
      await Promise.race([redisPart.access.then(() => redisPart.legacyKeysMoved), sleep(5_000)]);
      redisPart.access.catch((err: unknown) => {
        logger.fatal(err instanceof Error ? err.message : String(err));
        void shutdown(1, 'Redis refused the bot');
      });
      redisHealth.start();
      escalator.start();
      batching.triage.start();
      void slack.checkAuth(stopping, shutdown).then(() => {
        if (slack.identity.botUserId === undefined) return;
        // Every place a card may go: each route's channel, and the fallback's (SLACK_CHANNEL).
        const places = [...router.all(), router.named(undefined)!];
        return warnSharedChannels(
          slack.slackClient,
          places.map(({ name, channel, rules }) => ({ name, channel, allowExternal: rules.allowExternal })),
          logger,
          slack.channelIds,
        );
      });
      // The first cards should show names: read them before any host can ask, but not for long.
      await Promise.race([approverNames.start(), sleep(5_000)]);
      // Cards an earlier process left behind their records (it died mid-update) are re-rendered.
      keeper.track(
        keeper.recoverCards(startedAt).catch((err: unknown) => {
          logger.warn({ err }, 'could not look for cards left behind');
        }),
      );
      ownership.start();
    },

    stages: {
      stopSlack: () => {
        // From the first step: a host taken while this process shuts down would only be abandoned.
        ownership.stopTaking();
        readinessLog.stop();
        return app.stop();
      },
      drainDecisions: () =>
        Promise.all([escalator.stop(), clicks.drain(), forwarding.stop(), decider.drain()]),
      relayIdle: async () => {
        await relay.idle();
        await notices.idle();
      },
      stopRelay: () => {
        relay.stop();
        keeper.stop();
      },
      stopHost: (withinMs) => hosts.stop(withinMs),
      quitRedis: async () => {
        // The hosts are stopped: a standby may take them at once instead of after the lease.
        await ownership.stop();
        approverNames.stop();
        home.stop();
        grants.stop();
        batching.triage.stop();
        // Card updates still retrying (Slack away) end here; what they would have said is in Redis.
        cardChannel.stop();
        redisHealth.stop();
        return redis.quit();
      },
      disconnectRedis: () => redis.disconnect(),
    },

    killHosts: () => hosts.killNow(),
  };
}
