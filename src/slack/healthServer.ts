import {
  createServer,
  type IncomingMessage,
  type RequestListener,
  type Server,
  type ServerOptions,
  type ServerResponse,
} from 'node:http';
import type { CustomRoute } from '@slack/bolt';
import type { Logger } from 'pino';
import { ConfigError } from '../config/common.js';
import { pathOf } from './requestPath.js';

// In Socket Mode no HTTP receiver carries the health routes, so they get a server of their own
// on PORT. Ours rather than the one Bolt's SocketModeReceiver can start: that one listens with
// no error listener, so a port in use would crash the process with a stack trace.

/**
 * How every server the bot listens with bounds a request. Slack sends a request whole, at once,
 * and waits 3 s for the answer; Node's defaults (300 s for a request, 60 s for its headers) let
 * whoever reaches the port hold a connection, and the body read so far, for minutes. A request
 * not arrived whole within 15 s (its headers within 10 s) is answered 408 and closed. Node checks
 * the deadlines every `connectionsCheckingInterval`: its 30 s default would stretch 15 s to 45.
 */
export const SERVER_LIMITS: ServerOptions = {
  headersTimeout: 10_000,
  requestTimeout: 15_000,
  connectionsCheckingInterval: 1_000,
};

/**
 * A server for `routes` (exactRoutes); anything else is 404. Anyone who can reach the port can
 * send it anything, so a request line whose path is not a URL (`//` reads as one with no host) is
 * answered 400.
 */
export function healthServer(routes: CustomRoute[], logger: Logger): Server {
  return createServer(SERVER_LIMITS, exactRoutes(routes, logger, notFound));
}

/**
 * `routes` matched by exact path and method, the same on every port (Bolt's custom routes would
 * match `/HEALTHZ` and `/healthz/` too); anything else goes to `otherwise`. A route that throws
 * is answered 500: an uncaught throw here would end the process, with no drain.
 */
export function exactRoutes(
  routes: CustomRoute[],
  logger: Logger,
  otherwise: RequestListener,
): RequestListener {
  return (req, res) => {
    const path = pathOf(req);
    const route = routes.find((r) => r.path === path && [r.method].flat().includes(req.method ?? ''));
    if (route === undefined) {
      otherwise(req, res);
      return;
    }
    void Promise.resolve()
      .then(() => route.handler(Object.assign(req, { params: {} }), res))
      .catch((err: unknown) => {
        // The error's kind only: its message and fields may quote the request.
        logger.error(
          { error: (err as Error | undefined)?.name, code: errorCode(err) },
          'health request failed',
        );
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
  };
}

/** 404; 400 for a path that is not a URL. */
function notFound(req: IncomingMessage, res: ServerResponse): void {
  res.writeHead(pathOf(req) === undefined ? 400 : 404);
  res.end();
}

function errorCode(err: unknown): string | undefined {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

/** The one-line error for a port that cannot be listened on, or the error itself; `name`: its setting. */
export function portError(err: unknown, port: number, name = 'PORT'): unknown {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE') {
    return new ConfigError(
      name,
      `${name} ${port} is already in use by another process: stop that process, or set ${name} to a free port`,
    );
  }
  if (code === 'EACCES') {
    return new ConfigError(
      name,
      `${name} ${port} needs privileges this process does not have: use a port above 1023`,
    );
  }
  return err;
}

/** Listens on `port` (the setting `name`); rejects with portError's answer when it cannot. */
export function listen(server: Server, port: number, name = 'PORT'): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: Error): void => {
      server.off('listening', onListening);
      reject(portError(err, port, name));
    };
    const onListening = (): void => {
      server.off('error', onError);
      resolve();
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port);
  });
}

/** Stops listening and ends idle keep-alive connections; resolves once the server is closed. */
export function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}
