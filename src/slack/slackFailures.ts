import { ErrorCode } from '@slack/web-api';

/** How the bot treats a failed Slack call. One table, read by retries and by health alike. */
export type SlackFailure =
  | { kind: 'fatal'; error: string }
  | { kind: 'notInChannel'; error: string }
  | { kind: 'rateLimited'; retryAfterMs: number }
  | { kind: 'retry'; error: string }
  | { kind: 'refused'; error: string };

const FATAL = new Set([
  'invalid_auth',
  'not_authed',
  'account_inactive',
  'token_revoked',
  'token_expired',
  'missing_scope',
  'no_permission',
]);
const NOT_IN_CHANNEL = new Set(['not_in_channel', 'channel_not_found', 'is_archived']);

export function classifySlackError(err: unknown): SlackFailure {
  const e = err as {
    code?: string;
    retryAfter?: number;
    data?: { error?: string };
    statusCode?: number;
    message?: string;
  };
  switch (e?.code) {
    case ErrorCode.RateLimitedError:
      return { kind: 'rateLimited', retryAfterMs: Math.max(1, e.retryAfter ?? 1) * 1000 };
    case ErrorCode.PlatformError: {
      const error = e.data?.error ?? 'unknown_error';
      if (FATAL.has(error)) return { kind: 'fatal', error };
      if (NOT_IN_CHANNEL.has(error)) return { kind: 'notInChannel', error };
      if (error === 'ratelimited') return { kind: 'rateLimited', retryAfterMs: 1000 };
      if (error === 'internal_error' || error === 'fatal_error' || error === 'service_unavailable') {
        return { kind: 'retry', error };
      }
      return { kind: 'refused', error };
    }
    case ErrorCode.HTTPError:
      return (e.statusCode ?? 0) >= 500
        ? { kind: 'retry', error: `http_${e.statusCode}` }
        : { kind: 'refused', error: `http_${e.statusCode}` };
    case ErrorCode.RequestError:
      return { kind: 'retry', error: 'request_error' };
    default:
      return { kind: 'refused', error: e?.message ?? String(err) };
  }
}
