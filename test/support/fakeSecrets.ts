// Token-shaped values for the tests, both those that check secrets are masked and those that only
// need a token a client or the configuration takes: no test writes one out. None is written out
// here either: a secret scanner cannot tell a sample from a leak, so each is assembled at run time
// from obvious filler, or taken from the environment to try another real shape
// (TEST_SLACK_BOT_TOKEN, TEST_SLACK_APP_TOKEN, TEST_GITHUB_TOKEN). They must still match the rules
// in secretRules.ts.

function fromEnv(name: string, fallback: string): string {
  const value = process.env[name]?.trim();
  return value ? value : fallback;
}

/** A Slack bot token's shape: xoxb-<digits>-<digits>-<24 letters>. */
export const FAKE_SLACK_BOT_TOKEN = fromEnv(
  'TEST_SLACK_BOT_TOKEN',
  ['xoxb', '0'.repeat(10), '0'.repeat(13), 'FAKE'.repeat(6)].join('-'),
);

/** Another bot token of the same shape: one Slack refuses, where a test needs a wrong one. */
export const OTHER_FAKE_SLACK_BOT_TOKEN = ['xoxb', '9'.repeat(10), '9'.repeat(13), 'BAD'.repeat(8)].join('-');

/** A Slack app-level token's shape: xapp-1-A<id>-<digits>-<64 hex>. */
export const FAKE_SLACK_APP_TOKEN = fromEnv(
  'TEST_SLACK_APP_TOKEN',
  ['xapp', '1', `A${'0'.repeat(10)}`, '0'.repeat(13), 'fa4e'.repeat(16)].join('-'),
);

/** Another app-level token of the same shape: one Slack refuses, where a test needs a wrong one. */
export const OTHER_FAKE_SLACK_APP_TOKEN = [
  'xapp',
  '1',
  `A${'9'.repeat(10)}`,
  '9'.repeat(13),
  'bad0'.repeat(16),
].join('-');

/** A classic GitHub token's shape: ghp_ and 39 letters and digits. */
export const FAKE_GITHUB_TOKEN = fromEnv(
  'TEST_GITHUB_TOKEN',
  ['ghp', `${'Fake0'.repeat(8)}`.slice(0, 39)].join('_'),
);

/** AWS's own documented example access key id (not a live key; every scanner knows it). */
export const AWS_EXAMPLE_KEY = 'AKIAIOSFODNN7EXAMPLE';

/** A GitLab personal access token's shape: glpat- and 20 letters, digits, `_` or `-`. */
export const FAKE_GITLAB_TOKEN = ['glpat', 'Fake0'.repeat(4)].join('-');

/** An npm access token's shape: npm_ and 36 letters and digits. */
export const FAKE_NPM_TOKEN = ['npm', 'Fake0'.repeat(8).slice(0, 36)].join('_');

/** A Google API key's shape: AIza and 35 letters, digits, `_` or `-`. */
export const FAKE_GOOGLE_API_KEY = ['AI', 'za', 'Fake0'.repeat(7)].join('');

/** Stripe secret and restricted keys' shapes: sk_live_ / rk_live_ / sk_test_ and 24 letters and digits. */
export const FAKE_STRIPE_LIVE_KEY = ['sk', 'live', 'Fake0'.repeat(5).slice(0, 24)].join('_');
export const FAKE_STRIPE_RESTRICTED_KEY = ['rk', 'live', 'Fake0'.repeat(5).slice(0, 24)].join('_');
export const FAKE_STRIPE_TEST_KEY = ['sk', 'test', 'Fake0'.repeat(5).slice(0, 24)].join('_');

/** A Slack incoming webhook URL's shape: services/T<team>/B<hook>/<24 letters>. */
export const FAKE_SLACK_WEBHOOK = [
  'https://hooks.slack.com/services',
  `T${'0'.repeat(8)}`,
  `B${'0'.repeat(8)}`,
  'FAKE'.repeat(6),
].join('/');

/** A Slack response_url's shape: actions/T<team>/<digits>/<24 letters>. */
export const FAKE_SLACK_RESPONSE_URL = [
  'https://hooks.slack.com/actions',
  `T${'0'.repeat(8)}`,
  '0'.repeat(13),
  'FAKE'.repeat(6),
].join('/');
