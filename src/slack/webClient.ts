import { type FetchFunction, type Logger as SlackLogger, WebClient } from '@slack/web-api';
import { createSlackFetch } from './slackFetch.js';

/** How long one Web API call may take before its answer counts as lost. */
export const DEFAULT_SLACK_TIMEOUT_MS = 10_000;

export interface WebClientSettings {
  token: string;
  apiUrl: string;
  logger?: SlackLogger;
  /** The transport (one keep-alive pool); a fresh one when not given. */
  fetch?: FetchFunction;
  timeoutMs?: number;
}

/**
 * The one Slack Web API client of the process: the card channel, ephemeral notes and the Bolt
 * listeners all call through it, over one connection pool. It never retries by itself and rejects
 * a 429 at once: the SDK's own retries are blind (a post whose answer was lost would be posted
 * again, and a 429 would pause every call of the client for its Retry-After). Each caller retries
 * its own call instead, as slackRetry.ts and the failure table decide.
 */
export function createWebClient({ token, apiUrl, logger, fetch, timeoutMs }: WebClientSettings): WebClient {
  return new WebClient(token, {
    slackApiUrl: apiUrl,
    fetch: fetch ?? createSlackFetch(),
    timeout: timeoutMs ?? DEFAULT_SLACK_TIMEOUT_MS,
    rejectRateLimitedCalls: true,
    retryConfig: { retries: 0 },
    ...(logger ? { logger } : {}),
  });
}
