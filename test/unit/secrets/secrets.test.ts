import { describe, expect, it } from 'vitest';
import { maskCommandLine } from '../../../src/secrets/maskCommandLine.js';
import { maskPrefix } from '../../../src/secrets/maskPrefix.js';
import { maskSecrets } from '../../../src/secrets/maskSecrets.js';
import {
  AWS_EXAMPLE_KEY,
  FAKE_GITHUB_TOKEN,
  FAKE_GITLAB_TOKEN,
  FAKE_GOOGLE_API_KEY,
  FAKE_NPM_TOKEN,
  FAKE_SLACK_APP_TOKEN,
  FAKE_SLACK_BOT_TOKEN,
  FAKE_SLACK_RESPONSE_URL,
  FAKE_SLACK_WEBHOOK,
  FAKE_STRIPE_LIVE_KEY,
  FAKE_STRIPE_RESTRICTED_KEY,
  FAKE_STRIPE_TEST_KEY,
} from '../../support/fakeSecrets.js';

// Samples of the shapes vendors document (AWS's own example key, jwt.io's example token) and
// tokens of the right length and alphabet, none of them live; the Slack and GitHub ones are
// assembled at run time (test/support/fakeSecrets.ts) so that no token-shaped string is committed.
const SLACK_BOT = FAKE_SLACK_BOT_TOKEN;
const SLACK_APP = FAKE_SLACK_APP_TOKEN;
const GITHUB_CLASSIC = FAKE_GITHUB_TOKEN;
const GITHUB_FINE = `github_pat_11ABCDEFG0123456789_${'aB3'.repeat(20)}xy`;
const AWS_KEY = AWS_EXAMPLE_KEY;
const OPENAI_KEY = `sk-proj-${'Xy7_'.repeat(12)}T3BlbkFJ${'Ab9-'.repeat(12)}`;
const ANTHROPIC_KEY = `sk-ant-api03-${'qW3eR5tY7u'.repeat(9)}abcAA`;
const VAULT_SERVICE = `hvs.CAESI${'Qm9uZ1R4'.repeat(10)}Gh4KHGh2cy5`;
const VAULT_BATCH = `hvb.AAAAAQ${'Jx7kLm2Pq9'.repeat(12)}`;
const VAULT_RECOVERY = `hvr.${'Z3k9Wq'.repeat(5)}`;
// Before Vault 1.10 a service token was `s.` and 24 letters and digits.
const VAULT_LEGACY = `s.${'AbCdEfGhIjKl'.repeat(2)}`;
const JWT =
  'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c';
const PRIVATE_KEY = [
  '-----BEGIN OPENSSH PRIVATE KEY-----',
  'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW',
  'QyNTUxOQAAACDq0DpGDfyFm2nGLEVBVuqjI4pYF+R5H0V1m4bVFZ6y8gAAAJgp1u2fKdbt',
  '-----END OPENSSH PRIVATE KEY-----',
].join('\n');

/** Every text example of this file: masking any of them twice masks it once. */
const EXAMPLES: string[] = [];

function masks(text: string): { text: string; count: number } {
  return maskSecrets(text);
}

describe('maskSecrets: every shape the issue lists', () => {
  const cases: Array<[string, string, string, string]> = [
    // [what, input, secret that must go, label shown]
    ['Slack bot token', `export SLACK_BOT=${SLACK_BOT} && run`, SLACK_BOT, 'slack-token'],
    ['Slack app token', `connect with ${SLACK_APP}`, SLACK_APP, 'slack-token'],
    [
      'GitHub classic token',
      `git push https://${GITHUB_CLASSIC}@github.com/o/r`,
      GITHUB_CLASSIC,
      'github-token',
    ],
    [
      'GitHub fine-grained token',
      `gh auth login --with-token <<< ${GITHUB_FINE}`,
      GITHUB_FINE,
      'github-token',
    ],
    ['AWS access key id', `aws configure set aws_access_key_id ${AWS_KEY}`, AWS_KEY, 'aws-access-key'],
    ['OpenAI project key', `OPENAI=${OPENAI_KEY}`, OPENAI_KEY, 'api-key'],
    ['Anthropic key', `{"x-api":"${ANTHROPIC_KEY}"}`, ANTHROPIC_KEY, 'api-key'],
    ['JWT', `cookie session=${JWT}; path=/`, JWT, 'jwt'],
    // Vault's service, batch and recovery tokens, wherever they appear (`vault token lookup`,
    // an env var, a header): not only after `vault login`.
    ['Vault service token', `vault token lookup ${VAULT_SERVICE}`, VAULT_SERVICE, 'vault-token'],
    ['Vault batch token', `VAULT_TOKEN=${VAULT_BATCH} terraform apply`, VAULT_BATCH, 'vault-token'],
    ['Vault recovery token', `curl -H "X-Vault-Token: ${VAULT_RECOVERY}" v`, VAULT_RECOVERY, 'vault-token'],
    [
      'legacy Vault service token in a header',
      `curl -H "X-Vault-Token: ${VAULT_LEGACY}" https://v:8200/v1/sys/health`,
      VAULT_LEGACY,
      'vault-token',
    ],
    [
      'legacy Vault service token alone',
      `echo ${VAULT_LEGACY} | vault token lookup -`,
      VAULT_LEGACY,
      'vault-token',
    ],
    [
      'legacy Vault service token in JSON',
      `{"auth":{"accessor":"x","lease":"${VAULT_LEGACY}"}}`,
      VAULT_LEGACY,
      'vault-token',
    ],
    [
      'legacy Vault service token ending a sentence',
      `The token is ${VAULT_LEGACY}.`,
      VAULT_LEGACY,
      'vault-token',
    ],
    [
      'legacy Vault service token right after a JSON-escaped newline',
      JSON.stringify({ content: `vault:\n${VAULT_LEGACY}` }),
      VAULT_LEGACY,
      'vault-token',
    ],
    [
      'private key block',
      `cat > id_ed25519 <<EOF\n${PRIVATE_KEY}\nEOF`,
      'b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAE',
      'private-key',
    ],
    [
      'Authorization: Bearer header',
      `curl -H "Authorization: Bearer 8f2a9c0d41e7b6" api`,
      '8f2a9c0d41e7b6',
      'authorization',
    ],
    [
      'Authorization header in JSON',
      '{"headers":{"authorization":"Basic dXNlcjpodW50ZXIy"}}',
      'dXNlcjpodW50ZXIy',
      'authorization',
    ],
    ['password=', 'mysql --user=app --password=hunter2 shop', 'hunter2', 'secret-value'],
    [
      'token= in a query string',
      'GET /export?access_token=c0ffee1234&format=csv',
      'c0ffee1234',
      'secret-value',
    ],
    ['secret: in YAML', 'client_secret: Zx9Qw8Er7Ty6\nscope: read', 'Zx9Qw8Er7Ty6', 'secret-value'],
    // Vault AppRole's secret id: the `_id` after `secret` hid it from the key rule.
    [
      'secret_id= of a Vault AppRole login',
      'vault write auth/approle/login role_id=db-role secret_id=6a174c20-f6de-a53c-74d2-6018fcceff64',
      '6a174c20-f6de-a53c-74d2-6018fcceff64',
      'secret-value',
    ],
    ['SECRET_ID assignment', 'VAULT_SECRET_ID=Qz7Wx1Ab2Cd3 vault agent', 'Qz7Wx1Ab2Cd3', 'secret-value'],
    [
      'quoted value with spaces',
      'DB_PASSWORD="correct horse battery staple" ./migrate',
      'correct horse',
      'secret-value',
    ],
    ['JSON key and value', '{"api_key": "a1b2c3d4e5", "user": "me"}', 'a1b2c3d4e5', 'secret-value'],
    ['password in a URL', 'postgres://app:s3cretpw@db.internal:5432/shop', 's3cretpw', 'url-password'],
    [
      'password in a URL without a user',
      'redis-cli -u redis://:s3cretpw@cache:6379 ping',
      's3cretpw',
      'url-password',
    ],
    // Issue 26, item 9: shapes that were missed.
    ['GitLab token', `glab auth login --stdin <<< ${FAKE_GITLAB_TOKEN}`, FAKE_GITLAB_TOKEN, 'gitlab-token'],
    [
      'npm token',
      `echo //registry.npmjs.org/:_auth ${FAKE_NPM_TOKEN} >> .npmrc`,
      FAKE_NPM_TOKEN,
      'npm-token',
    ],
    [
      'Google API key',
      `curl "https://maps.googleapis.com/x?key2=${FAKE_GOOGLE_API_KEY}"`,
      FAKE_GOOGLE_API_KEY,
      'google-api-key',
    ],
    [
      'Stripe live key',
      `curl https://api.stripe.com/v1/charges -u ${FAKE_STRIPE_LIVE_KEY}:`,
      FAKE_STRIPE_LIVE_KEY,
      'stripe-key',
    ],
    [
      'Stripe restricted key',
      `use ${FAKE_STRIPE_RESTRICTED_KEY} here`,
      FAKE_STRIPE_RESTRICTED_KEY,
      'stripe-key',
    ],
    ['Stripe test key', `use ${FAKE_STRIPE_TEST_KEY} here`, FAKE_STRIPE_TEST_KEY, 'stripe-key'],
    [
      'Slack webhook URL',
      `curl -X POST -d '{"text":"hi"}' ${FAKE_SLACK_WEBHOOK}`,
      FAKE_SLACK_WEBHOOK.slice('https://'.length),
      'slack-webhook',
    ],
    [
      'Slack webhook URL with JSON-escaped slashes',
      JSON.stringify({ url: FAKE_SLACK_WEBHOOK }).replaceAll('/', '\\/'),
      FAKE_SLACK_WEBHOOK.split('/').at(-1)!,
      'slack-webhook',
    ],
    [
      'Slack response_url',
      `curl -X POST -d '{"text":"done"}' ${FAKE_SLACK_RESPONSE_URL}`,
      FAKE_SLACK_RESPONSE_URL.slice('https://'.length),
      'slack-webhook',
    ],
    [
      'Slack response_url of a slash command with JSON-escaped slashes',
      JSON.stringify({ response_url: FAKE_SLACK_RESPONSE_URL.replace('/actions/', '/commands/') }).replaceAll(
        '/',
        '\\/',
      ),
      FAKE_SLACK_RESPONSE_URL.split('/').at(-1)!,
      'slack-webhook',
    ],
    [
      'token right after a JSON-escaped newline',
      JSON.stringify({ content: `first line\n${GITHUB_CLASSIC}` }),
      GITHUB_CLASSIC,
      'github-token',
    ],
  ];

  EXAMPLES.push(...cases.map(([, input]) => input));
  for (const [what, input, secret, label] of cases) {
    it(`masks a ${what}`, () => {
      const masked = masks(input);
      expect(masked.text).not.toContain(secret);
      expect(masked.text).toContain(`[masked ${label}]`);
      expect(masked.count).toBe(1);
    });
  }

  it('keeps the key, header name and scheme readable', () => {
    expect(masks('mysql --password=hunter2 shop').text).toBe('mysql --password=[masked secret-value] shop');
    expect(masks('curl -H "Authorization: Bearer 8f2a9c0d41e7b6" api').text).toBe(
      'curl -H "Authorization: Bearer [masked authorization]" api',
    );
  });

  it('names a value by its shape when it has one', () => {
    expect(masks(`SLACK_TOKEN=${SLACK_BOT}`).text).toBe('SLACK_TOKEN=[masked slack-token]');
    expect(masks(`Authorization: Bearer ${JWT}`).text).toBe('Authorization: Bearer [masked jwt]');
  });

  it('masks secrets inside rawArgs, where quotes and newlines are JSON-escaped', () => {
    const rawArgs = JSON.stringify({
      command: `mysql --password="two words" && echo '${PRIVATE_KEY}'`,
      env: { GITHUB_TOKEN: GITHUB_CLASSIC },
    });
    const masked = masks(rawArgs);
    expect(masked.text).not.toContain('two words');
    expect(masked.text).not.toContain('b3BlbnNzaC1rZXkt');
    expect(masked.text).not.toContain(GITHUB_CLASSIC);
    expect(masked.count).toBe(3);
    // Still JSON: markers hold no quote or backslash.
    expect(() => JSON.parse(masked.text)).not.toThrow();
  });

  it('masks a quoted value whole, escaped quotes included, and JSON still parses', () => {
    const json = JSON.stringify({ password: 'ab"cd', command: 'mysql --password="ef\\"gh" x' });
    const masked = masks(json);
    expect(masked.count).toBe(2);
    expect(JSON.parse(masked.text)).toEqual({
      password: '[masked secret-value]',
      command: 'mysql --password="[masked secret-value]" x',
    });
    expect(masks('PASSWORD="ab\\"cd" ./run').text).toBe('PASSWORD="[masked secret-value]" ./run');
  });

  it('masks a private key block cut off before its END line, to the end of the text', () => {
    const half = PRIVATE_KEY.slice(0, 120);
    expect(masks(`key: ${half}`).text).toBe('key: [masked private-key]');
  });

  it('counts every secret in one string', () => {
    const masked = masks(`${SLACK_BOT} ${GITHUB_CLASSIC} ${AWS_KEY} Authorization: Bearer abcdef123456`);
    expect(masked.count).toBe(4);
  });

  it('masks every example of this file twice as once', () => {
    expect(EXAMPLES.length).toBeGreaterThan(40);
    for (const example of EXAMPLES) {
      const once = masks(example).text;
      expect(masks(once), example).toEqual({ text: once, count: 0 });
    }
  });

  it('is idempotent: masked text is not masked again', () => {
    const once = masks(
      `token=${SLACK_BOT} Authorization: Bearer ${JWT} "password": "a b" https://u:pw@h ${AWS_KEY}`,
    );
    expect(once.count).toBe(5);
    expect(masks(once.text)).toEqual({ text: once.text, count: 0 });
  });
});

describe('maskSecrets: what is not a secret', () => {
  const negatives: Array<[string, string]> = [
    ['a git sha', 'git checkout 9f2c1d3e4b5a69788796a5b4c3d2e1f0a9b8c7d6'],
    ['a UUID', 'approval 0198f0aa-1111-7000-8000-0000000000aa'],
    ['sk- inside a word', 'npm run task-runner-for-the-whole-week && echo risk-free'],
    ['a kebab-case name after sk-', 'pip install sk-learn-preprocessing-pipeline'],
    ['password without a value', 'password='],
    ['an empty JSON password', '{"password": ""}'],
    ['a null JSON token', '{"token": null}'],
    ['a password file flag', 'psql --password-file /run/secrets/db'],
    ['the word password in prose', 'Enter your password to continue'],
    [
      'a variable reference',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell variable, as an agent would write it
      'curl -u admin:$PASSWORD -H "Authorization: Bearer $TOKEN" https://x/?token=${API_TOKEN}',
    ],
    ['documentation placeholders', 'SLACK_BOT_TOKEN=xoxb-… API_KEY=<your-key> password=*** token=sk-...'],
    ['bearer in prose', 'Bearer tokens are sent in a header'],
    ['max_tokens', 'openai complete --max_tokens=100 --tokenizer=bpe'],
    ['a short AKIA word', 'AKIA is a prefix'],
    ['a plain URL', 'https://github.com/o/r/pull/12'],
    ['a URL with a port and an @ in its path', 'https://host:8080/users/@me http://[::1]:80/x'],
    ['s. and a short word', 'cp s.foo s.AbCdEfGh1 ./s.tar && echo as.AbCdEfGhIjKlAbCdEfGhIjKl'],
    [
      's. and one letter or digit short or too many',
      'echo s.AbCdEfGhIjKlAbCdEfGhIjK s.AbCdEfGhIjKlAbCdEfGhIjKlM s.AbCdEfGhIjKlAbCdEfGhIjKl_x',
    ],
    [
      'a file name that starts like a legacy Vault token',
      'cat s.AbCdEfGhIjKlAbCdEfGhIjKl.txt logs/s.AbCdEfGhIjKlAbCdEfGhIjKl-1',
    ],
    ['a dotted name that holds one', 'import a.s.AbCdEfGhIjKlAbCdEfGhIjKl'],
    ['a method call after s.', 'if err := s.dispatchPendingApprovals(); err != nil {'],
    ['24 letters of one case after s.', 'mv s.abcdefghijklmnopqrstuvwx s.ABCDEFGHIJKLMNOPQRSTUVWX'],
  ];
  EXAMPLES.push(...negatives.map(([, text]) => text));
  for (const [what, text] of negatives) {
    it(`leaves ${what} alone`, () => {
      expect(masks(text)).toEqual({ text, count: 0 });
    });
  }
});

describe('maskSecrets: cost', () => {
  // A sanity bound, not a benchmark: a backtracking rule would take seconds or hang on these.
  const shapes = [
    'a'.repeat(64 * 1024),
    'eyJ'.repeat(22_000),
    'sk-'.repeat(22_000),
    'password='.repeat(7_300),
    'Authorization: '.repeat(4_400),
    '-----BEGIN RSA PRIVATE KEY-----'.repeat(2_100),
    `${'://a'.repeat(10_000)}${'b'.repeat(24_000)}`,
    JSON.stringify({ command: `${'npm test && '.repeat(5_000)}git push` }),
    // Flags read after a program's name, and rules guarded by a look-behind: each would cost the
    // length of its window at every flag if that look-behind came first.
    `mysql${' -p'.repeat(21_000)}`,
    `curl${' -u'.repeat(21_000)}`,
    `curl -u ${'a:'.repeat(32_000)}`,
    `redis-cli${' -a -'.repeat(16_000)}`,
    'htpasswd -b '.repeat(5_400),
    `htpasswd -b ${'a '.repeat(32_000)}`,
    '["htpasswd","-b",'.repeat(3_800),
    'htdbm -bT '.repeat(6_500),
    // Words read after each program name for its subcommand, most of them an option's value or not.
    'docker -x '.repeat(6_500),
    '["docker","-x",'.repeat(4_000),
    'vault login '.repeat(5_400),
    `vault login ${'-x '.repeat(21_000)}`,
    `vault login ${'secret_id=a '.repeat(5_000)}`,
    // A word read after every program name, for its subcommand or its options: reading one word
    // must cost little, not only the number of words read.
    'docker '.repeat(10_000),
    'vault '.repeat(10_000),
    'htpasswd '.repeat(10_000),
    // A value read and masked after every flag.
    'docker login -p '.repeat(4_000),
    '--token '.repeat(8_000),
    `--${'a-'.repeat(32_000)}`,
    '"--token",'.repeat(6_500),
    'aws_secret_access_key '.repeat(3_000),
    'Cookie:'.repeat(9_000),
    'A_KEY='.repeat(10_000),
    '\\n'.repeat(32_000),
    'glpat-'.repeat(10_000),
    'hvs.'.repeat(16_000),
    'hooks.slack.com/services/'.repeat(2_600),
    'password=\\"'.repeat(7_000),
    `password=\\"${'\\\\\\"'.repeat(15_000)}`,
    `password="${'\\'.repeat(60_000)}`,
    // Words of quoted parts joined, and quotes that open no part: each read one way only.
    'password=a"b"'.repeat(5_000),
    `password=a${'"b"c'.repeat(16_000)}`,
    'password=a"'.repeat(6_000),
    `--token a${'"b"\''.repeat(16_000)}`,
    `mysql -p${'"a"b'.repeat(16_000)}`,
    'curl -u "a" '.repeat(5_000),
    `curl -u ${'"a"'.repeat(21_000)}`,
    'vault login x"y" '.repeat(3_500),
    `htpasswd -b f u ${'a"b"'.repeat(16_000)}`,
    // Quotes that never close: a word read to the end of its line (its JSON string), once.
    `password=a"${'b '.repeat(30_000)}`,
    `vault login a'${' b'.repeat(30_000)}`,
    "vault login a'b\n".repeat(5_000),
    "--token 'a\n".repeat(8_000),
    'password=\\"a\\n'.repeat(6_000),
    `password="${'\\"'.repeat(30_000)}`,
    // Vault's tokens of before 1.10: `s.` is everywhere in text.
    's.'.repeat(32_000),
    's.AbCdEfGhIjKlMnOpQrStUvW '.repeat(2_500),
    // cf auth's words, read after every cf.
    'cf auth '.repeat(8_000),
    `cf auth ${'--origin x '.repeat(6_000)}`,
    // The values of vault login -mfa.
    `vault login ${'-mfa=a:b '.repeat(7_000)}`,
    // Backslash-escaped characters inside a value, plain and JSON-escaped.
    `mysql -p${'\\$'.repeat(30)} `.repeat(1_000),
    'password=\\\\$'.repeat(6_000),
  ];
  it('masks each adversarial text twice as once', () => {
    for (const text of shapes) {
      const once = maskSecrets(text).text;
      expect(maskSecrets(once).text).toBe(once);
    }
  });

  it('scans 64 KiB of adversarial text quickly', () => {
    for (const text of shapes) {
      const started = performance.now();
      maskSecrets(text);
      expect(performance.now() - started).toBeLessThan(500);
    }
  });
});

describe('maskPrefix', () => {
  it('keeps short text whole', () => {
    expect(maskPrefix(`t ${AWS_KEY}`, 100)).toEqual({
      text: 't [masked aws-access-key]',
      count: 1,
      cut: false,
      left: 0,
    });
  });

  it('cuts to the limit without splitting a marker', () => {
    const text = `${'x'.repeat(90)} ${AWS_KEY} tail`;
    const cut = maskPrefix(text, 100);
    expect(cut.cut).toBe(true);
    expect(cut.text).toBe(`${'x'.repeat(90)} `);
    expect(cut.count).toBe(0);
    // What was left out, counted in masked characters: the marker and the tail.
    expect(cut.left).toBe('[masked aws-access-key] tail'.length);
  });

  it('never keeps part of a secret that crosses the cut', () => {
    const text = `${'x'.repeat(94)} ${GITHUB_CLASSIC} ${'y'.repeat(100)}`;
    const cut = maskPrefix(text, 100);
    expect(cut.text).toBe(`${'x'.repeat(94)} `);
    expect(cut.text).not.toContain('ghp_');
  });

  it('scans only a window of a huge text, and never keeps the end of that window', () => {
    // A token whose start sits at the very end of the scanned window is too short there to be
    // recognised; with the text shrunk by an earlier masked key block it would otherwise be kept.
    const bigKey = `-----BEGIN RSA PRIVATE KEY-----\n${'A'.repeat(20_000)}\n-----END RSA PRIVATE KEY-----`;
    const windowEnd = 20_000 + 8 * 1024;
    const lead = `${bigKey} `;
    // A classic GitHub token, assembled so that none is committed (test/support/fakeSecrets.ts).
    const token = ['ghp', 'R2d2C3poBb8Yoda0Luke1Leia2Han3Solo4Chew'].join('_');
    const text = `${lead}${'z'.repeat(windowEnd - lead.length - 6)}${token}${'q'.repeat(5_000_000)}`;
    const cut = maskPrefix(text, 20_000);
    expect(cut.cut).toBe(true);
    expect(cut.text.startsWith('[masked private-key] zzz')).toBe(true);
    expect(cut.text).not.toContain('ghp');
    expect(cut.text.length).toBeLessThanOrEqual(20_000);
  });

  it('does not split a surrogate pair', () => {
    const cut = maskPrefix(`${'x'.repeat(99)}😀😀`, 100);
    expect(cut.text).toBe('x'.repeat(99));
  });
});

describe('maskCommandLine', () => {
  it('masks values of secret-looking long flags, spaced or with =', () => {
    expect(
      maskCommandLine('muse serve --token abc123 --api-key=xyz --password "p w" --client-secret \'s\''),
    ).toBe(
      'muse serve --token [masked secret-value] --api-key=[masked secret-value] --password "[masked secret-value]" --client-secret \'[masked secret-value]\'',
    );
  });

  it('masks secret-looking variable assignments and leaves the rest', () => {
    expect(maskCommandLine('FOO_SECRET=s3cr3t API_KEY=k PATH=/usr/bin LOG=debug exec muse serve')).toBe(
      'FOO_SECRET=[masked secret-value] API_KEY=[masked secret-value] PATH=/usr/bin LOG=debug exec muse serve',
    );
    expect(maskCommandLine("export GH_AUTH='x y'; muse")).toBe(
      "export GH_AUTH='[masked secret-value]'; muse",
    );
  });

  it('masks every shape maskSecrets knows, wherever it stands', () => {
    expect(maskCommandLine(`muse serve ${SLACK_BOT}`)).toBe('muse serve [masked slack-token]');
    expect(maskCommandLine(`muse --auth-token ${GITHUB_CLASSIC}`)).toBe(
      'muse --auth-token [masked github-token]',
    );
  });

  it('leaves paths of secret files, short flags, other flags and references alone', () => {
    const line =
      "exec '/usr/bin/node' '/srv/host.mjs' --token-file /run/token --password-env DB_PW -p 8080 --no-auth --port 1 GITHUB_TOKEN=$GITHUB_TOKEN";
    expect(maskCommandLine(line)).toBe(line);
  });
});
