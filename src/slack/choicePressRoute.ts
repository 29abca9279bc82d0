import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { type BufferedIncomingMessage, HTTPModuleFunctions, isValidSlackRequest } from '@slack/bolt';
import type { Logger } from 'pino';
import { LogBudget } from '../util/logBudget.js';
import { type ChoicePress, choiceActionKind } from './listeners/choiceButton.js';
import { pathOf } from './requestPath.js';
import { UnverifiedBytes } from './unverifiedBytes.js';

// A press on a choice button is what a person, and the agent behind them, wait on. Through Bolt
// it crosses the whole dispatch: the global middleware and the matching of every registered
// listener (its cost: docs/performance.md, "presses before Bolt"). In HTTP mode this route
// reads the body, checks Slack's signature with Bolt's own verifySlackRequest (one signature
// check to audit, Bolt's) and hands a press straight to the press handler. Anything else signed
// right goes on to Bolt's receiver with the body already read (Bolt reuses it, verifies again and
// answers). Bolt's check, a little dearer than a hand-written one, is kept: one signature check to
// audit (docs/performance.md, "One signature path"). Anything not signed right is answered 401
// here: Bolt would log a warn line for each, and whoever reaches the port chooses how many.
//
// Before any of the body is read, a request without Slack's signature headers, or with a
// timestamp more than five minutes off, is answered 401: it could never verify, so it holds no
// body bytes. A body must then arrive within BODY_DEADLINE_MS of its headers, or it is answered
// 408. Every refusal here is logged through one budget (ten lines a minute, then a count).
//
// A body past BODY_LIMIT_BYTES is answered 413 as soon as it is known to be, by its declared
// length or by the bytes read: nothing more is read or kept, and the connection is closed once
// the answer is written, so a sender that keeps sending holds neither memory nor the socket.
// Every body read counts against one cap for the whole server (unverifiedBytes.ts) until its
// request is done: one that would pass it is answered 503 the same way. Bolt's receiver reads a
// body only for a POST on its events path, and every such request is read here first (Bolt then
// reuses the body), so the cap bounds every body the port holds before verification.

/**
 * The largest body read, signed or not: a signature is checked over the whole body, so whoever
 * reaches the port gets this much held until the request ends (at most 3 s: BODY_DEADLINE_MS).
 * Bolt's own 4 MB is past what Slack sends this app. The largest is a press in "View full", whose
 * modal (at most 100 blocks of 3,000 characters) comes back whole in the payload: filled with
 * shell commands and paths, about 0.6 MB as Slack sends it (JSON escaping `/` and `"`, then
 * form-encoded); filled with non-ASCII text, up to 8 bytes a character (`\uXXXX`, form-encoded),
 * about 2.4 MB. A card's own press and our modals' submissions are tens of KB. 3 MB takes every
 * press Slack can send; what it bounds is what a stranger holds per connection (3 s at most).
 */
export const BODY_LIMIT_BYTES = 3 * 1024 * 1024;

export interface ChoicePressRouteOptions {
  signingSecret: string;
  /** Where Slack sends interactions (Bolt's events endpoint). */
  path: string;
  press: ChoicePress;
  /** Bolt's receiver, which serves everything else. */
  bolt: RequestListener;
  logger: Logger;
  /** The count the bodies read share, one for the server (a new one unless given). */
  unverified?: UnverifiedBytes;
}

/** The server's request listener: choice presses here, everything else to Bolt. */
export function choicePressRoute(options: ChoicePressRouteOptions): RequestListener {
  const { signingSecret, path, press, bolt, logger } = options;
  const unverified = options.unverified ?? new UnverifiedBytes();
  const refusals = new LogBudget(logger, {
    summary: `more requests refused on ${path} (unsigned, stale, too large, too slow or no room)`,
  });
  return (req, res) => {
    const requestPath = pathOf(req);
    if (requestPath === undefined) {
      // Bolt's receiver would throw on it, and log every one at error level as its own failure:
      // whoever can reach the port could fill the log with error lines.
      res.writeHead(400);
      res.end();
      return;
    }
    if (req.method !== 'POST' || requestPath !== path) {
      bolt(req, res);
      return;
    }
    const unsigned = unsignedHeaders(req);
    if (unsigned !== undefined) {
      refusals.warn({}, unsigned);
      refuseAndClose(req, res, 401);
      return;
    }
    void (async () => {
      const share = shareOf(unverified, res);
      let body: Buffer | typeof TOO_LARGE | typeof NO_ROOM | typeof TOO_SLOW;
      try {
        body = await readBody(req, BODY_LIMIT_BYTES, share.take);
      } catch (err) {
        share.release();
        refusals.warn({ err }, 'could not read the request body');
        res.writeHead(400);
        res.end();
        return;
      }
      if (body === TOO_LARGE) {
        share.release();
        refusals.warn({ limit: BODY_LIMIT_BYTES }, 'request body too large');
        refuseAndClose(req, res, 413);
        return;
      }
      if (body === NO_ROOM) {
        share.release();
        refusals.warn({ limit: unverified.limit }, 'too many request bodies held unverified');
        refuseAndClose(req, res, 503);
        return;
      }
      if (body === TOO_SLOW) {
        share.release();
        refusals.warn({ deadlineMs: BODY_DEADLINE_MS }, 'request body not arrived in time after its headers');
        refuseAndClose(req, res, 408);
        return;
      }
      const text = body.toString();
      if (jsonLabelledAForm(req, text)) {
        // The content type is not signed: a JSON body Slack signed (an event quoting a user's
        // text) sent again labelled a form would be read as one, by Bolt too, and a quoted
        // `&payload=...` in it would be taken as an interaction. Slack never sends JSON as a form.
        refusals.warn({}, 'a JSON body labelled a form; refused');
        res.writeHead(400);
        res.end();
        return;
      }
      if (!signedBySlack(signingSecret, req, text)) {
        // Bolt would answer the same 401, with a warn line of its own for each.
        refusals.warn(
          {},
          "request signature does not verify (is SLACK_SIGNING_SECRET this app's?); answered 401",
        );
        res.writeHead(401);
        res.end();
        return;
      }
      const buffered = Object.assign(req, { rawBody: body }) as BufferedIncomingMessage;
      const taken = pressIn(buffered);
      if (!taken) {
        bolt(buffered, res);
        return;
      }
      const ack = async (): Promise<void> => {
        if (res.headersSent) return;
        res.writeHead(200);
        res.end();
      };
      try {
        await press(taken.body, ack, taken.how);
      } catch (err) {
        // As Bolt's listeners would: logged, and a 500 if Slack has not been answered yet.
        logger.error({ err }, 'slack listener failed');
        if (!res.headersSent) {
          res.writeHead(500);
          res.end();
        }
      }
    })();
  };
}

/** The content type Slack sends an interaction or a command in (Bolt reads a body as a form only with it). */
const FORM = 'application/x-www-form-urlencoded';

/** Whether the request says its body is a form while the body is JSON. */
function jsonLabelledAForm(req: IncomingMessage, text: string): boolean {
  return req.headers['content-type'] === FORM && /^\s*[{[]/.test(text);
}

/**
 * The press a verified request carries, if it is exactly one on a choice button. Its body is
 * read as Bolt reads it (a JSON body labelled a form never gets here: jsonLabelledAForm).
 */
function pressIn(req: BufferedIncomingMessage): { body: unknown; how: { remember: boolean } } | undefined {
  if (req.headers['content-type'] !== FORM) return undefined;
  let body: { type?: unknown; actions?: unknown };
  try {
    body = HTTPModuleFunctions.parseHTTPRequestBody(req);
  } catch {
    return undefined;
  }
  if (body?.type !== 'block_actions' || !Array.isArray(body.actions) || body.actions.length !== 1) {
    return undefined;
  }
  const actionId = (body.actions[0] as { action_id?: unknown } | null)?.action_id;
  const how = typeof actionId === 'string' ? choiceActionKind(actionId) : undefined;
  return how ? { body, how } : undefined;
}

const TOO_LARGE = Symbol('too large');
const NO_ROOM = Symbol('no room');
const TOO_SLOW = Symbol('too slow');

/**
 * How long a body may take to arrive once its headers have. Slack sends a request whole, at once,
 * and gives up on an answer after 3 s: a body slower than that can never be answered in time, and
 * only holds its bytes against the server's cap (unverifiedBytes.ts) meanwhile.
 */
export const BODY_DEADLINE_MS = 3_000;

/** A request's part of the server's count: what it takes, all released once it is done with. */
function shareOf(
  unverified: UnverifiedBytes,
  res: ServerResponse,
): { take: (bytes: number) => boolean; release: () => void } {
  let taken = 0;
  const release = (): void => {
    unverified.release(taken);
    taken = 0;
  };
  // Answered, or the connection gone (the sender gave up, or the request deadline closed it).
  res.once('close', release);
  const take = (bytes: number): boolean => {
    if (!unverified.take(bytes)) return false;
    taken += bytes;
    return true;
  };
  return { take, release };
}

/**
 * The request's body, whole; TOO_LARGE as soon as it is known to pass `limit` (declared so, or
 * more bytes arrived), NO_ROOM as soon as `take` refuses a chunk, TOO_SLOW when it has not ended
 * within BODY_DEADLINE_MS: from then on nothing more is read or kept.
 */
function readBody(
  req: IncomingMessage,
  limit: number,
  take: (bytes: number) => boolean,
): Promise<Buffer | typeof TOO_LARGE | typeof NO_ROOM | typeof TOO_SLOW> {
  if (Number(req.headers['content-length']) > limit) return Promise.resolve(TOO_LARGE);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (): void => {
      clearTimeout(deadline);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    const onEnd = () => {
      done();
      resolve(Buffer.concat(chunks, size));
    };
    const onError = (err: Error) => {
      done();
      reject(err);
    };
    const refuse = (refused: typeof TOO_LARGE | typeof NO_ROOM | typeof TOO_SLOW): void => {
      // What was read goes now, not when the connection closes (LINGER_MS later): its bytes
      // are counted free at once, so they must be free.
      done();
      chunks.length = 0;
      req.pause();
      resolve(refused);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      const refused = size > limit ? TOO_LARGE : take(chunk.length) ? undefined : NO_ROOM;
      if (refused === undefined) {
        chunks.push(chunk);
        return;
      }
      refuse(refused);
    };
    const deadline = setTimeout(() => refuse(TOO_SLOW), BODY_DEADLINE_MS);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
  });
}

/** How long a refused connection stays half open after its answer, read no further, before it is reset. */
const LINGER_MS = 2_000;

/**
 * The `Retry-After` of a 503 for no room under the server's cap, in seconds. Room comes back as
 * the bodies held are answered: Slack sends a body whole at once, so a cap filled by its requests
 * is free again within about a second. One filled by senders holding bodies open frees only as
 * their bodies' deadline passes (BODY_DEADLINE_MS), and they may open more: a longer hint would
 * not outwait them, and would only delay the retry that finds room in the first case. So one
 * second: time enough for Slack's own to clear, and no more.
 */
const NO_ROOM_RETRY_AFTER_S = 1;

/**
 * `status` (413, as Bolt's receiver answers a body over its limit; 503 for no room under the
 * server's cap, with a `Retry-After`; 401 for headers that could never verify, 408 for a body
 * too slow), and the connection closed rather than read to its end.
 * Node would close it the moment the answer is written (destroySoon, for `connection: close`):
 * with the refused body still arriving, the kernel then resets the connection, and a sender still
 * writing may lose the answer before it reads it (a busy test machine saw it about one time in
 * five). So, as nginx's lingering close: the answer and the end of our side go out, nothing more
 * is read (the request stays paused), and the socket is destroyed LINGER_MS later, or as soon as
 * the sender closes.
 */
function refuseAndClose(req: IncomingMessage, res: ServerResponse, status: 401 | 408 | 413 | 503): void {
  const { socket } = req;
  socket.destroySoon = function lingeringClose(this: typeof socket) {
    this.end();
    const reset = setTimeout(() => this.destroy(), LINGER_MS);
    reset.unref();
    this.once('close', () => clearTimeout(reset));
  };
  // A 413 is no use sending again; a 503 is, once some room is free.
  const retry = status === 503 ? { 'retry-after': String(NO_ROOM_RETRY_AFTER_S) } : {};
  res.writeHead(status, { connection: 'close', ...retry });
  res.end();
}

/** How far either side of this clock a request's timestamp may be (Slack's five minutes). */
const SIGNED_WITHIN_S = 5 * 60;

/**
 * Why the request's headers could never verify, before its body is read: no signature or
 * timestamp, or a timestamp more than five minutes from this clock. Bolt refuses only a timestamp
 * more than five minutes old, not one ahead of this clock: with this clock behind Slack's, a
 * request caught on the way could be replayed for as long as the clocks differ. Slack's guidance
 * is five minutes either way. Undefined when they may.
 */
function unsignedHeaders(req: IncomingMessage): string | undefined {
  const timestamp = req.headers['x-slack-request-timestamp'];
  if (typeof req.headers['x-slack-signature'] !== 'string' || typeof timestamp !== 'string') {
    return 'request without Slack signature headers; answered 401';
  }
  const offBy = Number(timestamp) - Date.now() / 1000;
  if (!Number.isFinite(offBy)) return 'request with a timestamp that is no number; answered 401';
  if (offBy > SIGNED_WITHIN_S) return 'request signed more than five minutes ahead of this clock; refused';
  if (offBy < -SIGNED_WITHIN_S) return 'request signed more than five minutes ago; answered 401';
  return undefined;
}

/**
 * Slack's v0 signature (slack-platform.md §3), checked by Bolt's verifySlackRequest over the body
 * as text, as Bolt's receiver checks it: signed at most five minutes ago, with this secret, this
 * timestamp and this body.
 */
export function signedBySlack(secret: string, req: IncomingMessage, body: string, nowMs?: number): boolean {
  const timestamp = req.headers['x-slack-request-timestamp'];
  const signature = req.headers['x-slack-signature'];
  if (typeof timestamp !== 'string' || typeof signature !== 'string') return false;
  return isValidSlackRequest({
    signingSecret: secret,
    body,
    headers: { 'x-slack-signature': signature, 'x-slack-request-timestamp': Number(timestamp) },
    ...(nowMs === undefined ? {} : { nowMilliseconds: nowMs }),
  });
}
