// A TCP proxy to put between the bot and a server (Redis) and misbehave on cue: hold or drop
// what the server sends back once a client has sent a given marker, or hold back what the client
// sends from that marker on. It knows nothing of the
// protocol: a marker is a byte string matched in what a client sends (e.g. a Redis key, which
// appears verbatim in the RESP encoding of every command that names it).

import net from 'node:net';

/** One cue armed on the proxy; it fires on the first connection whose client sends the marker. */
export interface ProxyCue {
  /** Resolves once a client has sent the marker and it has been passed on to the server. */
  readonly fired: Promise<void>;
  /** Resolves once the server has sent something back after the marker (held or dropped). */
  readonly answered: Promise<void>;
  /** Ends the fault: held replies are delivered, in order; dropped ones stay lost. */
  release(): void;
}

type Fault = 'hold' | 'drop' | 'cut' | 'none' | 'holdRequests';

interface Link {
  client: net.Socket;
  server: net.Socket;
  /** What happens to what the server sends (holdRequests acts on `requests` instead). */
  fault: Exclude<Fault, 'holdRequests'>;
  held: Buffer[];
  /** What the client sent and the server has not been given yet, while requests are held. */
  requests: Buffer[] | undefined;
  /** Called on the next bytes from the server, once. */
  onAnswer: (() => void) | undefined;
}

interface Armed {
  marker: string;
  fault: Fault;
  /** Per connection, the tail of what its client sent since arming (a marker may span chunks). */
  tails: Map<Link, string>;
  fire: (link: Link) => void;
}

export class TcpProxy {
  private readonly links = new Set<Link>();
  private readonly armed = new Set<Armed>();

  private constructor(
    private readonly server: net.Server,
    /** The port clients connect to, on 127.0.0.1. */
    readonly port: number,
  ) {}

  /** Listens on a free port of 127.0.0.1 and forwards every connection to targetHost:targetPort. */
  static async start(targetPort: number, targetHost = '127.0.0.1'): Promise<TcpProxy> {
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('TcpProxy: no port');
    const proxy = new TcpProxy(server, address.port);
    server.on('connection', (client) => proxy.connect(client, targetPort, targetHost));
    return proxy;
  }

  /**
   * From the moment a client sends `marker`, everything the server sends on that connection is
   * kept back until release(): the command carrying the marker reaches the server, but neither
   * its reply nor any later one reaches the client. Replies still owed for earlier commands are
   * kept back too.
   */
  holdRepliesAfter(marker: string): ProxyCue {
    return this.arm(marker, 'hold');
  }

  /** Like holdRepliesAfter, but what the server sends is thrown away until release(). */
  dropRepliesAfter(marker: string): ProxyCue {
    return this.arm(marker, 'drop');
  }

  /**
   * Once a client has sent `marker`, the next thing the server sends on that connection is not
   * delivered: the connection is closed instead, as a network fault would. The command reached
   * the server and ran; the client never hears so (ioredis then sends it again on its new
   * connection).
   */
  cutAfter(marker: string): ProxyCue {
    return this.arm(marker, 'cut');
  }

  /**
   * From the chunk in which a client sends `marker`, nothing it sends on that connection reaches
   * the server until release(): the command carrying the marker is as good as in flight, sent but
   * not yet arrived. `fired` resolves once it is held; `answered` once the server answers after
   * release() has passed on what was held, in order.
   */
  holdRequestsFrom(marker: string): ProxyCue {
    return this.arm(marker, 'holdRequests');
  }

  /** Resolves once a client has sent `marker` (counting from this call), changing nothing. */
  sent(marker: string): Promise<void> {
    const cue = this.arm(marker, 'none');
    return cue.fired;
  }

  /** Closes every connection and stops listening. */
  async stop(): Promise<void> {
    for (const link of this.links) {
      link.client.destroy();
      link.server.destroy();
    }
    this.links.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private arm(marker: string, fault: Fault): ProxyCue {
    if (marker.length === 0) throw new Error('TcpProxy: empty marker');
    // Matched against what clients send read as latin1 (one character per byte).
    const bytes = Buffer.from(marker, 'utf8').toString('latin1');
    let firedLink: Link | undefined;
    let released = false;
    let resolveFired!: () => void;
    const fired = new Promise<void>((resolve) => {
      resolveFired = resolve;
    });
    let resolveAnswered!: () => void;
    const answered = new Promise<void>((resolve) => {
      resolveAnswered = resolve;
    });
    const armed: Armed = {
      marker: bytes,
      fault,
      tails: new Map(),
      fire: (link) => {
        this.armed.delete(armed);
        firedLink = link;
        if (released) return;
        if (fault === 'holdRequests') link.requests ??= [];
        else {
          if (fault !== 'none') link.fault = fault;
          link.onAnswer = resolveAnswered;
        }
        resolveFired();
      },
    };
    this.armed.add(armed);
    return {
      fired,
      answered,
      release: () => {
        released = true;
        this.armed.delete(armed);
        if (firedLink && fault === 'holdRequests') this.passOnRequests(firedLink, resolveAnswered);
        else if (firedLink && firedLink.fault === fault) this.unblock(firedLink);
      },
    };
  }

  private unblock(link: Link): void {
    link.fault = 'none';
    for (const chunk of link.held.splice(0)) link.client.write(chunk);
  }

  private passOnRequests(link: Link, onAnswer: () => void): void {
    const held = link.requests ?? [];
    link.requests = undefined;
    link.onAnswer = onAnswer;
    for (const chunk of held) link.server.write(chunk);
  }

  private connect(client: net.Socket, targetPort: number, targetHost: string): void {
    const server = net.connect({ port: targetPort, host: targetHost });
    client.setNoDelay(true);
    server.setNoDelay(true);
    const link: Link = { client, server, fault: 'none', held: [], requests: undefined, onAnswer: undefined };
    this.links.add(link);
    const close = () => {
      this.links.delete(link);
      client.destroy();
      server.destroy();
    };
    client.on('data', (chunk: Buffer) => {
      // Fire before forwarding: a reply to the marked command must not slip through first.
      this.scan(link, chunk);
      if (link.requests) link.requests.push(chunk);
      else server.write(chunk);
    });
    server.on('data', (chunk: Buffer) => {
      const answer = link.onAnswer;
      link.onAnswer = undefined;
      answer?.();
      if (link.fault === 'hold') link.held.push(chunk);
      else if (link.fault === 'cut') close();
      else if (link.fault === 'none') client.write(chunk);
    });
    client.on('close', close);
    server.on('close', close);
    client.on('error', () => {});
    server.on('error', () => {});
  }

  private scan(link: Link, chunk: Buffer): void {
    const text = chunk.toString('latin1');
    for (const armed of [...this.armed]) {
      const seen = (armed.tails.get(link) ?? '') + text;
      if (seen.includes(armed.marker)) {
        armed.fire(link);
        continue;
      }
      armed.tails.set(link, seen.slice(seen.length - (armed.marker.length - 1)));
    }
  }
}
