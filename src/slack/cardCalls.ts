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
import { withoutUnfurls } from './noUnfurls.js';
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

/** What came back for one request: the status, Retry-After, and the body of a 200. */
interface Exchanged {
  status: number;
  retryAfter: string | undefined;
  body: Buffer;
}

/**
 * One request over the pool, its answer gathered whole. undici's request() wraps every answer in
 * a Readable stream and an async resource, read back through a promise per chunk; a card call
 * only ever wants a few KB at once, so the pool's own handler interface collects them directly.
 */
function exchange(dispatcher: Dispatcher, options: Dispatcher.DispatchOptions): Promise<Exchanged> {
  return new Promise((resolve, reject) => {
    let status = 0;
    let retryAfter: string | undefined;
    const chunks: Buffer[] = [];
    dispatcher.dispatch(options, {
      // Its presence tells the pool this handler speaks undici's current handler interface.
      onRequestStart() {},
      onResponseStart(_controller, statusCode, answerHeaders) {
        // An informational answer (1xx) is not the answer.
        if (statusCode < 200) return;
        status = statusCode;
        const value = answerHeaders['retry-after'];
        retryAfter = Array.isArray(value) ? value[0] : value;
      },
      onResponseData(_controller, chunk) {
        // Only a 200's body is read; any other answer is told by its status alone.
        if (status === 200) chunks.push(chunk);
      },
      onResponseEnd() {
        resolve({ status, retryAfter, body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) });
      },
      onResponseError(_controller, err) {
        reject(err);
      },
    });
  });
}

export function directCardCalls(settings: DirectCardCallSettings): CardCalls {
  const timeoutMs = settings.timeoutMs ?? DEFAULT_SLACK_TIMEOUT_MS;
  const headers = {
    authorization: `Bearer ${settings.token}`,
    'content-type': 'application/json; charset=utf-8',
  };

  // Given to the pool as origin and path: undici's request(url, options) parses the URL and copies
  // the options into a new object (`{ ...options, origin, path }`), and V8 builds new hidden
  // classes for such an object on every call (docs/performance.md, "Object shapes").
  const api = new URL(settings.apiUrl);
  const paths = {
    'chat.postMessage': `${api.pathname}chat.postMessage`,
    'chat.update': `${api.pathname}chat.update`,
  };

  async function call(method: keyof typeof paths, body: object): Promise<SlackAnswer> {
    let status: number;
    let retryAfter: string | undefined;
    let answer: SlackAnswer;
    try {
      // The pool's own timeouts, not an AbortSignal: each AbortController costs Node three new
      // hidden classes. No answer within timeoutMs, or a body stalled for as long, fails the call
      // (undici checks its timeouts on a half-second tick: a little later, never sooner).
      const exchanged = await exchange(settings.dispatcher, {
        origin: api.origin,
        path: paths[method],
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
      });
      ({ status, retryAfter } = exchanged);
      answer = status === 200 ? readAnswer(exchanged.body) : {};
    } catch (err) {
      // No answer, or one cut off: Slack may or may not have applied the call.
      throw new WebAPIRequestError(err instanceof Error ? err : new Error(String(err)));
    }
    if (status === 429) {
      const seconds = Number(retryAfter);
      throw new WebAPIRateLimitedError(Number.isFinite(seconds) ? seconds : 1);
    }
    if (status !== 200) throw new WebAPIHTTPError(status, `HTTP ${status}`, {});
    if (!answer.ok)
      throw new WebAPIPlatformError({ ...answer, ok: false, error: answer.error ?? 'unknown_error' });
    return answer;
  }

  return {
    async postMessage(args) {
      const { ts, channel } = await call('chat.postMessage', withoutUnfurls(args));
      return { ts, channel };
    },
    async update(args) {
      await call('chat.update', args);
    },
  };
}
