import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { describeRedisRefusal, redisRefusal } from '../../../src/store/redisRefusals.js';
import { createLogger } from '../../../src/util/log.js';

// An error one line of its own reports (Redis refusing the password) must not come back as a
// warn line, with its stack, from every retry loop that meets it.

function capture(level: 'info' | 'debug') {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      for (const line of String(chunk).split('\n')) if (line) lines.push(JSON.parse(line));
      callback();
    },
  });
  const logger = createLogger({
    level,
    destination,
    reportedElsewhere: (err) => redisRefusal(err) === 'WRONGPASS' || redisRefusal(err) === 'NOAUTH',
  });
  return { logger, lines };
}

const wrongPass = Object.assign(new Error('WRONGPASS invalid username-password pair or user is disabled.'), {
  name: 'ReplyError',
});

describe('reportedElsewhere', () => {
  it('writes a warn or info line about such an error at debug, in a child logger too', () => {
    const { logger, lines } = capture('debug');
    logger
      .child({ component: 'leases' })
      .warn({ err: wrongPass }, 'could not renew the host lease; trying again');
    logger.info({ err: 'NOAUTH Authentication required.' }, 'retrying');
    expect(lines.map((l) => [l.level, l.msg, l.component])).toEqual([
      [20, 'could not renew the host lease; trying again', 'leases'],
      [20, 'retrying', undefined],
    ]);
  });

  it('so that at the default level nothing of it is written', () => {
    const { logger, lines } = capture('info');
    logger.warn({ err: wrongPass }, 'escalation poll failed');
    expect(lines).toEqual([]);
  });

  it('keeps error lines, and warn lines about other errors or none, as they are', () => {
    const { logger, lines } = capture('info');
    logger.error({ err: wrongPass }, 'audit entry not written');
    logger.warn({ err: new Error('ECONNREFUSED 127.0.0.1:6379') }, 'escalation poll failed');
    logger.warn(
      { err: new Error("NOPERM this user has no permissions to run the 'xadd' command") },
      'not written',
    );
    logger.warn('a plain warning');
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [50, 'audit entry not written'],
      [40, 'escalation poll failed'],
      [40, 'not written'],
      [40, 'a plain warning'],
    ]);
  });
});

describe('redisRefusal', () => {
  it.each([
    ['WRONGPASS invalid username-password pair or user is disabled.', 'WRONGPASS'],
    ['ERR invalid password', 'WRONGPASS'],
    ['NOAUTH Authentication required.', 'NOAUTH'],
    ["NOPERM this user has no permissions to run the 'eval' command", 'NOPERM'],
    ['ERR DB index is out of range', 'DB_RANGE'],
    ['connect ECONNREFUSED 127.0.0.1:6379', undefined],
    ['ERR value is not an integer or out of range', undefined],
  ])('%s → %s', (message, refusal) => {
    expect(redisRefusal(new Error(message))).toBe(refusal);
    expect(redisRefusal(message)).toBe(refusal);
  });
});

// ioredis's Cluster reports a refusal met while it reads the slots (AUTH, CLUSTER SLOTS) as a
// ClusterAllFailedError whose own message says nothing of it: Redis's answer is its lastNodeError.
const clusterFailed = (lastNodeError: unknown) =>
  Object.assign(new Error('Failed to refresh slots cache.'), {
    name: 'ClusterAllFailedError',
    lastNodeError,
  });

describe('a Cluster that could not read its slots', () => {
  it('is the refusal of the last node it asked', () => {
    expect(redisRefusal(clusterFailed(wrongPass))).toBe('WRONGPASS');
    expect(
      redisRefusal(
        clusterFailed(new Error("NOPERM this user has no permissions to run the 'cluster|slots' command")),
      ),
    ).toBe('NOPERM');
  });

  it("is said with that node's words, naming the setting", () => {
    expect(describeRedisRefusal(clusterFailed(wrongPass), 'REDIS_PASSWORD')).toBe(
      'Redis refused the user or password in REDIS_PASSWORD (WRONGPASS invalid username-password pair or user is disabled.): fix the password there, or the Redis user it names',
    );
  });

  it('is no refusal when the last node could not be reached', () => {
    const unreachable = clusterFailed(new Error('connect ECONNREFUSED 127.0.0.1:7000'));
    expect(redisRefusal(unreachable)).toBeUndefined();
    expect(describeRedisRefusal(unreachable, 'REDIS_PASSWORD')).toBeUndefined();
    expect(redisRefusal(clusterFailed(undefined))).toBeUndefined();
  });
});
