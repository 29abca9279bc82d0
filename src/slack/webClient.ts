import { type FetchFunction, type Logger as SlackLogger, WebClient } from '@slack/web-api';
import { createSlackFetch } from './slackFetch.js';

export interface WebClientSettings {
  token: string;
  apiUrl: string;
  logger?: SlackLogger;
  /** Shared with other clients so that they share one connection pool. */
  fetch?: FetchFunction;
}

/**
 * Every Slack Web API client is built here. The SDK's defaults (no timeout, ten retries over
 * half an hour, a 429 pausing every call of the client) do not suit interactive paths, so
 * 429s are rejected at once and retried by the caller for that one call only.
 */
export function createWebClient({ token, apiUrl, logger, fetch }: WebClientSettings): WebClient {
  return new WebClient(token, {
    slackApiUrl: apiUrl,
    fetch: fetch ?? createSlackFetch(),
    timeout: 10_000,
    rejectRateLimitedCalls: true,
    retryConfig: { retries: 3, factor: 2, minTimeout: 250, maxTimeout: 2_000, randomize: true },
    ...(logger ? { logger } : {}),
  });
}
