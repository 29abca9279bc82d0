import { Writable } from 'node:stream';
import type { LogLevel } from '@slack/bolt';
import { describe, expect, it } from 'vitest';
import { createLogger, MIN_SCRUBBED_LENGTH, prettyInstalled, toBoltLogger } from '../../../src/util/log.js';

// Assembled, so that no token-shaped string is committed (test/support/fakeSecrets.ts); the
// assertions search the log for its SUPERSECRETLOGTOKEN part.
const TOKEN = ['xoxb', 'test', '9999', 'SUPERSECRETLOGTOKEN'].join('-');

/** A pino destination that keeps each JSON line as an object. */
function capture() {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split('\n')) {
        if (!line) continue;
        raw.push(line);
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      callback();
    },
  });
  return { destination, lines, raw };
}

describe('createLogger', () => {
  it('redacts tokens and secrets under known paths', () => {
    const { destination, lines, raw } = capture();
    const log = createLogger({ level: 'info', destination });
    log.info(
      {
        token: TOKEN,
        config: { slack: { botToken: TOKEN, appToken: TOKEN, signingSecret: TOKEN } },
        slack: { botToken: TOKEN },
        req: { headers: { authorization: `Bearer ${TOKEN}` } },
        headers: { authorization: `Bearer ${TOKEN}` },
        pagerDuty: { routingKey: TOKEN, apiToken: TOKEN },
      },
      'started',
    );
    expect(lines).toHaveLength(1);
    expect(raw.join('\n')).not.toContain('SUPERSECRETLOGTOKEN');
    expect(lines[0]).toMatchObject({
      msg: 'started',
      token: '[redacted]',
      slack: { botToken: '[redacted]' },
      headers: { authorization: '[redacted]' },
    });
  });

  it('keeps ordinary fields and honours the level', () => {
    const { destination, lines } = capture();
    const log = createLogger({ level: 'warn', destination });
    log.info({ approvalId: 'a1' }, 'quiet');
    log.warn({ approvalId: 'a1', channel: 'C1' }, 'loud');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ msg: 'loud', approvalId: 'a1', channel: 'C1', level: 40 });
  });

  it('redacts in child loggers too', () => {
    const { destination, raw } = capture();
    const log = createLogger({ level: 'info', destination }).child({ approvalId: 'a1' });
    log.info({ token: TOKEN }, 'child');
    expect(raw.join('\n')).not.toContain('SUPERSECRETLOGTOKEN');
  });
});

describe('createLogger with the configuration’s secrets', () => {
  const ROUTING_KEY = 'R0UTINGKEY-LOGSECRET-000000000000';
  const PASSWORD = 'pa"ss\\wo rd/LOGSECRET';

  it('writes no line that holds one, wherever it stands, as written, JSON-escaped or URL-encoded', () => {
    const { destination, raw, lines } = capture();
    const log = createLogger({ level: 'debug', destination, secrets: [ROUTING_KEY, PASSWORD] });
    log.info({ route: { escalation: [{ page: { routingKey: ROUTING_KEY } }] } }, 'deep');
    log.error({ err: new Error(`PagerDuty refused ${ROUTING_KEY}`) }, 'page failed');
    log.child({ hostId: 'main' }).debug({ url: `redis://:${encodeURIComponent(PASSWORD)}@h:6379` }, 'child');
    log.warn(`password was ${PASSWORD}`);
    expect(lines).toHaveLength(4);
    expect(raw.join('\n')).not.toContain('LOGSECRET');
    expect(lines[0]).toMatchObject({ route: { escalation: [{ page: { routingKey: '[redacted]' } }] } });
    expect(lines[1]?.err).toMatchObject({ message: 'PagerDuty refused [redacted]' });
    expect(lines[2]).toMatchObject({ hostId: 'main', url: 'redis://:[redacted]@h:6379' });
    expect(lines[3]?.msg).toBe('password was [redacted]');
  });

  it('leaves values too short to scrub without garbling: the start-up line hides those', () => {
    const { destination, lines } = capture();
    const short = 'x'.repeat(MIN_SCRUBBED_LENGTH - 1);
    const log = createLogger({ level: 'info', destination, secrets: [short, '1'] });
    log.info({ n: 1, text: `${short}x` }, 'plain');
    expect(lines[0]).toMatchObject({ n: 1, text: `${short}x`, msg: 'plain' });
  });
});

describe('createLogger with an error of a failed Redis command', () => {
  // Shorter than the scrubber takes (MIN_SCRUBBED_LENGTH), as a Redis password may be.
  const PASSWORD = 'abc1234';
  /** An error as ioredis makes it: the command that failed, with its arguments. */
  const failed = (message: string, name: string, args: string[]) =>
    Object.assign(new Error(message), { command: { name, args } });

  it('writes the command’s name, never its arguments, at any depth, and leaves the error as it was', () => {
    const { destination, lines, raw } = capture();
    const log = createLogger({ level: 'debug', destination });
    const auth = failed('WRONGPASS invalid username-password pair', 'auth', [PASSWORD]);
    const cluster = Object.assign(new Error('Failed to refresh slots cache.'), { lastNodeError: auth });
    const exec = Object.assign(new Error('EXECABORT'), {
      previousErrors: [failed('OOM command not allowed', 'set', ['cs:record', `{"text":"${PASSWORD}"}`])],
    });
    log.warn({ err: auth }, 'could not read forwarded decisions; trying again');
    log.error(cluster);
    log.error({ err: exec }, 'could not save');
    log.error({ err: new AggregateError([auth], 'all failed') }, 'aggregate');
    log.error({ err: new Error('could not connect', { cause: auth }) }, 'caused');
    log.error({ err: { command: { name: 'auth', args: [PASSWORD] } } }, 'not an Error');
    const loop: Record<string, unknown> = { command: { name: 'get', args: [PASSWORD] } };
    loop.self = loop;
    log.error({ err: Object.assign(new Error('circular'), { context: loop }) }, 'circular');

    expect(raw.join('\n')).not.toContain(PASSWORD);
    expect(lines[0]?.err).toMatchObject({ type: 'Error', message: auth.message, command: { name: 'auth' } });
    expect(lines[1]?.err).toMatchObject({
      lastNodeError: { message: auth.message, command: { name: 'auth' } },
    });
    expect(lines[2]?.err).toMatchObject({
      previousErrors: [{ message: 'OOM command not allowed', command: { name: 'set' } }],
    });
    expect(lines[3]?.err).toMatchObject({ aggregateErrors: [{ command: { name: 'auth' } }] });
    expect(lines[4]?.err).toMatchObject({ message: `could not connect: ${auth.message}` });
    expect(lines[5]?.err).toEqual({ command: { name: 'auth' } });
    expect(lines[6]?.err).toMatchObject({ context: { command: { name: 'get' }, self: '[Circular]' } });
    expect(auth.command).toEqual({ name: 'auth', args: [PASSWORD] });
  });
});

describe('toBoltLogger', () => {
  it('maps Bolt calls onto pino levels', () => {
    const { destination, lines } = capture();
    const bolt = toBoltLogger(createLogger({ level: 'debug', destination }));
    bolt.debug('d', { a: 1 });
    bolt.info('i');
    bolt.warn('w');
    bolt.error(new Error('boom'));
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [20, 'd'],
      [30, 'i'],
      [40, 'w'],
      [50, 'boom'],
    ]);
    expect(lines[0]?.args).toEqual([{ a: 1 }]);
    expect(lines[3]?.err).toMatchObject({ message: 'boom' });
  });

  it('sets and reports levels in Bolt terms', () => {
    const { destination, lines } = capture();
    const pinoLogger = createLogger({ level: 'trace', destination });
    const bolt = toBoltLogger(pinoLogger);
    expect(bolt.getLevel()).toBe('debug');
    bolt.setLevel('warn' as LogLevel);
    expect(pinoLogger.level).toBe('warn');
    expect(bolt.getLevel()).toBe('warn');
    bolt.info('dropped');
    expect(lines).toHaveLength(0);
    pinoLogger.level = 'fatal';
    expect(bolt.getLevel()).toBe('error');
  });

  it('does not leak a token passed in Bolt arguments under a redacted path', () => {
    const { destination, raw } = capture();
    const bolt = toBoltLogger(createLogger({ level: 'debug', destination }));
    bolt.debug('http request', { headers: { authorization: `Bearer ${TOKEN}` }, token: TOKEN });
    expect(raw.join('\n')).not.toContain('SUPERSECRETLOGTOKEN');
  });
});

describe('prettyInstalled', () => {
  it('is true where pino-pretty resolves (development) and false where it does not (the image)', () => {
    expect(prettyInstalled()).toBe(true);
    expect(
      prettyInstalled(() => {
        throw Object.assign(new Error("Cannot find module 'pino-pretty'"), { code: 'MODULE_NOT_FOUND' });
      }),
    ).toBe(false);
  });
});
