import { expect, it } from 'vitest';
import { renderHostCapLine } from '../../../src/cards/renderHostCap.js';

it('names the host and the cap, and when the held-back requests come', () => {
  const line = renderHostCapLine('main', 2_000, 1_800);
  expect(line).toContain('Host `main` has 2,000 approvals open');
  expect(line).toContain('COUNTERSIGN_MAX_OPEN_APPROVALS_PER_HOST');
  expect(line).toContain('fewer than 1,800');
  expect(line).toContain('undecided');
});

it('escapes the host id like any text a card shows: no mention, no link', () => {
  const line = renderHostCapLine('<!channel> <https://evil|docs> @here', 3, 2);
  expect(line).not.toContain('<!channel>');
  expect(line).not.toContain('<https://');
  expect(line).not.toMatch(/@here/);
  expect(line).toContain('&lt;!channel&gt;');
});
