import { describe, expect, it } from 'vitest';
import { decideWithRetry } from '../../../src/msp/decide.js';
import { HostGoneError, MspError } from '../../../src/msp/errors.js';
import type { DecideParams } from '../../../src/msp/protocol.js';

const params: DecideParams = {
  sessionId: 'sess-1',
  approvalId: 'appr-1',
  commandId: '0198f0ab-0000-7000-8000-000000000001',
  requirementId: { approvalId: 'appr-1', sourceIndex: 0 },
  choiceId: 'allow_once',
};

function mspError(code: number, kind?: string, extra: Record<string, unknown> = {}): MspError {
  return new MspError({
    code,
    message: `error ${code}`,
    data: kind === undefined ? extra : { kind, ...extra },
  });
}

/** A sender that answers from a script, one entry per call, and records what it was sent. */
function scripted(script: (Error | Record<string, unknown>)[]) {
  const sent: DecideParams[] = [];
  const send = async (decision: DecideParams): Promise<unknown> => {
    sent.push(structuredClone(decision));
    const next = script.shift();
    if (next === undefined) throw new Error('script exhausted');
    if (next instanceof Error) throw next;
    return next;
  };
  return { send, sent };
}

function recorder() {
  const sleeps: number[] = [];
  const resumed: string[] = [];
  return {
    sleeps,
    resumed,
    sleep: async (ms: number) => {
      sleeps.push(ms);
    },
    resume: async (sessionId: string) => {
      resumed.push(sessionId);
    },
  };
}

const ack = { commandId: params.commandId, status: 'accepted', approvalId: 'appr-1', terminal: true };

describe('decideWithRetry', () => {
  it('retries overloaded and backpressured with the same commandId and jittered growing backoff', async () => {
    const { send, sent } = scripted([
      mspError(-32001, 'overloaded'),
      mspError(-32031),
      mspError(-32001),
      ack,
    ]);
    const rec = recorder();
    const result = await decideWithRetry(send, params, {
      resume: rec.resume,
      sleep: rec.sleep,
      random: () => 0.5,
      backoff: { initialMs: 100, maxMs: 300 },
    });
    expect(result).toEqual(ack);
    expect(sent).toHaveLength(4);
    expect(sent.every((decision) => JSON.stringify(decision) === JSON.stringify(params))).toBe(true);
    // nominal 100, 200, 300 (capped); half fixed + half random (0.5) → 75, 150, 225
    expect(rec.sleeps).toEqual([75, 150, 225]);
    expect(rec.resumed).toEqual([]);
  });

  it('honours data.retryable on any kind', async () => {
    const { send, sent } = scripted([mspError(-32603, 'internal', { retryable: true }), ack]);
    const rec = recorder();
    await expect(decideWithRetry(send, params, { resume: rec.resume, sleep: rec.sleep })).resolves.toEqual(
      ack,
    );
    expect(sent).toHaveLength(2);
  });

  it('gives up after maxAttempts and throws the last error', async () => {
    const busy = mspError(-32001, 'overloaded');
    const { send, sent } = scripted([busy, busy, busy, ack]);
    const rec = recorder();
    const error = await decideWithRetry(send, params, {
      resume: rec.resume,
      sleep: rec.sleep,
      maxAttempts: 3,
    }).catch((caught: unknown) => caught);
    expect(error).toBe(busy);
    expect(sent).toHaveLength(3);
    expect(rec.sleeps).toHaveLength(2);
  });

  it('on sessionNotLoaded resumes the session, then replays once with the same commandId', async () => {
    const { send, sent } = scripted([mspError(-32024, 'sessionNotLoaded', { sessionId: 'sess-1' }), ack]);
    const rec = recorder();
    await expect(decideWithRetry(send, params, { resume: rec.resume, sleep: rec.sleep })).resolves.toEqual(
      ack,
    );
    expect(rec.resumed).toEqual(['sess-1']);
    expect(sent.map((decision) => decision.commandId)).toEqual([params.commandId, params.commandId]);
    expect(rec.sleeps).toEqual([]);
  });

  it('resumes only once: a second sessionNotLoaded is thrown', async () => {
    const notLoaded = mspError(-32024);
    const { send, sent } = scripted([mspError(-32024), notLoaded]);
    const rec = recorder();
    await expect(decideWithRetry(send, params, { resume: rec.resume, sleep: rec.sleep })).rejects.toBe(
      notLoaded,
    );
    expect(rec.resumed).toEqual(['sess-1']);
    expect(sent).toHaveLength(2);
  });

  it('throws what resume throws (e.g. sessionInUse)', async () => {
    const inUse = mspError(-32021, 'sessionInUse');
    const { send } = scripted([mspError(-32024, 'sessionNotLoaded')]);
    const rec = recorder();
    await expect(
      decideWithRetry(send, params, {
        sleep: rec.sleep,
        resume: async () => {
          throw inUse;
        },
      }),
    ).rejects.toBe(inUse);
  });

  it('throws approvalRequirementStale unchanged, without retrying', async () => {
    const stale = mspError(-32053, 'approvalRequirementStale', {
      approvalId: 'appr-1',
      currentRequirementId: { approvalId: 'appr-1', sourceIndex: 1 },
    });
    const { send, sent } = scripted([stale, ack]);
    const rec = recorder();
    await expect(decideWithRetry(send, params, { resume: rec.resume, sleep: rec.sleep })).rejects.toBe(stale);
    expect(sent).toHaveLength(1);
    expect(rec.sleeps).toEqual([]);
  });

  it('passes non-MSP errors (host gone) straight through', async () => {
    const gone = new HostGoneError();
    const { send, sent } = scripted([gone]);
    const rec = recorder();
    await expect(decideWithRetry(send, params, { resume: rec.resume, sleep: rec.sleep })).rejects.toBe(gone);
    expect(sent).toHaveLength(1);
  });

  it('keeps a success with an odd shape a success', async () => {
    const { send } = scripted([{ status: 'accepted' }]);
    const rec = recorder();
    await expect(decideWithRetry(send, params, { resume: rec.resume, sleep: rec.sleep })).resolves.toEqual({
      commandId: params.commandId,
      status: 'accepted',
    });
  });
});
