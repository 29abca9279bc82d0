// Self-tests of fake-host.mjs + FakeHost, driving the host directly over stdio (no bot).

import { type ChildProcess, spawn } from 'node:child_process';
import { v4, v7 } from 'uuid';
import { afterEach, describe, expect, test } from 'vitest';
import { approvalFromTranscript, FakeHost, type RpcFrame, shellApproval } from './fakeHost.js';

const SESSION = '0198f0aa-1111-7000-8000-0000000000aa';
const OTHER = '0198f0aa-1111-7000-8000-0000000000bb';

/** A minimal MSP client: spawns the host the way the bot does and reads its NDJSON. */
class HostClient {
  readonly frames: RpcFrame[] = [];
  readonly exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private waiters: Array<{ test: (f: RpcFrame) => boolean; resolve: (f: RpcFrame) => void }> = [];
  private nextId = 1;

  constructor(readonly proc: ChildProcess) {
    let buf = '';
    proc.stdout?.setEncoding('utf8');
    proc.stdout?.on('data', (chunk: string) => {
      buf += chunk;
      let nl = buf.indexOf('\n');
      while (nl >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        nl = buf.indexOf('\n');
        const frame = JSON.parse(line) as RpcFrame;
        this.frames.push(frame);
        for (const w of [...this.waiters]) {
          if (w.test(frame)) {
            this.waiters.splice(this.waiters.indexOf(w), 1);
            w.resolve(frame);
          }
        }
      }
    });
    this.exit = new Promise((resolve) => proc.once('exit', (code, signal) => resolve({ code, signal })));
  }

  static spawn(host: FakeHost): HostClient {
    const proc = spawn('/bin/sh', ['-c', host.command], {
      env: { ...process.env, ...host.env },
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    clients.push(proc);
    return new HostClient(proc);
  }

  sendRaw(line: string): void {
    this.proc.stdin?.write(line);
  }

  send(frame: Record<string, unknown>): void {
    this.sendRaw(`${JSON.stringify({ jsonrpc: '2.0', ...frame })}\n`);
  }

  /** First frame from `since` on matching `test`. */
  waitFor(test: (f: RpcFrame) => boolean, since = 0, timeoutMs = 3000): Promise<RpcFrame> {
    const found = this.frames.slice(since).find(test);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const w = {
        test,
        resolve: (f: RpcFrame) => {
          clearTimeout(timer);
          resolve(f);
        },
      };
      const timer = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        reject(new Error(`no matching frame; got:\n${this.frames.map((f) => JSON.stringify(f)).join('\n')}`));
      }, timeoutMs);
      this.waiters.push(w);
    });
  }

  async request(method: string, params?: unknown): Promise<RpcFrame> {
    const id = `c${this.nextId++}`;
    this.send({ id, method, ...(params === undefined ? {} : { params }) });
    return this.waitFor((f) => f.id === id && f.method === undefined);
  }

  async handshake(requestedCapabilities: string[] = []): Promise<RpcFrame> {
    const res = await this.request('initialize', {
      clientInfo: { name: 'countersign', version: '0.0.0' },
      capabilities: { requestedCapabilities },
    });
    this.send({ method: 'initialized' });
    return res;
  }

  decide(params: {
    approvalId: string;
    sourceIndex: number;
    choiceId: string;
    commandId?: string;
    sessionId?: string;
    feedback?: string;
  }): Promise<RpcFrame> {
    return this.request('approval/decide', {
      sessionId: params.sessionId ?? SESSION,
      commandId: params.commandId ?? v7(),
      approvalId: params.approvalId,
      requirementId: { approvalId: params.approvalId, sourceIndex: params.sourceIndex },
      choiceId: params.choiceId,
      ...(params.feedback === undefined ? {} : { feedback: params.feedback }),
    });
  }
}

const clients: ChildProcess[] = [];
let host: FakeHost | undefined;

afterEach(async () => {
  for (const p of clients.splice(0)) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  await host?.close();
  host = undefined;
});

const params = (f: RpcFrame) => f.params as Record<string, unknown> & { approvalId: string };
const result = (f: RpcFrame) => f.result as Record<string, unknown>;

describe('fake MSP host', () => {
  test('handshake: notInitialized before initialize, granted capabilities, frames reported', async () => {
    host = await FakeHost.start({ sessions: [{ sessionId: SESSION, title: 'one' }] });
    const c = HostClient.spawn(host);
    const first = await host.waitForIncarnation(1);
    expect(first.pid).toBe(c.proc.pid); // the shell execs the host

    const early = await c.request('session/list');
    expect(early.error?.code).toBe(-32600);
    expect(early.error?.data?.kind).toBe('notInitialized');

    const init = await c.handshake(['sessionListStream', 'userShell']);
    expect(result(init)).toMatchObject({
      schema: {
        version: 1,
        fingerprint: 'sha256:c8d1a2a1866814e220fd396d382a9a75861412feee884b5021b2ee359bd3dc59',
      },
      grantedCapabilities: ['sessionListStream'],
      sessionDurability: 'durable',
      serverInfo: { name: 'muse-session-server' },
    });
    const again = await c.request('initialize', { clientInfo: { name: 'x', version: '1' } });
    expect(again.error?.data?.kind).toBe('alreadyInitialized');

    // \r\n framing and unparsable lines
    c.sendRaw('{"jsonrpc":"2.0","id":"crlf","method":"session/list"}\r\n');
    expect(result(await c.waitFor((f) => f.id === 'crlf'))).toMatchObject({
      sessions: [{ sessionId: SESSION }],
    });
    c.sendRaw('not json\n');
    const parseErr = await c.waitFor((f) => f.error?.code === -32700);
    expect(parseErr.id).toBeNull();
    const unknown = await c.request('session/fork', {});
    expect(unknown.error).toMatchObject({ code: -32601, data: { kind: 'methodNotFound', retryable: false } });

    await host.waitForFrame((f) => f.frame === 'not json');
    // Those two client mistakes are the only frames off the vendor's schema, both ways; close()
    // would fail the test on them, so they are taken off the list once seen.
    await host.sync();
    expect(host.schemaViolations.map((v) => [v.direction, v.errors[0]])).toEqual([
      ['client', 'not JSON'],
      ['client', "session/fork params (top): must have required property 'commandId'"],
    ]);
    host.schemaViolations.length = 0;
    expect(host.framesOf('initialize')).toHaveLength(2);
    expect(host.framesOf('initialized')[0]?.incarnation).toBe(1);

    await host.startSession({ sessionId: OTHER, title: 'two' });
    await c.waitFor((f) => f.method === 'session/started');
    const changed = await c.waitFor((f) => f.method === 'session/listChanged');
    expect(params(changed)).toMatchObject({ session: { sessionId: OTHER } });

    c.proc.stdin?.end();
    expect((await c.exit).code).toBe(0);
  });

  test('session/list pages; listPending and open via control', async () => {
    const seeded = approvalFromTranscript('approval-round-trip');
    host = await FakeHost.start({
      sessions: [{ sessionId: SESSION }, { sessionId: OTHER }, { sessionId: 's3' }],
      approvals: [seeded],
    });
    const c = HostClient.spawn(host);
    await c.handshake();

    const p1 = result(await c.request('session/list', {}));
    expect((p1.sessions as unknown[]).length).toBe(2);
    expect(p1.nextCursor).toEqual(expect.any(String));
    const p2 = result(await c.request('session/list', { cursor: p1.nextCursor }));
    expect(p2).toMatchObject({ sessions: [{ sessionId: 's3' }], nextCursor: null });

    const lp = result(await c.request('approval/listPending', { sessionId: SESSION }));
    expect(lp.userInputs).toEqual([]);
    expect(lp.approvals).toEqual([
      expect.objectContaining({ approvalId: seeded.approvalId, subject: seeded.subject }),
    ]);

    const since = c.frames.length;
    const opened = await host.open({ approvalId: 'a-2', sessionId: SESSION });
    expect(opened.availableChoices.length).toBeGreaterThan(0);
    const requested = await c.waitFor((f) => f.method === 'approval/requested', since);
    const request = await c.waitFor((f) => f.method === 'approval/request', since);
    expect(params(requested).approvalId).toBe('a-2');
    expect(request.id).toEqual(expect.any(Number));
    expect(params(request)).toEqual(params(requested));

    const lp2 = result(await c.request('approval/listPending', { sessionId: SESSION }));
    expect((lp2.approvals as Array<{ approvalId: string }>).map((a) => a.approvalId)).toEqual([
      seeded.approvalId,
      'a-2',
    ]);
    expect(host.pendingApprovals(SESSION)).toHaveLength(2);
  });

  test('two-stage shell: terminal false then true, updated then resolved; stale; replay', async () => {
    host = await FakeHost.start({ sessions: [{ sessionId: SESSION }] });
    const c = HostClient.spawn(host);
    await c.handshake();
    const shell = shellApproval({
      approvalId: 'sh-1',
      sessionId: SESSION,
      stages: [
        ['npm', 'test'],
        ['git', 'push'],
      ],
    });
    await host.open(shell, { via: 'request' });
    await c.waitFor((f) => f.method === 'approval/request');

    const cmd1 = v7();
    let since = c.frames.length;
    const ack1 = await c.decide({
      approvalId: 'sh-1',
      sourceIndex: 0,
      choiceId: 'allow_once',
      commandId: cmd1,
    });
    expect(ack1.result).toEqual({ commandId: cmd1, status: 'accepted', approvalId: 'sh-1', terminal: false });
    const upd = await c.waitFor((f) => f.method === 'approval/updated', since);
    expect(params(upd)).toMatchObject({
      change: {
        kind: 'stageResolved',
        requirementId: { approvalId: 'sh-1', sourceIndex: 0 },
        choiceId: 'allow_once',
        decision: 'approved',
      },
      currentRequirementId: { approvalId: 'sh-1', sourceIndex: 1 },
      subject: { stages: [{ resolution: { kind: 'allowOnce' } }, { resolution: { kind: 'unresolved' } }] },
    });
    expect((params(upd).availableChoices as Array<{ choiceId: string }>).map((x) => x.choiceId)).toEqual([
      'allow_once',
      'abort',
    ]);
    const req2 = await c.waitFor((f) => f.method === 'approval/request', since);
    expect(c.frames.indexOf(req2)).toBeGreaterThan(c.frames.indexOf(upd));
    expect(params(req2)).toMatchObject({ currentRequirementId: { sourceIndex: 1 } });

    // Replaying the first decision: identical ack, no new frames.
    since = c.frames.length;
    const replay = await c.decide({
      approvalId: 'sh-1',
      sourceIndex: 0,
      choiceId: 'allow_once',
      commandId: cmd1,
    });
    expect(replay.result).toEqual(ack1.result);
    // Same commandId, different payload.
    const conflict = await c.decide({
      approvalId: 'sh-1',
      sourceIndex: 1,
      choiceId: 'allow_once',
      commandId: cmd1,
    });
    expect(conflict.error).toMatchObject({
      code: -32030,
      data: { kind: 'commandRejected', reason: 'command_id_conflict', retryable: false },
    });
    // A new command for the old stage is stale.
    const stale = await c.decide({ approvalId: 'sh-1', sourceIndex: 0, choiceId: 'allow_once' });
    expect(stale.error).toMatchObject({
      code: -32053,
      data: {
        kind: 'approvalRequirementStale',
        approvalId: 'sh-1',
        currentRequirementId: { sourceIndex: 1 },
      },
    });
    expect(c.frames.slice(since).filter((f) => f.method !== undefined)).toEqual([]);

    const bad = await c.decide({ approvalId: 'sh-1', sourceIndex: 1, choiceId: 'allow_local_prefix' });
    expect(bad.error).toMatchObject({
      code: -32052,
      data: { kind: 'approvalChoiceInvalid', choiceId: 'allow_local_prefix' },
    });
    const fb = await c.decide({ approvalId: 'sh-1', sourceIndex: 1, choiceId: 'allow_once', feedback: 'hm' });
    expect(fb.error).toMatchObject({ code: -32602, data: { kind: 'invalidParams' } });
    const v4id = await c.decide({
      approvalId: 'sh-1',
      sourceIndex: 1,
      choiceId: 'allow_once',
      commandId: v4(),
    });
    expect(v4id.error).toMatchObject({ code: -32602, data: { kind: 'invalidParams' } });

    const cmd2 = v7();
    since = c.frames.length;
    const ack2 = await c.decide({
      approvalId: 'sh-1',
      sourceIndex: 1,
      choiceId: 'allow_once',
      commandId: cmd2,
    });
    expect(ack2.result).toMatchObject({ terminal: true, commandId: cmd2 });
    const upd2 = await c.waitFor((f) => f.method === 'approval/updated', since);
    const resolved = await c.waitFor((f) => f.method === 'approval/resolved', since);
    expect(c.frames.indexOf(resolved)).toBeGreaterThan(c.frames.indexOf(upd2));
    expect(params(resolved)).toMatchObject({
      approvalId: 'sh-1',
      decision: 'approved',
      policyResult: 'allow',
      resolvedBy: 'user',
      decidedByCommandId: cmd2,
      decidedAt: expect.any(String),
      stageEvidence: [{ resolution: { kind: 'allowOnce' } }, { resolution: { kind: 'allowOnce' } }],
    });
    expect(params(resolved).amendment).toBeUndefined();

    const late = await c.decide({ approvalId: 'sh-1', sourceIndex: 1, choiceId: 'allow_once' });
    expect(late.error).toMatchObject({
      code: -32051,
      data: { kind: 'approvalAlreadyResolved', resolution: { decision: 'approved', resolvedBy: 'user' } },
    });
    const missing = await c.decide({ approvalId: 'nope', sourceIndex: 0, choiceId: 'allow_once' });
    expect(missing.error).toMatchObject({
      code: -32050,
      data: { kind: 'approvalNotFound', approvalId: 'nope' },
    });

    await host.waitForDecide((f) => f.frame.params.approvalId === 'nope');
    expect(host.decides()).toHaveLength(10);
    expect(host.decides()[0]?.frame.params.commandId).toBe(cmd1);
  });

  test('reject ends a shell approval; session-scoped choice carries an amendment', async () => {
    host = await FakeHost.start({ sessions: [{ sessionId: SESSION }] });
    const c = HostClient.spawn(host);
    await c.handshake();
    await host.open(
      shellApproval({ approvalId: 'sh-2', sessionId: SESSION, stages: [['ls'], ['rm', '-rf', 'x']] }),
    );
    const ack = await c.decide({ approvalId: 'sh-2', sourceIndex: 0, choiceId: 'abort', feedback: 'no' });
    expect(ack.result).toMatchObject({ terminal: true });
    const res = await c.waitFor((f) => f.method === 'approval/resolved');
    expect(params(res)).toMatchObject({ decision: 'abort', policyResult: 'deny' });

    await host.open(
      approvalFromTranscript('approval-round-trip', { approvalId: 'fa-1', sessionId: SESSION }),
    );
    await c.decide({ approvalId: 'fa-1', sourceIndex: 0, choiceId: 'allow_session' });
    const res2 = await c.waitFor((f) => f.method === 'approval/resolved' && params(f).approvalId === 'fa-1');
    expect(params(res2)).toMatchObject({
      decision: 'approvedForSession',
      amendment: { durability: 'session', rulePreview: 'write /home/me/src/proj/Cargo.toml' },
      stageEvidence: [],
    });
  });

  test('control: reviewing then escalate, host-side resolve, update, failDecide, raw and rawBytes', async () => {
    host = await FakeHost.start({ sessions: [{ sessionId: SESSION }] });
    const c = HostClient.spawn(host);

    // Frames opened before `initialized` are held back.
    await host.waitForIncarnation(1);
    await host.open({ approvalId: 'rv-1', sessionId: SESSION }, { via: 'reviewing-then-request' });
    expect(c.frames).toEqual([]);
    await c.handshake();
    const reviewing = await c.waitFor((f) => f.method === 'approval/reviewing');
    expect(params(reviewing).approvalId).toBe('rv-1');
    let lp = result(await c.request('approval/listPending', { sessionId: SESSION }));
    expect(lp.approvals).toEqual([]);
    await host.escalate('rv-1');
    const req = await c.waitFor((f) => f.method === 'approval/request');
    expect(params(req)).toMatchObject({ approvalId: 'rv-1', judgeEscalated: true });
    expect(c.frames.findIndex((f) => f.method === 'approval/requested')).toBeLessThan(c.frames.indexOf(req));

    await host.update({
      approvalId: 'rv-1',
      change: { kind: 'reviewCompleted' },
      patch: { reviewerReason: 'meh' },
    });
    const upd = await c.waitFor((f) => f.method === 'approval/updated');
    expect(params(upd)).toMatchObject({
      change: { kind: 'reviewCompleted' },
      currentRequirementId: { sourceIndex: 0 },
    });

    await host.failDecide({ code: -32001, message: 'busy' }, 2);
    const cmd = v7();
    const f1 = await c.decide({ approvalId: 'rv-1', sourceIndex: 0, choiceId: 'allow_once', commandId: cmd });
    expect(f1.error).toMatchObject({
      code: -32001,
      data: { kind: 'overloaded', retryable: true, approvalId: 'rv-1' },
    });
    const f2 = await c.decide({ approvalId: 'rv-1', sourceIndex: 0, choiceId: 'allow_once', commandId: cmd });
    expect(f2.error?.code).toBe(-32001);
    const ok = await c.decide({ approvalId: 'rv-1', sourceIndex: 0, choiceId: 'allow_once', commandId: cmd });
    expect(ok.result).toMatchObject({ terminal: true });

    await host.open({ approvalId: 'pol-1', sessionId: SESSION });
    await host.resolve({ approvalId: 'pol-1', decision: 'denied', resolvedBy: 'policy' });
    const res = await c.waitFor((f) => f.method === 'approval/resolved' && params(f).approvalId === 'pol-1');
    expect(params(res)).toMatchObject({ decision: 'denied', policyResult: 'deny', resolvedBy: 'policy' });
    expect(params(res).decidedByCommandId).toBeUndefined();
    lp = result(await c.request('approval/listPending', { sessionId: SESSION }));
    expect(lp.approvals).toEqual([]);

    await host.rawBytes(200_000);
    const big = await c.waitFor((f) => f.method === 'fake/padding');
    expect(JSON.stringify(big).length).toBe(200_000);
    await host.raw('{"jsonrpc":"2.0","method":"fake/raw"}');
    await c.waitFor((f) => f.method === 'fake/raw');
  });

  test('restart recovery newId: crash, respawn, resume re-issues a fresh approval', async () => {
    host = await FakeHost.start({ sessions: [{ sessionId: SESSION }] });
    const c1 = HostClient.spawn(host);
    await c1.handshake();
    await host.open(
      approvalFromTranscript('approval-round-trip', { approvalId: 'old-1', sessionId: SESSION }),
    );
    const cmdBefore = v7();
    await host.open({ approvalId: 'done-1', sessionId: SESSION });
    const doneAck = await c1.decide({
      approvalId: 'done-1',
      sourceIndex: 0,
      choiceId: 'allow_once',
      commandId: cmdBefore,
    });

    await host.crash(3);
    expect((await c1.exit).code).toBe(3);
    expect(host.connected).toBe(false);

    const c2 = HostClient.spawn(host);
    await host.waitForIncarnation(2);
    await c2.handshake();
    // As the bot resumes: no history wanted.
    const resumed = await c2.request('session/resume', {
      commandId: v7(),
      sessionId: SESSION,
      excludeItems: true,
    });
    const r = result(resumed);
    expect(r.history).toMatchObject({ mode: 'none', noneReason: 'excluded' });
    expect(r.pendingRequests).toEqual([
      { kind: 'approval', approvalId: 'old-1-r2', viewCursor: expect.any(String) },
    ]);

    const closed = await c2.waitFor((f) => f.method === 'approval/resolved');
    expect(params(closed)).toMatchObject({
      approvalId: 'old-1',
      decision: 'abort',
      policyResult: 'deny',
      resolvedBy: 'user',
      stageEvidence: [],
    });
    expect(params(closed).decidedByCommandId).toBeUndefined();
    const reissued = await c2.waitFor((f) => f.method === 'approval/request');
    expect(c2.frames.indexOf(reissued)).toBeGreaterThan(c2.frames.indexOf(resumed));
    expect(params(reissued)).toMatchObject({
      approvalId: 'old-1-r2',
      judgeEscalated: false,
      currentRequirementId: { approvalId: 'old-1-r2', sourceIndex: 0 },
      subject: { kind: 'fileAccess', path: '/home/me/src/proj/Cargo.toml' },
    });

    const lp = result(await c2.request('approval/listPending', { sessionId: SESSION }));
    expect((lp.approvals as Array<{ approvalId: string }>).map((a) => a.approvalId)).toEqual(['old-1-r2']);
    const old = await c2.decide({ approvalId: 'old-1', sourceIndex: 0, choiceId: 'allow_once' });
    expect(old.error).toMatchObject({ code: -32051, data: { resolution: { decision: 'abort' } } });
    // The ledger is durable: a replay across the restart returns the original ack.
    const replay = await c2.decide({
      approvalId: 'done-1',
      sourceIndex: 0,
      choiceId: 'allow_once',
      commandId: cmdBefore,
    });
    expect(replay.result).toEqual(doneAck.result);

    expect(host.frames.filter((f) => f.incarnation === 2).length).toBeGreaterThan(0);
    expect(host.state().approvals['old-1']?.supersededBy).toBe('old-1-r2');
  });

  test('restart recovery sameId, requireResume and an ephemeral host', async () => {
    host = await FakeHost.start({
      sessions: [{ sessionId: SESSION }],
      approvals: [{ params: { approvalId: 'keep-1', sessionId: SESSION }, openedByIncarnation: 0 }],
      recovery: 'sameId',
      requireResume: true,
    });
    const c = HostClient.spawn(host);
    await c.handshake();
    const cmd = v7();
    const notLoaded = await c.decide({
      approvalId: 'keep-1',
      sourceIndex: 0,
      choiceId: 'allow_once',
      commandId: cmd,
    });
    expect(notLoaded.error).toMatchObject({
      code: -32024,
      data: { kind: 'sessionNotLoaded', sessionId: SESSION },
    });
    await c.request('session/resume', { commandId: v7(), sessionId: SESSION });
    const reissued = await c.waitFor((f) => f.method === 'approval/request');
    expect(params(reissued).approvalId).toBe('keep-1');
    expect(c.frames.some((f) => f.method === 'approval/resolved')).toBe(false);
    const ok = await c.decide({
      approvalId: 'keep-1',
      sourceIndex: 0,
      choiceId: 'allow_once',
      commandId: cmd,
    });
    expect(ok.result).toMatchObject({ terminal: true });
    await host.close();

    host = await FakeHost.start({ sessions: [{ sessionId: SESSION }], durability: 'ephemeral' });
    const e = HostClient.spawn(host);
    const init = await e.handshake();
    expect(result(init).sessionDurability).toBe('ephemeral');
    const resume = await e.request('session/resume', { commandId: v7(), sessionId: SESSION });
    expect(resume.error).toMatchObject({ code: -32601, data: { kind: 'methodNotFound' } });
  });

  test('stageAdvance updatedOnly: the next stage is announced by approval/updated alone', async () => {
    host = await FakeHost.start({ sessions: [{ sessionId: SESSION }] });
    const c = HostClient.spawn(host);
    await c.handshake();
    await expect(host.stageAdvance('sometimes' as 'updatedOnly')).rejects.toThrow(/stageAdvance/);
    await host.stageAdvance('updatedOnly');
    await host.open(
      shellApproval({
        approvalId: 'sh-u',
        sessionId: SESSION,
        stages: [
          ['npm', 'test'],
          ['git', 'push'],
        ],
      }),
      { via: 'request' },
    );
    await c.waitFor((f) => f.method === 'approval/request');
    const since = c.frames.length;
    const first = await c.decide({ approvalId: 'sh-u', sourceIndex: 0, choiceId: 'allow_once' });
    expect(first.result).toMatchObject({ terminal: false });
    const upd = await c.waitFor((f) => f.method === 'approval/updated', since);
    expect(params(upd).currentRequirementId).toEqual({ approvalId: 'sh-u', sourceIndex: 1 });
    const last = await c.decide({ approvalId: 'sh-u', sourceIndex: 1, choiceId: 'allow_once' });
    expect(last.result).toMatchObject({ terminal: true });
    await c.waitFor((f) => f.method === 'approval/resolved', since);
    // Everything the host wrote for the two decides, in order: no approval/request among it.
    expect(c.frames.slice(since).map((f) => f.method ?? 'response')).toEqual([
      'response',
      'approval/updated',
      'response',
      'approval/updated',
      'approval/resolved',
    ]);
  });

  test('upstream semantics: resume history by its params, unknown cursors, session rows', async () => {
    host = await FakeHost.start({
      sessions: [
        { sessionId: SESSION, status: 'running' },
        { sessionId: OTHER, status: 'notLoaded', heldElsewhere: false },
      ],
      approvals: [
        { approvalId: 'r-1', sessionId: SESSION, turnId: 'turn-r' },
        { approvalId: 'r-2', sessionId: OTHER },
      ],
    });
    const c = HostClient.spawn(host);
    await c.handshake();

    // session/list rows: a running session names its turn; a notLoaded one carries no attention
    // (upstream: loaded sessions only); the fake's own bookkeeping stays off the wire.
    const rows = result(await c.request('session/list', {})).sessions as Array<Record<string, unknown>>;
    expect(rows[0]).toMatchObject({
      sessionId: SESSION,
      activeTurnId: 'turn-r',
      attention: ['approvalPending'],
    });
    expect(rows[1]).toMatchObject({ sessionId: OTHER, status: 'notLoaded' });
    expect(rows[1]).not.toHaveProperty('attention');
    expect(rows[1]).not.toHaveProperty('heldElsewhere');

    // history as upstream serves it (tdd SS2.5.2): excluded only when items were excluded...
    const excluded = result(
      await c.request('session/resume', { commandId: v7(), sessionId: SESSION, excludeItems: true }),
    );
    expect(excluded.history).toEqual({ mode: 'none', noneReason: 'excluded', items: null, snapshot: null });
    const served = result(await c.request('session/resume', { commandId: v7(), sessionId: SESSION }));
    expect(served.history).toEqual({ mode: 'inline', items: [], snapshot: null });
    // ...cursorSuffix with a cursor this host served...
    const suffix = result(
      await c.request('session/resume', {
        commandId: v7(),
        sessionId: SESSION,
        excludeItems: true,
        cursor: excluded.viewCursor,
      }),
    );
    expect(suffix.history).toEqual({ mode: 'none', noneReason: 'cursorSuffix', items: null, snapshot: null });
    // ...and notFound/missingAnchor for one it never served (transcript cursor-never-existed).
    const foreign = await c.request('session/resume', {
      commandId: v7(),
      sessionId: SESSION,
      cursor: `v:${OTHER}:9`,
    });
    expect(foreign.error).toMatchObject({
      code: -32011,
      data: { kind: 'notFound', reason: 'missingAnchor', sessionId: SESSION },
    });
  });
});
