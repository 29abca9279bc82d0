import { afterEach, describe, expect, it } from 'vitest';
import { MAX_RAW_ARGS_CHARS, MAX_RECORD_CHARS } from '../../src/relay/intake/limits.js';
import { keys } from '../../src/store/keys.js';
import { approvalFromTranscript, shellApproval } from '../support/fakeHost.js';
import { AWS_EXAMPLE_KEY, FAKE_GITHUB_TOKEN, FAKE_SLACK_BOT_TOKEN } from '../support/fakeSecrets.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

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
