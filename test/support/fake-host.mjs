#!/usr/bin/env node
// A stateful miniature MSP host for end-to-end tests. Plain Node ESM; its one dependency is
// mspSchema.mjs (ajv), which checks every frame it reads and writes against the vendor's schema.
//
// Speaks JSON-RPC 2.0 over NDJSON on stdin/stdout like `muse serve`. Its durable state (sessions,
// approvals, the decide ledger, the incarnation counter) lives in the JSON file named by
// FAKE_HOST_STATE, so a crash and respawn behaves like a durable host reloading its session log.
// It connects to the test's TCP control server on 127.0.0.1:FAKE_HOST_CONTROL, reports every
// frame it reads from the bot and takes commands (open, resolve, crash, ...). See fakeHost.ts.
//
// Every frame, both ways, is checked against the vendored MSP schema (mspSchema.mjs); what does
// not conform is reported to the test as a schemaViolation, and FakeHost.close() fails the test
// on it. A bot frame that fails is a bot bug; a frame of ours that fails is drift in this fake, to
// fix here, unless the test sent it on purpose (raw/notify with offSchema, naming why).

import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { connectControl } from './hostControl.mjs';
import { createFrameValidator } from './mspSchema.mjs';

const FINGERPRINT = 'sha256:c8d1a2a1866814e220fd396d382a9a75861412feee884b5021b2ee359bd3dc59';
const GRANTABLE_CAPABILITIES = ['sessionListStream'];
const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;
const KIND_BY_CODE = {
  '-32001': 'overloaded',
  '-32031': 'backpressured',
  '-32024': 'sessionNotLoaded',
  '-32021': 'sessionInUse',
  '-32030': 'commandRejected',
  '-32050': 'approvalNotFound',
  '-32051': 'approvalAlreadyResolved',
  '-32052': 'approvalChoiceInvalid',
  '-32053': 'approvalRequirementStale',
  '-32054': 'approvalReviewerUnavailable',
  '-32603': 'internal',
};
const REJECTING = new Set(['abort', 'denied', 'deniedPolicyAmendment', 'timedOut']);

/** One checker per process: a host process is one connection, with its own id spaces. */
const frameValidator = await createFrameValidator();
const statePath = process.env.FAKE_HOST_STATE;
const controlPort = Number(process.env.FAKE_HOST_CONTROL || 0);

// ---------------------------------------------------------------------------------------------
// Durable state

/** @returns {any} */
function defaultState() {
  return {
    incarnation: 0,
    durability: 'durable',
    recovery: 'newId',
    pageSize: 2,
    requireResume: false,
    seq: 100,
    sessions: [],
    approvals: {},
    commands: {},
    /** @type {{method: string, error: any, times: number}[]} the next requests of a method that fail */
    forcedRequests: [],
  };
}

function loadState() {
  if (statePath && existsSync(statePath)) {
    return { ...defaultState(), ...JSON.parse(readFileSync(statePath, 'utf8')) };
  }
  return defaultState();
}

/** Re-reads the file, so that two host processes sharing it (a replica handover) stay consistent. */
function refreshState() {
  if (!statePath || !existsSync(statePath)) return;
  try {
    Object.assign(state, JSON.parse(readFileSync(statePath, 'utf8')));
  } catch {
    // keep the in-memory copy
  }
}

function saveState() {
  if (!statePath) return;
  const tmp = `${statePath}.${process.pid}.tmp`;
  writeFileSync(tmp, JSON.stringify(state));
  renameSync(tmp, statePath);
}

const state = loadState();
state.incarnation += 1;
const incarnation = state.incarnation;
if (state.durability !== 'durable' && incarnation > 1) {
  // Nothing survives an ephemeral host: pending approvals and the command ledger die with it.
  state.approvals = {};
  state.commands = {};
}
normalizeSeededState();
saveState();

/** Seeds written by the test may be partial: fill approval defaults and their sessions. */
function normalizeSeededState() {
  let order = 0;
  for (const [id, rec] of Object.entries(state.approvals)) {
    rec.params = fillApproval({ approvalId: id, ...rec.params });
    rec.openedByIncarnation ??= 1;
    rec.order ??= ++order;
    rec.reviewing ??= false;
    ensureSession(rec.params.sessionId);
  }
}

// Per-process (per-connection) state.
let initialized = false; // `initialize` answered
let ready = false; // `initialized` received: only then are server-initiated frames delivered
let granted = [];
let nextServerRequestId = 1;
/** @type {{line: string, offSchemaReason: string | undefined}[]} */
const outbox = [];
const subscribed = new Set();
const touched = new Set();
/** @type {{error: any, times: number}[]} */
const forcedDecideErrors = [];
/** How many of the next approval/decide requests to read and then leave unanswered. */
let unansweredDecides = 0;
/** How many of the next approval/decide requests to apply and then say nothing about (no answer, no frames). */
let silentDecides = 0;
/** How long the next approval/decide waits before it is applied and answered (a slow host). */
/** method → how long its next request waits before it is handled (a slow host). */
const nextDelayMs = new Map();
/**
 * What the host sends when a decide advances a shell approval to its next stage: approval/updated
 * and a fresh approval/request (`updatedAndRequest`), or approval/updated alone (`updatedOnly`),
 * which msp-approvals.md §9 allows.
 */
let stageAdvanceFrames = 'updatedAndRequest';

// ---------------------------------------------------------------------------------------------
// Control connection

const { report, end: endControl } = connectControl(controlPort, handleControlLine);
// cwd and FAKE_HOST_MARK let a test see the working directory and environment the bot gave the host.
report({
  type: 'started',
  incarnation,
  pid: process.pid,
  cwd: process.cwd(),
  mark: process.env.FAKE_HOST_MARK,
});

function handleControlLine(line) {
  let cmd;
  try {
    cmd = JSON.parse(line);
  } catch {
    return;
  }
  refreshState();
  try {
    const result = applyControl(cmd);
    if (cmd.type !== 'crash') report({ type: 'ack', id: cmd.id, result: result ?? null });
  } catch (err) {
    report({ type: 'ack', id: cmd.id, error: err instanceof Error ? err.message : String(err) });
  }
}

function applyControl(cmd) {
  switch (cmd.type) {
    case 'open':
      return openApproval(cmd.approval, cmd.via ?? 'both', cmd.stageChoices);
    case 'escalate':
      return escalate(cmd.approvalId);
    case 'resolve':
      return hostResolve(cmd);
    case 'update':
      return hostUpdate(cmd);
    case 'redeliverResolved':
      return redeliverResolved(cmd.approvalId);
    case 'raw':
      writeLine(String(cmd.line), offSchema(cmd));
      return null;
    case 'rawBytes':
      writeLine(hugeLine(Number(cmd.size)));
      return null;
    case 'stderr':
      process.stderr.write(`${String(cmd.line)}\n`);
      return null;
    case 'holdDecide':
      unansweredDecides += Number(cmd.times ?? 1);
      return null;
    case 'applySilently':
      silentDecides += Number(cmd.times ?? 1);
      return null;
    case 'delayRequest':
      nextDelayMs.set(String(cmd.method), Number(cmd.ms ?? 0));
      return null;
    case 'failDecide':
      forcedDecideErrors.push({ error: cmd.error, times: Number(cmd.times ?? 1) });
      return null;
    case 'crash':
      process.exit(Number(cmd.code ?? 1));
      return null;
    case 'startSession':
      return startSession(cmd.session);
    case 'notify':
      notify(cmd.method, cmd.params, offSchema(cmd));
      return null;
    case 'sync':
      // Answered after every report sent before it: the test has all violations once it has this.
      return null;
    case 'configure':
      for (const key of ['durability', 'recovery', 'pageSize', 'requireResume']) {
        if (cmd.patch && key in cmd.patch) state[key] = cmd.patch[key];
      }
      saveState();
      return null;
    case 'state':
      return state;
    case 'environment':
      // What the bot gave this process, for a test to check what a host inherits.
      return { ...process.env };
    case 'forget':
      // The approval vanishes from the host's state with no frame: a later listPending misses it.
      delete state.approvals[cmd.approvalId];
      saveState();
      return null;
    case 'dropSession':
      // The session and its approvals vanish: listPending answers sessionNotFound.
      state.sessions = state.sessions.filter((x) => x.sessionId !== cmd.sessionId);
      for (const [id, rec] of Object.entries(state.approvals)) {
        if (rec.params.sessionId === cmd.sessionId) delete state.approvals[id];
      }
      saveState();
      return null;
    case 'holdSession':
      return holdSession(cmd.sessionId, cmd.held !== false, cmd.announce);
    case 'advanceSilently':
      return advanceSilently(cmd.approvalId);
    case 'failRequest':
      // Kept in the durable state, so that it also hits the next host process (after a crash).
      state.forcedRequests.push({ method: cmd.method, error: cmd.error, times: Number(cmd.times ?? 1) });
      saveState();
      return null;
    case 'openBatch':
      return openBatch(cmd);
    case 'batchTimes':
      return batchTimes(cmd.prefix);
    case 'stageAdvance':
      if (cmd.frames !== 'updatedAndRequest' && cmd.frames !== 'updatedOnly') {
        throw new Error(`stageAdvance: frames must be updatedAndRequest or updatedOnly`);
      }
      stageAdvanceFrames = cmd.frames;
      return null;
    default:
      throw new Error(`unknown control command ${JSON.stringify(cmd.type)}`);
  }
}

// ---------------------------------------------------------------------------------------------
// Schema check

/** A control command's `offSchema`: why the test sends a frame off the schema on purpose. */
function offSchema(cmd) {
  if (cmd.offSchema === undefined) return undefined;
  if (typeof cmd.offSchema !== 'string' || cmd.offSchema.trim() === '') {
    throw new Error(`${cmd.type}: offSchema must say why the frame is sent off the schema`);
  }
  return cmd.offSchema;
}

/**
 * Checks one frame (`client`: read from the bot; `server`: written by us) and reports what does
 * not conform. A frame marked offSchema is still fed to the checker (its ids count) but reports
 * nothing.
 */
function checkFrame(frame, direction, offSchemaReason) {
  const errors = frameValidator.validate(frame, direction);
  if (errors.length === 0 || offSchemaReason !== undefined) return;
  const shown = typeof frame === 'string' && frame.length > 2000 ? `${frame.slice(0, 2000)}…` : frame;
  report({ type: 'schemaViolation', incarnation, direction, frame: shown, errors });
}

// ---------------------------------------------------------------------------------------------
// Output

/** Writes one line to the bot and checks each frame in it. */
function out(line, offSchemaReason) {
  process.stdout.write(`${line}\n`);
  for (const part of line.split('\n')) {
    if (part.trim()) checkFrame(part, 'server', offSchemaReason);
  }
}

function writeLine(line, offSchemaReason) {
  if (!ready) {
    outbox.push({ line, offSchemaReason });
    return;
  }
  out(line, offSchemaReason);
}

function flushOutbox() {
  for (const { line, offSchemaReason } of outbox.splice(0)) out(line, offSchemaReason);
}

function respond(id, result) {
  // Responses are never held back, even before `initialized`.
  out(JSON.stringify({ jsonrpc: '2.0', id, result }));
}

function respondError(id, error) {
  out(JSON.stringify({ jsonrpc: '2.0', id, error }));
}

function notify(method, params, offSchemaReason) {
  writeLine(JSON.stringify({ jsonrpc: '2.0', method, params, emittedAtMs: Date.now() }), offSchemaReason);
}

function serverRequest(method, params) {
  const id = nextServerRequestId++;
  writeLine(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
  return id;
}

function hugeLine(size) {
  const head = '{"jsonrpc":"2.0","method":"fake/padding","params":{"pad":"';
  const tail = '"}}';
  const pad = Math.max(0, size - head.length - tail.length);
  return head + 'x'.repeat(pad) + tail;
}

process.stdout.on('error', () => process.exit(0));

// ---------------------------------------------------------------------------------------------
// Errors

function rpcError(code, kind, message, data = {}) {
  return { code, message, data: { kind, retryable: false, ...data } };
}

class RpcFailure extends Error {
  constructor(error) {
    super(error.message);
    this.error = error;
  }
}

function fail(code, kind, message, data) {
  throw new RpcFailure(rpcError(code, kind, message, data));
}

// ---------------------------------------------------------------------------------------------
// Model helpers

/** Whether `cursor` is a view cursor this host served for the session (v:<session>:<seq>). */
function issuedCursor(sessionId, cursor) {
  const prefix = `v:${sessionId}:`;
  if (typeof cursor !== 'string' || !cursor.startsWith(prefix)) return false;
  const seq = Number(cursor.slice(prefix.length));
  return Number.isInteger(seq) && seq >= 0 && seq <= state.seq;
}

function nextCursor(sessionId) {
  state.seq += 1;
  return `v:${sessionId}:${state.seq}`;
}

function sourceRange(sessionId) {
  const id = randomUUID();
  return {
    stream: { kind: 'session', id: sessionId },
    first: { id, sequence: state.seq },
    last: { id, sequence: state.seq },
  };
}

/** The session object on the wire (session/list, resume, started, listChanged), as upstream serves it. */
function sessionRow(s) {
  const pending = pendingFor(s.sessionId);
  const now = '2026-10-01T09:00:00.000Z';
  // heldElsewhere is this fake's own bookkeeping (holdSession), not a Session field.
  const { heldElsewhere: _held, ...fields } = s;
  const row = {
    sessionId: s.sessionId,
    status: s.status ?? 'idle',
    activeTurnId: s.activeTurnId ?? null,
    turnCount: s.turnCount ?? 0,
    path: state.durability === 'durable' ? `/home/fixture/.muse/sessions/${s.sessionId}/session.jsonl` : '',
    createdAt: s.createdAt ?? now,
    updatedAt: s.updatedAt ?? now,
    workspaceRoot: s.workspaceRoot ?? '/srv/repo',
    providerId: s.providerId ?? 'muse',
    modelId: s.modelId ?? 'muse-large-2',
    forkedFrom: null,
    ...fields,
  };
  // Upstream: activeTurnId names the running foreground turn, null only when none runs; a session
  // parked on an approval runs the approval's turn.
  if (row.status === 'running' && row.activeTurnId === null) {
    row.activeTurnId = pending[0]?.params.turnId ?? `turn-${s.sessionId}`;
  }
  // Upstream: attention is for loaded sessions only; a notLoaded row omits it even with approvals
  // pending (a client reads those with approval/listPending).
  if (row.status === 'notLoaded') delete row.attention;
  else if (pending.length > 0 && !row.attention) row.attention = ['approvalPending'];
  return row;
}

function findSession(sessionId) {
  return state.sessions.find((s) => s.sessionId === sessionId);
}

function ensureSession(sessionId) {
  if (!findSession(sessionId)) {
    state.sessions.push({ sessionId, title: `Session ${sessionId}`, status: 'running' });
  }
}

/** Pending, human-facing approvals of a session, in opening order. */
function pendingFor(sessionId) {
  return Object.values(state.approvals)
    .filter((a) => a.params.sessionId === sessionId && !a.resolved && !a.reviewing)
    .sort((a, b) => a.order - b.order);
}

function fillApproval(p) {
  if (!p || typeof p.approvalId !== 'string' || typeof p.sessionId !== 'string') {
    throw new Error('open: approval needs at least approvalId and sessionId');
  }
  const approvalId = p.approvalId;
  const out = {
    turnId: `turn-${approvalId}`,
    taskId: `task-${approvalId}`,
    itemId: `item-${approvalId}`,
    toolCallId: `call_${approvalId.slice(-6)}`,
    toolName: p.subject?.toolName ?? 'write_file',
    rawArgs: '{}',
    subject: { kind: 'fileAccess', toolName: 'write_file', path: '/srv/repo/README.md', access: 'write' },
    currentRequirementId: { approvalId, sourceIndex: 0 },
    availableChoices: [
      { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
      { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once', acceptsFeedback: true },
    ],
    protectedWrite: false,
    judgeEscalated: false,
    ...p,
  };
  if (!out.viewCursor) out.viewCursor = nextCursor(out.sessionId);
  if (!out.sourceRange) out.sourceRange = sourceRange(out.sessionId);
  return out;
}

function isShellWithStages(params) {
  return params.subject?.kind === 'shell' && Array.isArray(params.subject.stages);
}

function stageEvidence(params) {
  if (!isShellWithStages(params)) return [];
  return params.subject.stages.map((s) => ({
    requirementId: s.requirementId,
    position: s.position,
    totalStages: s.totalStages,
    argv: s.argv,
    resolution: s.resolution,
  }));
}

function defaultStageChoices(stage) {
  const choices = [{ choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' }];
  if (stage.suggestedPrefix) {
    choices.push({
      choiceId: 'allow_local_prefix',
      label: stage.suggestedPrefix.label,
      decision: 'approvedPolicyAmendment',
      scope: 'localPersistent',
      rulePreview: stage.suggestedPrefix.label,
    });
  }
  choices.push({
    choiceId: 'abort',
    label: 'Reject',
    decision: 'abort',
    scope: 'once',
    acceptsFeedback: true,
  });
  return choices;
}

function renameApproval(params, newId) {
  const copy = JSON.parse(JSON.stringify(params));
  copy.approvalId = newId;
  copy.currentRequirementId = { ...copy.currentRequirementId, approvalId: newId };
  if (isShellWithStages(copy)) {
    for (const s of copy.subject.stages) s.requirementId = { ...s.requirementId, approvalId: newId };
  }
  return copy;
}

// ---------------------------------------------------------------------------------------------
// Host-side actions (driven by control)

function openApproval(approval, via, stageChoices) {
  const params = fillApproval(approval);
  ensureSession(params.sessionId);
  state.approvals[params.approvalId] = {
    params,
    openedByIncarnation: incarnation,
    order: ++state.seq,
    reviewing: via === 'reviewing-then-request',
    stageChoices: stageChoices ?? undefined,
  };
  saveState();
  if (via === 'reviewing-then-request') {
    notify('approval/reviewing', params);
  } else {
    if (via === 'both' || via === 'requested') notify('approval/requested', params);
    if (via === 'both' || via === 'request') serverRequest('approval/request', params);
  }
  return params;
}

// ---------------------------------------------------------------------------------------------
// Load generation for bench/: many approvals at a steady rate, each stamped with the monotonic
// clock (process.hrtime, shared by every process on the machine) just before it is written.

/** prefix → approvalId → hrtime (ns, as a string) of the write */
const batchWrites = new Map();

function openBatch(cmd) {
  const count = Number(cmd.count);
  const rate = Number(cmd.ratePerSec ?? 0);
  const prefix = String(cmd.prefix);
  const sessions = cmd.sessions?.length ? cmd.sessions : ['s-bench'];
  const tools = cmd.tools?.length ? cmd.tools : [undefined];
  const times = new Map();
  batchWrites.set(prefix, times);
  let next = 0;
  const openOne = () => {
    const i = next++;
    const approvalId = `${prefix}-${String(i).padStart(6, '0')}`;
    const toolName = tools[i % tools.length];
    const approval = {
      ...(cmd.template ?? {}),
      approvalId,
      sessionId: sessions[i % sessions.length],
      ...(toolName ? { toolName } : {}),
    };
    const params = fillApproval(approval);
    ensureSession(params.sessionId);
    state.approvals[approvalId] = {
      params,
      openedByIncarnation: incarnation,
      order: ++state.seq,
      reviewing: false,
    };
    const line = JSON.stringify({ jsonrpc: '2.0', method: 'approval/requested', params });
    times.set(approvalId, process.hrtime.bigint().toString());
    writeLine(line);
  };
  const started = performance.now();
  const tick = () => {
    const due =
      rate > 0 ? Math.min(count, Math.floor(((performance.now() - started) * rate) / 1000) + 1) : count;
    while (next < due) openOne();
    if (next < count) setTimeout(tick, Math.max(0, (next * 1000) / rate - (performance.now() - started)));
    else report({ type: 'batchDone', prefix, count });
  };
  tick();
  return { scheduled: count };
}

function batchTimes(prefix) {
  return Object.fromEntries(batchWrites.get(String(prefix)) ?? []);
}

function escalate(approvalId) {
  const rec = state.approvals[approvalId];
  if (!rec) throw new Error(`escalate: unknown approval ${approvalId}`);
  rec.reviewing = false;
  rec.params.judgeEscalated = true;
  saveState();
  notify('approval/requested', rec.params);
  serverRequest('approval/request', rec.params);
  return rec.params;
}

/**
 * Another client takes (or lets go of) the session's writer lease. Like upstream, this host says
 * nothing of it by default: session/statusChanged and session/closed are about sessions loaded
 * on this host, and the other client loaded it on its own. `announce: 'listChanged'` sends the
 * session's list row (where sessionListStream was granted), as a host that noticed would.
 */
function holdSession(sessionId, held, announce) {
  ensureSession(sessionId);
  const session = findSession(sessionId);
  session.heldElsewhere = held;
  if (held) subscribed.delete(sessionId);
  saveState();
  const row = sessionRow(session);
  if (announce === 'listChanged' && granted.includes('sessionListStream')) {
    notify('session/listChanged', { session: row });
  }
  return row;
}

/** The current shell stage is satisfied and the next one becomes current, with no frame sent. */
function advanceSilently(approvalId) {
  const rec = state.approvals[approvalId];
  if (!rec || !isShellWithStages(rec.params))
    throw new Error(`advanceSilently: no shell approval ${approvalId}`);
  const p = rec.params;
  const stages = p.subject.stages;
  const idx = stages.findIndex((x) => x.requirementId.sourceIndex === p.currentRequirementId.sourceIndex);
  const next = stages.findIndex((x, i) => i > idx && x.resolution?.kind === 'unresolved');
  if (next < 0) throw new Error(`advanceSilently: ${approvalId} has no later stage`);
  stages[idx].resolution = { kind: 'allowOnce' };
  p.currentRequirementId = { approvalId, sourceIndex: stages[next].requirementId.sourceIndex };
  p.availableChoices = rec.stageChoices?.[next] ?? defaultStageChoices(stages[next]);
  saveState();
  return p;
}

function resolvedParams(rec, fields) {
  const p = rec.params;
  const viewCursor = nextCursor(p.sessionId);
  const out = {
    sessionId: p.sessionId,
    approvalId: p.approvalId,
    itemId: p.itemId,
    turnId: p.turnId,
    decision: fields.decision,
    policyResult: fields.policyResult,
    resolvedBy: fields.resolvedBy,
    stageEvidence: stageEvidence(p),
    sourceRange: sourceRange(p.sessionId),
    viewCursor,
  };
  if (fields.amendment) out.amendment = fields.amendment;
  if (fields.decidedByCommandId) out.decidedByCommandId = fields.decidedByCommandId;
  if (fields.decidedAt) out.decidedAt = fields.decidedAt;
  if (p.subagentOrigin) out.subagentOrigin = p.subagentOrigin;
  // Kept whole, so that the host can deliver the same resolution again (redeliverResolved).
  rec.resolvedParams = out;
  rec.resolved = {
    decision: out.decision,
    resolvedBy: out.resolvedBy,
    policyResult: out.policyResult,
    viewCursor,
  };
  rec.reviewing = false;
  return out;
}

function hostResolve(cmd) {
  const rec = state.approvals[cmd.approvalId];
  if (!rec) throw new Error(`resolve: unknown approval ${cmd.approvalId}`);
  if (rec.resolved) throw new Error(`resolve: approval ${cmd.approvalId} is already resolved`);
  const decision = cmd.decision ?? 'approved';
  const params = resolvedParams(rec, {
    decision,
    resolvedBy: cmd.resolvedBy ?? 'policy',
    policyResult: cmd.policyResult ?? (REJECTING.has(decision) ? 'deny' : 'allow'),
    amendment: cmd.amendment,
    decidedAt: new Date().toISOString(),
  });
  saveState();
  notify('approval/resolved', params, offSchema(cmd));
  return params;
}

/** Sends an approval's approval/resolved again, as it was first sent (a host re-delivering it). */
function redeliverResolved(approvalId) {
  const rec = state.approvals[approvalId];
  if (!rec?.resolvedParams) throw new Error(`redeliverResolved: ${approvalId} was not resolved by this host`);
  notify('approval/resolved', rec.resolvedParams);
  return rec.resolvedParams;
}

function updatedParams(rec, change) {
  const p = rec.params;
  const out = {
    sessionId: p.sessionId,
    approvalId: p.approvalId,
    currentRequirementId: p.currentRequirementId,
    change,
    availableChoices: p.availableChoices,
    subject: p.subject,
    sourceRange: sourceRange(p.sessionId),
    viewCursor: nextCursor(p.sessionId),
  };
  if (p.subagentOrigin) out.subagentOrigin = p.subagentOrigin;
  return out;
}

function hostUpdate(cmd) {
  const rec = state.approvals[cmd.approvalId];
  if (!rec) throw new Error(`update: unknown approval ${cmd.approvalId}`);
  Object.assign(rec.params, cmd.patch ?? {});
  const params = updatedParams(rec, cmd.change ?? { kind: 'policyPersistence', status: 'succeeded' });
  saveState();
  notify('approval/updated', params, offSchema(cmd));
  return params;
}

function startSession(session) {
  if (!session || typeof session.sessionId !== 'string') throw new Error('startSession: sessionId required');
  const existing = findSession(session.sessionId);
  if (existing) Object.assign(existing, session);
  else state.sessions.unshift({ status: 'idle', ...session });
  saveState();
  const row = sessionRow(findSession(session.sessionId));
  notify('session/started', { session: row });
  if (granted.includes('sessionListStream')) notify('session/listChanged', { session: row });
  return row;
}

// ---------------------------------------------------------------------------------------------
// Restart recovery: applied the first time this incarnation touches a session.

function touchSession(sessionId) {
  if (touched.has(sessionId)) return;
  touched.add(sessionId);
  const stale = Object.values(state.approvals)
    .filter((a) => a.params.sessionId === sessionId && !a.resolved && a.openedByIncarnation < incarnation)
    .sort((a, b) => a.order - b.order);
  if (stale.length === 0) return;
  for (const rec of stale) {
    if (state.recovery === 'sameId') {
      rec.openedByIncarnation = incarnation;
      rec.params.judgeEscalated = false;
      continue;
    }
    const oldId = rec.params.approvalId;
    const newId = `${oldId}-r${incarnation}`;
    const resolved = resolvedParams(rec, { decision: 'abort', policyResult: 'deny', resolvedBy: 'user' });
    rec.supersededBy = newId;
    const params = renameApproval(rec.params, newId);
    params.judgeEscalated = false;
    params.viewCursor = nextCursor(sessionId);
    params.sourceRange = sourceRange(sessionId);
    state.approvals[newId] = {
      params,
      openedByIncarnation: incarnation,
      order: ++state.seq,
      reviewing: false,
      stageChoices: rec.stageChoices,
      recoveredFrom: oldId,
    };
    notify('approval/resolved', resolved);
  }
  saveState();
}

// ---------------------------------------------------------------------------------------------
// Methods

function canonical(value) {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

function decideKey(params) {
  const { feedback, ...rest } = params;
  return canonical({ ...rest, feedback: feedback ?? null });
}

function initializeResult(params) {
  const requested = params?.capabilities?.requestedCapabilities ?? [];
  granted = GRANTABLE_CAPABILITIES.filter((c) => requested.includes(c));
  return {
    serverInfo: { name: 'muse-session-server', version: '0.0.0-fake' },
    userAgent: 'muse-session-server/0.0.0-fake (linux; x86_64)',
    museHome: '/home/fixture/.muse',
    platformFamily: 'unix',
    platformOs: 'linux',
    schema: { version: 1, fingerprint: FINGERPRINT },
    grantedCapabilities: granted,
    experimentalApi: false,
    sessionDurability: state.durability,
  };
}

function sessionList(params) {
  const offset = typeof params?.cursor === 'string' && params.cursor ? Number(params.cursor.slice(2)) : 0;
  const limit = Math.max(1, Math.min(Number(params?.limit ?? Number.POSITIVE_INFINITY), state.pageSize));
  const rows = state.sessions.slice(offset, offset + limit).map(sessionRow);
  const end = offset + rows.length;
  return { sessions: rows, nextCursor: end < state.sessions.length ? `p:${end}` : null };
}

function listPending(params) {
  const sessionId = params?.sessionId;
  if (typeof sessionId !== 'string') fail(-32602, 'invalidParams', 'sessionId is required');
  if (!findSession(sessionId))
    fail(-32020, 'sessionNotFound', `session ${sessionId} not found`, { sessionId });
  // A real host recovers a session only when it is loaded again: until session/resume, listPending
  // still lists what an earlier process asked, under the old ids.
  if (state.recovery !== 'newIdOnResume') touchSession(sessionId);
  return { approvals: pendingFor(sessionId).map((a) => a.params), userInputs: [] };
}

/** @returns {{result: any, after: () => void}} */
function sessionResume(params) {
  if (state.durability !== 'durable') fail(-32601, 'methodNotFound', 'method not found: session/resume');
  const sessionId = params?.sessionId;
  if (typeof sessionId !== 'string') fail(-32602, 'invalidParams', 'sessionId is required');
  if (typeof params.commandId !== 'string') fail(-32602, 'invalidParams', 'commandId is required');
  const session = findSession(sessionId);
  if (!session) fail(-32020, 'sessionNotFound', `session ${sessionId} not found`, { sessionId });
  if (session.heldElsewhere) {
    fail(-32021, 'sessionInUse', `session ${sessionId} is held by another host`, { sessionId });
  }
  const cursor = params.cursor ?? undefined;
  if (cursor !== undefined && !issuedCursor(sessionId, cursor)) {
    // Upstream (transcript cursor-never-existed): a cursor this host never served for the session.
    fail(-32011, 'notFound', 'unknown cursor anchor', { reason: 'missingAnchor', sessionId, anchor: cursor });
  }
  touchSession(sessionId);
  subscribed.add(sessionId);
  const pending = pendingFor(sessionId);
  const result = {
    session: sessionRow(session),
    // What upstream serves (tdd SS2.5.2): with a cursor only the suffix follows (none,
    // cursorSuffix); with excludeItems no history (none, excluded); else the history, which
    // this fake keeps none of: an empty inline one. noneReason goes exactly with mode none.
    history: cursor
      ? { mode: 'none', noneReason: 'cursorSuffix', items: null, snapshot: null }
      : params.excludeItems === true
        ? { mode: 'none', noneReason: 'excluded', items: null, snapshot: null }
        : { mode: 'inline', items: [], snapshot: null },
    pendingRequests: pending.map((a) => ({
      kind: 'approval',
      approvalId: a.params.approvalId,
      viewCursor: a.params.viewCursor,
    })),
    viewCursor: `v:${sessionId}:${state.seq}`,
  };
  return {
    result,
    after: () => {
      for (const a of pending) {
        a.params.judgeEscalated = false;
        serverRequest('approval/request', a.params);
      }
      saveState();
    },
  };
}

/** @returns {{result: any, after: () => void}} */
function decide(params) {
  if (!params || typeof params !== 'object') fail(-32602, 'invalidParams', 'params required');
  const { commandId, sessionId, approvalId, requirementId, choiceId } = params;
  if (typeof commandId !== 'string' || !UUID_V7.test(commandId)) {
    fail(-32602, 'invalidParams', 'commandId must be a UUIDv7', { approvalId });
  }
  const key = decideKey(params);
  const prior = state.commands[commandId];
  if (prior) {
    if (prior.key !== key) {
      fail(-32030, 'commandRejected', `command ${commandId} conflicts with an earlier command`, {
        commandId,
        reason: 'command_id_conflict',
      });
    }
    if (prior.error) throw new RpcFailure(prior.error);
    return { result: prior.result, after: () => {} };
  }
  if (
    typeof sessionId !== 'string' ||
    typeof approvalId !== 'string' ||
    typeof choiceId !== 'string' ||
    !requirementId ||
    typeof requirementId.sourceIndex !== 'number'
  ) {
    fail(-32602, 'invalidParams', 'sessionId, approvalId, requirementId and choiceId are required', {
      approvalId,
    });
  }
  if ((state.requireResume || findSession(sessionId)?.heldElsewhere) && !subscribed.has(sessionId)) {
    fail(-32024, 'sessionNotLoaded', `session ${sessionId} is not loaded`, { sessionId, approvalId });
  }
  const forced = forcedDecideErrors[0];
  if (forced) {
    forced.times -= 1;
    if (forced.times <= 0) forcedDecideErrors.shift();
    const e = forced.error ?? {};
    const code = e.code ?? -32001;
    const kind = e.data?.kind ?? KIND_BY_CODE[code] ?? 'internal';
    throw new RpcFailure({
      code,
      message: e.message ?? `forced ${kind}`,
      data: {
        kind,
        retryable: kind === 'overloaded' || kind === 'backpressured',
        approvalId,
        ...(e.data ?? {}),
      },
    });
  }
  // Everything from here on is a durable outcome of this commandId: record it.
  try {
    const out = applyDecide(params);
    state.commands[commandId] = { key, result: out.result };
    saveState();
    return out;
  } catch (err) {
    if (err instanceof RpcFailure) {
      state.commands[commandId] = { key, error: err.error };
      saveState();
    }
    throw err;
  }
}

function applyDecide(params) {
  const { commandId, sessionId, approvalId, requirementId, choiceId, feedback } = params;
  if (findSession(sessionId)) touchSession(sessionId);
  const rec = state.approvals[approvalId];
  if (!rec || rec.params.sessionId !== sessionId) {
    fail(-32050, 'approvalNotFound', `approval ${approvalId} not found`, { approvalId });
  }
  if (rec.resolved) {
    fail(-32051, 'approvalAlreadyResolved', 'approval already resolved', {
      approvalId,
      resolution: {
        decision: rec.resolved.decision,
        resolvedBy: rec.resolved.resolvedBy,
        viewCursor: rec.resolved.viewCursor,
      },
    });
  }
  const p = rec.params;
  const current = p.currentRequirementId;
  if (requirementId.sourceIndex !== current.sourceIndex || requirementId.approvalId !== current.approvalId) {
    fail(-32053, 'approvalRequirementStale', `approval ${approvalId} requirement is stale`, {
      approvalId,
      currentRequirementId: current,
    });
  }
  const choice = p.availableChoices.find((c) => c.choiceId === choiceId);
  if (!choice) {
    fail(
      -32052,
      'approvalChoiceInvalid',
      `choice ${JSON.stringify(choiceId)} is invalid for approval ${approvalId}`,
      {
        approvalId,
        choiceId,
      },
    );
  }
  if (feedback !== undefined && feedback !== null && !choice.acceptsFeedback) {
    fail(-32602, 'invalidParams', `choice ${choiceId} does not accept feedback`, { approvalId });
  }

  const rejecting = REJECTING.has(choice.decision) || String(choice.decision).startsWith('denied');
  const frames = [];
  let terminal = true;
  if (isShellWithStages(p)) {
    const stages = p.subject.stages;
    const idx = stages.findIndex((s) => s.requirementId.sourceIndex === current.sourceIndex);
    const stage = stages[idx];
    const next = stages.findIndex((s, i) => i > idx && s.resolution?.kind === 'unresolved');
    if (!rejecting && stage) {
      stage.resolution = { kind: 'allowOnce' };
      const change = { kind: 'stageResolved', requirementId: current, choiceId, decision: choice.decision };
      if (next >= 0) {
        terminal = false;
        p.currentRequirementId = { approvalId, sourceIndex: stages[next].requirementId.sourceIndex };
        p.availableChoices = rec.stageChoices?.[next] ?? defaultStageChoices(stages[next]);
        frames.push(['notify', 'approval/updated', updatedParams(rec, change)]);
        if (stageAdvanceFrames === 'updatedAndRequest') frames.push(['request', 'approval/request', p]);
      } else {
        frames.push(['notify', 'approval/updated', updatedParams(rec, change)]);
      }
    }
  }
  if (terminal) {
    const amendment =
      choice.scope === 'session' || choice.scope === 'localPersistent'
        ? { durability: choice.scope, rulePreview: choice.rulePreview ?? choice.label }
        : undefined;
    const resolved = resolvedParams(rec, {
      decision: choice.decision,
      policyResult: rejecting ? 'deny' : 'allow',
      resolvedBy: 'user',
      decidedByCommandId: commandId,
      decidedAt: new Date().toISOString(),
      amendment,
    });
    frames.push(['notify', 'approval/resolved', resolved]);
  }
  return {
    result: { commandId, status: 'accepted', approvalId, terminal },
    after: () => {
      for (const [kind, method, body] of frames) {
        if (kind === 'notify') notify(method, body);
        else serverRequest(method, body);
      }
    },
  };
}

function handleRequest(msg) {
  const { method, params } = msg;
  if (method === 'initialize') {
    if (initialized) fail(-32600, 'alreadyInitialized', 'already initialized');
    initialized = true;
    return { result: initializeResult(params), after: () => {} };
  }
  if (!initialized) fail(-32600, 'notInitialized', 'not initialized');
  const forced = state.forcedRequests.find((f) => f.method === method);
  if (forced) {
    forced.times -= 1;
    if (forced.times <= 0) state.forcedRequests.splice(state.forcedRequests.indexOf(forced), 1);
    saveState();
    const e = forced.error ?? {};
    const code = e.code ?? -32603;
    throw new RpcFailure({
      code,
      message: e.message ?? `forced ${method} failure`,
      data: { kind: e.data?.kind ?? KIND_BY_CODE[code] ?? 'internal', retryable: false, ...(e.data ?? {}) },
    });
  }
  switch (method) {
    case 'session/list':
      return { result: sessionList(params), after: () => {} };
    case 'approval/listPending':
      return { result: listPending(params), after: () => {} };
    case 'session/resume':
      return sessionResume(params);
    case 'approval/decide':
      return decide(params);
    default:
      fail(-32601, 'methodNotFound', `method not found: ${method}`);
  }
  return { result: {}, after: () => {} };
}

function handleFrame(line) {
  const hr = process.hrtime.bigint().toString();
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    checkFrame(line, 'client');
    report({ type: 'frame', incarnation, frame: line, hr });
    respondError(null, rpcError(-32700, 'parseError', 'parse error'));
    return;
  }
  // Checked before it is handled, so that the answer we write finds its request in flight.
  checkFrame(msg, 'client');
  report({ type: 'frame', incarnation, frame: msg, hr });
  refreshState();
  if (!msg || typeof msg !== 'object' || Array.isArray(msg)) {
    respondError(null, rpcError(-32600, 'invalidRequest', 'invalid request'));
    return;
  }
  if (typeof msg.method === 'string' && msg.id !== undefined && msg.id !== null) {
    if (msg.method === 'approval/decide' && unansweredDecides > 0) {
      // A host that dies (or a bot that is killed) before the answer: the decide is read, never applied.
      unansweredDecides -= 1;
      return;
    }
    const delay = nextDelayMs.get(msg.method) ?? 0;
    if (delay > 0) {
      nextDelayMs.delete(msg.method);
      setTimeout(() => handleRequestFrame(msg), delay);
      return;
    }
    handleRequestFrame(msg);
    return;
  }
  if (msg.method === 'initialized' && initialized && !ready) {
    ready = true;
    flushOutbox();
  }
  // Other notifications and responses to our requests need no answer.
}

function handleRequestFrame(msg) {
  let out;
  try {
    out = handleRequest(msg);
  } catch (err) {
    if (err instanceof RpcFailure) {
      respondError(msg.id, err.error);
      return;
    }
    respondError(msg.id, rpcError(-32603, 'internal', err instanceof Error ? err.message : String(err)));
    return;
  }
  if (msg.method === 'approval/decide' && silentDecides > 0) {
    // Applied and in the ledger, but the bot hears nothing: as if it died right after sending.
    silentDecides -= 1;
    report({ type: 'appliedSilently', id: msg.id });
    return;
  }
  respond(msg.id, out.result);
  out.after();
}

// ---------------------------------------------------------------------------------------------
// Input

let inBuf = '';
process.stdin.on('data', (chunk) => {
  inBuf += chunk.toString('utf8');
  let nl = inBuf.indexOf('\n');
  while (nl >= 0) {
    let line = inBuf.slice(0, nl);
    inBuf = inBuf.slice(nl + 1);
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (line.trim()) handleFrame(line);
    nl = inBuf.indexOf('\n');
  }
});

function shutdown(code) {
  // Every change was saved when it was made; writing the whole state again here could clobber
  // what a newer host process already wrote.
  const finish = () => process.exit(code);
  endControl(finish);
  setTimeout(finish, 200).unref();
}

process.stdin.on('end', () => {
  if (ready) {
    for (const sessionId of subscribed) {
      notify('session/closed', {
        sessionId,
        reason: 'hostShutdown',
        viewCursor: `v:${sessionId}:${state.seq}`,
      });
    }
  }
  shutdown(0);
});
process.on('SIGTERM', () => shutdown(0));
process.on('SIGINT', () => shutdown(0));
