// An HTTP/1.1 request written by hand on a socket, for what fetch cannot do: a body that keeps
// coming after the server has answered, a length declared and never sent.

import net from 'node:net';

export interface RawRequest {
  socket: net.Socket;
  /** The answer's status line (`HTTP/1.1 413 Payload Too Large`), once it arrives. */
  statusLine: Promise<string>;
  /** Once the connection is closed, by either side. */
  closed: Promise<void>;
}

/** Opens a connection to `url`'s host and writes the request line and `headers`, nothing more. */
export async function openRawRequest(
  url: string,
  method: string,
  headers: Record<string, string>,
): Promise<RawRequest> {
  const { hostname, port, pathname } = new URL(url);
  const socket = net.connect(Number(port), hostname);
  // A server that stops reading may reset the connection: the answer before it is what counts.
  socket.on('error', () => {});
  let received = '';
  const statusLine = new Promise<string>((resolve) => {
    socket.on('data', (data: Buffer) => {
      received += data.toString('latin1');
      const end = received.indexOf('\r\n');
      if (end >= 0) resolve(received.slice(0, end));
    });
  });
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  const head = Object.entries({ host: `${hostname}:${port}`, ...headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  socket.write(`${method} ${pathname} HTTP/1.1\r\n${head}\r\n`);
  return { socket, statusLine, closed };
}

/**
 * Writes chunks of a chunked body, `chunkBytes` each, while the connection lasts and until
 * `upTo` bytes are written, never the last chunk that would end the body. Resolves with the
 * number of body bytes handed to the socket.
 */
export async function sendChunks(request: RawRequest, upTo: number, chunkBytes = 64 * 1024): Promise<number> {
  const { socket, closed } = request;
  const data = Buffer.alloc(chunkBytes, 'x');
  const frame = Buffer.concat([Buffer.from(`${chunkBytes.toString(16)}\r\n`), data, Buffer.from('\r\n')]);
  let sent = 0;
  while (sent < upTo && !socket.destroyed) {
    const flushed = socket.write(frame);
    sent += chunkBytes;
    if (!flushed) await Promise.race([new Promise((resolve) => socket.once('drain', resolve)), closed]);
  }
  return sent;
}

/** `promise`, or an error naming `what` after `ms`. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: nothing within ${ms} ms`)), ms);
  });
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}
