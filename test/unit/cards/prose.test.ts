import { describe, expect, it } from 'vitest';
import { inertProse, truncateProse } from '../../../src/cards/prose.js';

describe('inertProse', () => {
  it('puts look-alikes where Slack would format: a word edge, a backtick, an emoji, a line break', () => {
    expect(inertProse('*bold* _it_ ~gone~ `code` :tada:\nnext')).toBe(
      '∗bold∗ ˍitˍ ∼gone∼ ˋcodeˋ ∶tada: next',
    );
  });

  it('leaves what Slack reads as text as typed: inside words, a lone colon, JSON', () => {
    for (const text of [
      'write_file',
      'a*b',
      'x~y',
      'Fix: the build',
      'https://example.com',
      '{"x":10,"y":20}',
    ]) {
      expect(inertProse(text)).toBe(text);
    }
  });

  it('keeps a quote from opening the text, and a > elsewhere as typed', () => {
    expect(inertProse('  > quoted')).toBe('  › quoted');
    expect(inertProse('a > b')).toBe('a > b');
  });

  it('counts the source characters when cut, and still escapes', () => {
    const cut = truncateProse(`<!here> *${'x'.repeat(200)}*`, 60);
    expect(cut).toMatch(/^&lt;!here&gt; ∗x+… \d+ more characters$/);
    expect(cut.length).toBeLessThanOrEqual(60);
  });
});
