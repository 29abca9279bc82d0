import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { v7 as uuidv7 } from 'uuid';
import { renderCard } from './cards/renderCard.js';
import { ConfigError, loadConfig } from './config/config.js';
import { configSecrets, redactedConfig } from './config/configSecrets.js';
import { sleep } from './msp/backoff.js';
import { HostFleet, type HostStatus } from './msp/hostFleet.js';
import { HostSupervisor } from './msp/hostSupervisor.js';
import { PagerDuty } from './pagerduty/pagerDuty.js';
import { Authorizer, routeInputOf } from './relay/deciding/authorizer.js';
import { ClickHandler } from './relay/deciding/clickHandler.js';
import { Decider } from './relay/deciding/decider.js';
import { DecisionNotices } from './relay/deciding/decisionNotices.js';
import { DecisionWarrant } from './relay/deciding/decisionWarrant.js';
import { Escalator } from './relay/escalation/escalator.js';
import { OncallResolver } from './relay/escalation/oncall.js';
import { GrantAnswerer } from './relay/grants/grantAnswerer.js';
import { GrantLists } from './relay/grants/grantLists.js';
import { GrantMaker } from './relay/grants/grantMaker.js';
import { GrantRevoker } from './relay/grants/grantRevoker.js';
import { HostEventHandler } from './relay/hostEvents/hostEventHandler.js';
import { RecordKeeper } from './relay/records/recordKeeper.js';
import { DecisionForwarding } from './replicas/decisionForwarding.js';
import { HostOwnership, type HostStanding } from './replicas/hostOwnership.js';
import { ReplicaSeal } from './replicas/replicaSeal.js';
import { type RiskInput, RiskRules } from './routing/risks.js';
import { FALLBACK_ROUTE_NAME, Router } from './routing/router.js';
import { ApproverNames, namedInConfig } from './slack/approverNames.js';
import { directCardCalls } from './slack/cardCalls.js';
import { SlackChannelMembers } from './slack/channelMembers.js';
import { type BotIdentity, createSlackApp } from './slack/createSlackApp.js';
import { SlackGroupDirectory } from './slack/groupDirectory.js';
import { HomeTab } from './slack/homeTab.js';
import { SlackPeopleDirectory } from './slack/peopleDirectory.js';
import { Permalinks } from './slack/permalinks.js';
import { SlackCardChannel } from './slack/slackCardChannel.js';
import { SlackEscalationSender, SlackPagerDutyOnCall } from './slack/slackEscalation.js';
import { classifySlackError } from './slack/slackFailures.js';
import { createSlackFetch, createSlackPool } from './slack/slackFetch.js';
import { SlackGrantLines } from './slack/slackGrantLines.js';
import { SlackNoticeSender } from './slack/slackNotices.js';
import { describeSlackFailure, SlackReachability } from './slack/slackReachability.js';
import { slackViews } from './slack/slackViews.js';
import { WaitingApprovals } from './slack/waitingApprovals.js';
import { createWebClient } from './slack/webClient.js';
import { ApprovalStore } from './store/approvalStore.js';
import { RedisAuditTrail } from './store/auditStream.js';
import { DecisionStream } from './store/decisionStream.js';
import { EscalationStore } from './store/escalationStore.js';
import { RedisGrantStore } from './store/grantStore.js';
import { HomeViewers } from './store/homeViewers.js';
import { HostLeases, processIdentity } from './store/hostLeases.js';
import { renameLegacyKeys } from './store/legacyKeys.js';
import { RedisNoticeLedger } from './store/noticeLedger.js';
import { RecentDecisions } from './store/recentDecisions.js';
import { createRedisClient } from './store/redisConnection.js';
import { RedisHealth } from './store/redisHealth.js';
import { RedisSessionMemory } from './store/sessionMemory.js';
import { Activity } from './util/activity.js';
import { createLogger, toBoltLogger } from './util/log.js';
import { VERSION } from './version.js';
import { createShutdown } from './wiring/shutdown.js';

/** How often expired grants are taken out of Redis (they stop matching the moment they expire). */
const GRANT_SWEEP_MS = 60_000;

/** A mistake only the operator can fix: one line on stderr, exit 1. */
function exitWithConfigError(err: ConfigError): never {
  process.stderr.write(`countersign: ${err.message}\n`);
  process.exit(1);
}

function readConfig() {
  try {
    return loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) exitWithConfigError(err);
    throw err;
  }
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const config = readConfig();
  const shownConfig = redactedConfig(config);
  const logger = createLogger({
    level: config.logLevel,
    pretty: process.stdout.isTTY === true,
    secrets: configSecrets(config),
  });

  // Commands wait while Redis is away instead of failing (createRedisClient's defaults): an
  // approval event held in memory for a while is better than one dropped. /readyz says Redis is
  // down meanwhile.
  const redis = createRedisClient(config.redis);
  let redisErrorLogged = false;
  let redisError: string | undefined;
  redis.on('error', (err) => {
    if (!redisErrorLogged) logger.error({ err: err.message }, 'redis unreachable; retrying');
    redisErrorLogged = true;
    redisError = err.message;
  });
  redis.on('ready', () => {
    if (redisErrorLogged) logger.info('redis reachable again');
    redisErrorLogged = false;
    redisError = undefined;
  });
  // Keys of an earlier release under their names without a hash tag (one Redis only: a cluster
  // never held them), moved before the work that reads them starts (see below).
  const legacyKeysMoved =
    config.redis.kind === 'cluster'
      ? Promise.resolve()
      : renameLegacyKeys(redis, logger).then(
          () => undefined,
          (err: unknown) => logger.warn({ err }, 'could not move the old keys'),
        );

  // Several replicas may share this Redis: each host is run by the one holding its lease, and
  // every write for a host carries that lease's fencing token (replicas/hostOwnership.ts).
  const replicaId = processIdentity(config.replicaName ?? hostname(), process.pid, randomUUID().slice(0, 8));
  const store = new ApprovalStore(redis, {
    resolvedTtlMs: config.resolvedTtlMs,
    fenceOf: (hostId) => ownership.fenceOf(hostId),
  });
  const redisHealth = new RedisHealth(redis, { logger });
  // One Web API client and one connection pool for every Slack call: cards, notes, listeners.
  const slackPool = createSlackPool();
  const slackTransport = createSlackFetch(slackPool);
  const slackClient = createWebClient({
    token: config.slack.botToken,
    apiUrl: config.slack.apiUrl,
    timeoutMs: config.slack.apiTimeoutMs,
    fetch: slackTransport,
    logger: toBoltLogger(logger.child({ component: 'slack-web-api' })),
  });
  let slackUp = false;
  // Cards, and the notices that follow their decisions, go to Slack as JSON over the pool.
  const cardCalls = directCardCalls({
    token: config.slack.botToken,
    apiUrl: config.slack.apiUrl,
    dispatcher: slackPool,
    timeoutMs: config.slack.apiTimeoutMs,
  });
  const cardChannel = new SlackCardChannel(slackClient, logger, {
    calls: cardCalls,
    onFatal: () => {
      slackUp = false;
    },
  });

  const router = new Router(config.routes, config.slack.channel, {
    enabled: true,
    caller: 'session',
    ttlMs: config.grants.ttlMs,
    maxTtlMs: config.grants.maxTtlMs,
  });
  const grantStore = new RedisGrantStore(redis, { logger, auditMaxLen: config.auditMaxLen });
  const owners = new Map(config.msp.hosts.flatMap((spec) => (spec.owner ? [[spec.id, spec.owner]] : [])));
  // One directory for who may decide and who is on call: one lookup per group, wherever it is asked.
  const groups = new SlackGroupDirectory(slackClient, redis, { ttlMs: config.usergroupCacheTtlMs, logger });
  // Who the bot is in Slack (auth.test): until Slack has said, nobody may decide (see checkSlackAuth).
  const identity: BotIdentity = {};
  const authorizer = new Authorizer({
    routeOf: (route) => router.named(route),
    placeNow: (record) => router.placeNow(routeInputOf(record)),
    admins: config.admins,
    ownerOf: (hostId) => owners.get(hostId),
    groups,
    people: new SlackPeopleDirectory(slackClient, redis, { ttlMs: config.membershipCacheTtlMs }),
    channels: new SlackChannelMembers(slackClient, redis, { ttlMs: config.membershipCacheTtlMs }),
    workspace: () =>
      identity.teamId === undefined
        ? undefined
        : {
            teamId: identity.teamId,
            ...(identity.enterpriseId ? { enterpriseId: identity.enterpriseId } : {}),
          },
    logger,
  });

  const risks = new RiskRules(config.risks);
  const activity = new Activity();
  // Names, never mentions, on a card: see renderApprovers.ts.
  const approverNames = new ApproverNames(slackClient, {
    ...namedInConfig(
      [...router.all().map((route) => route.rules), risks.approvers()],
      [...config.admins, ...owners.values()],
    ),
    logger,
  });
  // Audit: the thread line, the stream entry and the owner's DM of each resolved approval.
  const auditTrail = new RedisAuditTrail(redis, {
    maxLen: config.auditMaxLen,
    refusalMaxLen: config.refusalMaxLen,
    logger,
  });
  const noticeSender = new SlackNoticeSender(slackClient, logger, cardCalls);
  const noticeLedger = new RedisNoticeLedger(redis, { ttlMs: config.resolvedTtlMs });
  const notices = new DecisionNotices({
    activity,
    sender: noticeSender,
    ledger: noticeLedger,
    audit: auditTrail,
    ownerOf: (hostId) => owners.get(hostId),
    logger,
  });
  const keeper: RecordKeeper = new RecordKeeper({
    store,
    activity,
    cards: cardChannel,
    fenceOf: (hostId) => ownership.fenceOf(hostId),
    render: (record, now) =>
      renderCard(record, {
        now,
        approvers: approverNames.shown(authorizer.shown(record)),
        showHost: config.msp.hosts.length > 1,
        remember: grantMaker.offer(record),
        escalation: router.escalationOf(record.route),
        quorum: authorizer.quorum(record),
      }),
    logger,
    // Followers of stored changes, each one line.
    onChange: (record) => {
      grantAnswerer.follow(record);
      grantMaker.follow(record);
      notices.follow(record);
      home.follow(record);
      escalator.follow(record);
    },
  });
  const grantMaker = new GrantMaker({
    grants: grantStore,
    keeper,
    grantsOf: (route) => router.grantsOf(route),
    logger,
  });
  // Each host is supervised on its own. A host's events reach the Relay, which is wired below:
  // none arrive before hosts.start().
  const sessionMemory = new RedisSessionMemory(redis);
  const specs = new Map(config.msp.hosts.map((spec) => [spec.id, spec]));
  // loadConfig refuses MSP_HOST_COMMAND together with the file's hosts: without it, the hosts
  // come from the file, and a failing one is named by its place there.
  const hostsFromFile = !process.env.MSP_HOST_COMMAND?.trim();
  const hosts = new HostFleet({
    hostIds: config.msp.hosts.map((spec) => spec.id),
    mayAct: (hostId) => ownership.holds(hostId),
    create: (hostId) => {
      const i = config.msp.hosts.findIndex((spec) => spec.id === hostId);
      const spec = config.msp.hosts[i]!;
      return new HostSupervisor({
        hostId: spec.id,
        command: spec.command,
        ...(hostsFromFile ? { commandSetting: `COUNTERSIGN_CONFIG hosts[${i}].command` } : {}),
        ...(spec.cwd ? { cwd: spec.cwd } : {}),
        ...(spec.env ? { env: { ...process.env, ...spec.env } } : {}),
        logger: logger.child({ hostId: spec.id }),
        clientVersion: VERSION,
        onEvent: (event) => relay.handleHostEvent(event),
        sessionMemory,
        decideTimeoutMs: config.msp.requestTimeoutMs,
        requestTimeoutMs: config.msp.requestTimeoutMs,
      });
    },
  });
  // A decision taken here for a host another replica runs is carried out by that replica.
  const forwarding: DecisionForwarding = new DecisionForwarding({
    stream: new DecisionStream(redis),
    // Every replica of one app has the bot token; a secret of their own keeps working across
    // a token rotation and lets the token alone not open the stream.
    seal: new ReplicaSeal(config.replicaSecret ?? config.slack.botToken),
    store,
    decide: (request) => decider.decide(request),
    readerConnection: () => redis.duplicate(),
    replicaId,
    newCommandId: () => uuidv7(),
    mayAct: (hostId) => ownership.holds(hostId),
    logger: logger.child({ component: 'forwarding' }),
    onLateOutcome: (asker, approvalId, outcome) => clicks.answerLate(asker, approvalId, outcome),
  });
  const ownership: HostOwnership = new HostOwnership({
    leases: new HostLeases(redis),
    replicaId,
    hostIds: config.msp.hosts.map((spec) => spec.id),
    ttlMs: config.leaseTtlMs,
    logger: logger.child({ component: 'leases' }),
    onGained: async (hostId, token) => {
      // Before the host runs: from here on, a replica that held it before can change none of its
      // approvals, even one that wakes from a pause and has not yet noticed it lost the lease.
      await store.fenceOpen(hostId, token);
      // Cards the previous owner left behind their records (it died mid-update) are re-rendered.
      keeper.track(
        keeper
          .recoverCards(new Date())
          .catch((err: unknown) => logger.warn({ err }, 'could not look for cards left behind')),
      );
      const running = hosts.run(hostId);
      await forwarding.serve(hostId);
      await running;
    },
    onLost: (hostId) => {
      hosts.kill(hostId);
      forwarding.stopServing(hostId);
    },
  });
  const decider = new Decider({
    keeper,
    store,
    host: (hostId) => hosts.get(hostId),
    logger,
    newCommandId: () => uuidv7(),
    mayAct: (hostId) => ownership.holds(hostId),
    forward: (request) => forwarding.forward(request),
    // What this process did not check itself (a decision forwarded here) is checked on the record claimed.
    warrant: new DecisionWarrant({
      authorizer,
      grants: grantStore,
      grantsOf: (route) => router.grantsOf(route),
      ladderOf: (route) => router.escalationOf(route),
    }),
    activity,
  });
  const grantLines = new SlackGrantLines(noticeSender, { showHost: config.msp.hosts.length > 1 });
  const grantAnswerer = new GrantAnswerer({
    grants: grantStore,
    store,
    keeper,
    decider,
    lines: grantLines,
    ledger: noticeLedger,
    grantsOf: (route) => router.grantsOf(route),
    logger,
  });
  // On-call escalation: due steps in Redis, one poll loop, each step fired once (escalator.ts).
  const pagerDuty = new PagerDuty({
    eventsUrl: config.pagerDuty.eventsUrl,
    apiUrl: config.pagerDuty.apiUrl,
    ...(config.pagerDuty.apiToken ? { apiToken: config.pagerDuty.apiToken } : {}),
    logger: logger.child({ component: 'pagerduty' }),
  });
  const escalator: Escalator = new Escalator({
    schedule: new EscalationStore(redis, { lineageTtlMs: 7 * 86_400_000 }),
    store,
    keeper,
    decider,
    slack: new SlackEscalationSender(slackClient, noticeSender),
    pager: pagerDuty,
    oncall: new OncallResolver({
      groups,
      pagerDuty: new SlackPagerDutyOnCall(pagerDuty, slackClient, redis, { ttlMs: 60_000, logger }),
      logger,
    }),
    ledger: noticeLedger,
    ladderOf: (route) => router.escalationOf(route),
    oncallOf: (route) => router.oncallOf(route),
    approversOf: (route) => router.rulesOf(route)?.approvers,
    ...(config.pagerDuty.routingKey ? { defaultRoutingKey: config.pagerDuty.routingKey } : {}),
    dmMappingTtlMs: Math.max(config.resolvedTtlMs, 7 * 86_400_000),
    logger: logger.child({ component: 'escalation' }),
  });
  const relay = new HostEventHandler({
    keeper,
    store,
    decider,
    grants: grantAnswerer,
    grantsOf: (route) => router.grantsOf(route),
    ownerOf: (hostId) => owners.get(hostId),
    host: (hostId) => hosts.get(hostId),
    logger,
    routeFor: (input) => {
      const route = router.placeNow(input);
      return { name: route.name, channel: route.channel, quorum: route.rules.quorum };
    },
    sandboxModeOf: (hostId) => specs.get(hostId)?.sandboxMode ?? 'default',
    redis: redisHealth,
    maxBufferedEvents: config.hostEventBuffer,
    mayAct: (hostId) => ownership.holds(hostId),
    ...(risks.size > 0 ? { risksFor: (input: RiskInput) => risks.marksFor(input), audit: auditTrail } : {}),
  });
  const approversNamed =
    router.namesApprovers() || config.admins.length > 0 || config.risks.some((risk) => risk.approvers);
  if (!approversNamed) {
    logger.warn(
      "no route names approvers: the members of each route's channel may decide its approvals (never guests or users of another Slack team); name routes[].approvers in COUNTERSIGN_CONFIG to restrict who may decide",
    );
  } else {
    for (const name of router.openRoutes()) {
      logger.warn(
        { route: name },
        `route ${JSON.stringify(name)} has no approvers: the members of its channel may decide its approvals`,
      );
    }
  }
  const clicks: ClickHandler = new ClickHandler({
    store,
    decider,
    keeper,
    notifier: cardChannel,
    authorizer,
    audit: auditTrail,
    remembering: grantMaker,
    logger,
  });
  // Expired grants stop matching at once; this only takes them out of Redis, and audits it.
  const grantSweep = setInterval(() => {
    grantStore.sweep(new Date()).catch((err: unknown) => logger.warn({ err }, 'grant sweep failed'));
  }, GRANT_SWEEP_MS);
  grantSweep.unref();

  // What /countersign and App Home show each user.
  const permalinks = new Permalinks(slackClient, logger);
  const waiting = new WaitingApprovals({
    redis,
    store,
    hostIds: config.msp.hosts.map((spec) => spec.id),
    authorizer,
    permalinks,
  });
  // Seeing and revoking grants from Slack. The fallback route is a route of its own only when no
  // route of the file catches everything.
  const cardRoutes = config.routes.some((route) => route.match === undefined)
    ? router.all()
    : [...router.all(), { name: FALLBACK_ROUTE_NAME, channel: config.slack.channel }];
  const grantLists = new GrantLists({ grants: grantStore, authorizer, routes: () => cardRoutes });
  const revoker = new GrantRevoker({
    grants: grantStore,
    authorizer,
    notices: grantLines,
    audit: auditTrail,
    logger,
  });
  const home = new HomeTab({
    views: slackViews(slackClient),
    waiting,
    recent: new RecentDecisions(redis, config.resolvedTtlMs),
    // Opened in the last half hour: likely still on screen, worth publishing again on changes.
    viewers: new HomeViewers(redis, 30 * 60_000),
    permalinks,
    channel: config.slack.channel,
    status: () => ({ host: health.hosts(), redis: health.redis() }),
    grants: (userId) => grantLists.forHome(userId),
    logger,
  });

  const reachability = new SlackReachability(logger.child({ component: 'slack-reachability' }));
  const whyDown = {
    redis: () => {
      if (redisError !== undefined) return `cannot reach Redis at ${shownConfig.redisUrl}: ${redisError}`;
      if (redis.status === 'ready') return `Redis at ${shownConfig.redisUrl} does not answer PING in time`;
      return `Redis connection is ${redis.status}`;
    },
    slack: () =>
      reachability.problem() ??
      (identity.botUserId === undefined
        ? 'waiting for Slack to answer auth.test'
        : 'Slack refused the bot token or its scopes'),
    host: () =>
      hosts.downReason() ??
      (ownership.standings().every((s) => s.role === 'standby' && s.ownerReplica === undefined)
        ? 'no replica has taken an MSP host yet'
        : 'no MSP host is up'),
  };
  const health = {
    redis: () => redis.status === 'ready' && redisHealth.available(),
    slack: () => slackUp,
    // A standby is ready when the hosts it forwards to are run elsewhere: it takes clicks for them.
    // A host this replica has just taken but not started yet does not count: it is not up.
    hosts: () =>
      hosts.anyUp() ||
      (hosts.all().length === 0 &&
        ownership
          .standings()
          .some((s) => s.role === 'standby' && s.ownerReplica !== undefined && s.ownerReplica !== replicaId)),
    whyDown: (part: keyof typeof whyDown) => whyDown[part](),
    hostStatus: () => hostStatus(hosts.status(), ownership.standings()),
    replica: () => replicaId,
    activity: () => activity.counts,
    refusals: () => auditTrail.refusals,
    escalationFailures: () => ({
      ...escalator.failures,
      'pagerduty-trigger': pagerDuty.failures.trigger,
      'pagerduty-resolve': pagerDuty.failures.resolve,
      'pagerduty-oncalls': pagerDuty.failures.oncalls,
    }),
  };
  const app = createSlackApp({
    config,
    logger,
    clicks,
    fullText: store,
    identity: () => identity,
    web: slackClient,
    transport: slackTransport,
    reachability,
    health,
    team: { authorizer, router, waiting, home, grants: grantLists, revoker },
  });

  let stopping = false;
  const shutdownOnce = createShutdown({
    logger,
    stopSlack: () => app.stop(),
    drainDecisions: () => Promise.all([escalator.stop(), clicks.drain(), forwarding.stop(), decider.drain()]),
    relayIdle: async () => {
      await relay.idle();
      await notices.idle();
    },
    stopRelay: () => keeper.stop(),
    stopHost: (withinMs) => hosts.stop(withinMs),
    quitRedis: async () => {
      // The hosts are stopped: a standby may take them at once instead of after the lease.
      await ownership.stop();
      approverNames.stop();
      home.stop();
      clearInterval(grantSweep);
      // Card updates still retrying (Slack away) end here; what they would have said is in Redis.
      cardChannel.stop();
      redisHealth.stop();
      return redis.quit();
    },
    disconnectRedis: () => redis.disconnect(),
    exit: (code) => process.exit(code),
  });
  const shutdown = (code: number, reason: string): Promise<void> => {
    stopping = true;
    return shutdownOnce(code, reason);
  };
  // Whatever way the process ends, the host's process group does not outlive it.
  process.on('exit', () => hosts.killNow());
  // Nothing may die silently: a stray rejection (for example a Socket Mode reconnect that ran
  // out of retries) is logged and the process shuts down cleanly for its supervisor to restart.
  process.on('unhandledRejection', (reason) => {
    logger.fatal({ err: reason }, 'unhandled rejection');
    void shutdown(1, 'unhandled rejection');
  });
  process.on('SIGTERM', () => void shutdown(0, 'SIGTERM'));
  process.on('SIGINT', () => void shutdown(0, 'SIGINT'));

  let connected: Promise<void>;
  try {
    ({ connected } = await app.start());
  } catch (err) {
    // Nothing else runs yet (the host starts below); Redis goes with the process.
    if (err instanceof ConfigError) exitWithConfigError(err);
    throw err;
  }
  logger.info({ version: VERSION, config: shownConfig }, 'countersign listening');

  // Redis away at start-up must not hold the rest back for long: /readyz says it is down.
  await Promise.race([legacyKeysMoved, sleep(5_000)]);
  redisHealth.start();
  escalator.start();
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
  void checkSlackAuth();
  // The first cards should show names: read them before any host can ask, but not for long.
  await Promise.race([approverNames.start(), sleep(5_000)]);
  // Cards an earlier process left behind their records (it died mid-update) are re-rendered.
  keeper.track(
    keeper.recoverCards(startedAt).catch((err: unknown) => {
      logger.warn({ err }, 'could not look for cards left behind');
    }),
  );
  ownership.start();

  async function checkSlackAuth(): Promise<void> {
    const url = `${config.slack.apiUrl}auth.test`;
    for (let attempt = 1; !stopping; attempt++) {
      try {
        const auth = await slackClient.auth.test();
        identity.botId = auth.bot_id;
        identity.botUserId = auth.user_id;
        identity.teamId = auth.team_id;
        identity.enterpriseId = auth.enterprise_id || undefined;
        reachability.reached(url);
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
        reachability.failed(url, describeSlackFailure(err));
        await sleep(Math.min(attempt * 1_000, 30_000));
      }
    }
  }
}

/** Each configured host: its health where this replica runs it, else who does. */
function hostStatus(running: HostStatus[], standings: HostStanding[]): HostStatus[] {
  return standings.map((standing) => {
    const here = running.find((s) => s.hostId === standing.hostId);
    const owner = standing.ownerReplica ? { ownerReplica: standing.ownerReplica } : {};
    if (here && standing.role === 'owner') return { ...here, role: 'owner', ...owner };
    return {
      hostId: standing.hostId,
      up: false,
      role: 'standby',
      reason: standing.ownerReplica ? `run by replica ${standing.ownerReplica}` : 'no replica runs it yet',
      ...owner,
    };
  });
}

main().catch((err: unknown) => {
  process.stderr.write(`countersign: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
