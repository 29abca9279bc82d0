import type { FetchFunction } from '@slack/web-api';
import { Agent, type Dispatcher, request } from 'undici';

/** The one keep-alive pool of the process's Slack calls (the client's and cardCalls.ts's). */
export function createSlackPool(): Dispatcher {
  return new Agent({
    keepAliveTimeout: 30_000,
    keepAliveMaxTimeout: 60_000,
    keepAliveTimeoutThreshold: 500,
  });
}

/**
 * The transport every Slack Web API client uses: undici's request() over one keep-alive pool,
 * behind the fetch signature the client takes.
 *
 * Node 20's built-in fetch trusts a server's `Keep-Alive: timeout=` hint minus a 2 s margin, so
 * a server that hints a short timeout gets a new TCP connection for every call; and fetch's
 * spec machinery (Request, Response, streams) costs more CPU per call than the call's I/O. The
 * numbers are in docs/performance.md.
 */
export function createSlackFetch(dispatcher: Dispatcher = createSlackPool()): FetchFunction {
  return async (url, init = {}) => {
    const res = await request(url, {
      method: (init.method ?? 'GET') as 'POST',
      headers: init.headers,
      // The client sends forms as strings; FormData only for file uploads, which it never makes.
      body: init.body as string | undefined,
      signal: init.signal,
      dispatcher,
    });
    const text = await res.body.text();
    const headers = new Headers();
    for (const [name, value] of Object.entries(res.headers)) {
      if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    }
    const noBody = res.statusCode === 204 || res.statusCode === 304;
    return new Response(noBody ? null : text, { status: res.statusCode, headers });
  };
}
