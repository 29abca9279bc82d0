import { ErrorCode, type FetchFunction } from '@slack/web-api';
import type { Logger } from 'pino';

// Whether Slack can be reached, said the way an operator needs it: which URL, and the network's
// own reason ("ECONNREFUSED 127.0.0.1:9", "ENOTFOUND slack.example"), not a bare "fetch failed".

interface ErrorLike {
  name?: string;
  message?: string;
  code?: string;
  address?: string;
  port?: number;
  hostname?: string;
  statusCode?: number;
  retryAfter?: number;
  data?: { error?: string };
  original?: unknown;
  cause?: unknown;
  errors?: unknown[];
}

/** The error a wrapper was made from: WebAPIRequestError.original, fetch's TypeError.cause. */
function innermost(err: unknown): ErrorLike {
  let current = err as ErrorLike;
  for (let depth = 0; depth < 5; depth++) {
    const inner = (current?.original ?? current?.cause) as ErrorLike | undefined;
    if (inner === undefined || inner === null || typeof inner !== 'object') break;
    current = inner;
  }
  return current ?? {};
}

function describeNetworkError(e: ErrorLike): string {
  // Several addresses tried (IPv6 and IPv4): each has its own reason.
  if (Array.isArray(e.errors) && e.errors.length > 0) {
    return [...new Set(e.errors.map((inner) => describeNetworkError(inner as ErrorLike)))].join(', ');
  }
  if (e.code !== undefined && e.address !== undefined) {
    return `${e.code} ${e.address}${e.port === undefined ? '' : `:${e.port}`}`;
  }
  if (e.code !== undefined && e.hostname !== undefined) return `${e.code} ${e.hostname}`;
  if (e.name === 'TimeoutError') return 'timed out';
  const message = e.message ?? String(e);
  if (e.code !== undefined && !message.includes(e.code)) return `${e.code}: ${message}`;
  return message;
}

/** Why a Slack call failed, in a few words: Slack's error code, an HTTP status, or the network's reason. */
export function describeSlackFailure(err: unknown): string {
  const e = (err ?? {}) as ErrorLike;
  switch (e.code) {
    case ErrorCode.PlatformError:
      return `Slack answered ${e.data?.error ?? 'an error'}`;
    case ErrorCode.HTTPError:
      return `HTTP ${e.statusCode}`;
    case ErrorCode.RateLimitedError:
      return `rate limited for ${e.retryAfter} s`;
    default:
      return describeNetworkError(innermost(err));
  }
}

/**
 * Says when Slack cannot be reached: one error line per URL and change of cause (a retry that
 * fails the same way goes to debug), and one line when that URL can be reached again.
 */
export class SlackReachability {
  /** URL → why the last call to it failed. */
  private readonly failing = new Map<string, string>();

  constructor(private readonly logger: Logger) {}

  failed(url: string, cause: string): void {
    const same = this.failing.get(url) === cause;
    this.failing.set(url, cause);
    if (same) this.logger.debug({ url, cause }, 'Slack still unreachable; retrying');
    else this.logger.error({ url, cause }, `cannot reach Slack at ${url}: ${cause}; retrying`);
  }

  reached(url: string): void {
    if (this.failing.delete(url)) this.logger.info({ url }, 'Slack reachable again');
  }

  /** The current trouble, for /readyz. */
  problem(): string | undefined {
    const [first] = this.failing;
    return first === undefined ? undefined : `cannot reach Slack at ${first[0]}: ${first[1]}`;
  }
}

/** A fetch that tells `reachability` how each call went: a network failure or a 5xx is trouble. */
export function observedFetch(fetch: FetchFunction, reachability: SlackReachability): FetchFunction {
  return async (url, init) => {
    const where = String(url);
    let response: Awaited<ReturnType<FetchFunction>>;
    try {
      response = await fetch(url, init);
    } catch (err) {
      reachability.failed(where, describeSlackFailure(err));
      throw err;
    }
    if (response.status >= 500) reachability.failed(where, `HTTP ${response.status}`);
    else reachability.reached(where);
    return response;
  };
}
