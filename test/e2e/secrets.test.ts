import { afterEach, describe, expect, it } from 'vitest';
import { MAX_RAW_ARGS_CHARS, MAX_RECORD_CHARS } from '../../src/relay/hostEvents/intake/limits.js';
import { keys } from '../../src/store/keys.js';
import { approvalFromTranscript, shellApproval } from '../support/fakeHost.js';
import {
  AWS_EXAMPLE_KEY,
  FAKE_GITHUB_TOKEN,
  FAKE_GITLAB_TOKEN,
  FAKE_GOOGLE_API_KEY,
  FAKE_NPM_TOKEN,
  FAKE_SLACK_BOT_TOKEN,
  FAKE_SLACK_WEBHOOK,
  FAKE_STRIPE_LIVE_KEY,
} from '../support/fakeSecrets.js';
import { buttonsOf, rememberButtonOf, SESSION, textOf, World } from './world.js';

// Issue 7, items 15–17: secrets in agent text reach neither Slack, nor Redis, nor the log; what
// one approval stores is bounded; the host command and host stderr are logged masked.

const SLACK = FAKE_SLACK_BOT_TOKEN;
const GITHUB = FAKE_GITHUB_TOKEN;
const AWS = AWS_EXAMPLE_KEY;
const BEARER = '9c1e5f2a7b3d8e4f6a0b';
const SECRETS = [SLACK, GITHUB, AWS, BEARER];

let world: World | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

async function storedRecord(approvalId: string): Promise<string> {
  const raw = await world!.redis.hget(keys.approval(approvalId), 'd');
  if (raw === null) throw new Error(`no record for ${approvalId}`);
  return raw;
}

function expectNoSecretIn(text: string): void {
  for (const secret of SECRETS) expect(text).not.toContain(secret);
}

describe('secrets and sizes', () => {
  it('an approval full of secrets: card, record and log hold none of them; a click still decides it', async () => {
    world = await World.start();
    const approval = shellApproval({
      approvalId: 'secret-0001',
      sessionId: SESSION,
      stages: [
        ['deploy', '--token', SLACK],
        ['curl', '-H', `Authorization: Bearer ${BEARER}`, 'https://api.example.com'],
      ],
    });
    approval.rawArgs = JSON.stringify({
      command: approval.subject.command,
      env: { GITHUB_TOKEN: GITHUB, AWS_ACCESS_KEY_ID: AWS },
    });
    approval.reason = `Deploy as ${AWS} with ${GITHUB}`;
    await world.host.open(approval, { via: 'both' });

    const card = await world.waitForCard('secret-0001', (m) => buttonsOf(m).length > 0);
    expectNoSecretIn(textOf(card));
    // rawArgs 4 (Slack, Bearer, GitHub, AWS), the command 2, the two stages' argv 2, stage 1's
    // suggested prefix (argv and label) 2, the prefix choice's label and rule preview 2, the reason 2.
    expect(textOf(card)).toContain('14 secrets in this request were masked');
    expect(textOf(card)).toContain('deploy --token [masked slack-token]');
    const stored = await storedRecord('secret-0001');
    expectNoSecretIn(stored);
    expect(JSON.parse(stored).intake).toMatchObject({ maskedSecrets: 14, truncated: false });

    // The decision carries the ids the host sent, untouched by masking.
    await world.press('secret-0001', 'Allow once', 'U0ALICE', card);
    const decide = await world.host.waitForDecide();
    expect(decide.frame.params).toMatchObject({
      sessionId: SESSION,
      approvalId: 'secret-0001',
      requirementId: { approvalId: 'secret-0001', sourceIndex: 0 },
      choiceId: 'allow_once',
    });
    // The host moves on to stage 2 (approval/updated): its subject is masked the same way.
    const stage2 = await world.waitForCard('secret-0001', (m) => textOf(m).includes('▶ 2/2'));
    expectNoSecretIn(textOf(stage2));
    expectNoSecretIn(await storedRecord('secret-0001'));
    expect(world.bot.logs.length).toBeGreaterThan(5);
    expectNoSecretIn(world.bot.logs.map((l) => l.raw).join('\n'));
  });

  it('issue 26, item 9: secrets after their flag, in a header or an assignment, and the tokens it lists reach neither Slack, Redis nor the log; no grant is offered', async () => {
    world = await World.start({}, { MSP_SANDBOX_MODE: 'workspace-write' });
    // The same kind of request without secrets offers "Don't ask again": masking is what takes it away.
    await world.host.open(
      shellApproval({ approvalId: 'plain-0009', sessionId: SESSION, stages: [['mysql', 'shop']] }),
    );
    const plain = await world.waitForCard('plain-0009', (m) => buttonsOf(m).length > 0);
    expect(rememberButtonOf(plain)).toBeDefined();

    const secret = {
      mysql: 'Hunter2mysql7f3a',
      curl: 'Hunter2curl8e4b',
      cookie: 'sess9c5d0e1f',
      flag: 'Hunter2flag1a6c',
      token: 'tok2b7d9e3f',
      aws: 'awsSecret3c8e0f4a/b',
      pass: 'Hunter2pass4d9f',
      key: 'key5e0a1b2c',
      clientSecret: 'client6f1b2c3d',
    };
    const tokens = [
      FAKE_GITLAB_TOKEN,
      FAKE_NPM_TOKEN,
      FAKE_GOOGLE_API_KEY,
      FAKE_STRIPE_LIVE_KEY,
      FAKE_SLACK_WEBHOOK,
    ];
    const approval = shellApproval({
      approvalId: 'secret-0009',
      sessionId: SESSION,
      stages: [
        ['mysql', '-uroot', `-p${secret.mysql}`, 'shop'],
        [
          'curl',
          '-u',
          `admin:${secret.curl}`,
          '-H',
          `Cookie: session=${secret.cookie}`,
          'https://api.example.com',
        ],
        ['deploy', '--password', secret.flag, '--token', secret.token],
        ['aws', 'configure', 'set', 'aws_secret_access_key', secret.aws],
        ['env', `FOO_PASS=${secret.pass}`, `AWS_KEY=${secret.key}`, './run'],
      ],
    });
    approval.rawArgs = JSON.stringify({
      command: approval.subject.command,
      argv: ['oauth', 'login', '--client-secret', secret.clientSecret],
      // In rawArgs a line break is `\\n`: the token after it still starts a word.
      notes: `published\n${FAKE_NPM_TOKEN}`,
    });
    approval.reason = `Publish with ${tokens.slice(0, 4).join(' ')}, then post to\n${tokens[4]}`;
    await world.host.open(approval, { via: 'both' });

    const card = await world.waitForCard('secret-0009', (m) => buttonsOf(m).length > 0);
    const values = [...Object.values(secret), ...tokens];
    const expectNone = (text: string) => {
      for (const value of values) expect(text).not.toContain(value);
    };
    expectNone(textOf(card));
    // The flags and names stay, so the card still reads.
    expect(textOf(card)).toContain('mysql -uroot -p[masked secret-value] shop');
    expect(textOf(card)).toContain('curl -u admin:[masked secret-value] -H Cookie: [masked cookie] https://');
    expect(textOf(card)).toContain('deploy --password [masked secret-value] --token [masked secret-value]');
    expect(textOf(card)).toContain('[masked gitlab-token]');
    expect(rememberButtonOf(card)).toBeUndefined();
    const stored = await storedRecord('secret-0009');
    expectNone(stored);
    expect(JSON.parse(stored).intake.maskedSecrets).toBeGreaterThanOrEqual(values.length);

    // A click still decides it, with the ids the host sent.
    await world.press('secret-0009', 'Allow once', 'U0ALICE', card);
    const decide = await world.host.waitForDecide((d) => d.frame.params.approvalId === 'secret-0009');
    expect(decide.frame.params).toMatchObject({ approvalId: 'secret-0009', choiceId: 'allow_once' });
    // The host moves on to stage 2: its card is drawn from the same masked record.
    await world.waitForCard('secret-0009', (m) => textOf(m).includes('▶ 2/5'));
    // Every Web API call the bot made: cards, updates, thread replies, ephemerals.
    expectNone(JSON.stringify(world.slack.calls, (_, v) => (typeof v === 'bigint' ? String(v) : v)));
    expectNone(world.bot.logs.map((l) => l.raw).join('\n'));
  });

  it('a subject kind the bot does not know, shown on its card, is masked when it holds a secret', async () => {
    world = await World.start();
    const approval = shellApproval({ approvalId: 'kind-0009', sessionId: SESSION, stages: [['x']] });
    approval.subject = { kind: FAKE_NPM_TOKEN, target: 'db' };
    approval.rawArgs = '{}';
    await world.host.open(approval);
    const card = await world.waitForCard('kind-0009', (m) => buttonsOf(m).length > 0);
    expect(textOf(card)).toContain('*Kind:* `[masked npm-token]` — not a kind this bot knows');
    expect(textOf(card)).not.toContain(FAKE_NPM_TOKEN);
    expect(await storedRecord('kind-0009')).not.toContain(FAKE_NPM_TOKEN);
    expect(world.bot.logs.map((l) => l.raw).join('\n')).not.toContain(FAKE_NPM_TOKEN);
  });

  it('a 5 MB rawArgs: the card is posted and says it was cut, the record stays small', async () => {
    world = await World.start();
    const rawArgs = JSON.stringify({
      path: 'dump.sql',
      content: `-- ${GITHUB}\n${'x'.repeat(5 * 1024 * 1024)}`,
    });
    const approval = approvalFromTranscript('approval-round-trip', { approvalId: 'huge-0001', rawArgs });
    await world.host.open(approval, { via: 'both' });

    const card = await world.waitForCard('huge-0001', (m) => buttonsOf(m).length > 0, 15_000);
    expect(textOf(card)).toContain('Part of this request was too long to keep and was cut');
    expect(textOf(card)).toContain('1 secret in this request was masked');
    const stored = await storedRecord('huge-0001');
    expect(stored.length).toBeLessThan(MAX_RECORD_CHARS);
    const record = JSON.parse(stored) as { rawArgs: string; intake: unknown };
    expect(record.rawArgs.length).toBeLessThanOrEqual(MAX_RAW_ARGS_CHARS);
    expect(record.rawArgs).toMatch(
      new RegExp(`\\[… cut by Countersign: ${rawArgs.length} characters in all\\]$`),
    );
    expect(record.intake).toMatchObject({ truncated: true, parts: { rawArgs: { truncated: true } } });
    expect(stored).not.toContain(GITHUB);

    // Later changes work on the small record.
    await world.press('huge-0001', 'Allow once', 'U0ALICE', card);
    await world.waitForCard('huge-0001', (m) => textOf(m).includes('Approved'));
    expect((await storedRecord('huge-0001')).length).toBeLessThan(MAX_RECORD_CHARS);
  });

  it('MSP_HOST_COMMAND is logged masked, and host stderr is logged at debug, masked', async () => {
    world = await World.start();
    await world.bot.stop();
    // A variable assignment before the command and a flag the fake host ignores after it.
    const command = `FOO_SECRET=${BEARER} ${world.host.command} --token=${GITHUB}`;
    await world.restartBot({ MSP_HOST_COMMAND: command });
    const masked = `FOO_SECRET=[masked secret-value] ${world.host.command} --token=[masked github-token]`;

    const listening = await world.bot.waitForLog((l) => l.msg === 'countersign listening');
    expect(listening.json).toMatchObject({
      config: { msp: { hosts: [{ id: 'default', command: masked }] } },
    });
    const spawned = await world.bot.waitForLog((l) => l.msg === 'host spawned');
    expect(spawned.json).toMatchObject({ command: masked });

    await world.host.waitForIncarnation(2);
    await world.host.stderr(`login failed: Authorization: Bearer ${SLACK}`);
    const stderr = await world.bot.waitForLog((l) => l.msg === 'host stderr');
    expect(stderr.json).toMatchObject({
      level: 20,
      stream: 'stderr',
      line: 'login failed: Authorization: Bearer [masked slack-token]',
    });
    expectNoSecretIn(world.bot.logs.map((l) => l.raw).join('\n'));
  });
});
