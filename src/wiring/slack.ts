import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { Metrics } from '../domain/metrics.js';
import { sleep } from '../msp/backoff.js';
import { directCardCalls } from '../slack/cardCalls.js';
import { SlackChannelIds } from '../slack/channelIds.js';
import { ChannelPacer } from '../slack/channelPacer.js';
import type { BotIdentity } from '../slack/createSlackApp.js';
import { slackFailureCounter, watchedCardCalls } from '../slack/metrics/slackCallFailures.js';
import { Permalinks } from '../slack/permalinks.js';
import { SlackCardChannel } from '../slack/slackCardChannel.js';
import { classifySlackError } from '../slack/slackFailures.js';
import { createSlackFetch, createSlackPool } from '../slack/slackFetch.js';
import { describeSlackFailure, SlackReachability } from '../slack/slackReachability.js';
import { createWebClient } from '../slack/webClient.js';
import { toBoltLogger } from '../util/log.js';

/** How the process talks to Slack, and who the bot is there once Slack has said (auth.test). */
export function wireSlack(config: Config, logger: Logger, metrics: Metrics) {
  // Each failed call counted once, by method: the client's calls here, the card calls below.
  const onFailure = slackFailureCounter(metrics);
  // One Web API client and one connection pool for every Slack call: cards, notes, listeners.
  const slackPool = createSlackPool();
  const slackTransport = createSlackFetch(slackPool);
  const slackClient = createWebClient({
    token: config.slack.botToken,
    apiUrl: config.slack.apiUrl,
    timeoutMs: config.slack.apiTimeoutMs,
    fetch: slackTransport,
    logger: toBoltLogger(logger.child({ component: 'slack-web-api' })),
    onFailure,
  });
  let slackUp = false;
  // Cards, and the notices that follow their decisions, go to Slack as JSON over the pool.
  const cardCalls = watchedCardCalls(
    directCardCalls({
      token: config.slack.botToken,
      apiUrl: config.slack.apiUrl,
      dispatcher: slackPool,
      timeoutMs: config.slack.apiTimeoutMs,
    }),
    onFailure,
  );
  // One pace per channel for every post to it: cards first, then the lines that follow them.
  const postPacer = new ChannelPacer();
  // Who the bot is in Slack (auth.test): until Slack has said, nobody may decide (see checkAuth).
  const identity: BotIdentity = {};
  // The IDs of the #names routes may give, each kept once found: cards go there, and who is in a
  // channel is asked by it.
  const channelIds = new SlackChannelIds(slackClient, { ttlMs: config.membershipCacheTtlMs, logger });
  const cardChannel = new SlackCardChannel(slackClient, logger, {
    calls: cardCalls,
    pacer: postPacer,
    botId: () => identity.botId,
    channelIds,
    health: {
      refused: () => {
        slackUp = false;
      },
      // Only once auth.test has answered: before that, readiness waits for it (checkAuth).
      landed: () => {
        if (identity.botUserId) slackUp = true;
      },
    },
  });
  const reachability = new SlackReachability(logger.child({ component: 'slack-reachability' }));

  /** Asks Slack who the bot is until it answers, the process stops, or Slack refuses the token. */
  async function checkAuth(
    stopping: () => boolean,
    shutdown: (code: number, reason: string) => Promise<void>,
  ): Promise<void> {
    const url = `${config.slack.apiUrl}auth.test`;
    for (let attempt = 1; !stopping(); attempt++) {
      try {
        const auth = await slackClient.auth.test();
        identity.botId = auth.bot_id;
        identity.botUserId = auth.user_id;
        identity.teamId = auth.team_id;
        identity.enterpriseId = auth.enterprise_id || undefined;
        identity.workspaceUrl = auth.url;
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

  // One cache of card links for App Home, /countersign and batch summaries.
  const permalinks = new Permalinks(slackClient, logger, () => identity.workspaceUrl);

  return {
    slackTransport,
    permalinks,
    slackClient,
    cardCalls,
    postPacer,
    cardChannel,
    channelIds,
    identity,
    reachability,
    checkAuth,
    up: () => slackUp,
    whyDown: () =>
      reachability.problem() ??
      (identity.botUserId === undefined
        ? 'waiting for Slack to answer auth.test'
        : 'Slack refused the bot token or its scopes'),
  };
}
