// Agent text and the host command reach log lines in a few places: each masks what it logs.
import { PassThrough } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/config.js';
import { redactedConfig } from '../../src/config/configSecrets.js';
import { JsonRpcConnection } from '../../src/msp/connection.js';
import { pipeHostStderr } from '../../src/msp/hostStderr.js';
import { HostSupervisor } from '../../src/msp/hostSupervisor.js';
import { FAKE_GITHUB_TOKEN, FAKE_SLACK_APP_TOKEN, FAKE_SLACK_BOT_TOKEN } from '../support/fakeSecrets.js';
import { NO_REDIS_PASSWORD } from '../support/testRedis.js';

type Json = Record<string, unknown>;

const GITHUB = FAKE_GITHUB_TOKEN;
const SLACK = FAKE_SLACK_BOT_TOKEN;

function captureLogger() {
  const lines: Json[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => lines.push(JSON.parse(line) as Json) });
  return { logger, lines };
}

async function until(condition: () => boolean, timeoutMs = 1000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

const supervisors: HostSupervisor[] = [];
afterEach(async () => {
  await Promise.all(supervisors.splice(0).map((supervisor) => supervisor.stop()));
});

describe('log lines mask secrets', () => {
  it('a malformed frame is logged with its secrets masked', async () => {
    const { logger, lines } = captureLogger();
    const hostStdout = new PassThrough();
    const connection = new JsonRpcConnection({ input: hostStdout, output: new PassThrough(), logger });
    hostStdout.write(`oops token=${SLACK} ${'x'.repeat(500)}\n`);
    await until(() => lines.some((l) => l.msg === 'skipping malformed frame: not JSON'));
    const frame = lines.find((l) => l.msg === 'skipping malformed frame: not JSON')!.frame as string;
    expect(frame.startsWith('oops token=[masked slack-token] xxx')).toBe(true);
    expect(frame.endsWith('…')).toBe(true);
    expect(JSON.stringify(lines)).not.toContain(SLACK);
    connection.close();
  });

  it('host stderr is logged at debug, masked, and so is the tail kept for the death line', async () => {
    const { logger, lines } = captureLogger();
    const stderr = new PassThrough();
    const tail: string[] = [];
    pipeHostStderr(stderr, logger, tail);
    stderr.write(`auth failed for Authorization: Bearer ${GITHUB}\nplain line\n`);
    await until(() => tail.length === 2);
    expect(tail).toEqual(['auth failed for Authorization: Bearer [masked github-token]', 'plain line']);
    const logged = lines.filter((l) => l.msg === 'host stderr');
    expect(logged.map((l) => [l.level, l.line])).toEqual([
      [20, 'auth failed for Authorization: Bearer [masked github-token]'],
      [20, 'plain line'],
    ]);
    expect(JSON.stringify(lines)).not.toContain(GITHUB);
  });

  it('the start-up config shows MSP_HOST_COMMAND with its secrets masked', () => {
    const config = loadConfig({
      SLACK_BOT_TOKEN: FAKE_SLACK_BOT_TOKEN,
      SLACK_APP_TOKEN: FAKE_SLACK_APP_TOKEN,
      SLACK_CHANNEL: 'C0123456789',
      MSP_HOST_COMMAND: `HOST_SECRET=hunter2 muse serve --token=${GITHUB} --workspace /srv`,
      ...NO_REDIS_PASSWORD,
    });
    expect(redactedConfig(config).msp.hosts[0]?.command).toBe(
      'HOST_SECRET=[masked secret-value] muse serve --token=[masked github-token] --workspace /srv',
    );
    // The command itself is untouched: the host still gets its token.
    expect(config.msp.hosts[0]?.command).toContain(GITHUB);
  });

  it('the host supervisor logs its command and the dying host stderr masked', async () => {
    const { logger, lines } = captureLogger();
    // Exit code 2 is a usage error: one error line at once says so, with the stderr tail.
    const supervisor = new HostSupervisor({
      hostId: 'host-a',
      command: `: --token=${GITHUB}; echo "bad flag --token=${GITHUB}" >&2; exit 2`,
      logger,
      clientVersion: '1.2.3',
      onEvent: () => {},
      backoff: { initialMs: 1_000, maxMs: 1_000 },
    });
    supervisors.push(supervisor);
    await supervisor.start();
    await until(() => lines.some((l) => l.msg?.toString().startsWith('MSP_HOST_COMMAND exited')), 5_000);
    const byMessage = (prefix: string) => lines.find((l) => String(l.msg).startsWith(prefix))!;
    const masked =
      ': --token=[masked github-token]; echo "bad flag --token=[masked github-token]" >&2; exit 2';
    expect(byMessage('host spawned').command).toBe(masked);
    const failed = byMessage('MSP_HOST_COMMAND exited');
    expect(failed.msg).toBe(
      'MSP_HOST_COMMAND exited with code 2 (usageError): bad flag --token=[masked github-token]',
    );
    expect(failed.stderrTail).toEqual(['bad flag --token=[masked github-token]']);
    expect(JSON.stringify(lines)).not.toContain(GITHUB);
  });
});
