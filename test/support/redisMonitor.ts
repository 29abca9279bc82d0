// A MONITOR connection for tests that count what the bot sends, on a plain socket. ioredis's
// monitor() breaks when a monitored line arrives in the same read as MONITOR's own +OK (other
// test files' traffic on a shared server): it throws "Command queue state error" from its socket
// handler, an uncaught exception that fails the whole run, out of reach of any retry. MONITOR's
// output is simple lines, read here without a command queue.

import { EventEmitter } from 'node:events';
import { connect, type Socket } from 'node:net';

/** `+<time> [<db> <source>] "<arg>" "<arg>" …`; the source is `lua` or a client's address. */
const LINE = /^\+(\S+) \[(\d+) (\S+)\] (.*)$/;
/** One quoted argument, with the escapes Redis writes (sdscatrepr). */
const ARG = /"((?:\\.|[^"\\])*)"/g;
const ESCAPES: Record<string, string> = { n: '\n', r: '\r', t: '\t', a: '\x07', b: '\b' };

function unquoted(text: string): string {
  return text.replace(/\\(x[0-9a-fA-F]{2}|.)/g, (_all, e: string) =>
    e.length === 3 ? String.fromCharCode(Number.parseInt(e.slice(1), 16)) : (ESCAPES[e] ?? e),
  );
}

/** What one monitored line says: its time, its arguments, its source and its database. */
type MonitorEvent = [time: string, args: string[], source: string, database: string];

/** A MONITOR session: 'monitor' events as ioredis sends them (time, args, source, database). */
export interface Monitor {
  on(
    event: 'monitor',
    listener: (time: string, args: string[], source: string, database: string) => void,
  ): this;
  disconnect(): void;
}

/** A connection in monitor mode on the server at `url` (redis://[:password@]host:port); disconnect it when done. */
export async function startMonitor(url: string): Promise<Monitor> {
  const target = new URL(url);
  const password = decodeURIComponent(target.password);
  const user = decodeURIComponent(target.username);
  const socket: Socket = connect(Number(target.port || 6379), target.hostname);
  const events = new EventEmitter();
  // AUTH, if sent, answers +OK first; MONITOR's +OK is the last before its lines.
  let oksToCome = password ? 2 : 1;
  let buffered = '';
  const held: MonitorEvent[] = [];
  const ready = new Promise<void>((resolve, reject) => {
    socket.on('error', reject);
    socket.on('data', (chunk: string) => {
      buffered += chunk;
      for (let end = buffered.indexOf('\r\n'); end >= 0; end = buffered.indexOf('\r\n')) {
        const line = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        if (oksToCome > 0) {
          if (line !== '+OK') reject(new Error(`MONITOR refused: ${line}`));
          else if (--oksToCome === 0) resolve();
          continue;
        }
        const parts = LINE.exec(line);
        if (!parts) continue;
        const args = [...parts[4]!.matchAll(ARG)].map((m) => unquoted(m[1]!));
        const event: MonitorEvent = [parts[1]!, args, parts[3]!, parts[2]!];
        // Lines in the read that brought +OK come before the caller could listen: held for it.
        if (events.listenerCount('monitor') === 0) held.push(event);
        else events.emit('monitor', ...event);
      }
    });
  });
  socket.setEncoding('latin1');
  if (password) socket.write(`AUTH ${user ? `${user} ` : ''}${password}\r\n`);
  socket.write('MONITOR\r\n');
  await ready;
  const monitor: Monitor = {
    on(event, listener) {
      events.on(event, listener);
      for (const line of held.splice(0)) listener(...line);
      return monitor;
    },
    disconnect() {
      socket.destroy();
    },
  };
  return monitor;
}
