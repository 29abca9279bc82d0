import type { IncomingMessage, RequestListener } from 'node:http';
import {
  type BufferedIncomingMessage,
  defaultBodyLimit,
  HTTPModuleFunctions,
  isValidSlackRequest,
} from '@slack/bolt';
import type { Logger } from 'pino';
import { type ChoicePress, choiceActionKind } from './listeners/choiceButton.js';

// A press on a choice button is what a person, and the agent behind them, wait on. Through Bolt
// it crosses the whole dispatch: the global middleware and the matching of every registered
// listener, about 0.6 ms of the 2.5 ms a press spent in the bot (`npm run bench`, click to
// decide). In HTTP mode this route reads the body, checks Slack's signature with Bolt's own
// verifySlackRequest (one signature check to audit, Bolt's) and hands a press straight to the
// press handler. Anything else, or anything not signed right, goes on to Bolt's receiver with
// the body already read (Bolt reuses it, verifies again and answers).

export interface ChoicePressRouteOptions {
  signingSecret: string;
  /** Where Slack sends interactions (Bolt's events endpoint). */
  path: string;
  press: ChoicePress;
  /** Bolt's receiver, which serves everything else. */
  bolt: RequestListener;
  logger: Logger;
}

/** The server's request listener: choice presses here, everything else to Bolt. */
export function choicePressRoute(options: ChoicePressRouteOptions): RequestListener {
  const { signingSecret, path, press, bolt, logger } = options;
  return (req, res) => {
    if (req.method !== 'POST' || pathOf(req) !== path) {
      bolt(req, res);
      return;
    }
    void (async () => {
      let body: Buffer | undefined;
      try {
        body = await readBody(req, defaultBodyLimit);
      } catch (err) {
        logger.warn({ err }, 'could not read the request body');
        res.writeHead(400);
        res.end();
        return;
      }
      if (body === undefined) {
        // As Bolt's receiver answers a body over its limit.
        logger.warn({ limit: defaultBodyLimit }, 'request body too large');
        res.writeHead(413);
        res.end();
        return;
      }
      const buffered = Object.assign(req, { rawBody: body }) as BufferedIncomingMessage;
      // Not signed right: Bolt verifies again, and answers (and logs) as it always does.
      const taken = signedBySlack(signingSecret, req, body.toString()) ? pressIn(buffered) : undefined;
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

/** The press a verified request carries, if it is exactly one on a choice button. */
function pressIn(req: BufferedIncomingMessage): { body: unknown; how: { remember: boolean } } | undefined {
  if (req.headers['content-type'] !== 'application/x-www-form-urlencoded') return undefined;
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

function pathOf(req: IncomingMessage): string {
  const url = req.url ?? '/';
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
}

/** The request's body, whole; undefined when it is larger than `limit` (the rest is dropped). */
function readBody(req: IncomingMessage, limit: number): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
    });
    req.once('end', () => resolve(size <= limit ? Buffer.concat(chunks, size) : undefined));
    req.once('error', reject);
  });
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
