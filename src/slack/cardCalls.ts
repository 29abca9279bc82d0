import {
  type ChatPostMessageArguments,
  type ChatUpdateArguments,
  WebAPIHTTPError,
  WebAPIPlatformError,
  WebAPIRateLimitedError,
  WebAPIRequestError,
  type WebClient,
} from '@slack/web-api';
import type { Dispatcher } from 'undici';
import { DEFAULT_SLACK_TIMEOUT_MS } from './webClient.js';

// The two calls every approval makes, chat.postMessage and chat.update, sent straight as JSON
// over the bot's one connection pool. The Web API client does more per call than the call itself:
// it serializes the whole card into a form, and builds (then drops, at info) two debug lines that
// copy the request and the answer through a recursive token redaction. Failures are thrown as
// the client's own errors, so retries, 429s and health read them exactly as before.

/** A posted card's place: Slack answers with the channel's ID even when posted to by name. */
export interface PostedMessage {
  ts?: string;
  channel?: string;
}

export interface CardCalls {
  postMessage(args: ChatPostMessageArguments): Promise<PostedMessage>;
  update(args: ChatUpdateArguments): Promise<void>;
}

/** The same calls through a Web API client: for tests and tools that hold only a client. */
export function webClientCardCalls(client: WebClient): CardCalls {
  return {
    postMessage: (args) => client.chat.postMessage(args),
    update: async (args) => {
      await client.chat.update(args);
    },
  };
}

export interface DirectCardCallSettings {
  token: string;
  /** Ends with "/" (config.ts makes sure). */
  apiUrl: string;
  /** The pool every Slack call of the process shares (slackFetch.ts). */
  dispatcher: Dispatcher;
  timeoutMs?: number;
}

export interface SlackAnswer {
  ok?: boolean;
  error?: string;
  ts?: string;
  channel?: string;
}

/**
 * Slack answers a card call with the whole message echoed back (every block, several KB). Only
 * `ok`, `channel` and `ts` are read, and Slack writes them first: an answer that starts as
 * expected is read from its first bytes; any other (an error, another shape) is parsed whole.
 */
const ANSWER_HEAD = /^\{"ok":true,"channel":"([\w.-]+)","ts":"([\w.-]+)"[,}]/;

export function readAnswer(body: Buffer): SlackAnswer {
  const head = ANSWER_HEAD.exec(body.toString('latin1', 0, Math.min(body.length, 128)));
  if (!head) return JSON.parse(body.toString('utf8')) as SlackAnswer;
  return { ok: true, channel: head[1], ts: head[2] };
}

export function directCardCalls(settings: DirectCardCallSettings): CardCalls {
  const timeoutMs = settings.timeoutMs ?? DEFAULT_SLACK_TIMEOUT_MS;
  const headers = {
    authorization: `Bearer ${settings.token}`,
    'content-type': 'application/json; charset=utf-8',
  };

  // Given to the pool as they are: undici's request(url, options) parses the URL and copies the
  // options into a new object (`{ ...options, origin, path }`), and V8 builds new hidden classes
  // for such an object on every call (docs/performance.md, "Object shapes").
  const api = new URL(settings.apiUrl);
  const paths = {
    'chat.postMessage': `${api.pathname}chat.postMessage`,
    'chat.update': `${api.pathname}chat.update`,
  };

  async function call(method: keyof typeof paths, body: object): Promise<SlackAnswer> {
    let answer: SlackAnswer;
    let status: number;
    let retryAfter: string | string[] | undefined;
    try {
      // The pool's own timeouts, not an AbortSignal: each AbortController costs Node three new
      // hidden classes. No answer within timeoutMs, or a body stalled for as long, fails the call
      // (undici checks its timeouts on a half-second tick: a little later, never sooner).
      const res = await settings.dispatcher.request({
        origin: api.origin,
        path: paths[method],
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      status = res.statusCode;
      retryAfter = res.headers['retry-after'];
      if (status !== 200) {
        await res.body.dump();
        answer = {};
      } else {
        answer = readAnswer(Buffer.from(await res.body.arrayBuffer()));
      }
    } catch (err) {
      // No answer, or one cut off: Slack may or may not have applied the call.
      throw new WebAPIRequestError(err instanceof Error ? err : new Error(String(err)));
    }
    if (status === 429) {
      const seconds = Number(Array.isArray(retryAfter) ? retryAfter[0] : retryAfter);
      throw new WebAPIRateLimitedError(Number.isFinite(seconds) ? seconds : 1);
    }
    if (status !== 200) throw new WebAPIHTTPError(status, `HTTP ${status}`, {});
    if (!answer.ok)
      throw new WebAPIPlatformError({ ...answer, ok: false, error: answer.error ?? 'unknown_error' });
    return answer;
  }

  return {
    async postMessage(args) {
      const { ts, channel } = await call('chat.postMessage', args);
      return { ts, channel };
    },
    async update(args) {
      await call('chat.update', args);
    },
  };
}
