#!/usr/bin/env node
// An MSP host that serves the host side of the vendor's recorded transcripts
// (test/fixtures/msp-transcripts/) to the bot, for the replays of test/e2e/replays.test.ts.
// Plain Node ESM. docs/development.md says how to add a replay. Like fake-host.mjs, it checks
// every frame it reads and writes against the vendor's schema (mspSchema.mjs) and reports what
// does not conform: FakeHost.close() then fails the test.
//
// It reads a script (JSON, the file named by FAKE_HOST_REPLAY, built by test/support/replay.ts)
// with one entry per host process, so a test can crash the first process and replay a transcript
// to the second one (a resume with the cursor the first one gave). Each entry holds:
// - `initialize`: the recorded server line answering `initialize`;
// - `steps`: recorded exchanges, in order. Each is `{client, server}`: the recorded client request
//   (its raw line) and the recorded server lines that follow it. The bot's next request with the
//   client line's method takes the first step left; the host writes the server lines, byte for
//   byte but for what the bot mints: the response to the recorded request carries the bot's id,
//   and the recorded `params.commandId` is replaced by the bot's in every later line (the id
//   unification that test/fixtures/msp-transcripts/README.md describes for serve-fixture).
//   Server requests keep their recorded ids; the bot's answers to them are only reported.
// - `fallback`: answers to the requests the bot makes that the transcript does not record
//   (session/list, approval/listPending, a resume past the recorded one), by method. Each is a
//   list of lines written in order: a raw line, or `{result}` / `{error}`, sent as the response
//   with the bot's id (`echo` names params copied into the result, e.g. a decide ack's commandId).
//   A method with neither a step nor a fallback is answered -32601.
//
// Like fake-host.mjs it connects to the test's control server (FAKE_HOST_CONTROL; fakeHost.ts)
// and reports every frame it reads, so FakeHost's observation methods work unchanged. Control
// commands: `raw` (write a line), `answer` (replace one fallback), `crash`.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { connectControl } from './hostControl.mjs';
import { createFrameValidator } from './mspSchema.mjs';

const statePath = process.env.FAKE_HOST_STATE;
const scriptPath = process.env.FAKE_HOST_REPLAY;
const controlPort = Number(process.env.FAKE_HOST_CONTROL || 0);

// The incarnation counter lives in FakeHost's state file, as for fake-host.mjs.
const state = statePath && existsSync(statePath) ? JSON.parse(readFileSync(statePath, 'utf8')) : {};
const incarnation = Number(state.incarnation ?? 0) + 1;
if (statePath) writeFileSync(statePath, JSON.stringify({ ...state, incarnation }));

if (!scriptPath) throw new Error('replay-host: FAKE_HOST_REPLAY names no script');
const scripts = JSON.parse(readFileSync(scriptPath, 'utf8'));
const script = scripts[Math.min(incarnation, scripts.length) - 1];
const steps = [...(script.steps ?? [])];
const fallback = { ...(script.fallback ?? {}) };
/** Recorded commandId → the bot's, for the rest of this process's life. */
const commandIds = new Map();

/** One checker per process: a host process is one connection, with its own id spaces. */
const frameValidator = await createFrameValidator();

let ready = false;
/** @type {string[]} server-initiated lines held until `initialized` */
const held = [];

// ---------------------------------------------------------------------------------------------
// Control connection (the protocol of fake-host.mjs)

const { report } = connectControl(controlPort, (line) => handleControl(JSON.parse(line)));
report({ type: 'started', incarnation, pid: process.pid, cwd: process.cwd() });

function handleControl(cmd) {
  try {
    if (cmd.type === 'raw') write(String(cmd.line));
    else if (cmd.type === 'answer') fallback[cmd.method] = cmd.lines;
    else if (cmd.type === 'crash') process.exit(Number(cmd.code ?? 1));
    else if (cmd.type === 'sync') {
      // Answered after every report sent before it: the test has all violations once it has this.
    } else throw new Error(`the replay host does not take ${JSON.stringify(cmd.type)}`);
    report({ type: 'ack', id: cmd.id, result: null });
  } catch (err) {
    report({ type: 'ack', id: cmd.id, error: err instanceof Error ? err.message : String(err) });
  }
}

// ---------------------------------------------------------------------------------------------
// Output

/** Checks one frame (`client`: read from the bot; `server`: written here) against the schema. */
function checkFrame(frame, direction) {
  const errors = frameValidator.validate(frame, direction);
  if (errors.length > 0) report({ type: 'schemaViolation', incarnation, direction, frame, errors });
}

function send(line) {
  process.stdout.write(`${line}\n`);
  checkFrame(line, 'server');
}

/** Responses go out at once; anything else waits for `initialized`, as on a real host. */
function write(line) {
  const frame = JSON.parse(line);
  const isResponse = frame.method === undefined && frame.id !== undefined;
  if (isResponse || ready) send(line);
  else held.push(line);
}

/** Replaces every recorded commandId already paired with one of the bot's. */
function unify(line) {
  let out = line;
  for (const [recorded, ours] of commandIds)
    out = out.split(JSON.stringify(recorded)).join(JSON.stringify(ours));
  return out;
}

/**
 * The recorded response to request `recordedId`, with the bot's id instead: only the top-level
 * id member changes, every other byte stays as recorded.
 */
function withId(line, recordedId, id) {
  const needle = `"id":${JSON.stringify(recordedId)}`;
  const at = line.indexOf(needle);
  const out =
    at < 0 ? line : `${line.slice(0, at)}"id":${JSON.stringify(id)}${line.slice(at + needle.length)}`;
  if (JSON.parse(out).id !== id)
    throw new Error(`replay-host: cannot give ${line.slice(0, 80)} the id ${id}`);
  return out;
}

function answerFallback(msg, entries) {
  for (const entry of entries) {
    if (typeof entry === 'string') {
      write(entry);
      continue;
    }
    const echoed = Object.fromEntries((entry.echo ?? []).map((k) => [k, msg.params?.[k]]));
    const body = entry.error ? { error: entry.error } : { result: { ...entry.result, ...echoed } };
    write(JSON.stringify({ jsonrpc: '2.0', id: msg.id, ...body }));
  }
}

// ---------------------------------------------------------------------------------------------
// Input

function handleRequest(msg) {
  if (msg.method === 'initialize') {
    write(withId(script.initialize, JSON.parse(script.initialize).id, msg.id));
    return;
  }
  const at = steps.findIndex((s) => JSON.parse(s.client).method === msg.method);
  if (at >= 0) {
    const [step] = steps.splice(at, 1);
    const recorded = JSON.parse(step.client);
    const recordedCommandId = recorded.params?.commandId;
    if (typeof recordedCommandId === 'string' && typeof msg.params?.commandId === 'string') {
      commandIds.set(recordedCommandId, msg.params.commandId);
    }
    for (const line of step.server) {
      const frame = JSON.parse(line);
      const isOurResponse = frame.method === undefined && frame.id === recorded.id;
      write(unify(isOurResponse ? withId(line, recorded.id, msg.id) : line));
    }
    return;
  }
  const entries = fallback[msg.method];
  if (entries) {
    answerFallback(msg, entries);
    return;
  }
  answerFallback(msg, [
    { error: { code: -32601, message: `method not found: ${msg.method}`, data: { kind: 'methodNotFound' } } },
  ]);
}

function handleLine(line) {
  checkFrame(line, 'client');
  let msg;
  try {
    msg = JSON.parse(line);
  } catch {
    report({ type: 'frame', incarnation, frame: line, hr: process.hrtime.bigint().toString() });
    return;
  }
  report({ type: 'frame', incarnation, frame: msg, hr: process.hrtime.bigint().toString() });
  if (typeof msg.method === 'string' && msg.id !== undefined) handleRequest(msg);
  else if (msg.method === 'initialized' && !ready) {
    ready = true;
    for (const held1 of held.splice(0)) send(held1);
  }
  // The bot's answers to server requests are only reported.
}

let inBuf = '';
process.stdin.on('data', (chunk) => {
  inBuf += chunk.toString('utf8');
  let nl = inBuf.indexOf('\n');
  while (nl >= 0) {
    const line = inBuf.slice(0, nl).replace(/\r$/, '');
    inBuf = inBuf.slice(nl + 1);
    if (line.trim()) handleLine(line);
    nl = inBuf.indexOf('\n');
  }
});
process.stdout.on('error', () => process.exit(0));
const shutdown = () => {
  if (control && !control.destroyed) control.end(() => process.exit(0));
  else process.exit(0);
  setTimeout(() => process.exit(0), 200).unref();
};
process.stdin.on('end', shutdown);
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
