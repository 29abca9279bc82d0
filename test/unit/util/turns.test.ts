import { describe, expect, it } from 'vitest';
import { Turns } from '../../../src/util/turns.js';

describe('Turns', () => {
  it('makes each turn of a key wait for the ones taken before it, whatever order they finish in', async () => {
    const turns = new Turns();
    const order: string[] = [];
    const first = turns.take('C1');
    const second = turns.take('C1');
    const third = turns.take('C1');
    const other = turns.take('C2');
    void third.ready.then(() => order.push('third'));
    void second.ready.then(() => order.push('second'));
    void other.ready.then(() => order.push('other'));
    await first.ready;
    order.push('first');
    // The third is done before the second even started: it still waits for the second.
    third.done();
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['other', 'first']);
    first.done();
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['other', 'first', 'second']);
    second.done();
    await new Promise((r) => setImmediate(r));
    expect(order).toEqual(['other', 'first', 'second', 'third']);
  });

  it('lets done() be called twice', async () => {
    const turns = new Turns();
    const a = turns.take('k');
    a.done();
    a.done();
    const b = turns.take('k');
    await expect(b.ready).resolves.toBeUndefined();
  });
});
