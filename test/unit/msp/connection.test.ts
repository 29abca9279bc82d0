import { PassThrough, Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { JsonRpcConnection, outboxLimitBytes } from '../../../src/msp/connection.js';
import { HostGoneError, MspError, RequestTimeoutError } from '../../../src/msp/errors.js';
import { FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';

type Json = Record<string, unknown>;

/** How many lines about frames a host sent wrong are written one by one, per interval. */
const MALFORMED_LOGGED = 10;

function captureLogger() {
  const lines: Json[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as Json) });
  return { logger, lines };
}

/** A connection whose host side is two PassThroughs: what we write, and what the "host" sends. */
function setup(options: { defaultTimeoutMs?: number } = {}) {
  const hostStdout = new PassThrough();
  const hostStdin = new PassThrough();
  const written: Json[] = [];
  let buffered = '';
  hostStdin.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let newline = buffered.indexOf('\n');
    while (newline !== -1) {
      written.push(JSON.parse(buffered.slice(0, newline)) as Json);
      buffered = buffered.slice(newline + 1);
      newline = buffered.indexOf('\n');
    }
  });
  const { logger, lines } = captureLogger();
  const connection = new JsonRpcConnection({ input: hostStdout, output: hostStdin, logger, ...options });
  const send = (...frames: (Json | string)[]): void => {
    hostStdout.write(
      frames.map((frame) => `${typeof frame === 'string' ? frame : JSON.stringify(frame)}\n`).join(''),
    );
  };
  return { connection, hostStdout, hostStdin, written, send, logs: lines };
}

async function until(condition: () => boolean, timeoutMs = 1000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

describe('JsonRpcConnection', () => {
  it('matches responses to requests by id, whatever their order', async () => {
    const { connection, written, send } = setup();
    const first = connection.request('session/list', { limit: 200 });
    const second = connection.request('approval/listPending', { sessionId: 's1' });
    await until(() => written.length === 2);
    expect(written).toEqual([
      { jsonrpc: '2.0', id: 'c1', method: 'session/list', params: { limit: 200 } },
      { jsonrpc: '2.0', id: 'c2', method: 'approval/listPending', params: { sessionId: 's1' } },
    ]);
    send(
      { jsonrpc: '2.0', id: 'c2', result: { approvals: [] } },
      { jsonrpc: '2.0', id: 'c1', result: { sessions: [] } },
    );
    await expect(first).resolves.toEqual({ sessions: [] });
    await expect(second).resolves.toEqual({ approvals: [] });
  });

  it('omits params when there are none and sends notifications without id', async () => {
    const { connection, written } = setup();
    connection.notify('initialized');
    await until(() => written.length === 1);
    expect(written[0]).toEqual({ jsonrpc: '2.0', method: 'initialized' });
  });

  it('answers host requests with the id exactly as received (1 and "1" differ)', async () => {
    const { connection, written, send } = setup();
    connection.onRequest((request) => ({ echo: request.params }));
    send(
      { jsonrpc: '2.0', id: 1, method: 'x/ping', params: { n: 1 } },
      { jsonrpc: '2.0', id: '1', method: 'x/ping', params: { n: 2 } },
    );
    await until(() => written.length === 2);
    expect(written).toEqual([
      { jsonrpc: '2.0', id: 1, result: { echo: { n: 1 } } },
      { jsonrpc: '2.0', id: '1', result: { echo: { n: 2 } } },
    ]);
  });

  it('does not take a host request id for one of ours', async () => {
    const { connection, written, send, logs } = setup();
    const pending = connection.request('a');
    await until(() => written.length === 1);
    // A response carrying the number 1 is not our "c1".
    send({ jsonrpc: '2.0', id: 1, result: {} });
    await until(() => logs.some((line) => line.msg === 'skipping response to an unknown request id'));
    send({ jsonrpc: '2.0', id: 'c1', result: { ok: true } });
    await expect(pending).resolves.toEqual({ ok: true });
  });

  it('answers -32601 without a handler, and error responses for thrown MspErrors', async () => {
    const { connection, written, send } = setup();
    send({ jsonrpc: '2.0', id: 5, method: 'userInput/request', params: {} });
    await until(() => written.length === 1);
    expect(written[0]).toMatchObject({ id: 5, error: { code: -32601, data: { kind: 'methodNotFound' } } });

    connection.onRequest((request) => {
      if (request.method === 'boom') throw new Error('bug');
      throw MspError.methodNotFound(request.method);
    });
    send({ jsonrpc: '2.0', id: 6, method: 'nope' }, { jsonrpc: '2.0', id: 7, method: 'boom' });
    await until(() => written.length === 3);
    expect(written[1]).toMatchObject({ id: 6, error: { code: -32601 } });
    expect(written[2]).toMatchObject({ id: 7, error: { code: -32603, data: { kind: 'internal' } } });
  });

  it('lets a handler answer at once and then keep working; what it returns is ignored', async () => {
    const { connection, written, send } = setup();
    const seen: string[] = [];
    connection.onRequest((request) => {
      request.respond({});
      seen.push(`after respond: ${written.length}`);
      return { ignored: true };
    });
    send({ jsonrpc: '2.0', id: 3, method: 'approval/request', params: {} });
    await until(() => written.length === 1);
    expect(written).toEqual([{ jsonrpc: '2.0', id: 3, result: {} }]);
    expect(seen).toHaveLength(1);
  });

  it('answers with the result of an async handler', async () => {
    const { connection, written, send } = setup();
    connection.onRequest(async () => ({ later: true }));
    send({ jsonrpc: '2.0', id: 9, method: 'x' });
    await until(() => written.length === 1);
    expect(written[0]).toEqual({ jsonrpc: '2.0', id: 9, result: { later: true } });
  });

  it('rejects with MspError carrying kind, data and retryable', async () => {
    const { connection, written, send } = setup();
    const stale = connection.request('approval/decide', {});
    const busy = connection.request('approval/decide', {});
    const bare = connection.request('approval/decide', {});
    await until(() => written.length === 3);
    send(
      {
        jsonrpc: '2.0',
        id: 'c1',
        error: {
          code: -32053,
          message: 'stale',
          data: {
            kind: 'approvalRequirementStale',
            currentRequirementId: { approvalId: 'a', sourceIndex: 1 },
          },
        },
      },
      { jsonrpc: '2.0', id: 'c2', error: { code: -32001, message: 'busy' } },
      { jsonrpc: '2.0', id: 'c3', error: { code: -32031, message: 'full', data: { retryable: false } } },
    );
    const staleError = await stale.catch((error: unknown) => error);
    expect(staleError).toBeInstanceOf(MspError);
    expect(staleError).toMatchObject({ code: -32053, kind: 'approvalRequirementStale', retryable: false });
    expect((staleError as MspError).data?.currentRequirementId).toEqual({ approvalId: 'a', sourceIndex: 1 });
    await expect(busy).rejects.toMatchObject({
      kind: 'overloaded',
      retryable: true,
      method: 'approval/decide',
    });
    await expect(bare).rejects.toMatchObject({ kind: 'backpressured', retryable: false });
  });

  it('skips malformed frames with a warning and handles the next one', async () => {
    const { connection, written, send, logs } = setup();
    const notifications: string[] = [];
    connection.onNotification((notification) => notifications.push(notification.method));
    const pending = connection.request('a');
    await until(() => written.length === 1);
    send(
      '{not json',
      '[1,2]',
      '"text"',
      { id: 'c1', result: {} },
      { jsonrpc: '2.0', id: 'c99', result: {} },
      { jsonrpc: '2.0', method: 'x/after' },
      { jsonrpc: '2.0', id: 'c1', result: { fine: true } },
    );
    await expect(pending).resolves.toEqual({ fine: true });
    expect(notifications).toEqual(['x/after']);
    const warnings = logs.filter((line) => line.level === 40).map((line) => line.msg);
    expect(warnings).toEqual([
      'skipping malformed frame: not JSON',
      'skipping malformed frame: not a JSON object',
      'skipping malformed frame: not a JSON object',
      'skipping malformed frame: jsonrpc is not "2.0"',
      'skipping response to an unknown request id',
    ]);
    expect(connection.isClosed).toBe(false);
  });

  it('logs the first malformed frames of a flood, then one line with how many more were skipped', async () => {
    const { connection, hostStdout, send, logs } = setup();
    const notifications: string[] = [];
    connection.onNotification((notification) => notifications.push(notification.method));
    // The host chooses how many: one line each would be a log flood of its making.
    const flood = 1_000;
    send(...Array.from({ length: flood }, () => '{not json'), { jsonrpc: '2.0', method: 'x/after' });
    await until(() => notifications.length === 1);
    const warnings = () => logs.filter((line) => line.level === 40);
    expect(warnings().length).toBeLessThanOrEqual(MALFORMED_LOGGED);
    expect(warnings().every((line) => line.msg === 'skipping malformed frame: not JSON')).toBe(true);

    // That frames were skipped is not lost: the rest are counted, at the latest when the host
    // has said its last.
    hostStdout.end();
    await connection.ended;
    const summary = warnings().filter((line) => line.msg !== 'skipping malformed frame: not JSON');
    expect(summary).toEqual([
      expect.objectContaining({
        skipped: flood - MALFORMED_LOGGED,
        byKind: { 'skipping malformed frame: not JSON': flood - MALFORMED_LOGGED },
      }),
    ]);
    expect(warnings()).toHaveLength(MALFORMED_LOGGED + 1);
  });

  it('runs the code awaiting a response before it handles the next frame', async () => {
    const { connection, written, send } = setup();
    const order: string[] = [];
    connection.onNotification((notification) => order.push(notification.method));
    const done = (async () => {
      await connection.request('approval/listPending');
      order.push('after response');
    })();
    await until(() => written.length === 1);
    send({ jsonrpc: '2.0', id: 'c1', result: {} }, { jsonrpc: '2.0', method: 'approval/resolved' });
    await done;
    await until(() => order.length === 2);
    expect(order).toEqual(['after response', 'approval/resolved']);
  });

  /**
   * Notes each `approval/updated` frame it handles, by its params' `n`; the first one also queues
   * "other work" (anything else the event loop has ready: a Slack answer, a Redis reply). Each
   * frame keeps the thread busy for `busyMs`.
   */
  function noteFrames(connection: JsonRpcConnection, busyMs = 0): string[] {
    const order: string[] = [];
    connection.onNotification((notification) => {
      const n = (notification.params as { n: number }).n;
      order.push(`frame ${n}`);
      if (n === 0) setImmediate(() => order.push('other work'));
      const busyUntil = performance.now() + busyMs;
      while (performance.now() < busyUntil) {
        // A slow frame.
      }
    });
    return order;
  }

  const updates = (count: number) =>
    Array.from({ length: count }, (_, n) => ({ jsonrpc: '2.0', method: 'approval/updated', params: { n } }));

  it('handles a burst in slices, in order, letting what else is ready run between them', async () => {
    const { connection, send } = setup();
    const order = noteFrames(connection);
    send(...updates(100));
    await until(() => order.length === 101);
    const frames = order.filter((entry) => entry !== 'other work');
    expect(frames).toEqual(updates(100).map((_, n) => `frame ${n}`));
    // Handled in one stretch, the burst would keep it waiting until after frame 99.
    expect(order.indexOf('other work')).toBeLessThan(20);
  });

  it('gives the event loop a turn once frames have taken a couple of milliseconds', async () => {
    const { connection, send } = setup();
    // Each frame outlasts a slice's time: the turn comes after the first.
    const order = noteFrames(connection, 3);
    send(...updates(3));
    await until(() => order.length === 4);
    expect(order).toEqual(['frame 0', 'other work', 'frame 1', 'frame 2']);
  });

  it('rejects pending requests with HostGoneError when the input ends, and later ones at once', async () => {
    const { connection, written, hostStdout } = setup();
    const pending = connection.request('session/resume', { sessionId: 's' });
    await until(() => written.length === 1);
    hostStdout.end();
    await expect(pending).rejects.toBeInstanceOf(HostGoneError);
    await connection.ended;
    expect(connection.isClosed).toBe(true);
    await expect(connection.request('x')).rejects.toBeInstanceOf(HostGoneError);
    expect(() => connection.notify('x')).toThrow(HostGoneError);
  });

  it('handles frames that arrived before the end, then rejects the rest', async () => {
    const { connection, written, hostStdout } = setup();
    const answered = connection.request('a');
    const unanswered = connection.request('b');
    await until(() => written.length === 2);
    hostStdout.end('{"jsonrpc":"2.0","id":"c1","result":{"x":1}}');
    await expect(answered).resolves.toEqual({ x: 1 });
    await expect(unanswered).rejects.toBeInstanceOf(HostGoneError);
  });

  it('close() ends the output and rejects pending requests', async () => {
    const { connection, hostStdin } = setup();
    const pending = connection.request('a');
    const ended = new Promise<void>((resolve) => hostStdin.on('end', () => resolve()));
    hostStdin.resume();
    connection.close();
    await expect(pending).rejects.toBeInstanceOf(HostGoneError);
    await ended;
  });

  // A host whose stdout ended may still read its stdin (a bridge to a socket, whose far side
  // ended): without EOF it is left to the SIGTERM that follows seconds later.
  it('close() ends the output also once the input has ended', async () => {
    const { connection, hostStdin, hostStdout } = setup();
    hostStdout.end();
    await connection.ended;
    const ended = new Promise<void>((resolve) => hostStdin.on('end', () => resolve()));
    hostStdin.resume();
    connection.close();
    await ended;
    expect(hostStdin.writableEnded).toBe(true);
  });

  it('times out a request and warns about the late response', async () => {
    const { connection, written, send, logs } = setup({ defaultTimeoutMs: 20 });
    const pending = connection.request('slow');
    await expect(pending).rejects.toBeInstanceOf(RequestTimeoutError);
    expect(written).toHaveLength(1);
    send({ jsonrpc: '2.0', id: 'c1', result: {} });
    await until(() => logs.some((line) => line.msg === 'skipping response to an unknown request id'));
  });

  it('drops a host that never reads its stdin once the outbox passes its cap', async () => {
    const hostStdout = new PassThrough();
    // The host's stdin, never read: the first write never completes.
    const stuck = new Writable({ write() {} });
    const { logger, lines } = captureLogger();
    const maxFrameBytes = 4096;
    const connection = new JsonRpcConnection({ input: hostStdout, output: stuck, logger, maxFrameBytes });
    let mostQueued = 0;
    let sent = 0;
    while (sent < 100_000 && !connection.isClosed) {
      let batch = '';
      for (let index = 0; index < 1000; index++) {
        sent += 1;
        batch += `{"jsonrpc":"2.0","id":${sent},"method":"x"}\n`;
      }
      hostStdout.write(batch);
      // Each batch is answered in slices, the event loop getting a turn between them.
      for (let turn = 0; turn < 200 && !connection.isClosed; turn++) {
        await new Promise((resolve) => setImmediate(resolve));
        mostQueued = Math.max(mostQueued, connection.queuedBytes);
      }
    }
    expect(connection.isClosed).toBe(true);
    expect(mostQueued).toBeGreaterThan(0);
    expect(mostQueued).toBeLessThanOrEqual(outboxLimitBytes(maxFrameBytes));
    expect(connection.queuedBytes).toBe(0);
    // Destroyed: its end comes, which is what has the host terminated (incarnation.ts).
    await connection.ended;
    const errors = lines.filter((line) => line.level === 50);
    expect(errors).toEqual([
      expect.objectContaining({ msg: 'host does not read its stdin: dropping the connection' }),
    ]);
  });

  it('logs the id of a response to an unknown request masked and cut', async () => {
    const { send, logs } = setup();
    const token = FAKE_SLACK_BOT_TOKEN;
    send({ jsonrpc: '2.0', id: `${token} ${'I'.repeat(1_000_000)}`, result: {} });
    await until(() => logs.some((line) => line.msg === 'skipping response to an unknown request id'));
    for (const line of logs) {
      const raw = JSON.stringify(line);
      expect(raw.length).toBeLessThan(1024);
      expect(raw).not.toContain(token);
    }
    const warning = logs.find((line) => line.msg === 'skipping response to an unknown request id');
    expect(String(warning!.id)).toContain('[masked slack-token]');
  });

  it('waits for drain and writes whole frames in order under backpressure', async () => {
    const hostStdout = new PassThrough();
    const chunks: string[] = [];
    let release: (() => void)[] = [];
    const slow = new Writable({
      highWaterMark: 16,
      write(chunk: Buffer, _encoding, callback) {
        chunks.push(chunk.toString('utf8'));
        release.push(callback);
      },
    });
    const { logger } = captureLogger();
    const connection = new JsonRpcConnection({ input: hostStdout, output: slow, logger });
    for (let index = 0; index < 20; index++) connection.notify('n', { index, pad: 'x'.repeat(40) });
    // The stream is full after the first frame; the rest waits in order for 'drain'.
    expect(chunks).toHaveLength(1);
    while (chunks.length < 20) {
      const callbacks = release;
      release = [];
      for (const callback of callbacks) callback();
      await new Promise((resolve) => setImmediate(resolve));
    }
    for (const callback of release) callback();
    const indexes = chunks.map((chunk) => {
      expect(chunk.endsWith('\n')).toBe(true);
      expect(chunk.indexOf('\n')).toBe(chunk.length - 1);
      return (JSON.parse(chunk) as { params: { index: number } }).params.index;
    });
    expect(indexes).toEqual([...Array(20).keys()]);
  });
});
