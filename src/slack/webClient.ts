import {
  type FetchFunction,
  type Logger as SlackLogger,
  type WebAPICallResult,
  WebClient,
  type WebClientOptions,
} from '@slack/web-api';
import { withoutUnfurls } from './noUnfurls.js';
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
  /** Told of each call that failed, by method (for /metrics); the error is thrown on as before. */
  onFailure?: (method: string, err: unknown) => void;
}

/**
 * Every method of the client (chat.postEphemeral, views.publish, …) calls apiCall, bound when the
 * client is made: overriding it here sees each of them, with its method's name. A post never
 * unfurls (noUnfurls.ts), and a failure is told to `onFailure` when given.
 */
class BotWebClient extends WebClient {
  constructor(
    token: string,
    options: WebClientOptions,
    private readonly onFailure?: (method: string, err: unknown) => void,
  ) {
    super(token, options);
  }

  override async apiCall(method: string, options?: Record<string, unknown>): Promise<WebAPICallResult> {
    const args = method === 'chat.postMessage' && options ? withoutUnfurls(options) : options;
    try {
      return await super.apiCall(method, args);
    } catch (err) {
      this.onFailure?.(method, err);
      throw err;
    }
  }
}

/**
 * The one Slack Web API client of the process: the card channel, ephemeral notes and the Bolt
 * listeners all call through it, over one connection pool. It never retries by itself and rejects
 * a 429 at once: the SDK's own retries are blind (a post whose answer was lost would be posted
 * again, and a 429 would pause every call of the client for its Retry-After). Each caller retries
 * its own call instead, as slackRetry.ts and the failure table decide.
 */
export function createWebClient(settings: WebClientSettings): WebClient {
  const { token, apiUrl, logger, fetch, timeoutMs, onFailure } = settings;
  const options: WebClientOptions = {
    slackApiUrl: apiUrl,
    fetch: fetch ?? createSlackFetch(),
    timeout: timeoutMs ?? DEFAULT_SLACK_TIMEOUT_MS,
    rejectRateLimitedCalls: true,
    retryConfig: { retries: 0 },
    ...(logger ? { logger } : {}),
  };
  return new BotWebClient(token, options, onFailure);
}
