import { ErrorCode } from '@slack/web-api';

/**
 * How the bot treats a failed Slack call. One table, read by retries and by health alike.
 *
 * - `fatal`: the token or its scopes are refused; nothing works until a person fixes it.
 * - `notInChannel`: the channel cannot be used (not invited, gone, archived).
 * - `rateLimited`: 429; the call did nothing, and may be made again after `retryAfterMs`.
 * - `retry`: 5xx, a timeout, a dropped connection: the answer is lost, so Slack may or may not
 *   have applied the call. Retried with backoff; a post looks for its message before posting again.
 * - `badMessage`: the message itself was refused (too big, malformed); a smaller one may land.
 * - `refused`: anything else Slack said no to; the same call would be refused again.
 */
export type SlackFailure =
  /** `needed`: the scope Slack says a `missing_scope` call lacks, so the log can name it. */
  | { kind: 'fatal'; error: string; needed?: string }
  | { kind: 'notInChannel'; error: string }
  | { kind: 'rateLimited'; retryAfterMs: number }
  | { kind: 'retry'; error: string }
  | { kind: 'badMessage'; error: string }
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
/** Slack's own "something broke on our side" answers: the call may or may not have been applied. */
const SERVER_TROUBLE = new Set(['internal_error', 'fatal_error', 'service_unavailable', 'request_timeout']);
const BAD_MESSAGE = new Set([
  'invalid_blocks',
  'invalid_blocks_format',
  'msg_too_long',
  'msg_blocks_too_long',
]);

/** What went wrong on the wire, for the log: a timeout and a reset call for different fixes. */
function requestError(original: unknown): string {
  const e = original as { name?: string; code?: string; cause?: { code?: string } } | undefined;
  if (e?.name === 'TimeoutError' || e?.name === 'AbortError') return 'timeout';
  const code = e?.code ?? e?.cause?.code;
  if (code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'timeout';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE') return 'connection_reset';
  if (code === 'ECONNREFUSED') return 'connection_refused';
  return 'request_error';
}

/**
 * What a failed respond() (a post to a response_url) says, for the log: the HTTP status the URL
 * answered, or what went wrong on the wire. Never the error's message: one about the URL would
 * spell it out, and whoever holds a response_url may post to the person through it.
 */
export function classifyRespondError(err: unknown): string {
  const status = (err as { statusCode?: unknown } | undefined)?.statusCode;
  return typeof status === 'number' ? `http_${status}` : requestError(err);
}

export function classifySlackError(err: unknown): SlackFailure {
  const e = err as {
    code?: string;
    retryAfter?: number;
    data?: { error?: string; needed?: unknown };
    statusCode?: number;
    original?: unknown;
    message?: string;
  };
  switch (e?.code) {
    case ErrorCode.RateLimitedError:
      return { kind: 'rateLimited', retryAfterMs: Math.max(1, e.retryAfter ?? 1) * 1000 };
    case ErrorCode.PlatformError: {
      const error = e.data?.error ?? 'unknown_error';
      if (FATAL.has(error)) {
        const needed = e.data?.needed;
        return { kind: 'fatal', error, ...(typeof needed === 'string' ? { needed } : {}) };
      }
      if (NOT_IN_CHANNEL.has(error)) return { kind: 'notInChannel', error };
      if (error === 'ratelimited') return { kind: 'rateLimited', retryAfterMs: 1000 };
      if (SERVER_TROUBLE.has(error)) return { kind: 'retry', error };
      if (BAD_MESSAGE.has(error)) return { kind: 'badMessage', error };
      return { kind: 'refused', error };
    }
    case ErrorCode.HTTPError:
      return (e.statusCode ?? 0) >= 500
        ? { kind: 'retry', error: `http_${e.statusCode}` }
        : { kind: 'refused', error: `http_${e.statusCode}` };
    case ErrorCode.RequestError:
      return { kind: 'retry', error: requestError(e.original) };
    default:
      return { kind: 'refused', error: e?.message ?? String(err) };
  }
}
