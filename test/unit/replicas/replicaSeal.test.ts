import { inspect } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ReplicaSeal } from '../../../src/replicas/replicaSeal.js';

const SECRET = 'the replicas share this secret, 32+ characters';

describe('ReplicaSeal', () => {
  const seal = new ReplicaSeal(SECRET);

  it('verifies the MAC of exactly the text sealed, for the purpose it was sealed for', () => {
    const mac = seal.mac('decision', '{"a":1}');
    expect(seal.verifies('decision', '{"a":1}', mac)).toBe(true);
    // Another replica with the same secret derives the same key.
    expect(new ReplicaSeal(SECRET).verifies('decision', '{"a":1}', mac)).toBe(true);
    expect(seal.verifies('decision', '{"a":2}', mac)).toBe(false);
    expect(seal.verifies('decision', '{"a":1} ', mac)).toBe(false);
    // A decision's MAC is not an outcome's, nor the other way round.
    expect(seal.verifies('outcome', '{"a":1}', mac)).toBe(false);
    expect(seal.verifies('decision', '{"a":1}', seal.mac('outcome', '{"a":1}'))).toBe(false);
  });

  it('refuses a missing, malformed, shortened or foreign MAC', () => {
    const mac = seal.mac('decision', 'x');
    expect(seal.verifies('decision', 'x', undefined)).toBe(false);
    expect(seal.verifies('decision', 'x', '')).toBe(false);
    expect(seal.verifies('decision', 'x', 'not base64 at all!')).toBe(false);
    expect(seal.verifies('decision', 'x', mac.slice(0, -2))).toBe(false);
    expect(seal.verifies('decision', 'x', new ReplicaSeal(`${SECRET}!`).mac('decision', 'x'))).toBe(false);
  });

  it('never shows its keys or its secret', () => {
    const shown = `${JSON.stringify({ seal })} ${inspect(seal, { showHidden: true, depth: 5 })} ${String(seal)}`;
    expect(shown).not.toContain(SECRET);
    // The keys are Buffers held in a private field: none is shown.
    expect(shown).not.toMatch(/Buffer|Map/);
    expect(JSON.stringify({ seal })).toBe('{"seal":"[ReplicaSeal]"}');
  });
});
