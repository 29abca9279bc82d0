import net from 'node:net';

// A bare Redis connection for bulk writes: commands are encoded into RESP by hand and streamed,
// and the replies only counted. ioredis spends tens of microseconds per pipelined command here,
// which for a million grants (several commands each) is minutes; this is Redis's own speed.
// Only for commands whose replies are one line (integers, +OK, errors) or a bulk string of one
// line (XADD's id): arrays would be miscounted.

const FLUSH_AT = 1 << 20;

export class RawPipe {
  /** What is queued: RESP text, and binary arguments between it, written in order. */
  private out: Array<string | Buffer> = [];
  private queued = 0;
  private sent = 0;
  private replied = 0;
  private firstError: string | undefined;
  private atLineStart = true;
  private bulkHeader = false;
  private line = '';
  private waiter: (() => void) | undefined;
  private failure: Error | undefined;

  private constructor(private readonly socket: net.Socket) {
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => this.read(chunk));
    socket.on('error', (err) => {
      this.failure = err;
      this.waiter?.();
    });
  }

  /** Connects to a redis:// URL (with its database as the path). */
  static async open(url: string): Promise<RawPipe> {
    const u = new URL(url);
    const socket = net.connect(Number(u.port || 6379), u.hostname);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    const pipe = new RawPipe(socket);
    const db = u.pathname.replace(/^\//, '');
    if (db) pipe.send('SELECT', db);
    return pipe;
  }

  /** Queues one command; a Buffer argument is sent as it is (a MessagePack row, say). */
  send(...args: Array<string | number | Buffer>): void {
    let cmd = `*${args.length}\r\n`;
    for (const a of args) {
      if (Buffer.isBuffer(a)) {
        this.out.push(`${cmd}$${a.length}\r\n`, a);
        this.queued += cmd.length + a.length;
        cmd = '\r\n';
        continue;
      }
      const s = String(a);
      cmd += `$${Buffer.byteLength(s)}\r\n${s}\r\n`;
    }
    this.out.push(cmd);
    this.queued += cmd.length;
    this.sent++;
  }

  /** Writes what is queued, waiting for the socket when its buffer is full. */
  async flushIfFull(): Promise<void> {
    if (this.queued >= FLUSH_AT) await this.flush();
  }

  private async flush(): Promise<void> {
    const data = Buffer.concat(this.out.map((part) => (Buffer.isBuffer(part) ? part : Buffer.from(part))));
    this.out = [];
    this.queued = 0;
    if (data.length > 0 && !this.socket.write(data)) {
      await new Promise<void>((resolve) => this.socket.once('drain', resolve));
    }
  }

  /** Writes everything and waits for every reply; throws the first error Redis answered. */
  async sync(): Promise<void> {
    await this.flush();
    while (this.replied < this.sent && !this.failure) {
      await new Promise<void>((resolve) => {
        this.waiter = resolve;
      });
    }
    this.waiter = undefined;
    if (this.failure) throw this.failure;
    if (this.firstError) throw new Error(`Redis answered: ${this.firstError}`);
  }

  close(): void {
    this.socket.end();
  }

  private read(chunk: string): void {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk.charCodeAt(i);
      if (this.atLineStart && c === 45 /* - */ && this.firstError === undefined) this.line = '-';
      else if (this.line && c !== 10) this.line += chunk[i];
      // A bulk reply's header ($<length>, not $-1) is followed by its payload's line: the
      // payload's end is the reply's (XADD's id; no payload here holds a newline).
      if (this.atLineStart && c === 36 /* $ */) this.bulkHeader = chunk.charCodeAt(i + 1) !== 45;
      this.atLineStart = c === 10;
      if (c === 10) {
        if (this.bulkHeader) this.bulkHeader = false;
        else this.replied++;
        if (this.line && this.firstError === undefined) this.firstError = this.line.trim();
        this.line = '';
      }
    }
    if (this.replied >= this.sent) this.waiter?.();
  }
}
