// How Slack call failures reach the log: every retry at debug, one warn when a call is given up
// on, info when it landed after retrying; a refused token (fatal) and a channel the bot cannot
// use (error) stay loud, since only a person can fix them.

import { describe, expect, it } from 'vitest';
import { NOT_IN_CHANNEL_EVERY_MS, SlackCallLog } from '../../../src/slack/slackCallLog.js';
import { captureLogger } from '../../support/logCapture.js';

const FIELDS = { method: 'chat.update', channel: 'C1', ts: '1.1', approvalId: 'a-1' };
const levelsAndMessages = (lines: Record<string, unknown>[]) => lines.map((l) => [l.level, l.msg]);

describe('SlackCallLog', () => {
  it('a call that fails and retries, then fails for good: its retries at debug, one line at warn', () => {
    const { logger, lines } = captureLogger();
    const log = new SlackCallLog(logger);
    const failure = { kind: 'retry', error: 'http_503' } as const;
    for (let attempt = 1; attempt <= 4; attempt++) log.retrying(FIELDS, failure, attempt, 250 * attempt);
    log.gaveUp(FIELDS, failure, 'card update failed');
    expect(levelsAndMessages(lines)).toEqual([
      ...[1, 2, 3, 4].map(() => [20, 'slack call failed; trying again']),
      [40, 'card update failed'],
    ]);
    expect(lines[0]).toMatchObject({ ...FIELDS, failure, attempt: 1, delayMs: 250 });
    expect(lines[4]).toMatchObject({ ...FIELDS, failure });
  });

  it('at the default level (info) a call that keeps failing then lands says so once, and nothing of its retries', () => {
    const { logger, lines } = captureLogger('info');
    const log = new SlackCallLog(logger);
    for (let attempt = 1; attempt <= 3; attempt++)
      log.retrying(FIELDS, { kind: 'rateLimited', retryAfterMs: 1_000 }, attempt, 1_000);
    log.landed(FIELDS, 4);
    log.landed(FIELDS, 1);
    expect(levelsAndMessages(lines)).toEqual([[30, 'slack call landed after retries']]);
    expect(lines[0]).toMatchObject({ ...FIELDS, attempts: 4 });
  });

  it('a refused token stays fatal and tells health; a channel the bot cannot use stays an error saying to invite it', () => {
    const { logger, lines } = captureLogger();
    const fatal: string[] = [];
    const log = new SlackCallLog(logger, { refused: (error) => fatal.push(error), landed: () => {} });
    log.gaveUp(FIELDS, { kind: 'fatal', error: 'invalid_auth' });
    log.gaveUp(FIELDS, { kind: 'fatal', error: 'missing_scope', needed: 'channels:history' });
    log.gaveUp(FIELDS, { kind: 'notInChannel', error: 'not_in_channel' });
    expect(levelsAndMessages(lines)).toEqual([
      [60, 'slack refused the bot token or its scopes'],
      [60, 'slack refused the bot token or its scopes'],
      [50, 'the bot cannot use this channel: invite it with /invite @countersign, or check SLACK_CHANNEL'],
    ]);
    expect(lines[0]).toMatchObject({ ...FIELDS, error: 'invalid_auth' });
    expect(lines[0]).not.toHaveProperty('needed');
    // A missing scope is named, for the app to be given it (and reinstalled).
    expect(lines[1]).toMatchObject({ ...FIELDS, error: 'missing_scope', needed: 'channels:history' });
    expect(fatal).toEqual(['invalid_auth', 'missing_scope']);
  });

  it('a channel the bot cannot use is said at error once a minute per channel; the repeats go to debug', () => {
    const { logger, lines } = captureLogger();
    let now = 1_000_000;
    const log = new SlackCallLog(logger, undefined, () => now);
    const failure = { kind: 'notInChannel', error: 'not_in_channel' } as const;
    log.gaveUp(FIELDS, failure);
    now += 16_000;
    log.gaveUp(FIELDS, failure);
    log.gaveUp({ ...FIELDS, channel: 'C2' }, failure);
    now += NOT_IN_CHANNEL_EVERY_MS;
    log.gaveUp(FIELDS, failure);
    expect(lines.map((l) => [l.level, l.channel])).toEqual([
      [50, 'C1'],
      [20, 'C1'],
      [50, 'C2'],
      [50, 'C1'],
    ]);
  });
});
