import type { Readable, Writable } from 'node:stream';
import type { Logger } from 'pino';
import { LogBudget } from '../util/logBudget.js';
import { HostGoneError, MspError } from './errors.js';
import { DEFAULT_MAX_FRAME_BYTES, encodeFrame, FrameDecoder } from './framing.js';
import {
  type IncomingRequest,
  type RequestHandler,
  type Responder,
  serveRequest,
} from './incomingRequest.js';
import { isPlainObject, type Json, type JsonRpcId, preview, previewId } from './jsonRpc.js';
import { PendingRequests } from './pendingRequests.js';

// JSON-RPC 2.0 over NDJSON (docs/msp-approvals.md §1.1). Each direction owns its id space: our
// requests use string ids ("c1", "c2", …); the host's requests use integers and are answered
// with the id exactly as received (`1` and `"1"` are different ids).

export type { IncomingRequest, JsonRpcId, RequestHandler };

export interface IncomingNotification {
  readonly method: string;
  readonly params: unknown;
}

export type NotificationHandler = (notification: IncomingNotification) => void;

export interface RequestOptions {
  timeoutMs?: number;
}

export interface JsonRpcConnectionOptions {
  /** The host's stdout. */
  input: Readable;
  /** The host's stdin. */
  output: Writable;
  logger: Logger;
  maxFrameBytes?: number;
  /** Applies to requests that pass no timeout of their own; undefined = wait forever. */
  defaultTimeoutMs?: number;
}

/** Past this many decoded-but-unhandled frames we stop reading until we catch up. */
const INBOX_HIGH_WATER = 1000;
/**
 * How long frames are handled in one go before the event loop gets a turn. libuv reads a pipe up
 * to 32 times per wake-up, so a host that sends a burst hands us thousands of frames at once;
 * handled in one stretch, they would hold back everything else that is ready meanwhile (Slack's
 * answers, Redis replies, clicks, lease renewals) for as long as the burst takes.
 */
const FRAME_SLICE_MS = 2;
/** Also a cap in frames: most of a frame's work runs in the microtasks after its slice. */
const FRAME_SLICE_COUNT = 8;
/**
 * How many frames at the cap we hold for a host that does not read its stdin. Every request it
 * sends makes us queue an answer, so a host that floods requests and never reads would otherwise
 * fill our memory; past this it is dropped (and respawned) instead.
 */
const OUTBOX_LIMIT_FRAMES = 2;

/** The most bytes of frames a connection queues behind the host's stdin before dropping it. */
export function outboxLimitBytes(maxFrameBytes: number): number {
  return OUTBOX_LIMIT_FRAMES * maxFrameBytes;
}

export class JsonRpcConnection {
  private readonly input: Readable;
  private readonly output: Writable;
  private readonly logger: Logger;
  private readonly maxFrameBytes: number;
  private readonly defaultTimeoutMs: number | undefined;
  private readonly decoder: FrameDecoder;
  /**
   * Warnings about what the host sent wrong (malformed or oversized frames, answers to nothing,
   * frames that do not parse): as many as the host likes, so a few a minute are written and the
   * rest counted (LogBudget). Shared with whatever reads this connection's frames further.
   */
  readonly frameWarnings: LogBudget;

  private readonly pending = new PendingRequests();
  private requestHandler: RequestHandler | undefined;
  private notificationHandler: NotificationHandler | undefined;
  private readonly responder: Responder;

  /** Frames waiting for 'drain', each with its length in bytes. */
  private readonly outbox: { line: string; bytes: number }[] = [];
  private outboxBytes = 0;
  private waitingForDrain = false;
  /** No more writes: close() was called, the output failed, or the input ended. */
  private writeClosed = false;

  private readonly inbox: string[] = [];
  private draining = false;
  private drainScheduled = false;
  private inputPaused = false;
  private inputEnded = false;
  private finished = false;
  private resolveEnded!: () => void;
  /** Resolves once the input has ended and every frame read from it was handled. */
  readonly ended: Promise<void>;
  private resolveOutputFailed!: () => void;
  /**
   * Resolves when the host's stdin failed under us (EPIPE: the host closed it) rather than
   * being closed by us. The host may live on, but it can never be told anything again.
   */
  readonly outputFailed: Promise<void>;

  constructor(options: JsonRpcConnectionOptions) {
    this.input = options.input;
    this.output = options.output;
    this.logger = options.logger;
    this.maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
    this.defaultTimeoutMs = options.defaultTimeoutMs;
    this.frameWarnings = new LogBudget(this.logger, {
      summary: 'more frames from the host were skipped; not logged one by one',
    });
    this.responder = {
      logger: this.logger,
      isClosed: () => this.writeClosed,
      send: (message) => this.send(message),
    };
    this.ended = new Promise((resolve) => {
      this.resolveEnded = resolve;
    });
    this.outputFailed = new Promise((resolve) => {
      this.resolveOutputFailed = resolve;
    });
    this.decoder = new FrameDecoder({
      maxFrameBytes: this.maxFrameBytes,
      onOversized: ({ bytes, maxFrameBytes }) =>
        this.frameWarnings.warn({ bytes, maxFrameBytes }, 'skipping oversized frame from host'),
    });

    this.input.on('data', (chunk: Buffer | string) => this.onData(chunk));
    this.input.on('end', () => this.onInputEnd());
    // 'close' without 'end' means the stream was destroyed; treat it as the end.
    this.input.on('close', () => this.onInputEnd());
    this.input.on('error', (error: Error) => {
      this.logger.warn({ err: error }, 'host output stream failed');
      this.onInputEnd();
    });
    // Without a listener an EPIPE on the host's stdin would crash the whole process.
    this.output.on('error', (error: Error) => {
      // EPIPE only means the host has gone; the log line about its death says why.
      if ((error as NodeJS.ErrnoException).code === 'EPIPE') this.logger.debug('host closed its stdin');
      else this.logger.warn({ err: error }, 'host input stream failed');
      this.closeWrites(new HostGoneError('MSP host stdin failed'));
      this.resolveOutputFailed();
    });
  }

  get isClosed(): boolean {
    return this.writeClosed;
  }

  /** Bytes of frames waiting for the host's stdin to take them. */
  get queuedBytes(): number {
    return this.outboxBytes;
  }

  onRequest(handler: RequestHandler): void {
    this.requestHandler = handler;
  }

  onNotification(handler: NotificationHandler): void {
    this.notificationHandler = handler;
  }

  request(method: string, params?: unknown, options: RequestOptions = {}): Promise<unknown> {
    if (this.writeClosed) return Promise.reject(new HostGoneError(undefined, { method }));
    const id = this.pending.newId();
    const timeoutMs = options.timeoutMs ?? this.defaultTimeoutMs;
    return new Promise((resolve, reject) => {
      this.pending.add(id, method, timeoutMs, resolve, reject);
      try {
        this.send(
          params === undefined ? { jsonrpc: '2.0', id, method } : { jsonrpc: '2.0', id, method, params },
        );
      } catch (error) {
        this.pending.settle(id);
        reject(error as Error);
      }
    });
  }

  /** Throws HostGoneError when the connection is closed. */
  notify(method: string, params?: unknown): void {
    if (this.writeClosed) throw new HostGoneError(undefined, { method });
    this.send(params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params });
  }

  /**
   * Ends our side: the host's stdin gets EOF, waiting requests reject with HostGoneError.
   * Frames the host still writes are read and handled until its stdout ends.
   */
  close(): void {
    if (!this.writeClosed) this.closeWrites(new HostGoneError());
    // Also once the input has ended (which closes writes): a host whose stdout ended may still
    // read its stdin, a socket bridge whose far side ended among them, and EOF lets it exit now
    // instead of at the SIGTERM that follows seconds later.
    if (this.output.writable) this.output.end();
  }

  /** Stops reading too (for a host that exited but whose stdout stays open). */
  destroy(): void {
    this.close();
    this.input.destroy();
  }

  // ── writing ────────────────────────────────────────────────────────────────────────────

  private send(message: Json): void {
    const line = encodeFrame(message);
    const bytes = Buffer.byteLength(line) - 1;
    if (bytes > this.maxFrameBytes) {
      throw new MspError({
        code: -32002,
        message: `frame of ${bytes} bytes exceeds the ${this.maxFrameBytes} byte cap`,
        data: { kind: 'inputTooLarge', limitBytes: this.maxFrameBytes },
      });
    }
    if (this.outboxBytes + bytes + 1 > outboxLimitBytes(this.maxFrameBytes)) {
      this.dropUnreadHost();
      throw new HostGoneError('MSP host does not read its stdin');
    }
    this.outbox.push({ line, bytes: bytes + 1 });
    this.outboxBytes += bytes + 1;
    this.pump();
  }

  /**
   * A host whose stdin stays full is stuck or hostile; either way it is of no use. Destroying the
   * connection ends it, which has the host terminated and respawned (incarnation.ts).
   */
  private dropUnreadHost(): void {
    this.logger.error(
      { queuedBytes: this.outboxBytes, limitBytes: outboxLimitBytes(this.maxFrameBytes) },
      'host does not read its stdin: dropping the connection',
    );
    this.clearOutbox();
    this.destroy();
  }

  private clearOutbox(): void {
    this.outbox.length = 0;
    this.outboxBytes = 0;
  }

  /**
   * Each frame is one write() call, so frames never interleave; after write() returns false
   * we queue in order until 'drain'.
   */
  private pump(): void {
    while (!this.waitingForDrain && this.outbox.length > 0) {
      if (!this.output.writable) {
        this.clearOutbox();
        if (!this.writeClosed) this.resolveOutputFailed();
        this.closeWrites(new HostGoneError('MSP host stdin closed'));
        return;
      }
      const { line, bytes } = this.outbox.shift()!;
      this.outboxBytes -= bytes;
      if (!this.output.write(line)) {
        this.waitingForDrain = true;
        this.output.once('drain', () => {
          this.waitingForDrain = false;
          this.pump();
        });
      }
    }
  }

  private closeWrites(reason: HostGoneError): void {
    this.writeClosed = true;
    this.pending.rejectAll(reason);
  }

  // ── reading ────────────────────────────────────────────────────────────────────────────

  private onData(chunk: Buffer | string): void {
    const frames = this.decoder.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
    for (const frame of frames) this.inbox.push(frame);
    if (this.inbox.length > INBOX_HIGH_WATER && !this.inputPaused) {
      this.inputPaused = true;
      this.input.pause();
    }
    this.drainInbox();
  }

  private onInputEnd(): void {
    if (this.inputEnded) return;
    this.inputEnded = true;
    for (const frame of this.decoder.end()) this.inbox.push(frame);
    this.drainInbox();
  }

  /**
   * Handles frames in arrival order. After a response we let the awaiting code run (its
   * microtasks) before the next frame, so that what it emits lands in the order the host wrote.
   * A burst is handled in slices (FRAME_SLICE_COUNT frames or FRAME_SLICE_MS, whichever comes
   * first), the event loop getting a turn between them.
   */
  private drainInbox(): void {
    if (this.draining || this.drainScheduled) return;
    this.draining = true;
    const sliceEnds = performance.now() + FRAME_SLICE_MS;
    let handled = 0;
    try {
      while (this.inbox.length > 0) {
        const line = this.inbox.shift()!;
        const wasResponse = this.handleLine(line);
        handled += 1;
        if (
          this.inbox.length > 0 &&
          (wasResponse || handled >= FRAME_SLICE_COUNT || performance.now() >= sliceEnds)
        ) {
          this.drainScheduled = true;
          setImmediate(() => {
            this.drainScheduled = false;
            this.drainInbox();
          });
          return;
        }
      }
    } finally {
      this.draining = false;
    }
    if (this.inputPaused) {
      this.inputPaused = false;
      this.input.resume();
    }
    if (this.inputEnded && !this.finished) {
      this.finished = true;
      // The host has said its last: what was skipped and not yet counted in a line is, now.
      this.frameWarnings.flush();
      this.closeWrites(new HostGoneError());
      this.resolveEnded();
    }
  }

  /** Returns true when the frame was a response to one of our requests. */
  private handleLine(line: string): boolean {
    let message: unknown;
    try {
      message = JSON.parse(line);
    } catch {
      this.frameWarnings.warn({ frame: preview(line) }, 'skipping malformed frame: not JSON');
      return false;
    }
    if (!isPlainObject(message)) {
      this.frameWarnings.warn({ frame: preview(line) }, 'skipping malformed frame: not a JSON object');
      return false;
    }
    if (message.jsonrpc !== '2.0') {
      this.frameWarnings.warn({ frame: preview(line) }, 'skipping malformed frame: jsonrpc is not "2.0"');
      return false;
    }
    const hasId = 'id' in message;
    const id = message.id;
    if (typeof message.method === 'string') {
      if (!hasId) {
        this.handleNotification(message.method, message.params);
      } else if (typeof id === 'string' || typeof id === 'number') {
        this.handleRequest(id, message.method, message.params);
      } else {
        this.frameWarnings.warn({ frame: preview(line) }, 'skipping malformed request: bad id');
      }
      return false;
    }
    if (hasId && ('result' in message || 'error' in message)) {
      return this.handleResponse(id, message, line);
    }
    this.frameWarnings.warn(
      { frame: preview(line) },
      'skipping malformed frame: neither request nor response',
    );
    return false;
  }

  private handleResponse(id: unknown, message: Json, line: string): boolean {
    if (typeof id !== 'string' && typeof id !== 'number') {
      // e.g. -32700 with id null: the host could not read one of our frames.
      this.frameWarnings.warn(
        { error: message.error },
        'host reported an error for a frame it could not identify',
      );
      return false;
    }
    const entry = this.pending.settle(id);
    if (entry === undefined) {
      this.frameWarnings.warn(
        { id: previewId(id), frame: preview(line) },
        'skipping response to an unknown request id',
      );
      return false;
    }
    if ('error' in message && message.error !== undefined && message.error !== null) {
      entry.reject(MspError.fromWire(message.error, { method: entry.method }));
    } else {
      entry.resolve(message.result);
    }
    return true;
  }

  private handleNotification(method: string, params: unknown): void {
    if (this.notificationHandler === undefined) {
      this.logger.debug({ method: preview(method) }, 'ignoring notification: no handler');
      return;
    }
    try {
      this.notificationHandler({ method, params });
    } catch (error) {
      this.logger.error({ err: error, method: preview(method) }, 'notification handler threw');
    }
  }

  private handleRequest(id: JsonRpcId, method: string, params: unknown): void {
    serveRequest(id, method, params, this.requestHandler, this.responder);
  }
}
