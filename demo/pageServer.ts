// The demo's web page and its small JSON API: static files from demo/public, one user's view of
// the workspace, server-sent events when it changes, and the user's clicks and submissions.

import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import { extname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { type DemoWorkspace, UnknownTargetError } from './workspace.js';

const PUBLIC_DIR = fileURLToPath(new URL('./public/', import.meta.url));
const MAX_BODY_BYTES = 64 * 1024;

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
};

// The page shows text an agent wrote: even if a renderer bug let markup through, nothing but the
// page's own scripts may run and nothing may be loaded from elsewhere.
const SECURITY_HEADERS = {
  'content-security-policy':
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

const User = z.string().regex(/^[UW][A-Z0-9]+$/);
const Values = z.record(z.string(), z.record(z.string(), z.record(z.string(), z.unknown())));
const Bodies = {
  action: z.object({
    user: User,
    channel: z.string().min(1),
    ts: z.string().min(1),
    actionId: z.string().min(1),
    blockId: z.string().optional(),
    value: z.string().optional(),
    text: z.string().optional(),
  }),
  submit: z.object({ user: User, viewId: z.string().min(1), values: Values }),
  close: z.object({ user: User, viewId: z.string().min(1) }),
  home: z.object({ user: User }),
  command: z.object({
    user: User,
    command: z.string().regex(/^\/[a-z0-9_-]+$/),
    text: z.string().max(4000),
  }),
};

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function send(res: http.ServerResponse, status: number, body: string, type: string): void {
  res.writeHead(status, { 'content-type': type, ...SECURITY_HEADERS });
  res.end(body);
}

function sendJson(res: http.ServerResponse, status: number, value: unknown): void {
  send(res, status, JSON.stringify(value), 'application/json; charset=utf-8');
}

async function readJson<T>(req: http.IncomingMessage, schema: z.ZodType<T>): Promise<T> {
  // A JSON content type cannot be sent cross-site without a CORS preflight, which this server
  // never grants: another site open in the browser cannot click buttons here.
  if (!(req.headers['content-type'] ?? '').startsWith('application/json')) {
    throw new HttpError(415, 'send application/json');
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) throw new HttpError(413, `body over ${MAX_BODY_BYTES} bytes`);
    chunks.push(chunk as Buffer);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, 'body is not JSON');
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    throw new HttpError(400, parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '));
  }
  return parsed.data;
}

export interface PageServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

export class PortInUseError extends Error {}

function listen(server: http.Server, port: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(
        err.code === 'EADDRINUSE'
          ? new PortInUseError(`countersign demo: port ${port} is in use; set DEMO_PORT to a free port`)
          : err,
      ),
    );
    server.listen(port, '127.0.0.1', () => resolve());
  });
}

/** Fails with PortInUseError now rather than after everything else has started. */
export async function checkPortFree(port: number): Promise<void> {
  const probe = http.createServer();
  await listen(probe, port);
  await new Promise<void>((resolve) => probe.close(() => resolve()));
}

export async function startPageServer(workspace: DemoWorkspace, port: number): Promise<PageServer> {
  const files = new Map<string, string>();
  for (const name of readdirSync(PUBLIC_DIR)) {
    if (CONTENT_TYPES[extname(name)]) files.set(`/${name}`, name);
  }
  files.set('/', 'index.html');

  const streams = new Set<http.ServerResponse>();
  let pending: NodeJS.Timeout | undefined;
  let seq = 0;
  const unsubscribe = workspace.onChange(() => {
    // A click changes a card several times within milliseconds: tell the pages once.
    pending ??= setTimeout(() => {
      pending = undefined;
      seq += 1;
      for (const s of streams) s.write(`event: change\ndata: ${seq}\n\n`);
    }, 20);
  });

  const routes: Record<string, (req: http.IncomingMessage, res: http.ServerResponse) => Promise<void>> = {
    'POST /api/action': async (req, res) => {
      const { user, ...press } = await readJson(req, Bodies.action);
      sendJson(res, 200, await workspace.press(user, press));
    },
    'POST /api/submit': async (req, res) => {
      const body = await readJson(req, Bodies.submit);
      sendJson(res, 200, await workspace.submitView(body.user, body.viewId, body.values));
    },
    'POST /api/close': async (req, res) => {
      const body = await readJson(req, Bodies.close);
      sendJson(res, 200, await workspace.closeView(body.user, body.viewId));
    },
    'POST /api/home': async (req, res) => {
      const body = await readJson(req, Bodies.home);
      sendJson(res, 200, await workspace.openHome(body.user));
    },
    'POST /api/command': async (req, res) => {
      const body = await readJson(req, Bodies.command);
      sendJson(res, 200, await workspace.command(body.user, body.command, body.text));
    },
  };

  const handle = async (req: http.IncomingMessage, res: http.ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (req.method === 'GET' && url.pathname === '/api/state') {
      const user = User.safeParse(url.searchParams.get('user'));
      if (!user.success || !workspace.isUser(user.data)) throw new HttpError(400, 'unknown user');
      sendJson(res, 200, workspace.stateFor(user.data));
      return;
    }
    if (req.method === 'GET' && url.pathname === '/api/events') {
      res.writeHead(200, {
        ...SECURITY_HEADERS,
        'content-type': 'text/event-stream',
        connection: 'keep-alive',
      });
      res.write(`retry: 1000\nevent: change\ndata: ${seq}\n\n`);
      streams.add(res);
      req.on('close', () => streams.delete(res));
      return;
    }
    const file = req.method === 'GET' ? files.get(url.pathname) : undefined;
    if (file) {
      send(res, 200, readFileSync(join(PUBLIC_DIR, file), 'utf8'), CONTENT_TYPES[extname(file)]!);
      return;
    }
    const route = routes[`${req.method} ${url.pathname}`];
    if (!route) throw new HttpError(404, `no ${req.method} ${url.pathname}`);
    await route(req, res);
  };

  const server = http.createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const status = err instanceof HttpError ? err.status : err instanceof UnknownTargetError ? 404 : 500;
      if (!res.headersSent)
        sendJson(res, status, { error: err instanceof Error ? err.message : String(err) });
      else res.end();
    });
  });
  await listen(server, port);
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('page server: no port');
  return {
    url: `http://localhost:${address.port}/`,
    port: address.port,
    async close() {
      unsubscribe();
      if (pending) clearTimeout(pending);
      for (const s of streams) s.end();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
