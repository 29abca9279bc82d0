import { expect, it } from 'vitest';
import { renderTakenIdLine } from '../../../src/cards/renderTakenId.js';

it('names the host and the approval, and says to decide it at the host', () => {
  const line = renderTakenIdLine('main', 'xh-0002');
  expect(line).toContain('Host `main` asked approval `xh-0002`');
  expect(line).toContain("already belongs to another host's approval");
  expect(line).toContain('decide it at the host');
});

it('escapes both ids like any text a card shows: no mention, no link', () => {
  const line = renderTakenIdLine('<!channel>', '<https://evil|docs> @here');
  expect(line).not.toContain('<!channel>');
  expect(line).not.toContain('<https://');
  expect(line).not.toMatch(/@here/);
  expect(line).toContain('&lt;!channel&gt;');
});
