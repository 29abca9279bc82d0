import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { validate as uuidValidate, version as uuidVersion } from 'uuid';
import { afterEach, describe, expect, it } from 'vitest';
import { HostGoneError, MspError } from '../../../src/msp/errors.js';
import type { HostEvent } from '../../../src/msp/events.js';
import { HostSupervisor, type HostSupervisorOptions } from '../../../src/msp/hostSupervisor.js';
import { FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';
import { transcriptLines } from '../../support/transcripts.js';

type Json = Record<string, unknown>;

// ── transcripts ──────────────────────────────────────────────────────────────────────────

function serverLines(scenario: string): string[] {
  return transcriptLines(scenario)
    .filter((line) => line.dir === 'server')
    .map((line) => line.raw);
}

function serverFrame(scenario: string, method: string): string {
  const raw = serverLines(scenario).find((line) => (JSON.parse(line) as Json).method === method);
  if (raw === undefined) throw new Error(`${scenario} has no ${method}`);
  return raw;
}

const INITIALIZE_RESULT = (JSON.parse(serverLines('handshake-liststream-granted')[0]!) as Json)
  .result as Json;
const ROUND_TRIP_REQUEST = serverFrame('approval-round-trip', 'approval/request');
const ROUND_TRIP_REQUESTED = serverFrame('approval-round-trip', 'approval/requested');
const ROUND_TRIP_RESOLVED = serverFrame('approval-round-trip', 'approval/resolved');
const ROUND_TRIP_STARTED = serverFrame('approval-round-trip', 'session/started');
const UNKNOWN_STATE_METHOD = serverFrame('tolerance-unknown-state-method', 'session/auraChanged');
const APPROVAL_PARAMS = (JSON.parse(ROUND_TRIP_REQUESTED) as { params: Json }).params;
const ROUND_TRIP_APPROVAL_ID = APPROVAL_PARAMS.approvalId as string;
const ROUND_TRIP_SESSION_ID = APPROVAL_PARAMS.sessionId as string;

function approval(sessionId: string, approvalId: string): Json {
  return {
    ...APPROVAL_PARAMS,
    sessionId,
    approvalId,
    currentRequirementId: { approvalId, sourceIndex: 0 },
  };
}

// ── fake host ────────────────────────────────────────────────────────────────────────────

/**
 * A tiny MSP host: answers from a JSON config, logs every frame in and out (per spawn) so that
 * tests can check the wire order, and plays `onSignal` frames on SIGUSR2.
 */
const FAKE_HOST = `
import { appendFileSync, closeSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const dir = config.dir;
const counter = dir + '/spawns';
const n = existsSync(counter) ? Number(readFileSync(counter, 'utf8')) + 1 : 1;
writeFileSync(counter, String(n));
writeFileSync(dir + '/pid-' + n, String(process.pid));
const log = (direction, raw) => appendFileSync(dir + '/log-' + n + '.ndjson', JSON.stringify({ direction, raw }) + '\\n');
const send = (frame) => {
  const raw = typeof frame === 'string' ? frame : JSON.stringify(frame);
  log('out', raw);
  process.stdout.write(raw + '\\n');
};
const decideScript = [...(config.decide ?? [])];
if (config.stderr) process.stderr.write(config.stderr + '\\n');

createInterface({ input: process.stdin }).on('line', (line) => {
  log('in', line);
  const message = JSON.parse(line);
  if (typeof message.method !== 'string' || !('id' in message)) return;
  const params = message.params ?? {};
  const reply = (result) => send({ jsonrpc: '2.0', id: message.id, result });
  const fail = (error) => send({ jsonrpc: '2.0', id: message.id, error });
  switch (message.method) {
    case 'initialize':
      if (config.initializeError) return fail(config.initializeError);
      return reply(config.initializeResult);
    case 'session/list':
      reply(config.sessionPages[params.cursor ?? '']);
      if (config.closeStdinOnSpawn === n) closeStdin();
      return;
    case 'approval/listPending':
      return reply({ approvals: config.pending[params.sessionId] ?? [], userInputs: [] });
    case 'session/resume': {
      const error = (config.resumeErrors ?? {})[params.sessionId];
      if (error) return fail(error);
      reply({ session: { sessionId: params.sessionId, status: 'idle' }, viewCursor: 'v:1', pendingRequests: [] });
      for (const frame of (config.afterResume ?? {})[params.sessionId] ?? []) send(frame);
      return;
    }
    case 'approval/decide': {
      const next = decideScript.shift();
      if (next) return fail(next);
      return reply({ commandId: params.commandId, status: 'accepted', approvalId: params.approvalId, terminal: true });
    }
    default:
      return fail({ code: -32601, message: 'no such method', data: { kind: 'methodNotFound' } });
  }
}).on('close', () => {
  if (!config.ignoreEof && config.closeStdinOnSpawn !== n) process.exit(0);
});
// Closes fd 0 and lives on: the bot's writes to it fail from now on.
function closeStdin() {
  process.stdin.destroy();
  closeSync(0);
  writeFileSync(dir + '/stdin-closed-' + n, '');
  setInterval(() => {}, 1000);
}
process.on('SIGUSR2', () => {
  for (const frame of config.onSignal ?? []) send(frame);
});
if (config.ignoreEof) setInterval(() => {}, 1000);
`;

interface FakeHostConfig {
  initializeResult?: Json;
  initializeError?: Json;
  sessionPages?: Record<string, Json>;
  pending?: Record<string, Json[]>;
  resumeErrors?: Record<string, Json>;
  afterResume?: Record<string, (Json | string)[]>;
  onSignal?: (Json | string)[];
  decide?: Json[];
  ignoreEof?: boolean;
  /** The spawn that closes its stdin once it answered session/list, and lives on. */
  closeStdinOnSpawn?: number;
  stderr?: string;
}

interface LoggedFrame {
  direction: 'in' | 'out';
  raw: string;
  message: Json;
}

const dirs: string[] = [];
const supervisors: HostSupervisor[] = [];

afterEach(async () => {
  await Promise.all(supervisors.splice(0).map((supervisor) => supervisor.stop()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function fakeHost(config: FakeHostConfig) {
  const dir = mkdtempSync(join(tmpdir(), 'msp-fake-host-'));
  dirs.push(dir);
  const script = join(dir, 'fakeHost.mjs');
  writeFileSync(script, FAKE_HOST);
  const configPath = join(dir, 'config.json');
  writeFileSync(
    configPath,
    JSON.stringify({
      dir,
      initializeResult: INITIALIZE_RESULT,
      sessionPages: { '': { sessions: [], nextCursor: null } },
      pending: {},
      ...config,
    }),
  );
  return {
    dir,
    command: `exec "${process.execPath}" "${script}" "${configPath}"`,
    spawns: (): number =>
      existsSync(join(dir, 'spawns')) ? Number(readFileSync(join(dir, 'spawns'), 'utf8')) : 0,
    pid: (spawn: number): number => Number(readFileSync(join(dir, `pid-${spawn}`), 'utf8')),
    log: (spawn: number): LoggedFrame[] => {
      const file = join(dir, `log-${spawn}.ndjson`);
      if (!existsSync(file)) return [];
      return readFileSync(file, 'utf8')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => {
          const entry = JSON.parse(line) as { direction: 'in' | 'out'; raw: string };
          return { ...entry, message: JSON.parse(entry.raw) as Json };
        });
    },
  };
}

function captureLogger() {
  const lines: Json[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as Json) });
  return { logger, lines };
}

function supervise(command: string, options: Partial<HostSupervisorOptions> = {}) {
  const events: HostEvent[] = [];
  // Session labels are display facts kept apart, so the approval event order stays easy to read.
  const seen: Array<Extract<HostEvent, { type: 'sessionSeen' }>> = [];
  const { logger, lines } = captureLogger();
  const supervisor = new HostSupervisor({
    hostId: 'host-a',
    command,
    logger,
    clientVersion: '1.2.3',
    onEvent: (event) => (event.type === 'sessionSeen' ? seen.push(event) : events.push(event)),
    backoff: { initialMs: 10, maxMs: 50 },
    shutdownGraceMs: 1000,
    ...options,
  });
  supervisors.push(supervisor);
  return { supervisor, events, seen, logs: lines };
}

async function until(condition: () => boolean, timeoutMs = 1500): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

function sent(log: LoggedFrame[], method: string): Json[] {
  return log
    .filter((frame) => frame.direction === 'in' && frame.message.method === method)
    .map((f) => f.message);
}

// ── tests ────────────────────────────────────────────────────────────────────────────────

describe('HostSupervisor', () => {
  it('handshakes, follows every session page, reconciles and resumes what it must', async () => {
    const host = fakeHost({
      sessionPages: {
        '': {
          sessions: [
            { sessionId: 'sess-pending', status: 'notLoaded' },
            { sessionId: 'sess-loaded', status: 'idle', title: 'Fix the flaky test' },
          ],
          nextCursor: 'page-2',
        },
        'page-2': {
          sessions: [
            { sessionId: 'sess-other', status: 'notLoaded' },
            { sessionId: 'sess-busy', status: 'notLoaded' },
          ],
          nextCursor: null,
        },
      },
      pending: {
        'sess-pending': [approval('sess-pending', 'appr-listed')],
        'sess-loaded': [{ approvalId: 'appr-broken', sessionId: 'sess-loaded' }],
        'sess-busy': [approval('sess-busy', 'appr-busy')],
      },
      resumeErrors: {
        'sess-busy': {
          code: -32021,
          message: 'in use',
          data: { kind: 'sessionInUse', sessionId: 'sess-busy' },
        },
      },
      // Like snapshot-suffix-pending-approval: the host re-issues the pending approval after resume.
      afterResume: {
        'sess-pending': [
          {
            jsonrpc: '2.0',
            id: 17,
            method: 'approval/request',
            params: approval('sess-pending', 'appr-listed'),
          },
        ],
      },
    });
    const { supervisor, events, seen, logs } = supervise(host.command);
    await supervisor.start();
    expect(supervisor.isUp()).toBe(true);
    // Every listed session is named to the relay (for its cards) before any of its approvals.
    expect(seen.map((event) => [event.sessionId, event.label])).toEqual([
      ['sess-pending', undefined],
      ['sess-loaded', 'Fix the flaky test'],
      ['sess-other', undefined],
      ['sess-busy', undefined],
    ]);

    const log = host.log(1);
    const clientFrames = log.filter((frame) => frame.direction === 'in').map((frame) => frame.message);
    expect(clientFrames[0]).toMatchObject({ jsonrpc: '2.0', method: 'initialize' });
    expect(clientFrames[0]!.params).toEqual({
      clientInfo: { name: 'countersign', title: 'Countersign', version: '1.2.3' },
      capabilities: {
        requestedCapabilities: ['sessionListStream'],
        optOutNotificationMethods: ['item/delta'],
        userInputDialogs: false,
      },
    });
    expect(clientFrames[1]).toEqual({ jsonrpc: '2.0', method: 'initialized' });
    expect(sent(log, 'session/list').map((frame) => frame.params)).toEqual([
      { limit: 200 },
      { limit: 200, cursor: 'page-2' },
    ]);
    // A session resumed here is listed again after the resume: the resume may have recovered it.
    expect(sent(log, 'approval/listPending').map((frame) => (frame.params as Json).sessionId)).toEqual([
      'sess-pending',
      'sess-pending',
      'sess-loaded',
      'sess-loaded',
      'sess-other',
      'sess-busy',
    ]);
    const resumes = sent(log, 'session/resume').map((frame) => frame.params as Json);
    expect(resumes.map((params) => params.sessionId)).toEqual(['sess-pending', 'sess-loaded', 'sess-busy']);
    for (const params of resumes) {
      expect(uuidValidate(params.commandId as string) && uuidVersion(params.commandId as string)).toBe(7);
    }

    const incarnation = supervisor.incarnation!;
    await until(() => events.some((event) => event.type === 'approvalOpened' && event.via === 'request'));
    expect(events.map((event) => [event.type, 'via' in event ? event.via : undefined])).toEqual([
      ['hostUp', undefined],
      // sess-pending: resumed (the host re-issues its approval), then listed again.
      ['approvalOpened', 'request'],
      ['approvalOpened', 'listPending'],
      ['sessionReconciled', undefined],
      ['sessionReconciled', undefined],
      ['sessionReconciled', undefined],
      // The held session's listing is reported once the resume has said who holds it.
      ['sessionHeldElsewhere', undefined],
      ['approvalOpened', 'listPending'],
      ['sessionReconciled', undefined],
    ]);
    expect(events.every((event) => event.hostId === 'host-a' && event.incarnation === incarnation)).toBe(
      true,
    );
    expect(events[0]).toEqual({ type: 'hostUp', hostId: 'host-a', incarnation, durable: true });
    const reconciled = events.filter((event) => event.type === 'sessionReconciled');
    expect(reconciled.map((event) => [event.sessionId, event.pendingApprovalIds])).toEqual([
      ['sess-pending', ['appr-listed']],
      ['sess-loaded', ['appr-broken']],
      ['sess-other', []],
      ['sess-busy', ['appr-busy']],
    ]);
    // The busy session's approval is still reported, marked as held by another client: it
    // cannot be decided from here, so its card must not show buttons.
    const opened = events.filter((event) => event.type === 'approvalOpened');
    expect(opened.map((event) => event.params.approvalId)).toEqual([
      'appr-listed',
      'appr-listed',
      'appr-busy',
    ]);
    expect(opened.map((event) => event.heldElsewhere === true)).toEqual([false, false, true]);

    // The re-issued request was answered with {} and its own id.
    await until(() => host.log(1).some((frame) => frame.direction === 'in' && frame.message.id === 17));
    expect(host.log(1).find((frame) => frame.direction === 'in' && frame.message.id === 17)?.message).toEqual(
      {
        jsonrpc: '2.0',
        id: 17,
        result: {},
      },
    );

    const broken = logs.find((line) => line.msg === 'skipping approval frame that does not parse');
    expect(broken).toMatchObject({ approvalId: 'appr-broken', sessionId: 'sess-loaded', hostId: 'host-a' });
    expect(logs.find((line) => String(line.msg).includes('held by another client'))).toMatchObject({
      sessionId: 'sess-busy',
    });
  });

  it('answers approval/request with {} before anything else, then emits events in frame order', async () => {
    const host = fakeHost({
      onSignal: [
        ROUND_TRIP_REQUESTED,
        ROUND_TRIP_REQUEST,
        ROUND_TRIP_RESOLVED,
        {
          jsonrpc: '2.0',
          method: 'approval/reviewing',
          params: approval(ROUND_TRIP_SESSION_ID, 'appr-reviewed'),
        },
        { jsonrpc: '2.0', method: 'approval/updated', params: { approvalId: 'appr-odd', sessionId: 's' } },
        UNKNOWN_STATE_METHOD,
        { jsonrpc: '2.0', id: 2, method: 'userInput/request', params: { userInputId: 'u1' } },
        ROUND_TRIP_STARTED,
      ],
    });
    const decisions: Promise<unknown>[] = [];
    const { supervisor, events, logs } = supervise(host.command, {
      onEvent: (event) => {
        events.push(event);
        // Deciding straight from the event handler must still come after the receipt.
        if (event.type === 'approvalOpened' && event.via === 'request') {
          decisions.push(
            supervisor.decide({
              sessionId: event.params.sessionId,
              approvalId: event.params.approvalId,
              commandId: '0198f0ab-0000-7000-8000-00000000d001',
              requirementId: event.params.currentRequirementId,
              choiceId: 'allow_once',
            }),
          );
        }
      },
    });
    await supervisor.start();
    const before = events.length;
    process.kill(host.pid(1), 'SIGUSR2');
    await until(() => events.some((event) => event.type === 'sessionReconciled'));
    await Promise.all(decisions);

    const log = host.log(1);
    const requestAt = log.findIndex(
      (frame) => frame.direction === 'out' && frame.message.method === 'approval/request',
    );
    const firstAnswer = log.slice(requestAt + 1).find((frame) => frame.direction === 'in');
    expect(firstAnswer?.raw).toBe('{"jsonrpc":"2.0","id":1,"result":{}}');
    const decide = sent(log, 'approval/decide');
    expect(decide).toHaveLength(1);
    expect(decide[0]!.params).toEqual({
      sessionId: ROUND_TRIP_SESSION_ID,
      approvalId: ROUND_TRIP_APPROVAL_ID,
      commandId: '0198f0ab-0000-7000-8000-00000000d001',
      requirementId: { approvalId: ROUND_TRIP_APPROVAL_ID, sourceIndex: 0 },
      choiceId: 'allow_once',
    });
    const userInputAnswer = log.find((frame) => frame.direction === 'in' && frame.message.id === 2);
    expect(userInputAnswer?.message).toMatchObject({
      error: { code: -32601, data: { kind: 'methodNotFound' } },
    });

    const approvalEvents = events
      .slice(before)
      .filter((event) => event.type !== 'sessionReconciled' && event.type !== 'sessionSeen');
    expect(approvalEvents.map((event) => [event.type, 'via' in event ? event.via : ''])).toEqual([
      ['approvalOpened', 'requested'],
      ['approvalOpened', 'request'],
      ['approvalResolved', ''],
      ['approvalReviewing', ''],
    ]);
    const resolved = approvalEvents[2];
    expect(resolved?.type === 'approvalResolved' && resolved.params.decision).toBe('approvedForSession');
    expect(logs.find((line) => line.msg === 'skipping approval frame that does not parse')).toMatchObject({
      approvalId: 'appr-odd',
      method: 'approval/updated',
    });
    // session/started → followed: listPending, then resume.
    await until(() => sent(host.log(1), 'session/resume').length === 1);
    expect((sent(host.log(1), 'session/resume')[0]!.params as Json).sessionId).toBe(ROUND_TRIP_SESSION_ID);
  });

  it('decides with the same commandId through overloaded and sessionNotLoaded', async () => {
    const host = fakeHost({
      decide: [
        { code: -32001, message: 'busy', data: { kind: 'overloaded', retryable: true } },
        { code: -32024, message: 'not loaded', data: { kind: 'sessionNotLoaded', sessionId: 'sess-1' } },
      ],
    });
    const { supervisor } = supervise(host.command);
    await supervisor.start();
    const commandId = '0198f0ab-0000-7000-8000-00000000d002';
    const result = await supervisor.decide({
      sessionId: 'sess-1',
      approvalId: 'appr-1',
      commandId,
      requirementId: { approvalId: 'appr-1', sourceIndex: 0 },
      choiceId: 'abort',
      feedback: 'open a PR instead',
    });
    expect(result).toMatchObject({ commandId, status: 'accepted', terminal: true });
    const frames = host
      .log(1)
      .filter(
        (frame) =>
          frame.direction === 'in' &&
          ['approval/decide', 'session/resume'].includes(String(frame.message.method)),
      )
      .map((frame) => [frame.message.method, (frame.message.params as Json).commandId === commandId]);
    expect(frames).toEqual([
      ['approval/decide', true],
      ['approval/decide', true],
      ['session/resume', false],
      ['approval/decide', true],
    ]);
  });

  it('throws other MspErrors from decide unchanged', async () => {
    const host = fakeHost({
      decide: [
        { code: -32051, message: 'done', data: { kind: 'approvalAlreadyResolved', approvalId: 'appr-1' } },
      ],
    });
    const { supervisor } = supervise(host.command);
    await supervisor.start();
    const error = await supervisor
      .decide({
        sessionId: 'sess-1',
        approvalId: 'appr-1',
        commandId: '0198f0ab-0000-7000-8000-00000000d003',
        requirementId: { approvalId: 'appr-1', sourceIndex: 0 },
        choiceId: 'allow_once',
      })
      .catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(MspError);
    expect(error).toMatchObject({ kind: 'approvalAlreadyResolved', code: -32051 });
  });

  it('respawns a host that died: hostDown, then hostUp of a new incarnation and a full sync', async () => {
    const host = fakeHost({
      sessionPages: { '': { sessions: [{ sessionId: 'sess-1', status: 'running' }], nextCursor: null } },
      pending: { 'sess-1': [approval('sess-1', 'appr-1')] },
    });
    const { supervisor, events } = supervise(host.command);
    await supervisor.start();
    const first = supervisor.incarnation!;
    process.kill(host.pid(1), 'SIGKILL');
    await until(() => events.some((event) => event.type === 'hostDown'));
    // A decision asked for while the host is down waits for the next incarnation.
    const decision = supervisor.decide({
      sessionId: 'sess-1',
      approvalId: 'appr-1',
      commandId: '0198f0ab-0000-7000-8000-00000000d004',
      requirementId: { approvalId: 'appr-1', sourceIndex: 0 },
      choiceId: 'allow_once',
    });
    await until(() => events.filter((event) => event.type === 'sessionReconciled').length === 2);
    await expect(decision).resolves.toMatchObject({ status: 'accepted' });

    const second = supervisor.incarnation!;
    expect(second).not.toBe(first);
    expect(host.spawns()).toBe(2);
    const down = events.find((event) => event.type === 'hostDown');
    expect(down).toEqual({
      type: 'hostDown',
      hostId: 'host-a',
      incarnation: first,
      durable: true,
      exitCode: null,
      signal: 'SIGKILL',
    });
    const afterDown = events.slice(events.indexOf(down!) + 1);
    expect(afterDown.map((event) => [event.type, event.incarnation])).toEqual([
      ['hostUp', second],
      ['approvalOpened', second],
      ['sessionReconciled', second],
    ]);
    // The new incarnation resumed the session again (sessionReconciled comes before the resume).
    await until(() => sent(host.log(2), 'session/resume').length > 0);
    expect(sent(host.log(2), 'session/resume').map((frame) => (frame.params as Json).sessionId)).toEqual([
      'sess-1',
    ]);
  });

  it('respawns a host that closed its stdin but lives on, once a write to it fails', async () => {
    const host = fakeHost({ closeStdinOnSpawn: 1 });
    const { supervisor, events } = supervise(host.command, { upWaitMs: 5000 });
    await supervisor.start();
    const first = supervisor.incarnation!;
    await until(() => existsSync(join(host.dir, 'stdin-closed-1')));
    const decision = (commandId: string) =>
      supervisor.decide({
        sessionId: 'sess-1',
        approvalId: 'appr-1',
        commandId,
        requirementId: { approvalId: 'appr-1', sourceIndex: 0 },
        choiceId: 'allow_once',
      });
    await expect(decision('0198f0ab-0000-7000-8000-00000000d005')).rejects.toBeInstanceOf(HostGoneError);
    await until(() => events.some((event) => event.type === 'hostUp' && event.incarnation !== first), 5000);
    expect(events.find((event) => event.type === 'hostDown')).toMatchObject({ incarnation: first });
    expect(host.spawns()).toBe(2);
    await expect(decision('0198f0ab-0000-7000-8000-00000000d006')).resolves.toMatchObject({
      status: 'accepted',
    });
  });

  it('survives a host that will not start, logs why and retries slowly without throwing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'msp-bad-host-'));
    dirs.push(dir);
    const { supervisor, events, logs } = supervise(
      `echo attempt >> "${dir}/attempts"; echo "bad flag" >&2; exit 2`,
      {
        backoff: { initialMs: 1, maxMs: 40 },
      },
    );
    await supervisor.start();
    expect(supervisor.isUp()).toBe(false);
    const attempts = (): number =>
      existsSync(join(dir, 'attempts'))
        ? readFileSync(join(dir, 'attempts'), 'utf8').split('\n').length - 1
        : 0;
    await until(() => attempts() >= 2);
    expect(events).toEqual([]);
    // Exit code 2 needs an operator: the line that says so comes at the first failure, once.
    const errors = logs.filter((line) => line.level === 50);
    expect(errors).toEqual([
      expect.objectContaining({
        msg: 'MSP_HOST_COMMAND exited with code 2 (usageError): bad flag',
        exitCode: 2,
        stderrTail: ['bad flag'],
      }),
    ]);
    expect(logs.find((line) => line.line === 'bad flag')).toMatchObject({
      hostId: 'host-a',
      stream: 'stderr',
    });
    // The slow pace applies: between 20 and 40 ms here, never the 1 ms initial delay.
    const respawns = () => logs.filter((line) => line.msg === 'respawning host');
    await until(() => respawns().length >= 2);
    const delays = respawns().map((line) => line.delayMs as number);
    expect(delays.every((delay) => delay >= 20 && delay <= 40)).toBe(true);
  });

  it('says why initialize failed masked and cut, in the log and in downReason', async () => {
    const token = FAKE_SLACK_BOT_TOKEN;
    const host = fakeHost({
      initializeError: { code: -32603, message: `${token} ${'x'.repeat(1_000_000)}` },
    });
    const { supervisor, logs } = supervise(host.command, { backoff: { initialMs: 1000, maxMs: 1000 } });
    await supervisor.start();
    await until(() => supervisor.downReason()?.includes('initialize') === true, 5000);
    const reason = supervisor.downReason()!;
    expect(reason).toContain('answered initialize with an error ([masked slack-token]');
    expect(reason.length).toBeLessThan(1024);
    expect(reason).not.toContain(token);
    // Withheld: that it failed, not what the host said.
    expect(supervisor.downReason('withheld')).toMatch(
      /^MSP_HOST_COMMAND answered initialize with an error( \d+ times in a row)?$/,
    );
    await until(() => logs.some((line) => line.msg === 'MSP handshake failed; restarting the host'));
    for (const line of logs) {
      const raw = JSON.stringify(line);
      expect(raw.length).toBeLessThan(1024);
      expect(raw).not.toContain(token);
    }
  });

  it('stop() closes stdin and resolves when the host exited; no respawn', async () => {
    const host = fakeHost({});
    const { supervisor, events, logs } = supervise(host.command);
    await supervisor.start();
    await supervisor.stop();
    expect(supervisor.isUp()).toBe(false);
    // Exit code 0: the host left on the EOF, not on a signal.
    expect(events.at(-1)).toMatchObject({ type: 'hostDown', exitCode: 0, signal: null });
    // A respawn would have been scheduled (and logged) before stop() resolved.
    expect(logs.some((line) => line.msg === 'respawning host')).toBe(false);
    expect(logs.some((line) => line.msg === 'host stopped')).toBe(true);
    expect(host.spawns()).toBe(1);
  });

  it('stop() sends SIGTERM to a host that ignores EOF', async () => {
    const host = fakeHost({ ignoreEof: true });
    const { supervisor, events } = supervise(host.command, { shutdownGraceMs: 100 });
    await supervisor.start();
    await supervisor.stop();
    expect(events.at(-1)).toMatchObject({ type: 'hostDown', signal: 'SIGTERM' });
    expect(host.spawns()).toBe(1);
  });
});
