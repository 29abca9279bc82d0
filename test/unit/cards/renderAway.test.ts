import { expect, it } from 'vitest';
import { renderAwayRefusal } from '../../../src/cards/renderAway.js';

it('the usage answer shows its placeholder escaped: Slack would read a bare "<…>" as a link', () => {
  const message = renderAwayRefusal({ kind: 'usage' });
  const shown = JSON.stringify(message);
  expect(shown).toContain('&lt;3d | 8h | 2026-12-24 | 2026-12-24T09:00Z&gt;');
  expect(shown).not.toMatch(/[<>]/);
});
