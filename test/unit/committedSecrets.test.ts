// No committed file holds a token-shaped string: a secret scanner cannot tell a sample from a
// leak, and a real token pasted into a test or a doc would be published with the repository.
// Tests that need one take it from test/support/fakeSecrets.ts, which assembles each at run time
// (or reads TEST_SLACK_BOT_TOKEN and the like from the environment). The shapes are the bot's own
// masking rules for vendor tokens (src/secrets/secretRules.ts), so a sample the masker would
// catch in agent text is caught here too.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { SECRET_RULES } from '../../src/secrets/secretRules.js';
import { AWS_EXAMPLE_KEY } from '../support/fakeSecrets.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** The rules for tokens a vendor issues: what scanners look for. Generic `key=value` rules are not. */
const TOKEN_RULES = SECRET_RULES.filter((rule) =>
  [
    'slack-token',
    'slack-webhook',
    'github-token',
    'gitlab-token',
    'npm-token',
    'google-api-key',
    'stripe-key',
    'aws-access-key',
  ].includes(rule.label),
);

/** Documented examples every scanner knows, which no vendor ever issued. */
const KNOWN_EXAMPLES = new Set([AWS_EXAMPLE_KEY]);

/** The committed files, or undefined outside a git checkout (an unpacked archive): nothing to read. */
function committedFiles(): string[] | undefined {
  try {
    const listed = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8', stdio: 'pipe' });
    return listed.split('\0').filter(Boolean);
  } catch {
    return undefined;
  }
}

const COMMITTED = committedFiles();

function tokensIn(text: string): Array<{ label: string; token: string }> {
  return TOKEN_RULES.flatMap((rule) =>
    [...text.matchAll(new RegExp(rule.source, 'g'))]
      .map((match) => ({ label: rule.label, token: match[0] }))
      .filter(({ token }) => !KNOWN_EXAMPLES.has(token)),
  );
}

describe('committed files', () => {
  it.skipIf(COMMITTED === undefined)('hold no token-shaped string (skipped outside a git checkout)', () => {
    const found = (COMMITTED ?? []).flatMap((file) => {
      let text: string;
      try {
        text = readFileSync(join(ROOT, file), 'utf8');
      } catch {
        return []; // listed but not in this checkout (deleted, not yet committed)
      }
      return tokensIn(text).map(({ label, token }) => `${file}: ${label} ${token.slice(0, 12)}…`);
    });
    expect(found).toEqual([]);
  });

  it('would catch one: a Slack bot token and a GitHub token of the real shape', () => {
    const slack = ['xoxb', '1'.repeat(12), '2'.repeat(12), 'a'.repeat(24)].join('-');
    const github = `ghp_${'A1'.repeat(18)}abc`;
    expect(tokensIn(`const token = '${slack}'; // ${github}`).map((t) => t.label)).toEqual([
      'slack-token',
      'github-token',
    ]);
    expect(tokensIn(`aws: ${AWS_EXAMPLE_KEY}`)).toEqual([]);
  });
});
