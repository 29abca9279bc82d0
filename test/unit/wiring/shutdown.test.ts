import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { createShutdown, type ShutdownSteps } from '../../../src/wiring/shutdown.js';

type Json = Record<string, unknown>;
const never = () => new Promise<void>(() => undefined);

/** Steps that record when each ran; `overrides` replace some. The budget is scaled down 10×. */
function steps(overrides: Partial<ShutdownSteps> = {}) {
  const started = Date.now();
  const calls: Array<{ step: string; atMs: number; withinMs?: number }> = [];
  const note = (step: string, withinMs?: number): void => {
    calls.push({ step, atMs: Date.now() - started, withinMs });
  };
  const logs: Json[] = [];
  let exited: (code: number) => void = () => undefined;
  const exit = new Promise<{ code: number; atMs: number }>((resolve) => {
    exited = (code) => resolve({ code, atMs: Date.now() - started });
  });
  const all: ShutdownSteps = {
    logger: pino({ level: 'debug' }, { write: (line: string) => logs.push(JSON.parse(line) as Json) }),
    stopSlack: async () => note('stopSlack'),
    drainDecisions: async () => note('drainDecisions'),
    relayIdle: async () => note('relayIdle'),
    stopRelay: () => note('stopRelay'),
    stopHost: async (withinMs) => note('stopHost', withinMs),
    quitRedis: async () => note('quitRedis'),
    disconnectRedis: () => note('disconnectRedis'),
    exit: (code) => exited(code),
    budget: { totalMs: 800, hostMs: 300, lastWordsMs: 100 },
    ...overrides,
  };
  return { run: createShutdown(all), calls, logs, exit };
}

describe('createShutdown', () => {
  it('runs the steps in order and exits with the code it was given', async () => {
    const { run, calls, exit } = steps();
    await run(0, 'SIGTERM');
    expect((await exit).code).toBe(0);
    expect(calls.map((c) => c.step)).toEqual([
      'stopSlack',
      'drainDecisions',
      'relayIdle',
      'stopRelay',
      'stopHost',
      'relayIdle',
      'quitRedis',
    ]);
    // With nothing to wait for, the host gets everything up to its deadline.
    expect(calls.find((c) => c.step === 'stopHost')?.withinMs).toBeGreaterThan(600);
  });

  it('keeps the host its share and exits within the budget when nothing else ever finishes', async () => {
    let stopHostWithin = 0;
    const { run, calls, logs, exit } = steps({
      stopSlack: never,
      drainDecisions: never,
      relayIdle: never,
      stopHost: (withinMs) => {
        stopHostWithin = withinMs;
        return never();
      },
      quitRedis: never,
    });
    void run(0, 'SIGTERM');
    const { code, atMs } = await exit;
    expect(code).toBe(0);
    // Timers on a busy machine fire late, but the lateness does not add up step by step.
    expect(atMs).toBeLessThan(800 + 300);
    // The drain ended 400 ms in (800 - 300 - 100): the host had its 300 ms, less any lateness.
    expect(stopHostWithin).toBeGreaterThanOrEqual(200);
    expect(stopHostWithin).toBeLessThanOrEqual(300);
    expect(calls.map((c) => c.step)).toEqual(['stopRelay', 'disconnectRedis']);
    expect(logs.map((l) => l.msg)).toEqual(
      expect.arrayContaining([
        'decisions still in flight; leaving them to replay',
        'host still stopping; going on',
      ]),
    );
  });

  it('a step that fails is logged, the rest still run, and the exit code says so', async () => {
    const { run, calls, logs, exit } = steps({
      stopSlack: async () => {
        throw new Error('receiver was not started');
      },
    });
    await run(0, 'SIGTERM');
    expect((await exit).code).toBe(1);
    expect(calls.map((c) => c.step)).toContain('stopHost');
    expect(logs.find((l) => l.msg === 'error while shutting down')).toMatchObject({ step: 'slack' });
  });

  it('runs once', async () => {
    const { run, calls } = steps();
    await Promise.all([run(0, 'SIGTERM'), run(1, 'SIGINT')]);
    expect(calls.filter((c) => c.step === 'stopHost')).toHaveLength(1);
  });
});
