import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { type BufferedIncomingMessage, HTTPModuleFunctions } from '@slack/bolt';
import type { Logger } from 'pino';
import { type ChoicePress, choiceActionKind } from './listeners/choiceButton.js';

// A press on a choice button is what a person, and the agent behind them, wait on. Through Bolt
// it crosses the whole dispatch: the global middleware and the matching of every registered
// listener, about 0.6 ms of the 2.5 ms a press spent in the bot (`npm run bench`, click to
// decide). In HTTP mode this route reads and verifies the request with Bolt's own functions and
// hands a press straight to the press handler. Anything else, or anything it cannot verify, goes
// on to Bolt's receiver with the body already read (Bolt reuses it, verifies again and answers).

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
      let buffered: BufferedIncomingMessage;
      try {
        buffered = await HTTPModuleFunctions.parseAndVerifyHTTPRequest({ signingSecret }, req);
      } catch (err) {
        // Read but not verified: Bolt verifies again, and answers (and logs) as it always does.
        if (HTTPModuleFunctions.isBufferedIncomingMessage(req)) bolt(req, res);
        else unreadable(res, err, logger);
        return;
      }
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

/** A body that could not be read at all; answered as Bolt answers it. */
function unreadable(res: ServerResponse, err: unknown, logger: Logger): void {
  const tooLarge =
    HTTPModuleFunctions.isRawBodyError(err) &&
    ((err as { type?: string }).type === 'entity.too.large' ||
      (err as { statusCode?: number }).statusCode === 413);
  logger.warn({ err }, tooLarge ? 'request body too large' : 'could not read the request body');
  res.writeHead(tooLarge ? 413 : 400);
  res.end();
}
