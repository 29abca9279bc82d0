import {
  type ChatPostMessageArguments,
  type ChatUpdateArguments,
  WebAPIHTTPError,
  WebAPIPlatformError,
  WebAPIRateLimitedError,
  WebAPIRequestError,
  type WebClient,
} from '@slack/web-api';
import { type Dispatcher, request } from 'undici';
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

  // Parsed once: undici parses a URL given as a string on every call.
  const urls = {
    'chat.postMessage': new URL(`${settings.apiUrl}chat.postMessage`),
    'chat.update': new URL(`${settings.apiUrl}chat.update`),
  };

  async function call(method: keyof typeof urls, body: object): Promise<SlackAnswer> {
    let answer: SlackAnswer;
    let status: number;
    let retryAfter: string | string[] | undefined;
    // A timer of our own, cleared with the answer: AbortSignal.timeout() would keep the call (its
    // body, the card) reachable for the whole timeout after it ended, thousands of them under load.
    const abort = new AbortController();
    const timer = setTimeout(
      () => abort.abort(new DOMException('no answer in time', 'TimeoutError')),
      timeoutMs,
    );
    try {
      const res = await request(urls[method], {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        dispatcher: settings.dispatcher,
        signal: abort.signal,
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
    } finally {
      clearTimeout(timer);
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
      return { ...(ts ? { ts } : {}), ...(channel ? { channel } : {}) };
    },
    async update(args) {
      await call('chat.update', args);
    },
  };
}
