// A fake Slack Web API on 127.0.0.1: records every call, keeps the current state of each message
// (with its metadata, readable back through conversations.history), rejects payloads over the
// Block Kit limits, and can answer 429s, errors, HTTP failures, dropped connections and late
// answers on demand. It is also Slack's Socket Mode end: apps.connections.open (app token) hands
// out a ws:// URL on the same server, where the bot is greeted with `hello` and sent envelopes
// that it must ack.

import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { Duplex } from 'node:stream';
import { type WebSocket, WebSocketServer } from 'ws';
import { checkMessageLimits, checkViewLimits } from '../../src/cards/limits.js';

export interface SlackCall {
  index: number;
  method: string;
  args: Record<string, unknown>;
  at: number;
  /** process.hrtime.bigint() when the request was read: one monotonic clock for every process. */
  hr: bigint;
  /** The JSON body the fake answered with (or would have, when the answer was lost). */
  response: Record<string, unknown>;
  token: string | null;
  /** Set when the call was carried out but its answer never arrived as sent (see SlackFault). */
  lost?: 'status' | 'reset' | 'late';
}

export interface RateLimitedCall {
  method: string;
  args: Record<string, unknown>;
  at: number;
  /** process.hrtime.bigint() when the request was read. */
  hr: bigint;
  retryAfterSec: number;
}

/** A call answered with an HTTP error status before it was carried out: it did nothing. */
export interface HttpFailedCall {
  method: string;
  args: Record<string, unknown>;
  at: number;
  hr: bigint;
  status: number;
}

/** Every Web API request that reached the fake, in arrival order, with what became of it. */
export interface SlackRequest {
  method: string;
  args: Record<string, unknown>;
  hr: bigint;
  outcome: 'answered' | 'rateLimited' | 'httpFailed' | 'lost';
}

/**
 * What a fault does to a call instead of answering it as Slack normally would:
 * - `{ error }`: answers `{ ok: false, error }`, as Slack refuses a call;
 * - `{ status }`: answers that HTTP status without carrying the call out; with `applied: true`,
 *   carries it out first (the answer is lost: Slack may have posted);
 * - `{ reset: true }`: carries the call out, then drops the connection without answering;
 * - `{ delayMs }`: carries the call out, then answers only after `delayMs` (past the client's
 *   timeout, the answer is lost);
 * - `{ until }`: holds the call until the promise settles, then carries it out and answers as
 *   usual (a test orders the bot's next step after something of its own).
 */
export type SlackFault =
  | { error: string; extra?: Record<string, unknown> }
  | { status: number; applied?: boolean }
  | { reset: true }
  | { delayMs: number }
  | { until: Promise<unknown> };

export interface FaultOptions {
  /** How many matching calls get the fault (default 1; Infinity until heal()). */
  times?: number;
  /** Only calls whose arguments match get it; the rest are answered normally. */
  match?: (args: Record<string, unknown>) => boolean;
}

/** Slack's per-channel limits (chat.postMessage: about 1/s per channel), in fixed 1 s windows. */
interface ChannelRateLimit {
  perSecond: number;
  /** channel → [window start ms, calls in it] */
  windows: Map<string, [number, number]>;
}

export interface MessageVersion {
  text: string;
  blocks: unknown[];
  at: number;
  /** The metadata this post or update carried; absent when it carried none. */
  metadata?: Record<string, unknown>;
}

export interface SlackMessage {
  channel: string;
  ts: string;
  text: string;
  blocks: unknown[];
  threadTs?: string;
  /** Every state of the message, the post first, then each update. */
  versions: MessageVersion[];
  /** Message metadata (`{ event_type, event_payload }`) as posted or last updated. */
  metadata?: Record<string, unknown>;
  /** Posted by another app (postAsOtherApp): its bot and app ids, not the bot's. */
  from?: { botId: string; appId: string };
}

export interface EphemeralMessage {
  channel: string;
  user: string;
  text: string;
  blocks: unknown[];
  threadTs?: string;
  messageTs: string;
  at: number;
}

export interface ResponseUrlPost {
  id: string;
  body: Record<string, unknown>;
  at: number;
}

export interface SlackView {
  id: string;
  hash: string;
  /** The user the view was published for (views.publish) or opened by (trigger). */
  userId?: string;
  view: Record<string, unknown>;
  method: string;
}

/** Fields the Web API client JSON-encodes inside the form body. */
const JSON_FIELDS = new Set(['blocks', 'attachments', 'view', 'metadata', 'unfurls', 'user_auth_blocks']);
const TEXT_FIELDS = new Set([
  'text',
  'markdown_text',
  'token',
  'channel',
  'ts',
  'thread_ts',
  'user',
  'users',
]);

function parseFormValue(key: string, value: string): unknown {
  const looksJson = value.startsWith('{') || value.startsWith('[');
  if (JSON_FIELDS.has(key) || (looksJson && !TEXT_FIELDS.has(key))) {
    try {
      return JSON.parse(value);
    } catch {
      return value;
    }
  }
  return value;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : typeof v === 'number' ? String(v) : undefined;
}

/** A form flag as the Web API client sends it ("true"), or a JSON boolean. */
function flag(v: unknown): boolean {
  return v === true || v === 'true' || v === '1' || v === 1;
}

/** A Slack ts in microseconds, for exact comparisons (a double cannot hold 16 digits exactly). */
function tsMicros(ts: string): bigint {
  const [seconds = '0', fraction = ''] = ts.split('.');
  return BigInt(seconds || '0') * 1_000_000n + BigInt(fraction.padEnd(6, '0').slice(0, 6) || '0');
}

/** The metadata event type a call carried. */
function eventTypeOf(call: SlackCall): unknown {
  return (call.args.metadata as { event_type?: unknown } | undefined)?.event_type;
}

/** The metadata argument of a post or update, or undefined when absent or empty. */
function metadataOf(v: unknown): Record<string, unknown> | undefined {
  if (typeof v !== 'object' || v === null || Object.keys(v).length === 0) return undefined;
  return v as Record<string, unknown>;
}

/** A stored message as the Web API returns it. */
function asSlackMessage(m: SlackMessage, withMetadata: boolean): Record<string, unknown> {
  return {
    type: 'message',
    user: m.from ? 'U_OTHER_APP' : 'U_BOT',
    bot_id: m.from?.botId ?? 'B_BOT',
    app_id: m.from?.appId ?? 'A_TEST',
    text: m.text,
    blocks: m.blocks,
    ts: m.ts,
    ...(m.threadTs ? { thread_ts: m.threadTs } : {}),
    ...(withMetadata && m.metadata ? { metadata: m.metadata } : {}),
  };
}

function describeCall(c: { method: string; args: Record<string, unknown> }): string {
  const a = c.args;
  const bits = ['channel', 'ts', 'thread_ts', 'user', 'text']
    .filter((k) => a[k] !== undefined)
    .map((k) => `${k}=${JSON.stringify(String(a[k])).slice(0, 60)}`);
  return `${c.method}(${bits.join(', ')})`;
}

/** One WebSocket connection the bot opened with a URL from apps.connections.open. */
export interface SocketConnection {
  index: number;
  ticket: string;
  openedAt: number;
  /** Set once the socket has closed. */
  closedAt?: number;
  closeCode?: number;
  /** Every text frame the bot sent on this socket (acks), parsed, in order. */
  received: Array<Record<string, unknown>>;
}

/** What the bot answered to an envelope: `{envelope_id, payload?}` (slack-platform.md §2.1). */
export interface SocketAck {
  envelope_id: string;
  payload?: Record<string, unknown>;
  at: number;
  /** The connection the ack came back on. */
  connection: number;
}

/** The `hello` Slack sends when a Socket Mode connection is ready. */
export const SOCKET_HELLO = {
  type: 'hello',
  num_connections: 1,
  debug_info: { host: 'fake', approximate_connection_time: 3600 },
  connection_info: { app_id: 'A_TEST' },
} as const;

const SOCKET_PATH = '/socket-mode';

interface Waiter {
  test: (c: SlackCall) => boolean;
  resolve: (c: SlackCall) => void;
}

/**
 * The people of the fake workspace (team T1): the personas tests and the bench click as. Every
 * channel no test set members for has them as members (conversations.members), so a route
 * without approvers lets them decide; U0MALLORY and U0OUTSIDER are in no channel.
 */
export const WORKSPACE_PEOPLE: readonly string[] = [
  'U0ALICE',
  'U0BOB',
  'U0CAROL',
  'U0DAVE',
  'U0EVE',
  'U0FRANK',
  'U0ADA',
  'U0ADMIN',
  'U0OWNER',
  'U0SEC',
  'U0BENCH',
  'U_ALICE',
  'U_BOB',
  ...Array.from({ length: 9 }, (_, i) => `U${i + 1}`),
  ...Array.from({ length: 6 }, (_, i) => `U0M${i + 1}`),
];

export class FakeSlack {
  /** Base URL for SLACK_API_URL / slackApiUrl. */
  readonly apiUrl: string;
  readonly port: number;
  /** Calls answered (ok or not), in arrival order; rate-limited attempts are in `rateLimited`. */
  readonly calls: SlackCall[] = [];
  readonly rateLimited: RateLimitedCall[] = [];
  readonly httpFailed: HttpFailedCall[] = [];
  /** Every Web API request, in arrival order (calls, rate-limited, failed and lost alike). */
  readonly requests: SlackRequest[] = [];
  readonly ephemerals: EphemeralMessage[] = [];
  readonly responses: ResponseUrlPost[] = [];
  /** response_url posts answered with an HTTP error (refuseResponses): they landed nowhere. */
  readonly refusedResponses: ResponseUrlPost[] = [];
  readonly views = new Map<string, SlackView>();
  /** Bearer token expected on every call; null accepts any non-empty token. */
  expectedToken: string | null = null;
  /** App-level token expected on apps.connections.open; null accepts any `xapp-` token. */
  expectedAppToken: string | null = null;
  /** Socket Mode connections, in the order the bot opened them. */
  readonly socketConnections: SocketConnection[] = [];

  private readonly server: http.Server;
  private readonly wss = new WebSocketServer({ noServer: true });
  private readonly tickets = new Set<string>();
  private readonly sockets = new Map<SocketConnection, WebSocket>();
  private socketWaiters: Array<(c: SocketConnection) => void> = [];
  private ackWaiters = new Map<string, (ack: SocketAck) => void>();
  private readonly messages = new Map<string, SlackMessage>();
  /** method → the Retry-After of each 429 still to answer, in order. */
  private readonly rateLimits = new Map<string, number[]>();
  private readonly channelRateLimits = new Map<string, ChannelRateLimit>();
  private readonly faults = new Map<string, Array<{ fault: SlackFault } & Required<FaultOptions>>>();
  /** The HTTP status of each response_url post still to refuse, in order. */
  private readonly responseRefusals: number[] = [];
  private readonly users = new Map<string, Record<string, unknown>>();
  /** channel → its members, for the channels a test set; every other channel has the roster's. */
  private readonly channelMembers = new Map<string, string[]>();
  /** The channels the bot is a member of, once a test says so; until then it is in every one. */
  private botChannels: Set<string> | undefined;
  private readonly usergroups = new Map<string, string[]>();
  private readonly usergroupHandles = new Map<string, string>();
  private waiters: Waiter[] = [];
  private requestWaiters: Array<() => void> = [];
  private readonly changeListeners = new Set<() => void>();
  private responseWaiters: Array<{
    test: (r: ResponseUrlPost) => boolean;
    resolve: (r: ResponseUrlPost) => void;
  }> = [];
  /** The last ts handed out, in microseconds: ts follow the clock, as Slack's do. */
  private lastTsMicros = 0n;
  private viewCounter = 0;
  private limitsEnabled = true;

  private constructor(server: http.Server, port: number) {
    this.server = server;
    this.port = port;
    this.apiUrl = `http://127.0.0.1:${port}/api/`;
  }

  static async start(
    opts: {
      expectedToken?: string;
      checkLimits?: boolean;
      /** Channels conversations.info says are shared with another organization (Slack Connect). */
      sharedChannels?: string[];
    } = {},
  ): Promise<FakeSlack> {
    let self: FakeSlack | undefined;
    const server = http.createServer((req, res) => {
      if (!self) {
        res.writeHead(503).end();
        return;
      }
      self.handle(req, res).catch((err: unknown) => {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ ok: false, error: 'fake_slack_crashed', detail: String(err) }));
      });
    });
    // Longer than undici's 2 s keep-alive threshold, or every call would open a new connection.
    server.keepAliveTimeout = 5_000;
    server.on('upgrade', (req, socket, head) => {
      if (!self) {
        socket.destroy();
        return;
      }
      self.upgrade(req, socket, head);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('FakeSlack: no port');
    self = new FakeSlack(server, address.port);
    self.expectedToken = opts.expectedToken ?? null;
    self.limitsEnabled = opts.checkLimits ?? true;
    for (const channel of opts.sharedChannels ?? []) self.sharedChannels.add(channel);
    return self;
  }

  /** A response_url the bot can be handed in a payload; posts to it land in `responses`. */
  responseUrl(id: string): string {
    return `http://127.0.0.1:${this.port}/response/${encodeURIComponent(id)}`;
  }

  // ---- behaviour switches

  /**
   * The next `times` calls to `method` get HTTP 429 with `Retry-After: retryAfterSec`; with a list
   * of seconds, one 429 per entry, each with its own Retry-After.
   */
  rateLimit(
    method: string,
    opts: { times: number; retryAfterSec: number } | { retryAfterSec: number[] },
  ): void {
    const seconds = Array.isArray(opts.retryAfterSec)
      ? [...opts.retryAfterSec]
      : Array.from({ length: (opts as { times: number }).times }, () => opts.retryAfterSec as number);
    this.rateLimits.set(method, seconds);
  }

  /**
   * From now on at most `perSecond` calls to `method` per channel per second succeed; the rest get
   * HTTP 429 with the whole seconds left in the window as `Retry-After`, as Slack answers.
   */
  rateLimitPerChannel(method: string, perSecond: number): void {
    this.channelRateLimits.set(method, { perSecond, windows: new Map() });
  }

  /**
   * The next `times` posts to any response_url are answered HTTP `status` (404 unless given), as
   * a response_url past its life or its uses is, and land in `refusedResponses` only.
   */
  refuseResponses(times = 1, status = 404): void {
    for (let i = 0; i < times; i += 1) this.responseRefusals.push(status);
  }

  /** The next `times` calls to `method` answer {ok:false, error} (e.g. not_in_channel, invalid_auth). */
  failNext(method: string, error: string, times = 1, extra?: Record<string, unknown>): void {
    this.fault(method, { error, ...(extra ? { extra } : {}) }, { times });
  }

  /**
   * Calls to `method` (matching `options.match`) get `fault` instead of Slack's usual answer, the
   * next `options.times` of them. Faults of one method apply in the order they were added.
   */
  fault(method: string, fault: SlackFault, options: FaultOptions = {}): void {
    const list = this.faults.get(method) ?? [];
    list.push({ fault, times: options.times ?? 1, match: options.match ?? (() => true) });
    this.faults.set(method, list);
  }

  /** Removes every fault still pending for `method` (for all methods without one): Slack is back. */
  heal(method?: string): void {
    if (method === undefined) this.faults.clear();
    else this.faults.delete(method);
  }

  setUser(id: string, info: Record<string, unknown>): void {
    this.users.set(id, info);
  }

  /**
   * The members conversations.members answers for `channel`. A channel no test set has the
   * workspace's people as members: WORKSPACE_PEOPLE and every user given to setUser().
   */
  setChannelMembers(channel: string, userIds: string[]): void {
    this.channelMembers.set(channel, userIds);
  }

  /**
   * From now on the bot is a member of `channels` only, as in a real workspace: posting
   * (chat.postMessage) and reading history (conversations.history) elsewhere answer
   * `not_in_channel`. DMs are always open to it.
   */
  setBotChannels(channels: string[]): void {
    this.botChannels = new Set(channels);
  }

  /** `/invite @countersign` in `channel` (see setBotChannels). */
  inviteBot(channel: string): void {
    this.botChannels ??= new Set();
    this.botChannels.add(channel);
  }

  /** The bot is removed from `channel` (see setBotChannels). */
  removeBot(channel: string): void {
    this.botChannels?.delete(channel);
  }

  /**
   * The installed app has `chat:write.public`, as one made from an older manifest does: the bot
   * may post in a public channel (C…) it is not in. Reading its history still needs membership.
   */
  chatWritePublic = false;

  private botIsIn(channel: string): boolean {
    return !this.botChannels || channel.startsWith('D') || this.botChannels.has(channel);
  }

  /** Channels shared with another organization (see start()). */
  readonly sharedChannels = new Set<string>();

  private membersOf(channel: string): string[] {
    return this.channelMembers.get(channel) ?? [...new Set([...WORKSPACE_PEOPLE, ...this.users.keys()])];
  }

  /** The link chat.getPermalink gives for a message, as Slack builds it. */
  permalink(channel: string, ts: string): string {
    return `https://test.slack.com/archives/${channel}/p${ts.replace('.', '')}`;
  }

  setUsergroup(id: string, userIds: string[], handle?: string): void {
    this.usergroups.set(id, userIds);
    if (handle !== undefined) this.usergroupHandles.set(id, handle);
  }

  // ---- observations

  callsOf(method: string): SlackCall[] {
    return this.calls.filter((c) => c.method === method);
  }

  /**
   * chat.postMessage calls that post a message of their own, not a reply in a card's thread, nor
   * a batch summary (metadata `countersign_batch`, summaryPosts()).
   */
  cardPosts(): SlackCall[] {
    return this.callsOf('chat.postMessage').filter(
      (c) => c.args.thread_ts === undefined && eventTypeOf(c) !== 'countersign_batch',
    );
  }

  /** The batch summaries posted (docs/slack.md#batch-triage). */
  summaryPosts(): SlackCall[] {
    return this.callsOf('chat.postMessage').filter((c) => eventTypeOf(c) === 'countersign_batch');
  }

  /**
   * A message another app posts in `channel` (as any app in the channel may, metadata and all):
   * what the bot must never take for its own.
   */
  postAsOtherApp(channel: string, text: string, posted?: object): SlackMessage {
    const ts = this.nextTs();
    const metadata = posted as Record<string, unknown> | undefined;
    const msg: SlackMessage = {
      channel,
      ts,
      text,
      blocks: [],
      versions: [{ text, blocks: [], at: Date.now(), ...(metadata ? { metadata } : {}) }],
      ...(metadata ? { metadata } : {}),
      from: { botId: 'B_OTHER', appId: 'A_OTHER' },
    };
    this.messages.set(`${channel}/${ts}`, msg);
    return msg;
  }

  /** Latest state of a message after all updates. */
  message(channel: string, ts: string): SlackMessage | undefined {
    return this.messages.get(`${channel}/${ts}`);
  }

  /** Top-level messages of a channel in posting order (thread replies excluded). */
  messagesIn(channel: string): SlackMessage[] {
    return [...this.messages.values()].filter(
      (m) => m.channel === channel && (!m.threadTs || m.threadTs === m.ts),
    );
  }

  /** Thread replies under a message, in posting order. */
  repliesTo(channel: string, threadTs: string): SlackMessage[] {
    return [...this.messages.values()].filter(
      (m) => m.channel === channel && m.threadTs === threadTs && m.ts !== threadTs,
    );
  }

  /**
   * First call to `method` matching `predicate`, already made or still to come. `since` skips
   * calls with a smaller index (use `slack.calls.length` taken before the action under test).
   */
  waitFor(
    method: string,
    predicate: (c: SlackCall) => boolean = () => true,
    timeoutMs = 5000,
    opts: { since?: number } = {},
  ): Promise<SlackCall> {
    const since = opts.since ?? 0;
    const test = (c: SlackCall) => c.method === method && c.index >= since && predicate(c);
    const found = this.calls.find(test);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        test,
        resolve: (c) => {
          clearTimeout(timer);
          resolve(c);
        },
      };
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        reject(new Error(`FakeSlack: no matching ${method} within ${timeoutMs} ms.\n${this.summary()}`));
      }, timeoutMs);
      this.waiters.push(waiter);
    });
  }

  /** Resolves with the calls once `method` has been answered at least `n` times. */
  async waitForCount(method: string, n: number, timeoutMs = 5000): Promise<SlackCall[]> {
    try {
      await this.waitFor(method, () => this.callsOf(method).length >= n, timeoutMs);
    } catch {
      throw new Error(
        `FakeSlack: expected ${n} ${method} calls within ${timeoutMs} ms, got ${this.callsOf(method).length}.\n${this.summary()}`,
      );
    }
    return this.callsOf(method);
  }

  /** Resolves with the requests matching `predicate` once there are at least `n`, past or future. */
  async waitForRequests(
    predicate: (r: SlackRequest) => boolean,
    n: number,
    timeoutMs = 5000,
  ): Promise<SlackRequest[]> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const matching = this.requests.filter(predicate);
      if (matching.length >= n) return matching;
      const left = deadline - Date.now();
      if (left <= 0) {
        throw new Error(
          `FakeSlack: expected ${n} matching requests within ${timeoutMs} ms, got ${matching.length}.\n${this.summary()}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.requestWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** First response_url post matching `predicate`, past or future. */
  waitForResponse(
    predicate: (r: ResponseUrlPost) => boolean = () => true,
    timeoutMs = 5000,
  ): Promise<ResponseUrlPost> {
    const found = this.responses.find(predicate);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter = {
        test: predicate,
        resolve: (r: ResponseUrlPost) => {
          clearTimeout(timer);
          resolve(r);
        },
      };
      const timer = setTimeout(() => {
        this.responseWaiters = this.responseWaiters.filter((w) => w !== waiter);
        reject(
          new Error(
            `FakeSlack: no matching response_url post within ${timeoutMs} ms; got ${this.responses.length}: ${JSON.stringify(
              this.responses.map((r) => r.body),
            ).slice(0, 2000)}`,
          ),
        );
      }, timeoutMs);
      this.responseWaiters.push(waiter);
    });
  }

  /**
   * Calls `listener` after every answered Web API call and response_url post, i.e. whenever a
   * message, view or ephemeral may have changed (the demo page's live updates). Returns an
   * unsubscribe function.
   */
  onChange(listener: () => void): () => void {
    this.changeListeners.add(listener);
    return () => this.changeListeners.delete(listener);
  }

  /** A readable list of every call so far (for failure messages). */
  summary(): string {
    const lines = this.calls.map(
      (c) =>
        `  #${c.index} ${describeCall(c)} -> ${c.response.ok ? 'ok' : `error ${String(c.response.error)}`}${
          c.lost ? ` (answer lost: ${c.lost})` : ''
        }`,
    );
    const limited = this.rateLimited.map((c) => `  429 ${describeCall(c)}`);
    const failed = this.httpFailed.map((c) => `  ${c.status} ${describeCall(c)}`);
    return `Calls seen (${this.calls.length}):\n${lines.join('\n') || '  (none)'}${
      limited.length ? `\nRate-limited:\n${limited.join('\n')}` : ''
    }${failed.length ? `\nHTTP failures (not carried out):\n${failed.join('\n')}` : ''}`;
  }

  // ---- Socket Mode

  /** The open Socket Mode connection, once the bot has connected (it has been sent `hello`). */
  waitForSocket(timeoutMs = 5000): Promise<SocketConnection> {
    const open = this.openSocket();
    if (open) return Promise.resolve(open.connection);
    return new Promise((resolve, reject) => {
      const waiter = (c: SocketConnection) => {
        clearTimeout(timer);
        resolve(c);
      };
      const timer = setTimeout(() => {
        this.socketWaiters = this.socketWaiters.filter((w) => w !== waiter);
        reject(
          new Error(
            `FakeSlack: no Socket Mode connection within ${timeoutMs} ms (${this.socketConnections.length} seen).\n${this.summary()}`,
          ),
        );
      }, timeoutMs);
      this.socketWaiters.push(waiter);
    });
  }

  /**
   * Sends an interactive payload (block_actions, view_submission, ...) over the open socket as
   * Slack does, and resolves with the bot's ack. Rejects when no socket is open or no ack comes
   * within `timeoutMs`.
   */
  sendInteractive(payload: Record<string, unknown>, timeoutMs = 5000): Promise<SocketAck> {
    return this.sendEnvelope('interactive', payload, timeoutMs);
  }

  /** Sends any envelope type (`interactive`, `events_api`, `slash_commands`) and awaits its ack. */
  sendEnvelope(type: string, payload: Record<string, unknown>, timeoutMs = 5000): Promise<SocketAck> {
    const open = this.openSocket();
    if (!open) {
      return Promise.reject(new Error(`FakeSlack: no open Socket Mode connection to send ${type} on`));
    }
    const envelopeId = randomUUID();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.ackWaiters.delete(envelopeId);
        reject(
          new Error(
            `FakeSlack: the bot did not ack ${type} envelope ${envelopeId} within ${timeoutMs} ms; frames received: ${JSON.stringify(
              open.connection.received,
            ).slice(0, 2000)}`,
          ),
        );
      }, timeoutMs);
      this.ackWaiters.set(envelopeId, (ack) => {
        clearTimeout(timer);
        resolve(ack);
      });
      const envelope = { envelope_id: envelopeId, type, payload, accepts_response_payload: false };
      open.ws.send(JSON.stringify(envelope), (err) => {
        if (!err) return;
        clearTimeout(timer);
        this.ackWaiters.delete(envelopeId);
        reject(err);
      });
    });
  }

  async close(): Promise<void> {
    for (const ws of this.sockets.values()) ws.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private openSocket(): { connection: SocketConnection; ws: WebSocket } | undefined {
    const open = [...this.sockets].filter(([, ws]) => ws.readyState === ws.OPEN);
    const last = open[open.length - 1];
    return last ? { connection: last[0], ws: last[1] } : undefined;
  }

  private upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const ticket = url.searchParams.get('ticket') ?? '';
    if (url.pathname !== SOCKET_PATH || !this.tickets.delete(ticket)) {
      // Only a URL handed out by apps.connections.open opens a socket, and only once.
      socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      const connection: SocketConnection = {
        index: this.socketConnections.length,
        ticket,
        openedAt: Date.now(),
        received: [],
      };
      this.socketConnections.push(connection);
      this.sockets.set(connection, ws);
      ws.on('message', (data, isBinary) => {
        if (isBinary) return;
        let frame: Record<string, unknown>;
        try {
          frame = JSON.parse(data.toString()) as Record<string, unknown>;
        } catch {
          frame = { raw: data.toString() };
        }
        connection.received.push(frame);
        const envelopeId = str(frame.envelope_id);
        const waiter = envelopeId ? this.ackWaiters.get(envelopeId) : undefined;
        if (envelopeId && waiter) {
          this.ackWaiters.delete(envelopeId);
          const payload = frame.payload as Record<string, unknown> | undefined;
          waiter({
            envelope_id: envelopeId,
            ...(payload ? { payload } : {}),
            at: Date.now(),
            connection: connection.index,
          });
        }
      });
      ws.on('close', (code) => {
        connection.closedAt = Date.now();
        connection.closeCode = code;
        this.sockets.delete(connection);
      });
      ws.on('error', () => undefined);
      ws.send(JSON.stringify(SOCKET_HELLO), () => {
        for (const w of this.socketWaiters.splice(0)) w(connection);
      });
    });
  }

  // ---- HTTP

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const receivedHr = process.hrtime.bigint();
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const raw = Buffer.concat(chunks).toString('utf8');
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');

    if (req.method === 'POST' && url.pathname.startsWith('/response/')) {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(raw) as Record<string, unknown>;
      } catch {
        body = { raw };
      }
      const post = { id: decodeURIComponent(url.pathname.slice('/response/'.length)), body, at: Date.now() };
      const refusal = this.responseRefusals.shift();
      if (refusal !== undefined) {
        this.refusedResponses.push(post);
        res.writeHead(refusal, { 'content-type': 'text/plain' });
        res.end('expired_url');
        return;
      }
      this.responses.push(post);
      for (const w of [...this.responseWaiters]) {
        if (w.test(post)) {
          this.responseWaiters = this.responseWaiters.filter((x) => x !== w);
          w.resolve(post);
        }
      }
      for (const l of this.changeListeners) l();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"ok":true}');
      return;
    }

    if (req.method !== 'POST' || !url.pathname.startsWith('/api/')) {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end('{"ok":false,"error":"unknown_method"}');
      return;
    }

    const method = url.pathname.slice('/api/'.length);
    const args = this.parseBody(req.headers['content-type'] ?? '', raw, url);
    const request = (outcome: SlackRequest['outcome']) => {
      this.requests.push({ method, args, hr: receivedHr, outcome });
      for (const notify of this.requestWaiters.splice(0)) notify();
    };

    const retryAfterSec = this.rateLimits.get(method)?.shift() ?? this.channelRetryAfter(method, args);
    if (retryAfterSec !== undefined) {
      this.rateLimited.push({ method, args, at: Date.now(), hr: receivedHr, retryAfterSec });
      request('rateLimited');
      res.writeHead(429, { 'content-type': 'application/json', 'retry-after': String(retryAfterSec) });
      res.end('{"ok":false,"error":"ratelimited"}');
      return;
    }

    let fault = this.takeFault(method, args);
    if (fault && 'until' in fault) {
      await fault.until.catch(() => undefined);
      fault = undefined;
    }
    if (fault && 'status' in fault && !fault.applied) {
      this.httpFailed.push({ method, args, at: Date.now(), hr: receivedHr, status: fault.status });
      request('httpFailed');
      res.writeHead(fault.status, { 'content-type': 'text/html' });
      res.end(`<html><body>fake Slack: HTTP ${fault.status}</body></html>`);
      return;
    }

    const auth = req.headers.authorization ?? '';
    const token = auth.startsWith('Bearer ') ? auth.slice('Bearer '.length) : (str(args.token) ?? null);
    // apps.connections.open takes only an app-level token (xapp-), every other method refuses one.
    const wantsAppToken = method === 'apps.connections.open';
    const expected = wantsAppToken ? this.expectedAppToken : this.expectedToken;
    let response: Record<string, unknown>;
    if (!token) response = { ok: false, error: 'not_authed' };
    else if (token.startsWith('xapp-') !== wantsAppToken)
      response = { ok: false, error: 'not_allowed_token_type' };
    else if (expected !== null && token !== expected) response = { ok: false, error: 'invalid_auth' };
    else if (fault && 'error' in fault) response = { ok: false, error: fault.error, ...(fault.extra ?? {}) };
    else response = await this.dispatch(method, args);

    const lost: SlackCall['lost'] = !fault
      ? undefined
      : 'status' in fault
        ? 'status'
        : 'reset' in fault
          ? 'reset'
          : 'delayMs' in fault
            ? 'late'
            : undefined;
    const call: SlackCall = {
      index: this.calls.length,
      method,
      args,
      at: Date.now(),
      hr: receivedHr,
      response,
      token,
      ...(lost ? { lost } : {}),
    };
    this.calls.push(call);
    request(lost ? 'lost' : 'answered');
    for (const w of [...this.waiters]) {
      if (w.test(call)) {
        this.waiters = this.waiters.filter((x) => x !== w);
        w.resolve(call);
      }
    }
    // The call was carried out, whatever becomes of its answer.
    for (const l of this.changeListeners) l();
    if (fault && 'reset' in fault) {
      req.socket.destroy();
      return;
    }
    if (fault && 'status' in fault) {
      res.writeHead(fault.status, { 'content-type': 'text/html' });
      res.end(`<html><body>fake Slack: HTTP ${fault.status}</body></html>`);
      return;
    }
    if (fault && 'delayMs' in fault) {
      await new Promise((resolve) => setTimeout(resolve, fault.delayMs));
      // The client has usually given up and closed the connection by now.
      if (res.destroyed || req.socket.destroyed) return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(response));
  }

  /** The first pending fault of `method` that matches these arguments, used up by one. */
  private takeFault(method: string, args: Record<string, unknown>): SlackFault | undefined {
    const list = this.faults.get(method);
    const entry = list?.find((f) => f.times > 0 && f.match(args));
    if (!list || !entry) return undefined;
    entry.times -= 1;
    if (entry.times <= 0) list.splice(list.indexOf(entry), 1);
    return entry.fault;
  }

  /** Seconds the caller must wait when this call is over its channel's limit, else undefined. */
  private channelRetryAfter(method: string, args: Record<string, unknown>): number | undefined {
    const limit = this.channelRateLimits.get(method);
    const channel = str(args.channel);
    if (!limit || !channel) return undefined;
    const now = Date.now();
    const window = limit.windows.get(channel);
    if (!window || now - window[0] >= 1000) {
      limit.windows.set(channel, [now, 1]);
      return undefined;
    }
    if (window[1] < limit.perSecond) {
      window[1] += 1;
      return undefined;
    }
    return Math.max(1, Math.ceil((window[0] + 1000 - now) / 1000));
  }

  private parseBody(contentType: string, raw: string, url: URL): Record<string, unknown> {
    const args: Record<string, unknown> = {};
    for (const [k, v] of url.searchParams) args[k] = parseFormValue(k, v);
    if (!raw) return args;
    if (contentType.includes('application/json')) {
      try {
        return { ...args, ...(JSON.parse(raw) as Record<string, unknown>) };
      } catch {
        return { ...args, _raw: raw };
      }
    }
    for (const [k, v] of new URLSearchParams(raw)) args[k] = parseFormValue(k, v);
    return args;
  }

  private nextTs(): string {
    const now = BigInt(Date.now()) * 1000n;
    this.lastTsMicros = now > this.lastTsMicros ? now : this.lastTsMicros + 1n;
    const digits = this.lastTsMicros.toString();
    return `${digits.slice(0, -6)}.${digits.slice(-6)}`;
  }

  private async limitViolations(text: string, blocks: unknown[], isUpdate: boolean): Promise<string[]> {
    if (!this.limitsEnabled) return [];
    const violations: string[] = [];
    if (blocks.length > 50) violations.push(`message has ${blocks.length} blocks (max 50)`);
    if (isUpdate && text.length > 4000)
      violations.push(`chat.update text is ${text.length} chars (max 4000)`);
    violations.push(...checkMessageLimits({ text, blocks }));
    return violations;
  }

  /** Channel names chat.postMessage accepts as `#name`, with the IDs Slack answers with. */
  readonly channelNames = new Map<string, string>([['approvals', 'C0APPROVALS']]);

  private conversationId(channel: string): string | undefined {
    // Posting to a user ID opens (or reuses) the DM with that user.
    if (/^[UW]/.test(channel)) return `D${channel}`;
    // chat.postMessage takes a #name and answers with the channel's ID.
    if (channel.startsWith('#')) return this.channelNames.get(channel.slice(1));
    return channel;
  }

  private async dispatch(method: string, args: Record<string, unknown>): Promise<Record<string, unknown>> {
    switch (method) {
      case 'auth.test':
        return {
          ok: true,
          url: 'https://test.slack.com/',
          team: 'test',
          user: 'countersign',
          team_id: 'T1',
          user_id: 'U_BOT',
          bot_id: 'B_BOT',
          is_enterprise_install: false,
        };
      case 'apps.connections.open': {
        const ticket = randomUUID();
        this.tickets.add(ticket);
        return { ok: true, url: `ws://127.0.0.1:${this.port}${SOCKET_PATH}?ticket=${ticket}` };
      }
      case 'chat.postMessage':
        return this.postMessage(args);
      case 'chat.update':
        return this.update(args);
      case 'conversations.history':
        return this.history(args);
      case 'chat.postEphemeral': {
        const channel = str(args.channel);
        const user = str(args.user);
        if (!channel) return { ok: false, error: 'channel_not_found' };
        if (!user) return { ok: false, error: 'user_not_found' };
        const messageTs = this.nextTs();
        this.ephemerals.push({
          channel,
          user,
          text: str(args.text) ?? '',
          blocks: Array.isArray(args.blocks) ? args.blocks : [],
          ...(str(args.thread_ts) ? { threadTs: str(args.thread_ts) } : {}),
          messageTs,
          at: Date.now(),
        });
        return { ok: true, message_ts: messageTs };
      }
      case 'views.open':
      case 'views.push':
      case 'views.publish':
      case 'views.update':
        return this.view(method, args);
      case 'conversations.open': {
        const users = str(args.users) ?? str(args.user) ?? '';
        const first = users.split(',')[0] ?? '';
        if (!first && !args.channel) return { ok: false, error: 'users_list_not_supplied' };
        return { ok: true, channel: { id: str(args.channel) ?? `D${first}` } };
      }
      case 'users.info': {
        const id = str(args.user);
        if (!id) return { ok: false, error: 'user_not_found' };
        const name = id.toLowerCase();
        return {
          ok: true,
          user: {
            id,
            team_id: 'T1',
            name,
            real_name: `User ${id}`,
            tz: 'UTC',
            profile: { display_name: name, real_name: `User ${id}` },
            ...(this.users.get(id) ?? {}),
          },
        };
      }
      case 'users.lookupByEmail': {
        const email = str(args.email);
        for (const [id, info] of this.users) {
          const profile = info.profile as { email?: string } | undefined;
          if (email && profile?.email === email) return { ok: true, user: { id, ...info } };
        }
        return { ok: false, error: 'users_not_found' };
      }
      case 'chat.getPermalink': {
        const channel = str(args.channel);
        const ts = str(args.message_ts);
        if (!channel) return { ok: false, error: 'channel_not_found' };
        if (!ts || !this.messages.has(`${channel}/${ts}`)) return { ok: false, error: 'message_not_found' };
        return { ok: true, channel, permalink: this.permalink(channel, ts) };
      }
      case 'conversations.info': {
        const channel = str(args.channel);
        if (!channel || channel.startsWith('#')) return { ok: false, error: 'channel_not_found' };
        const shared = this.sharedChannels.has(channel);
        return {
          ok: true,
          channel: {
            id: channel,
            is_private: channel.startsWith('G'),
            is_shared: shared,
            is_ext_shared: shared,
          },
        };
      }
      case 'conversations.members': {
        const channel = str(args.channel);
        if (!channel || channel.startsWith('#')) return { ok: false, error: 'channel_not_found' };
        const members = this.membersOf(channel);
        const limit = Math.max(1, Number(args.limit ?? 100) || 100);
        const start = Number(str(args.cursor) ?? 0) || 0;
        const page = members.slice(start, start + limit);
        const next = start + limit < members.length ? String(start + limit) : '';
        return { ok: true, members: page, response_metadata: { next_cursor: next } };
      }
      case 'users.conversations':
        return this.botConversations(args);
      case 'usergroups.users.list': {
        const group = str(args.usergroup);
        const users = group ? this.usergroups.get(group) : undefined;
        if (!users) return { ok: false, error: 'no_such_subteam' };
        return { ok: true, users };
      }
      case 'usergroups.list':
        return {
          ok: true,
          usergroups: [...this.usergroups.keys()].map((id) => ({
            id,
            team_id: 'T1',
            handle: this.usergroupHandles.get(id) ?? id.toLowerCase(),
            name: this.usergroupHandles.get(id) ?? id,
          })),
        };
      default:
        return { ok: true };
    }
  }

  /**
   * The channels of `channelNames` the bot is a member of, as users.conversations pages them
   * (`types`: public_channel C…, private_channel G…; default public only).
   */
  private botConversations(args: Record<string, unknown>): Record<string, unknown> {
    const types = new Set((str(args.types) ?? 'public_channel').split(','));
    const all = [...this.channelNames]
      .filter(([, id]) => this.botIsIn(id))
      .filter(([, id]) => types.has(id.startsWith('G') ? 'private_channel' : 'public_channel'))
      .map(([name, id]) => ({ id, name, is_channel: true, is_private: id.startsWith('G') }));
    const limit = Math.max(1, Number(args.limit ?? 100) || 100);
    const start = Number(str(args.cursor) ?? 0) || 0;
    const next = start + limit < all.length ? String(start + limit) : '';
    return { ok: true, channels: all.slice(start, start + limit), response_metadata: { next_cursor: next } };
  }

  private async postMessage(args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const requested = str(args.channel);
    if (!requested) return { ok: false, error: 'channel_not_found' };
    const text = str(args.text) ?? '';
    const blocks = Array.isArray(args.blocks) ? args.blocks : [];
    if (!text && blocks.length === 0) return { ok: false, error: 'no_text' };
    const violations = await this.limitViolations(text, blocks, false);
    if (violations.length) return { ok: false, error: 'invalid_blocks', violations };
    const channel = this.conversationId(requested);
    if (!channel) return { ok: false, error: 'channel_not_found' };
    if (!this.botIsIn(channel) && !(this.chatWritePublic && channel.startsWith('C')))
      return { ok: false, error: 'not_in_channel' };
    const ts = this.nextTs();
    const threadTs = str(args.thread_ts);
    const metadata = metadataOf(args.metadata);
    const msg: SlackMessage = {
      channel,
      ts,
      text,
      blocks,
      ...(threadTs ? { threadTs } : {}),
      versions: [{ text, blocks, at: Date.now(), ...(metadata ? { metadata } : {}) }],
      ...(metadata ? { metadata } : {}),
    };
    this.messages.set(`${channel}/${ts}`, msg);
    return { ok: true, channel, ts, message: asSlackMessage(msg, true) };
  }

  /**
   * A channel's top-level messages, newest first, as Slack pages them: `oldest`/`latest` bound
   * the ts (exclusive unless `inclusive`), `limit` (default 100, at most 999) sizes a page and
   * `cursor` continues one; `metadata` is included only with `include_all_metadata`.
   */
  private history(args: Record<string, unknown>): Record<string, unknown> {
    const channel = str(args.channel);
    if (!channel || channel.startsWith('#')) return { ok: false, error: 'channel_not_found' };
    if (!this.botIsIn(channel)) return { ok: false, error: 'not_in_channel' };
    const inclusive = flag(args.inclusive);
    const oldest = str(args.oldest) === undefined ? undefined : tsMicros(str(args.oldest)!);
    const latest = str(args.latest) === undefined ? undefined : tsMicros(str(args.latest)!);
    const after = (ts: bigint) => oldest === undefined || ts > oldest || (inclusive && ts === oldest);
    const before = (ts: bigint) => latest === undefined || ts < latest || (inclusive && ts === latest);
    const all = this.messagesIn(channel)
      .filter((m) => after(tsMicros(m.ts)) && before(tsMicros(m.ts)))
      .sort((a, b) => (tsMicros(b.ts) > tsMicros(a.ts) ? 1 : -1));
    const limit = Math.min(999, Math.max(1, Number(str(args.limit) ?? 100) || 100));
    const cursor = str(args.cursor);
    const offset = cursor
      ? Number(
          Buffer.from(cursor, 'base64')
            .toString('utf8')
            .replace(/^next:/, ''),
        )
      : 0;
    if (!Number.isInteger(offset) || offset < 0) return { ok: false, error: 'invalid_cursor' };
    const page = all.slice(offset, offset + limit);
    const hasMore = offset + limit < all.length;
    return {
      ok: true,
      messages: page.map((m) => asSlackMessage(m, flag(args.include_all_metadata))),
      has_more: hasMore,
      pin_count: 0,
      response_metadata: {
        next_cursor: hasMore ? Buffer.from(`next:${offset + limit}`).toString('base64') : '',
      },
    };
  }

  private async update(args: Record<string, unknown>): Promise<Record<string, unknown>> {
    const channel = str(args.channel);
    const ts = str(args.ts);
    if (!channel) return { ok: false, error: 'channel_not_found' };
    const msg = ts ? this.messages.get(`${channel}/${ts}`) : undefined;
    if (!msg || !ts) return { ok: false, error: 'message_not_found' };
    const hasText = args.text !== undefined;
    const hasBlocks = args.blocks !== undefined;
    const text = hasText ? (str(args.text) ?? '') : msg.text;
    // Slack: blocks omitted are kept only if text is omitted too; text alone wipes them.
    const blocks = hasBlocks ? (Array.isArray(args.blocks) ? args.blocks : []) : hasText ? [] : msg.blocks;
    const violations = await this.limitViolations(text, blocks, true);
    if (violations.length) return { ok: false, error: 'invalid_blocks', violations };
    msg.text = text;
    msg.blocks = blocks;
    const sent = args.metadata !== undefined ? metadataOf(args.metadata) : undefined;
    msg.versions.push({ text, blocks, at: Date.now(), ...(sent ? { metadata: sent } : {}) });
    // Slack: metadata omitted keeps the message's own; `{}` clears it.
    if (args.metadata !== undefined) {
      const metadata = sent;
      if (metadata) msg.metadata = metadata;
      else delete msg.metadata;
    }
    return { ok: true, channel, ts, text, message: { text, blocks, ts } };
  }

  private view(method: string, args: Record<string, unknown>): Record<string, unknown> {
    const view = (typeof args.view === 'object' && args.view !== null ? args.view : {}) as Record<
      string,
      unknown
    >;
    // A modal Slack would refuse (over 100 blocks, a section over 3,000 characters, …) fails here.
    if (this.limitsEnabled && view.type === 'modal') {
      const violations = checkViewLimits(view);
      if (violations.length) return { ok: false, error: 'invalid_arguments', violations };
    }
    let existing: SlackView | undefined;
    if (method === 'views.update') {
      const id = str(args.view_id);
      const external = str(args.external_id);
      existing = id
        ? this.views.get(id)
        : [...this.views.values()].find((v) => external && v.view.external_id === external);
      if (!existing) return { ok: false, error: 'not_found' };
      const hash = str(args.hash);
      if (hash && hash !== existing.hash) return { ok: false, error: 'hash_conflict' };
    } else if (method === 'views.publish') {
      const userId = str(args.user_id);
      if (!userId) return { ok: false, error: 'invalid_arguments' };
      existing = [...this.views.values()].find((v) => v.method === 'views.publish' && v.userId === userId);
      const hash = str(args.hash);
      if (existing && hash && hash !== existing.hash) return { ok: false, error: 'hash_conflict' };
    } else if (!str(args.trigger_id) && !str(args.interactivity_pointer)) {
      return { ok: false, error: 'invalid_arguments' };
    }
    this.viewCounter += 1;
    const id = existing?.id ?? `V${String(this.viewCounter).padStart(6, '0')}`;
    const record: SlackView = {
      id,
      hash: `h${this.viewCounter}`,
      view,
      method: existing?.method ?? method,
      userId: str(args.user_id) ?? existing?.userId,
    };
    this.views.set(id, record);
    return { ok: true, view: { ...view, id, hash: record.hash, team_id: 'T1' } };
  }
}
