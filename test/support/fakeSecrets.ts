// Token-shaped values for the tests that check secrets are masked. None is written out here: a
// secret scanner cannot tell a sample from a leak, so each is assembled at run time from obvious
// filler, or taken from the environment to try another real shape (TEST_SLACK_BOT_TOKEN,
// TEST_SLACK_APP_TOKEN, TEST_GITHUB_TOKEN). They must still match the rules in secretRules.ts.

function fromEnv(name: string, fallback: string): string {
  const value = process.env[name]?.trim();
  return value ? value : fallback;
}

/** A Slack bot token's shape: xoxb-<digits>-<digits>-<24 letters>. */
export const FAKE_SLACK_BOT_TOKEN = fromEnv(
  'TEST_SLACK_BOT_TOKEN',
  ['xoxb', '0'.repeat(10), '0'.repeat(13), 'FAKE'.repeat(6)].join('-'),
);

/** A Slack app-level token's shape: xapp-1-A<id>-<digits>-<64 hex>. */
export const FAKE_SLACK_APP_TOKEN = fromEnv(
  'TEST_SLACK_APP_TOKEN',
  ['xapp', '1', `A${'0'.repeat(10)}`, '0'.repeat(13), 'fa4e'.repeat(16)].join('-'),
);

/** A classic GitHub token's shape: ghp_ and 39 letters and digits. */
export const FAKE_GITHUB_TOKEN = fromEnv(
  'TEST_GITHUB_TOKEN',
  ['ghp', `${'Fake0'.repeat(8)}`.slice(0, 39)].join('_'),
);

/** AWS's own documented example access key id (not a live key; every scanner knows it). */
export const AWS_EXAMPLE_KEY = 'AKIAIOSFODNN7EXAMPLE';
