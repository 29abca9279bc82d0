// Test-side controller for fake-host.mjs: a TCP control server the fake host connects to, the
// host's state file, and builders for approval payloads.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { prepareMspSchema } from './mspSchema.mjs';
import { transcriptLines } from './transcripts.js';

// ---------------------------------------------------------------------------------------------
// Wire types (lenient: only what tests read is named)

export interface RequirementRef {
  approvalId: string;
  sourceIndex: number;
}

export interface ApprovalChoice {
  choiceId: string;
  label: string;
  decision: string;
  scope: string;
  rulePreview?: string;
  acceptsFeedback?: boolean;
}

export interface ApprovalStage {
  requirementId: RequirementRef;
  position: number;
  totalStages: number;
  argv: string[];
  argvComplete?: boolean;
  resolution: { kind: string; diagnostic?: string; argvPrefix?: string[] };
  suggestedPrefix?: { argvPrefix: string[]; label: string };
}

export interface ApprovalSubject {
  kind: string;
  command?: string;
  workspaceRoot?: string;
  stages?: ApprovalStage[];
  toolName?: string;
  path?: string;
  access?: string;
  [key: string]: unknown;
}

export interface ApprovalRequestParams {
  sessionId: string;
  approvalId: string;
  turnId: string;
  taskId: string;
  itemId: string;
  toolCallId: string;
  toolName: string;
  rawArgs: string;
  viewCursor: string;
  sourceRange: unknown;
  subject: ApprovalSubject;
  currentRequirementId: RequirementRef;
  availableChoices: ApprovalChoice[];
  protectedWrite: boolean;
  judgeEscalated: boolean;
  subagentOrigin?: { childRunId?: string; childSessionId?: string; subagentId?: string };
  reviewerReason?: string;
  cuaCardFacts?: Record<string, unknown>;
  [key: string]: unknown;
}

/** What `open` and seeds accept: the host fills every missing field with a plausible default. */
export type ApprovalInput = Partial<ApprovalRequestParams> & { approvalId: string; sessionId: string };

export interface SeedSession {
  sessionId: string;
  title?: string;
  status?: string;
  [key: string]: unknown;
}

export interface SeedApproval {
  params: ApprovalInput;
  /** Which host process opened it (default 1: the first one, so no restart recovery applies). */
  openedByIncarnation?: number;
  resolved?: { decision: string; resolvedBy: string; policyResult?: string; viewCursor?: string };
  /** Choices for each shell stage after the first; default: allow once (+ prefix rule) + reject. */
  stageChoices?: ApprovalChoice[][];
}

export interface FakeHostSeed {
  sessions?: SeedSession[];
  approvals?: Array<ApprovalInput | SeedApproval>;
  /** `durable` (default), `ephemeral` or anything else (treated as not durable). */
  durability?: string;
  /**
   * What a restarted host does with an approval opened by an earlier process (default newId):
   * re-ask it under a new id when a session is first touched, keep its id, or (newIdOnResume)
   * re-ask under a new id only at session/resume, listPending listing the old id until then.
   */
  recovery?: 'newId' | 'sameId' | 'newIdOnResume';
  /** session/list page size (default 2). */
  pageSize?: number;
  /** approval/decide needs a session/resume in this process first (-32024 otherwise). */
  requireResume?: boolean;
}

export interface RpcError {
  code: number;
  message: string;
  data?: { kind?: string; retryable?: boolean; [key: string]: unknown };
}

export interface RpcFrame {
  jsonrpc?: string;
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: RpcError;
  [key: string]: unknown;
}

export interface DecideParams {
  sessionId: string;
  commandId: string;
  approvalId: string;
  requirementId: RequirementRef;
  choiceId: string;
  feedback?: string | null;
}

/** One frame the fake host read from the bot. `frame` is the raw text when it did not parse. */
export interface HostFrame<F = RpcFrame | string> {
  index: number;
  incarnation: number;
  frame: F;
  at: number;
  /** process.hrtime.bigint() in the host when it read the frame (one clock for every process). */
  hr: bigint;
}

export interface OpenBatchCommand {
  /** approvalIds are `${prefix}-000000`, `${prefix}-000001`, … in writing order. */
  prefix: string;
  count: number;
  /** Approvals written per second; 0 writes them all at once. */
  ratePerSec: number;
  /** Round-robin over these sessions and tool names. */
  sessions?: string[];
  tools?: string[];
  /** Fields every approval of the batch shares (subject, rawArgs, …). */
  template?: Partial<ApprovalRequestParams>;
}

/** A frame, either way, that the fake host found off the vendor's MSP schema (mspSchema.mjs). */
export interface SchemaViolation {
  incarnation: number;
  /** `client`: the bot wrote it (a bot bug); `server`: the fake host did (drift in the fake). */
  direction: 'client' | 'server';
  /** The frame, parsed, or its text when it is not JSON. */
  frame: unknown;
  errors: string[];
}

/** What raw() and notify() accept: `offSchema` marks a frame sent off the schema on purpose. */
export interface OffSchemaOption {
  /** Why the frame does not conform, and must not (a tolerance test); it is then not reported. */
  offSchema?: string;
}

export type DecideFrame = HostFrame<
  RpcFrame & { id: string | number; params: DecideParams & Record<string, unknown> }
>;

export interface Incarnation {
  incarnation: number;
  pid: number;
  /** The host process's working directory and its FAKE_HOST_MARK variable, as it saw them. */
  cwd?: string;
  mark?: string;
  startedAt: number;
  closedAt?: number;
}

/** `none` stores the approval without a frame: only listPending tells of it. */
export type OpenVia = 'both' | 'request' | 'requested' | 'reviewing-then-request' | 'none';

export interface ResolveCommand extends OffSchemaOption {
  approvalId: string;
  decision: string;
  /** Default `policy`. */
  resolvedBy?: string;
  /** Default allow, or deny for abort/denied*. */
  policyResult?: string;
  amendment?: { durability: string; rulePreview: string };
}

export interface UpdateCommand extends OffSchemaOption {
  approvalId: string;
  /** Shallow-merged into the stored approval params before the frame is built. */
  patch?: Partial<ApprovalRequestParams>;
  change: { kind: string; [key: string]: unknown };
}

/** Persisted host state (the JSON file the fake host reads and writes). */
export interface HostState {
  incarnation: number;
  durability: string;
  recovery: string;
  pageSize: number;
  requireResume: boolean;
  seq: number;
  sessions: SeedSession[];
  approvals: Record<
    string,
    {
      params: ApprovalRequestParams;
      openedByIncarnation: number;
      order: number;
      reviewing?: boolean;
      resolved?: { decision: string; resolvedBy: string; policyResult?: string; viewCursor: string };
      supersededBy?: string;
      recoveredFrom?: string;
    }
  >;
  commands: Record<string, { key: string; result?: unknown; error?: RpcError }>;
}

// ---------------------------------------------------------------------------------------------

const HOST_SCRIPT = fileURLToPath(new URL('./fake-host.mjs', import.meta.url));

function shellQuote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}

function isSeedApproval(a: ApprovalInput | SeedApproval): a is SeedApproval {
  return typeof (a as SeedApproval).params === 'object' && (a as SeedApproval).params !== null;
}

function describeFrame(f: HostFrame): string {
  if (typeof f.frame === 'string')
    return `#${f.index} [inc ${f.incarnation}] raw ${JSON.stringify(f.frame.slice(0, 80))}`;
  const fr = f.frame;
  const what = fr.method ?? (fr.error ? `error ${fr.error.code}` : 'result');
  return `#${f.index} [inc ${f.incarnation}] ${what} id=${JSON.stringify(fr.id)}`;
}

interface PendingAck {
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  socket: net.Socket;
  type: string;
  timer: NodeJS.Timeout;
}

interface Waiter<T> {
  test: (item: T) => boolean;
  resolve: (item: T) => void;
}

export class FakeHost {
  /** Command line for MSP_HOST_COMMAND (run by the bot through /bin/sh -c; execs node). */
  readonly command: string;
  /** Put these into the bot's environment; the bot hands its environment to the host. */
  readonly env: { FAKE_HOST_CONTROL: string; FAKE_HOST_STATE: string };
  readonly statePath: string;
  /** Every frame the host processes read from the bot, in order, across incarnations. */
  readonly frames: HostFrame[] = [];
  /** Frames, both ways, that did not conform to the vendor's schema; close() fails on any. */
  readonly schemaViolations: SchemaViolation[] = [];
  readonly incarnations: Incarnation[] = [];

  private readonly server: net.Server;
  private readonly dir: string;
  private readonly sockets = new Set<net.Socket>();
  private current: { socket: net.Socket; info: Incarnation } | null = null;
  private readonly acks = new Map<number, PendingAck>();
  private nextId = 1;
  private frameWaiters: Waiter<HostFrame>[] = [];
  private incarnationWaiters: Waiter<Incarnation>[] = [];
  private connectWaiters: Array<() => void> = [];

  private constructor(server: net.Server, dir: string, port: number, script: string) {
    this.server = server;
    this.dir = dir;
    this.statePath = join(dir, 'host-state.json');
    // `exec` so that the shell is replaced: signals the bot sends to its child reach the host.
    this.command = `exec ${shellQuote(process.execPath)} ${shellQuote(script)}`;
    this.env = { FAKE_HOST_CONTROL: String(port), FAKE_HOST_STATE: this.statePath };
  }

  /**
   * `options.script` runs another host program that speaks the same control protocol instead of
   * fake-host.mjs (replay-host.mjs, see replay.ts).
   */
  static async start(seed: FakeHostSeed = {}, options: { script?: string } = {}): Promise<FakeHost> {
    // Builds (once per schema version, cached in the temp dir) the validators every host process
    // loads, so that no host process spends its start-up compiling them.
    await prepareMspSchema();
    const dir = mkdtempSync(join(tmpdir(), 'fake-host-'));
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (!address || typeof address === 'string') throw new Error('FakeHost: no control port');
    const host = new FakeHost(server, dir, address.port, options.script ?? HOST_SCRIPT);
    server.on('connection', (socket) => host.onConnection(socket));
    host.writeInitialState(seed);
    return host;
  }

  /** Which host process is connected now (null between a crash and the respawn). */
  get incarnation(): number | null {
    return this.current?.info.incarnation ?? null;
  }

  get connected(): boolean {
    return this.current !== null;
  }

  /** Resolves once host process number `n` (1 = first spawn) has connected. */
  waitForIncarnation(n: number, timeoutMs = 10_000): Promise<Incarnation> {
    return this.waitOn(
      this.incarnations,
      this.incarnationWaiters,
      (i) => i.incarnation >= n,
      timeoutMs,
      () =>
        `FakeHost: incarnation ${n} did not start within ${timeoutMs} ms; started: [${this.incarnations
          .map((i) => `${i.incarnation} (pid ${i.pid})`)
          .join(', ')}]`,
    );
  }

  // ---- control commands (each resolves when the host acknowledges it)

  /** Opens an approval in the host and writes its frames. Resolves with the filled params. */
  open(
    approval: ApprovalInput,
    opts: { via?: OpenVia; stageChoices?: ApprovalChoice[][] } = {},
  ): Promise<ApprovalRequestParams> {
    return this.send('open', {
      approval,
      via: opts.via ?? 'both',
      stageChoices: opts.stageChoices,
    }) as Promise<ApprovalRequestParams>;
  }

  /**
   * Writes `count` approval/requested notifications at a steady rate from inside the host and
   * resolves once they are scheduled; `batchWritten` resolves when the last one is written.
   */
  async openBatch(cmd: OpenBatchCommand): Promise<void> {
    await this.send('openBatch', { ...cmd });
  }

  /** When the host wrote each approval of a batch: approvalId → process.hrtime.bigint(). */
  async batchTimes(prefix: string): Promise<Map<string, bigint>> {
    const raw = (await this.send('batchTimes', { prefix }, 30_000)) as Record<string, string>;
    return new Map(Object.entries(raw).map(([id, hr]) => [id, BigInt(hr)]));
  }

  /** Ends the automated review of an approval opened with via 'reviewing-then-request'. */
  escalate(approvalId: string): Promise<ApprovalRequestParams> {
    return this.send('escalate', { approvalId }) as Promise<ApprovalRequestParams>;
  }

  /** The host resolves an approval by itself (policy, judge, another client). */
  resolve(cmd: ResolveCommand): Promise<Record<string, unknown>> {
    return this.send('resolve', { ...cmd }) as Promise<Record<string, unknown>>;
  }

  /** Sends an approval's approval/resolved again, exactly as the host first sent it. */
  redeliverResolved(approvalId: string): Promise<Record<string, unknown>> {
    return this.send('redeliverResolved', { approvalId }) as Promise<Record<string, unknown>>;
  }

  update(cmd: UpdateCommand): Promise<Record<string, unknown>> {
    return this.send('update', { ...cmd }) as Promise<Record<string, unknown>>;
  }

  /** Any control command the host program takes (replay-host.mjs has some of its own). */
  control(type: string, payload: Record<string, unknown> = {}): Promise<unknown> {
    return this.send(type, payload);
  }

  /** The environment the connected host process was started with. */
  environment(): Promise<Record<string, string>> {
    return this.send('environment', {}) as Promise<Record<string, string>>;
  }

  /** Writes `line` + '\n' verbatim to the bot. */
  async raw(line: string, options: OffSchemaOption = {}): Promise<void> {
    await this.send('raw', { line, ...options });
  }

  /** Writes one valid JSON notification line of exactly `size` bytes (plus '\n'). */
  async rawBytes(size: number): Promise<void> {
    await this.send('rawBytes', { size });
  }

  /** Writes `line` + '\n' to the host's stderr (diagnostics the bot logs). */
  async stderr(line: string): Promise<void> {
    await this.send('stderr', { line });
  }

  /** The next `times` approval/decide calls (that pass the ledger and session checks) get `error`. */
  async failDecide(
    error: { code: number; message?: string; data?: Record<string, unknown> },
    times = 1,
  ): Promise<void> {
    await this.send('failDecide', { error, times });
  }

  /** Makes the connected host process exit at once with `code`; resolves when it has gone. */
  /** The next `times` approval/decide requests are read but never applied nor answered. */
  async holdDecide(times = 1): Promise<void> {
    await this.send('holdDecide', { times });
  }

  /**
   * The next `times` approval/decide requests are applied (and kept in the host's ledger) but
   * neither answered nor followed by their frames: the bot never hears how they ended.
   */
  async applySilently(times = 1): Promise<void> {
    await this.send('applySilently', { times });
  }

  /** The next approval/decide is applied and answered only after `ms` (a slow host). */
  delayDecide(ms: number): Promise<void> {
    return this.delayRequest('approval/decide', ms);
  }

  /** The next request of `method` is handled and answered only after `ms` (a slow host). */
  async delayRequest(method: string, ms: number): Promise<void> {
    await this.send('delayRequest', { method, ms });
  }

  /**
   * What this host process sends when a decide moves a shell approval to its next stage:
   * approval/updated then a fresh approval/request (the default), or approval/updated alone.
   */
  async stageAdvance(frames: 'updatedAndRequest' | 'updatedOnly'): Promise<void> {
    await this.send('stageAdvance', { frames });
  }

  async crash(code = 1): Promise<void> {
    await this.send('crash', { code });
  }

  /** The approval vanishes from the host without a frame (a later listPending misses it). */
  async forget(approvalId: string): Promise<void> {
    await this.send('forget', { approvalId });
  }

  /** The session and its approvals vanish from the host (listPending: sessionNotFound). */
  async dropSession(sessionId: string): Promise<void> {
    await this.send('dropSession', { sessionId });
  }

  /**
   * Another client takes the session's writer lease (session/resume: sessionInUse), or lets go
   * of it. Silently by default, as upstream (statusChanged and closed are only about sessions
   * loaded on this host); `announce: 'listChanged'` sends the session's list row.
   */
  async holdSession(
    sessionId: string,
    held = true,
    options: { announce?: 'listChanged' } = {},
  ): Promise<void> {
    await this.send('holdSession', { sessionId, held, ...options });
  }

  /** The current shell stage is satisfied and the next becomes current, with no frame sent. */
  advanceSilently(approvalId: string): Promise<ApprovalRequestParams> {
    return this.send('advanceSilently', { approvalId }) as Promise<ApprovalRequestParams>;
  }

  /**
   * The next `times` requests of `method` (listPending, resume, …) are answered with `error`,
   * by this host process or, after a crash, the next one.
   */
  async failRequest(
    method: string,
    error: { code: number; message?: string; data?: Record<string, unknown> },
    times = 1,
  ): Promise<void> {
    await this.send('failRequest', { method, error, times });
  }

  startSession(session: SeedSession): Promise<Record<string, unknown>> {
    return this.send('startSession', { session }) as Promise<Record<string, unknown>>;
  }

  /** Sends an arbitrary notification (e.g. session/closed, session/statusChanged). */
  async notify(method: string, params: unknown, options: OffSchemaOption = {}): Promise<void> {
    await this.send('notify', { method, params, ...options });
  }

  /** Changes durability/recovery/pageSize/requireResume; durability applies to later processes. */
  async configure(patch: Omit<FakeHostSeed, 'sessions' | 'approvals'>): Promise<void> {
    await this.send('configure', { patch });
  }

  // ---- observations

  framesOf(method: string): Array<HostFrame<RpcFrame>> {
    return this.frames.filter(
      (f): f is HostFrame<RpcFrame> => typeof f.frame !== 'string' && f.frame.method === method,
    );
  }

  /** All approval/decide requests the bot sent, in order. */
  decides(): DecideFrame[] {
    return this.framesOf('approval/decide') as DecideFrame[];
  }

  /** First frame (already received or still to come) matching `predicate`. */
  waitForFrame(predicate: (f: HostFrame) => boolean, timeoutMs = 5000): Promise<HostFrame> {
    return this.waitOn(this.frames, this.frameWaiters, predicate, timeoutMs, () => {
      const seen = this.frames.slice(-30).map(describeFrame).join('\n  ');
      return `FakeHost: no matching frame from the bot within ${timeoutMs} ms. Frames seen (${this.frames.length}, last 30):\n  ${seen}`;
    });
  }

  /** First frame with this method (optionally matching `predicate`). */
  async waitForMethod(
    method: string,
    predicate: (f: HostFrame<RpcFrame>) => boolean = () => true,
    timeoutMs = 5000,
  ): Promise<HostFrame<RpcFrame>> {
    const f = await this.waitForFrame(
      (x) => typeof x.frame !== 'string' && x.frame.method === method && predicate(x as HostFrame<RpcFrame>),
      timeoutMs,
    );
    return f as HostFrame<RpcFrame>;
  }

  /** First approval/decide (optionally matching `predicate`). */
  async waitForDecide(
    predicate: (f: DecideFrame) => boolean = () => true,
    timeoutMs = 5000,
  ): Promise<DecideFrame> {
    const f = await this.waitForMethod('approval/decide', (x) => predicate(x as DecideFrame), timeoutMs);
    return f as DecideFrame;
  }

  /** The host's persisted state as it is on disk now. */
  state(): HostState {
    return JSON.parse(readFileSync(this.statePath, 'utf8')) as HostState;
  }

  /** Approvals the host holds as pending (optionally for one session), in opening order. */
  pendingApprovals(sessionId?: string): ApprovalRequestParams[] {
    return Object.values(this.state().approvals)
      .filter(
        (a) => !a.resolved && !a.reviewing && (sessionId === undefined || a.params.sessionId === sessionId),
      )
      .sort((a, b) => a.order - b.order)
      .map((a) => a.params);
  }

  /**
   * Resolves once the connected host process has answered a round trip on its control socket: it
   * reports in order there, so every report (frame, schema violation) it sent before is in.
   */
  async sync(timeoutMs = 5000): Promise<void> {
    await this.send('sync', {}, timeoutMs);
  }

  /** Throws, naming each frame and what is wrong with it, if any frame was off the schema. */
  assertFramesConform(): void {
    if (this.schemaViolations.length === 0) return;
    const lines = this.schemaViolations.map((v) => {
      const who =
        v.direction === 'client'
          ? 'bot → host (a bot bug)'
          : 'host → bot (drift in test/support/fake-host.mjs or the seed; or mark it offSchema)';
      const text = typeof v.frame === 'string' ? v.frame : JSON.stringify(v.frame);
      const shown = text.length > 1500 ? `${text.slice(0, 1500)}…` : text;
      return `  ${who}, host process ${v.incarnation}:\n    ${shown}\n${v.errors.map((e) => `      ${e}`).join('\n')}`;
    });
    throw new Error(
      `FakeHost: ${this.schemaViolations.length} MSP frame(s) off the vendor's schema (test/fixtures/msp-schema):\n${lines.join('\n')}`,
    );
  }

  /**
   * Stops the control server and removes the host's files; then fails if any frame of the run was
   * off the schema (so every test that uses a fake host checks its frames, both ways).
   */
  async close(): Promise<void> {
    if (this.current) await this.sync(1000).catch(() => undefined);
    for (const [, ack] of this.acks) {
      clearTimeout(ack.timer);
      ack.reject(new Error('FakeHost closed'));
    }
    this.acks.clear();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    rmSync(this.dir, { recursive: true, force: true });
    this.assertFramesConform();
  }

  // ---- internals

  private writeInitialState(seed: FakeHostSeed): void {
    const approvals: Record<string, unknown> = {};
    let order = 0;
    for (const a of seed.approvals ?? []) {
      const rec: SeedApproval = isSeedApproval(a) ? a : { params: a };
      order += 1;
      approvals[rec.params.approvalId] = {
        params: rec.params,
        openedByIncarnation: rec.openedByIncarnation ?? 1,
        order,
        reviewing: false,
        ...(rec.resolved ? { resolved: { viewCursor: `v:${rec.params.sessionId}:1`, ...rec.resolved } } : {}),
        ...(rec.stageChoices ? { stageChoices: rec.stageChoices } : {}),
      };
    }
    const state = {
      incarnation: 0,
      durability: seed.durability ?? 'durable',
      recovery: seed.recovery ?? 'newId',
      pageSize: seed.pageSize ?? 2,
      requireResume: seed.requireResume ?? false,
      seq: 100,
      sessions: (seed.sessions ?? []).map((s) => ({ status: 'idle', ...s })),
      approvals,
      commands: {},
    };
    writeFileSync(this.statePath, JSON.stringify(state));
  }

  private onConnection(socket: net.Socket): void {
    this.sockets.add(socket);
    socket.setNoDelay(true);
    let buf = '';
    let info: Incarnation | null = null;
    socket.on('data', (chunk) => {
      buf += chunk.toString('utf8');
      let nl = buf.indexOf('\n');
      while (nl >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        nl = buf.indexOf('\n');
        if (!line.trim()) continue;
        let msg: { type?: string; [key: string]: unknown };
        try {
          msg = JSON.parse(line) as typeof msg;
        } catch {
          continue;
        }
        if (msg.type === 'started') {
          info = {
            incarnation: Number(msg.incarnation),
            pid: Number(msg.pid),
            ...(typeof msg.cwd === 'string' ? { cwd: msg.cwd } : {}),
            ...(typeof msg.mark === 'string' ? { mark: msg.mark } : {}),
            startedAt: Date.now(),
          };
          this.current = { socket, info };
          this.push(this.incarnations, this.incarnationWaiters, info);
          for (const w of this.connectWaiters.splice(0)) w();
        } else if (msg.type === 'frame') {
          const frame: HostFrame = {
            index: this.frames.length,
            incarnation: Number(msg.incarnation),
            frame: msg.frame as RpcFrame | string,
            at: Date.now(),
            hr: BigInt(String(msg.hr ?? 0)),
          };
          this.push(this.frames, this.frameWaiters, frame);
        } else if (msg.type === 'schemaViolation') {
          this.schemaViolations.push({
            incarnation: Number(msg.incarnation),
            direction: msg.direction === 'client' ? 'client' : 'server',
            frame: msg.frame,
            errors: Array.isArray(msg.errors) ? msg.errors.map(String) : [String(msg.errors)],
          });
        } else if (msg.type === 'ack') {
          const ack = this.acks.get(Number(msg.id));
          if (!ack) continue;
          this.acks.delete(Number(msg.id));
          clearTimeout(ack.timer);
          if (typeof msg.error === 'string') ack.reject(new Error(`FakeHost ${ack.type}: ${msg.error}`));
          else ack.resolve(msg.result);
        }
      }
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      this.sockets.delete(socket);
      if (info) info.closedAt = Date.now();
      if (this.current?.socket === socket) this.current = null;
      for (const [id, ack] of this.acks) {
        if (ack.socket !== socket) continue;
        this.acks.delete(id);
        clearTimeout(ack.timer);
        if (ack.type === 'crash') ack.resolve(null);
        else ack.reject(new Error(`FakeHost ${ack.type}: the host process exited before acknowledging`));
      }
    });
  }

  private push<T>(list: T[], waiters: Waiter<T>[], item: T): void {
    list.push(item);
    for (const w of [...waiters]) {
      if (w.test(item)) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve(item);
      }
    }
  }

  private waitOn<T>(
    list: T[],
    waiters: Waiter<T>[],
    test: (item: T) => boolean,
    timeoutMs: number,
    describe: () => string,
  ): Promise<T> {
    const found = list.find(test);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise<T>((resolve, reject) => {
      const waiter: Waiter<T> = {
        test,
        resolve: (item) => {
          clearTimeout(timer);
          resolve(item);
        },
      };
      const timer = setTimeout(() => {
        const i = waiters.indexOf(waiter);
        if (i >= 0) waiters.splice(i, 1);
        reject(new Error(describe()));
      }, timeoutMs);
      waiters.push(waiter);
    });
  }

  private async connectedSocket(timeoutMs: number, type: string): Promise<net.Socket> {
    if (this.current) return this.current.socket;
    await new Promise<void>((resolve, reject) => {
      const done = () => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        const i = this.connectWaiters.indexOf(done);
        if (i >= 0) this.connectWaiters.splice(i, 1);
        const last = this.incarnations.at(-1);
        reject(
          new Error(
            `FakeHost ${type}: no host process is connected after ${timeoutMs} ms ` +
              (last
                ? `(last was incarnation ${last.incarnation}, pid ${last.pid}, which has exited)`
                : '(none ever started: did the bot spawn MSP_HOST_COMMAND with FAKE_HOST_* in its env?)'),
          ),
        );
      }, timeoutMs);
      this.connectWaiters.push(done);
    });
    if (!this.current) throw new Error(`FakeHost ${type}: host disconnected`);
    return (this.current as { socket: net.Socket }).socket;
  }

  private async send(type: string, payload: Record<string, unknown>, timeoutMs = 5000): Promise<unknown> {
    const socket = await this.connectedSocket(timeoutMs, type);
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.acks.delete(id);
        reject(new Error(`FakeHost ${type}: no ack from the host within ${timeoutMs} ms`));
      }, timeoutMs);
      this.acks.set(id, { resolve, reject, socket, type, timer });
      socket.write(`${JSON.stringify({ ...payload, type, id })}\n`);
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Approval builders

function renameApproval<T extends ApprovalInput>(params: T, newId: string): T {
  const copy = structuredClone(params);
  copy.approvalId = newId;
  if (copy.currentRequirementId)
    copy.currentRequirementId = { ...copy.currentRequirementId, approvalId: newId };
  for (const s of copy.subject?.stages ?? []) s.requirementId = { ...s.requirementId, approvalId: newId };
  return copy;
}

/**
 * The approval/requested params recorded in test/fixtures/msp-transcripts/<name>/transcript.ndjson
 * (falls back to the first approval/request). `overrides.approvalId` renames it consistently
 * (currentRequirementId and stage requirementIds follow); other overrides are merged on top.
 */
export function approvalFromTranscript(
  name: string,
  overrides: Partial<ApprovalRequestParams> = {},
): ApprovalRequestParams {
  let found: ApprovalRequestParams | undefined;
  for (const entry of transcriptLines(name)) {
    if (entry.dir !== 'server') continue;
    const frame = JSON.parse(entry.raw) as RpcFrame;
    if (frame.method === 'approval/requested') {
      found = frame.params as ApprovalRequestParams;
      break;
    }
    if (frame.method === 'approval/request' && !found) found = frame.params as ApprovalRequestParams;
  }
  if (!found) throw new Error(`approvalFromTranscript: no approval in transcript ${name}`);
  const { approvalId, ...rest } = overrides;
  const renamed = approvalId ? renameApproval(found, approvalId) : found;
  return { ...renamed, ...rest };
}

/** `base` turned into a request to write `path`, exactly as the agent sent it. */
export function fileWriteApproval(base: ApprovalRequestParams, path: string): ApprovalRequestParams {
  return {
    ...base,
    toolName: 'write_file',
    rawArgs: JSON.stringify({ path }),
    subject: { kind: 'fileAccess', path, access: 'write' },
  };
}

/**
 * A multi-stage shell approval shaped like the two-stage example of msp-approvals.md §5.2:
 * stage 1 carries a suggested prefix (and an "always allow in this workspace" choice).
 */
export function shellApproval(opts: {
  approvalId: string;
  sessionId: string;
  stages: string[][];
  workspaceRoot?: string;
  turnId?: string;
  judgeEscalated?: boolean;
  protectedWrite?: boolean;
}): ApprovalRequestParams {
  const { approvalId, sessionId, stages } = opts;
  if (stages.length === 0) throw new Error('shellApproval: at least one stage');
  const command = stages.map((argv) => argv.join(' ')).join(' && ');
  const first = stages[0] ?? [];
  const prefixLabel = `Always allow in this workspace: ${first.join(' ')} ...`;
  const shellStages: ApprovalStage[] = stages.map((argv, i) => ({
    requirementId: { approvalId, sourceIndex: i },
    position: i + 1,
    totalStages: stages.length,
    argv,
    argvComplete: true,
    resolution: { kind: 'unresolved' },
    ...(i === 0 ? { suggestedPrefix: { argvPrefix: argv, label: prefixLabel } } : {}),
  }));
  const tail = approvalId.slice(-4);
  return {
    sessionId,
    approvalId,
    turnId: opts.turnId ?? `turn-${approvalId}`,
    taskId: `task-${approvalId}`,
    itemId: `item-${approvalId}`,
    toolCallId: `call_${tail}`,
    toolName: 'bash',
    rawArgs: JSON.stringify({ command }),
    viewCursor: `v:${sessionId}:40`,
    sourceRange: {
      stream: { kind: 'session', id: sessionId },
      first: { id: `rec-${tail}`, sequence: 88 },
      last: { id: `rec-${tail}`, sequence: 88 },
    },
    subject: {
      kind: 'shell',
      command,
      workspaceRoot: opts.workspaceRoot ?? '/srv/repo',
      stages: shellStages,
    },
    currentRequirementId: { approvalId, sourceIndex: 0 },
    availableChoices: [
      { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
      {
        choiceId: 'allow_local_prefix',
        label: prefixLabel,
        decision: 'approvedPolicyAmendment',
        scope: 'localPersistent',
        rulePreview: prefixLabel,
      },
      { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once', acceptsFeedback: true },
    ],
    protectedWrite: opts.protectedWrite ?? false,
    judgeEscalated: opts.judgeEscalated ?? false,
  };
}
