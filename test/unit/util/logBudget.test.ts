import { afterEach, describe, expect, it, vi } from 'vitest';
import { LogBudget } from '../../../src/util/logBudget.js';
import { captureLogger } from '../../support/logCapture.js';

afterEach(() => {
  vi.useRealTimers();
});

describe('LogBudget', () => {
  function budget() {
    vi.useFakeTimers();
    const { logger, lines } = captureLogger('debug');
    const warnings = new LogBudget(logger, {
      perInterval: 3,
      intervalMs: 1_000,
      summary: 'more skipped',
      now: () => Date.now(),
    });
    return { warnings, lines };
  }

  it('writes the first lines of an interval, then one line counting the rest when it ends', async () => {
    const { warnings, lines } = budget();
    for (let i = 0; i < 50; i++) warnings.warn({ i }, i % 2 === 0 ? 'even' : 'odd');
    expect(lines.map((line) => line.msg)).toEqual(['even', 'odd', 'even']);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(lines.slice(3)).toEqual([
      expect.objectContaining({ msg: 'more skipped', skipped: 47, byKind: { odd: 24, even: 23 } }),
    ]);
  });

  it('starts a new interval after one ends, and writes nothing more once the flood stops', async () => {
    const { warnings, lines } = budget();
    for (let i = 0; i < 10; i++) warnings.warn({}, 'bad');
    await vi.advanceTimersByTimeAsync(1_000);
    for (let i = 0; i < 10; i++) warnings.warn({}, 'bad');
    await vi.advanceTimersByTimeAsync(60_000);
    expect(lines.map((line) => [line.msg, line.skipped])).toEqual([
      ['bad', undefined],
      ['bad', undefined],
      ['bad', undefined],
      ['more skipped', 7],
      ['bad', undefined],
      ['bad', undefined],
      ['bad', undefined],
      ['more skipped', 7],
    ]);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('counts at flush() what it skipped so far, and writes no count when it skipped nothing', () => {
    const { warnings, lines } = budget();
    warnings.warn({}, 'bad');
    warnings.flush();
    expect(lines).toHaveLength(1);
    for (let i = 0; i < 5; i++) warnings.warn({}, 'bad');
    warnings.flush();
    expect(lines.at(-1)).toMatchObject({ msg: 'more skipped', skipped: 3 });
    expect(vi.getTimerCount()).toBe(0);
  });

  it('writes its lines and its count at the level it was given', () => {
    const { logger, lines } = captureLogger('debug');
    const notes = new LogBudget(logger, { perInterval: 1, level: 'info', summary: 'more' });
    notes.write({}, 'a');
    notes.write({}, 'b');
    notes.flush();
    expect(lines.map((line) => [line.msg, line.level])).toEqual([
      ['a', 30],
      ['more', 30],
    ]);
  });
});
