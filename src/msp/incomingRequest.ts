// A request the host sent us (connection.ts): handed to the handler, answered exactly once
// with the id exactly as received.

import type { Logger } from 'pino';
import { MspError } from './errors.js';
import { isPlainObject, isThenable, type Json, type JsonRpcId, preview, previewId } from './jsonRpc.js';

/** A request the host sent us. */
export interface IncomingRequest {
  readonly id: JsonRpcId;
  readonly method: string;
  readonly params: unknown;
  /** True once a response went out. */
  readonly responded: boolean;
  /**
   * Writes the result at once, before the handler does anything else (approval/request is
   * answered with `{}` before the approval is handed on). Later responses are ignored.
   */
  respond(result: Record<string, unknown>): void;
  respondError(error: MspError): void;
}

/**
 * Returns the result object (or a promise of it), or throws an MspError for an error response.
 * If the handler already called `respond`, what it returns is ignored.
 */
export type RequestHandler = (request: IncomingRequest) => unknown;

/** How an answer goes out: the connection's side of serveRequest. */
export interface Responder {
  readonly logger: Logger;
  /** True once the connection takes no more writes. */
  isClosed(): boolean;
  /** Throws when the frame cannot be sent (e.g. too large). */
  send(message: Json): void;
}

/** Hands a host request to `handler` and answers it with what the handler returns or throws. */
export function serveRequest(
  id: JsonRpcId,
  method: string,
  params: unknown,
  handler: RequestHandler | undefined,
  responder: Responder,
): void {
  let responded = false;
  // What the host chose, as the log may show it.
  const logged = { id: previewId(id), method: preview(method) };
  const write = (message: Json): void => {
    if (responded) return;
    responded = true;
    if (responder.isClosed()) {
      responder.logger.debug(logged, 'not answering host request: connection closed');
      return;
    }
    try {
      responder.send(message);
    } catch (error) {
      responder.logger.warn({ err: error, ...logged }, 'could not answer host request');
    }
  };
  const request: IncomingRequest = {
    id,
    method,
    params,
    get responded() {
      return responded;
    },
    respond: (result) => write({ jsonrpc: '2.0', id, result }),
    respondError: (error) => write({ jsonrpc: '2.0', id, error: error.toJsonRpcError() }),
  };
  const fail = (error: unknown): void => {
    if (error instanceof MspError) {
      request.respondError(error);
      return;
    }
    responder.logger.error({ err: error, method: logged.method }, 'request handler threw');
    request.respondError(
      new MspError({ code: -32603, message: 'internal error', data: { kind: 'internal' } }),
    );
  };
  const answer = (result: unknown): void => {
    request.respond(isPlainObject(result) ? result : {});
  };

  if (handler === undefined) {
    request.respondError(MspError.methodNotFound(method));
    return;
  }
  let result: unknown;
  try {
    result = handler(request);
  } catch (error) {
    fail(error);
    return;
  }
  if (isThenable(result) || result instanceof Promise) {
    Promise.resolve(result).then(answer, fail);
  } else {
    answer(result);
  }
}
