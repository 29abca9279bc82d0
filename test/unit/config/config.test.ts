import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, ConfigErrors, eachConfigError, loadConfig } from '../../../src/config/config.js';
import { configSecrets, redactedConfig } from '../../../src/config/configSecrets.js';
import type { RedisTarget } from '../../../src/store/redisTarget.js';
import { parseDuration } from '../../../src/util/duration.js';
import { captureLogger } from '../../support/logCapture.js';
import { NO_REDIS_PASSWORD } from '../../support/testRedis.js';

// Assembled, so that no token-shaped string is committed (test/support/fakeSecrets.ts); each
// holds SUPERSECRET, which the redaction tests search for.
const BOT_TOKEN = ['xoxb', 'test', '1111', '2222', 'SUPERSECRETBOT'].join('-');
const APP_TOKEN = ['xapp', 'test', 'SUPERSECRETAPP'].join('-');
const SIGNING_SECRET = 'supersecretsigning0123456789abcdef';
const ROUTING_KEY = 'R0UTINGKEYSUPERSECRET0000000000';
const PD_TOKEN = 'u+PDTOKENSUPERSECRET';
const REPLICA_SECRET = 'REPLICASECRET-0123456789abcdefghijklmnop';
const SHORT_REPLICA_SECRET = 'REPLICASECRET-tooshort';
const SECRETS = [
  BOT_TOKEN,
  APP_TOKEN,
  SIGNING_SECRET,
  ROUTING_KEY,
  PD_TOKEN,
  'redispassword',
  REPLICA_SECRET,
  SHORT_REPLICA_SECRET,
];

/** A complete Socket Mode environment (its Redis, the default, without a password). */
function socketEnv(overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return {
    SLACK_BOT_TOKEN: BOT_TOKEN,
    SLACK_APP_TOKEN: APP_TOKEN,
    SLACK_CHANNEL: 'C0123456789',
    MSP_HOST_COMMAND: 'muse host --stdio',
    ...NO_REDIS_PASSWORD,
    ...overrides,
  };
}

/** A complete HTTP-mode environment. */
function httpEnv(overrides: Record<string, string | undefined> = {}): NodeJS.ProcessEnv {
  return socketEnv({ SLACK_APP_TOKEN: undefined, SLACK_SIGNING_SECRET: SIGNING_SECRET, ...overrides });
}

function configError(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env);
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    const err = error as ConfigError;
    expect(err.message).not.toMatch(/\n/);
    for (const secret of SECRETS) expect(err.message).not.toContain(secret);
    return err;
  }
  throw new Error('expected loadConfig to throw');
}

describe('loadConfig defaults', () => {
  it('fills every default in Socket Mode', () => {
    const config = loadConfig(socketEnv());
    expect(config).toEqual({
      slack: {
        botToken: BOT_TOKEN,
        appToken: APP_TOKEN,
        apiUrl: 'https://slack.com/api/',
        apiTimeoutMs: 10_000,
        channel: 'C0123456789',
        mode: 'socket',
      },
      port: 3000,
      redisUrl: 'redis://127.0.0.1:6379',
      redis: { kind: 'single', url: 'redis://127.0.0.1:6379' },
      redisUnauthenticated: true,
      redisAllowNoPassword: true,
      msp: {
        hosts: [{ id: 'default', command: 'muse host --stdio', sandboxMode: 'default' }],
        requestTimeoutMs: 30_000,
      },
      routes: [],
      admins: [],
      risks: [],
      grants: { ttlMs: 8 * 3_600_000, maxTtlMs: 7 * 86_400_000 },
      resolvedTtlMs: 30 * 86_400_000,
      usergroupCacheTtlMs: 60_000,
      membershipCacheTtlMs: 120_000,
      hostEventBuffer: 10_000,
      maxOpenApprovalsPerHost: 2_000,
      auditMaxLen: 100_000,
      refusalMaxLen: 100_000,
      leaseTtlMs: 15_000,
      pagerDuty: {
        eventsUrl: 'https://events.pagerduty.com/v2/enqueue',
        apiUrl: 'https://api.pagerduty.com',
      },
      logLevel: 'info',
    });
    expect(config.configPath).toBeUndefined();
  });

  it('uses HTTP mode without an app token', () => {
    const config = loadConfig(httpEnv());
    expect(config.slack.mode).toBe('http');
    expect(config.slack.signingSecret).toBe(SIGNING_SECRET);
    expect(config.slack.appToken).toBeUndefined();
  });

  it('treats empty and blank strings as unset', () => {
    const config = loadConfig(
      socketEnv({ PORT: '', REDIS_URL: '  ', LOG_LEVEL: '', SLACK_API_URL: '', MSP_SANDBOX_MODE: '' }),
    );
    expect(config.port).toBe(3000);
    expect(config.redisUrl).toBe('redis://127.0.0.1:6379');
    expect(config.logLevel).toBe('info');
    expect(config.slack.apiUrl).toBe('https://slack.com/api/');
    expect(config.msp.hosts[0]?.sandboxMode).toBe('default');
    // An empty app token means HTTP mode, which then needs the signing secret.
    expect(configError(socketEnv({ SLACK_APP_TOKEN: '' })).variable).toBe('SLACK_SIGNING_SECRET');
  });

  it('reads every optional variable', () => {
    const dir = mkdtempSync(join(tmpdir(), 'countersign-config-'));
    const file = join(dir, 'countersign.yml');
    writeFileSync(file, 'routes: []\n');
    const config = loadConfig(
      socketEnv({
        SLACK_SIGNING_SECRET: SIGNING_SECRET,
        SLACK_API_URL: 'http://127.0.0.1:4010/api',
        SLACK_API_TIMEOUT: '2500ms',
        SLACK_CHANNEL: '#approvals',
        PORT: '8080',
        REDIS_URL: 'rediss://:redispassword@redis.internal:6380/2',
        MSP_SANDBOX_MODE: 'workspace-write',
        COUNTERSIGN_CONFIG: file,
        COUNTERSIGN_GRANT_TTL: '15m',
        COUNTERSIGN_GRANT_MAX_TTL: '1h30m',
        COUNTERSIGN_RESOLVED_TTL: '7d',
        COUNTERSIGN_AUDIT_MAXLEN: '5000',
        COUNTERSIGN_REFUSAL_MAXLEN: '2000',
        COUNTERSIGN_LEASE_TTL: '5s',
        COUNTERSIGN_REPLICA_ID: 'blue-1',
        PAGERDUTY_ROUTING_KEY: ROUTING_KEY,
        PAGERDUTY_API_TOKEN: PD_TOKEN,
        PAGERDUTY_EVENTS_URL: 'http://127.0.0.1:4020/v2/enqueue',
        PAGERDUTY_API_URL: 'http://127.0.0.1:4020',
        LOG_LEVEL: 'DEBUG',
      }),
    );
    expect(config.slack).toMatchObject({
      signingSecret: SIGNING_SECRET,
      apiUrl: 'http://127.0.0.1:4010/api/',
      apiTimeoutMs: 2_500,
      channel: '#approvals',
      mode: 'socket',
    });
    expect(config.port).toBe(8080);
    expect(config.redisUrl).toBe('rediss://:redispassword@redis.internal:6380/2');
    expect(config.msp.hosts[0]?.sandboxMode).toBe('workspace-write');
    expect(config.configPath).toBe(file);
    expect(config.grants).toEqual({ ttlMs: 15 * 60_000, maxTtlMs: 90 * 60_000 });
    expect(config.resolvedTtlMs).toBe(7 * 86_400_000);
    expect(config.auditMaxLen).toBe(5_000);
    expect(config.refusalMaxLen).toBe(2_000);
    expect(config.leaseTtlMs).toBe(5_000);
    expect(config.replicaName).toBe('blue-1');
    expect(config.pagerDuty).toEqual({
      routingKey: ROUTING_KEY,
      apiToken: PD_TOKEN,
      eventsUrl: 'http://127.0.0.1:4020/v2/enqueue',
      apiUrl: 'http://127.0.0.1:4020',
    });
    expect(config.logLevel).toBe('debug');
  });
});

describe('loadConfig errors', () => {
  it.each([
    ['SLACK_BOT_TOKEN', socketEnv({ SLACK_BOT_TOKEN: undefined })],
    ['SLACK_CHANNEL', socketEnv({ SLACK_CHANNEL: undefined })],
    ['MSP_HOST_COMMAND', socketEnv({ MSP_HOST_COMMAND: '' })],
    ['SLACK_SIGNING_SECRET', httpEnv({ SLACK_SIGNING_SECRET: undefined })],
  ])('reports a missing %s on one line', (name, env) => {
    const err = configError(env);
    expect(err.variable).toBe(name);
    expect(err.message.startsWith(`${name} is required`)).toBe(true);
    expect(err.message).toMatch(/: \S/); // says how to fix it
  });

  it('refuses a COUNTERSIGN_REPLICA_SECRET shorter than 32 characters or with a space, naming it and never showing it', () => {
    for (const value of [SHORT_REPLICA_SECRET, `${REPLICA_SECRET} x`]) {
      const err = configError(socketEnv({ COUNTERSIGN_REPLICA_SECRET: value }));
      expect(err.variable).toBe('COUNTERSIGN_REPLICA_SECRET');
      expect(err.message).toMatch(/^COUNTERSIGN_REPLICA_SECRET .*: \S/);
      expect(err.message).not.toContain('REPLICASECRET');
    }
    expect(loadConfig(socketEnv({ COUNTERSIGN_REPLICA_SECRET: REPLICA_SECRET })).replicaSecret).toBe(
      REPLICA_SECRET,
    );
    expect(loadConfig(socketEnv({ COUNTERSIGN_REPLICA_SECRET: ' ' }))).not.toHaveProperty('replicaSecret');
  });

  it('explains the bot token with its xoxb prefix', () => {
    expect(configError(socketEnv({ SLACK_BOT_TOKEN: undefined })).message).toContain('xoxb-');
  });

  it('reports every invalid setting at once, one line each, in the order of the docs', () => {
    let thrown: unknown;
    try {
      loadConfig({ PORT: 'nope', LOG_LEVEL: 'loud', COUNTERSIGN_LEASE_TTL: 'soon' });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigErrors);
    const errors = eachConfigError(thrown as ConfigError);
    expect(errors.map((e) => e.variable)).toEqual([
      'SLACK_BOT_TOKEN',
      'SLACK_SIGNING_SECRET',
      'SLACK_CHANNEL',
      'MSP_HOST_COMMAND',
      'PORT',
      // The default Redis, which has no password.
      'REDIS_URL',
      'COUNTERSIGN_LEASE_TTL',
      'LOG_LEVEL',
    ]);
    for (const e of errors) expect(e.message).not.toContain('\n');
    expect((thrown as Error).message.split('\n')).toEqual(errors.map((e) => e.message));
  });

  /** The variables named by what loadConfig(env) threw, one per line. */
  function invalidVariables(env: NodeJS.ProcessEnv): string[] {
    let thrown: unknown;
    try {
      loadConfig(env);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigErrors);
    for (const secret of SECRETS) expect((thrown as Error).message).not.toContain(secret);
    return eachConfigError(thrown as ConfigError).map((e) => e.variable);
  }

  it.each<[string, Record<string, string | undefined>, string[]]>([
    [
      'Slack',
      {
        SLACK_BOT_TOKEN: APP_TOKEN,
        SLACK_API_URL: 'not a url',
        SLACK_API_TIMEOUT: 'soon',
        SLACK_CHANNEL: 'general',
      },
      ['SLACK_BOT_TOKEN', 'SLACK_API_URL', 'SLACK_API_TIMEOUT', 'SLACK_CHANNEL'],
    ],
    [
      'Slack, in Socket Mode',
      { SLACK_APP_TOKEN: BOT_TOKEN, SLACK_CHANNEL: 'general' },
      ['SLACK_APP_TOKEN', 'SLACK_CHANNEL'],
    ],
    [
      'limits',
      { COUNTERSIGN_RESOLVED_TTL: 'forever', COUNTERSIGN_AUDIT_MAXLEN: '-1', COUNTERSIGN_LEASE_TTL: '1s' },
      ['COUNTERSIGN_RESOLVED_TTL', 'COUNTERSIGN_AUDIT_MAXLEN', 'COUNTERSIGN_LEASE_TTL'],
    ],
    [
      'PagerDuty',
      { PAGERDUTY_ROUTING_KEY: 'your key', PAGERDUTY_EVENTS_URL: 'nowhere', PAGERDUTY_API_URL: 'ftp://x' },
      ['PAGERDUTY_ROUTING_KEY', 'PAGERDUTY_EVENTS_URL', 'PAGERDUTY_API_URL'],
    ],
    [
      'Redis Cluster',
      { REDIS_CLUSTER_NODES: 'a:1:2', REDIS_SENTINEL_PASSWORD: 'redispassword' },
      ['REDIS_SENTINEL_PASSWORD', 'REDIS_CLUSTER_NODES'],
    ],
    [
      'one Redis',
      {
        REDIS_URL: 'redis://h/abc',
        REDIS_PASSWORD: 'redispassword',
        REDIS_SENTINEL_PASSWORD: 'redispassword',
      },
      ['REDIS_PASSWORD', 'REDIS_SENTINEL_PASSWORD', 'REDIS_URL'],
    ],
  ])('names every invalid variable of the %s settings at once', (_section, overrides, variables) => {
    expect(invalidVariables(socketEnv(overrides))).toEqual(variables);
  });

  it('reads nothing more from a configuration file that failed: its error is said once', () => {
    const err = configError(
      socketEnv({ COUNTERSIGN_CONFIG: '/nonexistent/countersign.yml', MSP_HOST_COMMAND: undefined }),
    );
    expect(err).not.toBeInstanceOf(ConfigErrors);
    expect(err.variable).toBe('COUNTERSIGN_CONFIG');
  });

  it('rejects a bot token without the xoxb- prefix, without echoing it', () => {
    const err = configError(socketEnv({ SLACK_BOT_TOKEN: ['xoxp', 'USER1'].join('-') }));
    expect(err.variable).toBe('SLACK_BOT_TOKEN');
    expect(err.message).toContain('xoxb-');
    expect(err.message).not.toContain('USER1');
  });

  it('rejects an app token without the xapp- prefix, without echoing it', () => {
    const err = configError(socketEnv({ SLACK_APP_TOKEN: BOT_TOKEN }));
    expect(err.variable).toBe('SLACK_APP_TOKEN');
    expect(err.message).toContain('xapp-');
  });

  // The README's quick start as pasted, and other placeholders: fail here with the variable's
  // name, not later as "Cannot convert argument to a ByteString" retried for ever.
  it.each([
    ['SLACK_BOT_TOKEN', 'xoxb-…', socketEnv({ SLACK_BOT_TOKEN: 'xoxb-…' })],
    ['SLACK_BOT_TOKEN', 'your bot', socketEnv({ SLACK_BOT_TOKEN: 'xoxb-your bot token' })],
    ['SLACK_BOT_TOKEN', '1234-r', socketEnv({ SLACK_BOT_TOKEN: 'xoxb-1234-résumé' })],
    ['SLACK_APP_TOKEN', 'xapp-…', socketEnv({ SLACK_APP_TOKEN: 'xapp-…' })],
    ['SLACK_SIGNING_SECRET', '<signing', httpEnv({ SLACK_SIGNING_SECRET: '<signing secret>' })],
    ['SLACK_SIGNING_SECRET', 'abc', socketEnv({ SLACK_SIGNING_SECRET: 'abc\tdef' })],
    ['PAGERDUTY_ROUTING_KEY', 'R0UTING', socketEnv({ PAGERDUTY_ROUTING_KEY: 'R0UTING…' })],
    ['PAGERDUTY_API_TOKEN', 'your token', socketEnv({ PAGERDUTY_API_TOKEN: 'your token' })],
  ])('says that %s (%j…) still holds a placeholder, without echoing it', (name, part, env) => {
    const err = configError(env);
    expect(err.variable).toBe(name);
    expect(err.message).toMatch(new RegExp(`^${name} still holds a placeholder \\(.*\\): \\S`));
    // The documentation's own placeholders (xoxb-…) may appear in the advice; nothing else may.
    if (!part.endsWith('…')) expect(err.message).not.toContain(part);
  });

  it('takes the real tokens as they are', () => {
    const config = loadConfig(httpEnv({ SLACK_SIGNING_SECRET: 'a1!~b2#c3' }));
    expect(config.slack.signingSecret).toBe('a1!~b2#c3');
    expect(config.slack.botToken).toBe(BOT_TOKEN);
  });

  it('needs the signing secret only in HTTP mode', () => {
    expect(loadConfig(socketEnv()).slack.signingSecret).toBeUndefined();
    expect(configError(httpEnv({ SLACK_SIGNING_SECRET: '' })).variable).toBe('SLACK_SIGNING_SECRET');
  });

  it('does not echo a token put into the wrong variable', () => {
    const err = configError(socketEnv({ PORT: BOT_TOKEN }));
    expect(err.variable).toBe('PORT');
  });

  it.each(['abc', '-1', '65536', '3000.5', '1e3'])('rejects PORT=%s', (value) => {
    const err = configError(socketEnv({ PORT: value }));
    expect(err.variable).toBe('PORT');
    expect(err.message).toContain('1 to 65535');
  });

  // Port 0 would make the bot listen on a port the OS picks and nothing reports, and the image's
  // HEALTHCHECK would ask port 0.
  it.each(['0', '00000'])('refuses PORT=%s on one line', (value) => {
    const err = configError(socketEnv({ PORT: value }));
    expect(err.variable).toBe('PORT');
    expect(err.message).toBe(
      `PORT must be an integer from 1 to 65535 (got "${value}"): fix or unset it (default 3000)`,
    );
  });

  it.each(['COUNTERSIGN_USERGROUP_CACHE_TTL', 'COUNTERSIGN_MEMBERSHIP_CACHE_TTL'])(
    'trusts %s for at most 5 minutes: who may decide must not be read from an old answer',
    (name) => {
      const err = configError(socketEnv({ [name]: '6m' }));
      expect(err.variable).toBe(name);
      expect(err.message).toBe(
        `${name} must be at most 5m (got "6m"): ${name.includes('USERGROUP') ? "a user group's members" : 'who is in a channel, a guest or another team'} must not be trusted longer`,
      );
      expect(loadConfig(socketEnv({ [name]: '5m' }))).toBeDefined();
    },
  );

  it.each(['1s', '500ms', 'soon'])('rejects COUNTERSIGN_LEASE_TTL=%s on one line', (value) => {
    const err = configError(socketEnv({ COUNTERSIGN_LEASE_TTL: value }));
    expect(err.variable).toBe('COUNTERSIGN_LEASE_TTL');
    expect(err.message).not.toContain('\n');
  });

  it.each(['http://127.0.0.1:6379', 'localhost:6379', 'redis:', 'not a url'])(
    'rejects REDIS_URL=%s',
    (value) => {
      expect(configError(socketEnv({ REDIS_URL: value })).variable).toBe('REDIS_URL');
    },
  );

  it.each([
    ['redis://:redispassword@h:6379/abc', 'names database "abc", which is not a number'],
    ['redis://h/1/2', 'names database "1/2", which is not a number'],
    ['redis://h/-1', 'names database "-1", which is not a number'],
    ['redis://:redispassword@h:0', 'names port 0'],
    ['redis://:redispassword@h:6379/0?db=3', 'has a query'],
    ['rediss://h:6380/2#x', 'has a fragment'],
  ])('rejects REDIS_URL=%s at start-up, not as SELECT errors later', (value, why) => {
    const err = configError(socketEnv({ REDIS_URL: value }));
    expect(err.variable).toBe('REDIS_URL');
    expect(err.message).toContain(`REDIS_URL ${why}`);
    expect(err.message).toContain('redis://[[user]:password@]host[:port][/db]');
  });

  it.each([
    'redis://h',
    'redis://h/',
    'redis://h:6379/0',
    'rediss://:redispassword@h:6380/15',
    'redis://[::1]:6379/2',
  ])('takes REDIS_URL=%s', (value) => {
    expect(loadConfig(socketEnv({ REDIS_URL: value })).redis).toEqual({ kind: 'single', url: value });
  });

  it('does not echo a REDIS_URL that may hold a password', () => {
    const err = configError(socketEnv({ REDIS_URL: 'http://:redispassword@host' }));
    expect(err.message).not.toContain('redispassword');
  });

  it.each(['ftp://slack.com/api/', 'slack.com/api'])('rejects SLACK_API_URL=%s', (value) => {
    expect(configError(socketEnv({ SLACK_API_URL: value })).variable).toBe('SLACK_API_URL');
  });

  // The method name is appended to the URL: after a query or a fragment it names no method.
  it.each(['https://slack.com/api?x=1', 'https://slack.com/api/#top', 'https://slack.com/api/?'])(
    'refuses SLACK_API_URL=%s, with a query or a fragment, on one line',
    (value) => {
      const err = configError(socketEnv({ SLACK_API_URL: value }));
      expect(err.variable).toBe('SLACK_API_URL');
      expect(err.message).toBe(
        'SLACK_API_URL has a query (?…) or a fragment (#…), which would come before every method name: write the Web API base URL alone (default https://slack.com/api/), or unset it',
      );
    },
  );

  it.each(['general', 'U0123456789', '#Has Spaces'])('rejects SLACK_CHANNEL=%s', (value) => {
    expect(configError(socketEnv({ SLACK_CHANNEL: value })).variable).toBe('SLACK_CHANNEL');
  });

  it.each([
    ['COUNTERSIGN_GRANT_TTL', '8 hours'],
    ['COUNTERSIGN_GRANT_TTL', '0s'],
    ['COUNTERSIGN_GRANT_MAX_TTL', '7'],
    ['COUNTERSIGN_RESOLVED_TTL', '-1d'],
    ['SLACK_API_TIMEOUT', '10'],
  ])('rejects %s=%s', (name, value) => {
    const err = configError(socketEnv({ [name]: value }));
    expect(err.variable).toBe(name);
    expect(err.message).toContain('30s, 15m, 8h or 7d');
  });

  it.each([
    ['MSP_REQUEST_TIMEOUT', '30d'],
    ['COUNTERSIGN_LEASE_TTL', '25d'],
    ['SLACK_API_TIMEOUT', '24d1ms'],
  ])('rejects %s=%s: a Node timer that long would fire at once', (name, value) => {
    const err = configError(socketEnv({ [name]: value }));
    expect(err.variable).toBe(name);
    expect(err.message).toBe(
      `${name} must be at most 24d (got "${value}"): Node's timers wait no longer, and a longer one fires at once: fix or unset it`,
    );
  });

  it('takes 24d where a timer waits, and longer TTLs that only Redis keeps', () => {
    const config = loadConfig(
      socketEnv({
        MSP_REQUEST_TIMEOUT: '24d',
        COUNTERSIGN_LEASE_TTL: '24d',
        SLACK_API_TIMEOUT: '24d',
        COUNTERSIGN_RESOLVED_TTL: '90d',
        COUNTERSIGN_GRANT_TTL: '30d',
        COUNTERSIGN_GRANT_MAX_TTL: '52w',
      }),
    );
    expect(config.msp.requestTimeoutMs).toBe(24 * 86_400_000);
    expect(config.leaseTtlMs).toBe(24 * 86_400_000);
    expect(config.slack.apiTimeoutMs).toBe(24 * 86_400_000);
    expect(config.resolvedTtlMs).toBe(90 * 86_400_000);
    expect(config.grants).toEqual({ ttlMs: 30 * 86_400_000, maxTtlMs: 52 * 7 * 86_400_000 });
  });

  it('rejects a grant TTL above the maximum', () => {
    const err = configError(socketEnv({ COUNTERSIGN_GRANT_TTL: '8d' }));
    expect(err.variable).toBe('COUNTERSIGN_GRANT_TTL');
    expect(err.message).toContain('COUNTERSIGN_GRANT_MAX_TTL');
  });

  it('rejects a COUNTERSIGN_CONFIG path that does not exist', () => {
    const err = configError(socketEnv({ COUNTERSIGN_CONFIG: '/nonexistent/countersign.yml' }));
    expect(err.variable).toBe('COUNTERSIGN_CONFIG');
    expect(err.message).toContain('/nonexistent/countersign.yml');
  });

  it('rejects an unknown LOG_LEVEL', () => {
    expect(configError(socketEnv({ LOG_LEVEL: 'verbose' })).variable).toBe('LOG_LEVEL');
  });

  it.each(
    ['COUNTERSIGN_AUDIT_MAXLEN', 'COUNTERSIGN_REFUSAL_MAXLEN'].flatMap((name) =>
      ['0', '-5', '1e5', 'lots'].map((value) => [name, value]),
    ),
  )('rejects %s=%s on one line', (name, value) => {
    const err = configError(socketEnv({ [name]: value }));
    expect(err.variable).toBe(name);
    expect(err.message).toBe(
      `${name} must be a positive whole number of entries (got "${value}"): fix or unset it (default 100000)`,
    );
  });

  // A safety limit read wrong must not run without it: a bad value stops start-up, named.
  it.each(['0', '-5', '1e5', 'lots', '2,000'])(
    'rejects COUNTERSIGN_MAX_OPEN_APPROVALS_PER_HOST=%s on one line',
    (value) => {
      const err = configError(socketEnv({ COUNTERSIGN_MAX_OPEN_APPROVALS_PER_HOST: value }));
      expect(err.variable).toBe('COUNTERSIGN_MAX_OPEN_APPROVALS_PER_HOST');
      expect(err.message).toBe(
        `COUNTERSIGN_MAX_OPEN_APPROVALS_PER_HOST must be a positive whole number of approvals (got "${value}"): fix or unset it (default 2000)`,
      );
    },
  );

  it('caps each host at 2,000 open approvals unless COUNTERSIGN_MAX_OPEN_APPROVALS_PER_HOST says otherwise', () => {
    expect(loadConfig(socketEnv()).maxOpenApprovalsPerHost).toBe(2_000);
    expect(
      loadConfig(socketEnv({ COUNTERSIGN_MAX_OPEN_APPROVALS_PER_HOST: '500' })).maxOpenApprovalsPerHost,
    ).toBe(500);
  });

  it.each(['PAGERDUTY_EVENTS_URL', 'PAGERDUTY_API_URL'])('rejects a malformed %s', (name) => {
    expect(configError(socketEnv({ [name]: 'events.pagerduty.com' })).variable).toBe(name);
  });

  // Paths such as `oncalls` are resolved against it: a query or a fragment was silently dropped.
  it.each(['https://api.pagerduty.com?region=eu', 'https://pd-proxy.internal/api/#v2'])(
    'refuses PAGERDUTY_API_URL=%s, with a query or a fragment, on one line',
    (value) => {
      const err = configError(socketEnv({ PAGERDUTY_API_URL: value }));
      expect(err.variable).toBe('PAGERDUTY_API_URL');
      expect(err.message).toBe(
        'PAGERDUTY_API_URL has a query (?…) or a fragment (#…), which would be dropped from every REST call: write the REST API base URL alone (default https://api.pagerduty.com), or unset it',
      );
    },
  );
});

/** Writes a COUNTERSIGN_CONFIG file into a fresh temporary directory and returns its path. */
function configFile(yaml: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'countersign-routes-')), 'countersign.yml');
  writeFileSync(file, yaml);
  return file;
}

const GOOD_ROUTES = `
routes:              # first match wins
  - name: payments
    channel: C0PAYMENTS
    match:
      hosts: [ci]
      tools: ["shell", "write_*"]
      workspaces: ["/srv/payments/**"]
  - channel: "#deploys"
    match:
      tools: [deploy]
  - name: everything else
    channel: G0REST
`;

describe('loadConfig with COUNTERSIGN_CONFIG routes', () => {
  it('reads the routes in order, the last one without match', () => {
    const file = configFile(GOOD_ROUTES);
    const config = loadConfig(socketEnv({ COUNTERSIGN_CONFIG: file }));
    expect(config.configPath).toBe(file);
    expect(config.routes).toEqual([
      {
        name: 'payments',
        channel: 'C0PAYMENTS',
        match: { hosts: ['ci'], tools: ['shell', 'write_*'], workspaces: ['/srv/payments/**'] },
      },
      { channel: '#deploys', match: { tools: ['deploy'] } },
      { name: 'everything else', channel: 'G0REST' },
    ]);
    // SLACK_CHANNEL stays the default channel even when a route catches everything.
    expect(config.slack.channel).toBe('C0123456789');
  });

  it('treats an empty file as no routes, and a route without match as a catch-all', () => {
    expect(loadConfig(socketEnv({ COUNTERSIGN_CONFIG: configFile('') })).routes).toEqual([]);
    const file = configFile('routes:\n  - channel: C0ALL\n');
    expect(loadConfig(socketEnv({ COUNTERSIGN_CONFIG: file })).routes).toEqual([{ channel: 'C0ALL' }]);
  });

  it('takes the default channel from the first catch-all route when SLACK_CHANNEL is unset', () => {
    const file = configFile(GOOD_ROUTES);
    const config = loadConfig(socketEnv({ SLACK_CHANNEL: undefined, COUNTERSIGN_CONFIG: file }));
    expect(config.slack.channel).toBe('G0REST');
  });

  it('still needs SLACK_CHANNEL when no route catches everything', () => {
    const file = configFile('routes:\n  - channel: C0CI\n    match: { hosts: [ci] }\n');
    const err = configError(socketEnv({ SLACK_CHANNEL: undefined, COUNTERSIGN_CONFIG: file }));
    expect(err.variable).toBe('SLACK_CHANNEL');
    expect(err.message.startsWith('SLACK_CHANNEL is required: ')).toBe(true);
    expect(err.message).toContain('or add a route without match to COUNTERSIGN_CONFIG');
  });

  it('keeps the routes in redactedConfig', () => {
    const config = loadConfig(socketEnv({ COUNTERSIGN_CONFIG: configFile(GOOD_ROUTES) }));
    expect(redactedConfig(config).routes).toEqual(config.routes);
  });

  it.each([
    [
      'a misspelt route key',
      'routes:\n  - chanel: C0PAYMENTS\n',
      'routes[0]: key "chanel" is not supported (supported: name, channel, match, approvers, protectedWriteApprovers, allowSelfApproval, allowExternal, allowGuests, rejectReason, quickReasons, quorum, grants, oncall, escalation, sla)',
    ],
    [
      'a misspelt match key',
      'routes:\n  - channel: C0A\n  - channel: C0B\n    match: { tool: [shell] }\n',
      'routes[1].match: key "tool" is not supported (supported: hosts, tools, workspaces, sessionTitles, subjects, protectedWrite)',
    ],
    [
      'an unknown top-level key',
      'routes: []\napprovers: [U0123]\nchannels: []\n',
      'top-level keys "approvers", "channels" are not supported (supported: hosts, routes, admins, risks)',
    ],
    [
      'a channel name without #',
      'routes:\n  - channel: C0OK\n  - channel: general\n',
      'routes[1].channel must be a channel ID such as C0123456789 or #name (got "general")',
    ],
    ['a missing channel', 'routes:\n  - name: payments\n', 'routes[0].channel is required'],
    [
      'an empty channel',
      'routes:\n  - channel:\n',
      'routes[0].channel must be a channel ID such as C0123456789 or #name (got nothing)',
    ],
    [
      'an empty pattern list',
      'routes:\n  - channel: C0A\n    match: { tools: [] }\n',
      'routes[0].match.tools must list at least one value (or leave the key out to match anything)',
    ],
    [
      'a pattern that is not a string',
      'routes:\n  - channel: C0A\n    match: { hosts: [ci, 42] }\n',
      'routes[0].match.hosts[1] must be a non-empty string (got 42)',
    ],
    ['a scalar where a list belongs', 'routes: C0A\n', 'routes must be a list (got "C0A")'],
    [
      'a list at the top',
      '- channel: C0A\n',
      'the file must be a mapping such as "routes: [...]" (got a list)',
    ],
  ])('rejects %s on one line naming the file and the path', (_, yaml, problem) => {
    const file = configFile(yaml);
    const err = configError(socketEnv({ COUNTERSIGN_CONFIG: file }));
    expect(err.variable).toBe('COUNTERSIGN_CONFIG');
    expect(err.message).toBe(`COUNTERSIGN_CONFIG (${file}): ${problem}`);
  });

  it('rejects invalid YAML on one line with its position', () => {
    const file = configFile('routes:\n  - channel: [C0A\n');
    const err = configError(socketEnv({ COUNTERSIGN_CONFIG: file }));
    expect(err.variable).toBe('COUNTERSIGN_CONFIG');
    expect(err.message).toMatch(
      /^COUNTERSIGN_CONFIG \(.+countersign\.yml\): invalid YAML: .+ at line \d+, column \d+$/,
    );
    expect(err.message).toContain(file);
  });

  it('rejects a duplicate key as invalid YAML', () => {
    const file = configFile('routes: []\nroutes: []\n');
    expect(configError(socketEnv({ COUNTERSIGN_CONFIG: file })).message).toBe(
      `COUNTERSIGN_CONFIG (${file}): invalid YAML: Map keys must be unique at line 2, column 1`,
    );
  });
});

describe('parseDuration', () => {
  it.each([
    ['30s', 30_000],
    ['15m', 900_000],
    ['8h', 28_800_000],
    ['7d', 604_800_000],
    ['1h30m', 5_400_000],
    ['500ms', 500],
  ])('parses %s', (text, ms) => {
    expect(parseDuration(text)).toBe(ms);
  });

  it.each(['', '8', 'h', '8 h', '1.5h', '-1h'])('refuses %j', (text) => {
    expect(parseDuration(text)).toBeUndefined();
  });
});

describe('where Redis is', () => {
  it('takes one Redis from REDIS_URL', () => {
    const config = loadConfig(socketEnv({ REDIS_URL: 'redis://:redispassword@redis.internal:6379/3' }));
    expect(config.redis).toEqual({ kind: 'single', url: 'redis://:redispassword@redis.internal:6379/3' });
    expect(config.redisUrl).toBe('redis://:redispassword@redis.internal:6379/3');
  });

  it('takes a Sentinel set from a redis+sentinel:// REDIS_URL, with its password and db', () => {
    const config = loadConfig(
      socketEnv({
        REDIS_URL:
          'redis+sentinel://:redis%40password@sentinel-a:26379,10.0.0.2:26380,[::1]:26381/my-master?db=4',
        REDIS_SENTINEL_PASSWORD: 'sentinelsecret',
      }),
    );
    expect(config.redis).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 'sentinel-a', port: 26379 },
        { host: '10.0.0.2', port: 26380 },
        { host: '::1', port: 26381 },
      ],
      name: 'my-master',
      db: 4,
      password: 'redis@password',
      sentinelPassword: 'sentinelsecret',
    });
    expect(config.redisUrl).toBe(
      'redis+sentinel://sentinel-a:26379,10.0.0.2:26380,[::1]:26381/my-master?db=4',
    );
  });

  it('takes a user, the default sentinel port and db 0 when the URL leaves them out', () => {
    const config = loadConfig(
      socketEnv({ REDIS_URL: 'redis+sentinel://app:pw@sentinel-a,sentinel-b/mymaster' }),
    );
    expect(config.redis).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 'sentinel-a', port: 26379 },
        { host: 'sentinel-b', port: 26379 },
      ],
      name: 'mymaster',
      db: 0,
      username: 'app',
      password: 'pw',
    });
  });

  it.each([
    'redis+sentinel://sentinel-a:26379',
    'redis+sentinel://sentinel-a:26379/',
    'redis+sentinel://sentinel-a:99999/mymaster',
    'redis+sentinel://sentinel-a:26379,/mymaster',
    'redis+sentinel://:redispassword@sentinel-a/mymaster?db=x',
    'redis+sentinel://:redispassword@sentinel-a/mymaster?tls=1',
  ])('refuses REDIS_URL=%s without echoing it', (value) => {
    const err = configError(socketEnv({ REDIS_URL: value }));
    expect(err.variable).toBe('REDIS_URL');
    expect(err.message).toContain('redis+sentinel://[[user]:password@]host:port,host:port/masterName');
    expect(err.message).not.toContain('sentinel-a');
  });

  it.each([
    ['redis://:p%ssredispassword@127.0.0.1:6379', 'user or password'],
    ['redis://us%zz:redispassword@127.0.0.1:6379', 'user or password'],
    ['rediss://:redispassword%@127.0.0.1:6380/2', 'user or password'],
    ['redis+sentinel://:p%ssredispassword@h1:26379/mymaster', 'user or password'],
    ['redis+sentinel://a%g:redispassword@h1:26379/mymaster', 'user or password'],
    ['redis+sentinel://:redispassword@h1:26379/my%zzmaster', 'master name'],
  ])('refuses REDIS_URL=%s, whose %s has a "%" that is no escape, in one line without it', (value, part) => {
    // configError checks that no line holds "redispassword".
    const err = configError(socketEnv({ REDIS_URL: value }));
    expect(err.variable).toBe('REDIS_URL');
    expect(err.message).toBe(
      `REDIS_URL has a "%" not followed by two hex digits in its ${part}: write it as %25`,
    );
  });

  // A password with "/", "?" or "#" ends the URL's authority early: the rest of the password
  // becomes the database, the query or the fragment, and a part echoed would show it.
  it.each([
    ['redis://default:4821/Zq9sK2mP@redis.internal:6379', '/'],
    ['redis://default:4821/ab?Zq9sK2mP@redis.internal:6379', '/'],
    ['redis://default:4821?Zq9sK2mP@redis.internal:6379', '?'],
    ['redis://default:4821#Zq9sK2mP@redis.internal:6379', '#'],
  ])('refuses REDIS_URL=%s, whose password has a "%s", without echoing any of it', (value, cut) => {
    const err = configError(socketEnv({ REDIS_URL: value }));
    expect(err.variable).toBe('REDIS_URL');
    expect(err.message).toBe(
      `REDIS_URL has a "${cut}" before its "@", which ends the user and password early (not shown: it may hold the password): write "/" in them as %2F, "?" as %3F and "#" as %23`,
    );
    expect(err.message).not.toContain('Zq9sK2mP');
    expect(err.message).not.toContain('4821');
  });

  it('refuses a REDIS_URL database with a "%" that is no escape as a database that is not a number', () => {
    expect(configError(socketEnv({ REDIS_URL: 'redis://:redispassword@127.0.0.1:6379/%zz' })).message).toBe(
      'REDIS_URL names database "%zz", which is not a number (0 to 15 on a default Redis): write it as redis://[[user]:password@]host[:port][/db], or fix or unset it',
    );
  });

  it('reports the other invalid settings along with a REDIS_URL password that has a bare "%"', () => {
    let thrown: unknown;
    try {
      loadConfig(socketEnv({ REDIS_URL: 'redis+sentinel://:p%ssredispassword@h1/mymaster', PORT: 'http' }));
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigErrors);
    const errors = eachConfigError(thrown as ConfigError);
    expect(errors.map((e) => e.variable)).toEqual(['PORT', 'REDIS_URL']);
    expect((thrown as Error).message).not.toContain('redispassword');
  });

  it('takes a Sentinel set from REDIS_SENTINELS and REDIS_SENTINEL_NAME, with both passwords', () => {
    const config = loadConfig(
      socketEnv({
        REDIS_SENTINELS: ' s1.internal:26379, s2.internal ,s3.internal:26400 ',
        REDIS_SENTINEL_NAME: 'countersign',
        REDIS_PASSWORD: 'redispassword',
        REDIS_SENTINEL_PASSWORD: 'sentinelsecret',
      }),
    );
    expect(config.redis).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: 's1.internal', port: 26379 },
        { host: 's2.internal', port: 26379 },
        { host: 's3.internal', port: 26400 },
      ],
      name: 'countersign',
      db: 0,
      password: 'redispassword',
      sentinelPassword: 'sentinelsecret',
    });
    expect(config.redisUrl).toBe(
      'redis+sentinel://s1.internal:26379,s2.internal:26379,s3.internal:26400/countersign',
    );
  });

  it('needs REDIS_SENTINELS and REDIS_SENTINEL_NAME together, naming the one missing', () => {
    const noName = configError(socketEnv({ REDIS_SENTINELS: 's1:26379' }));
    expect(noName.variable).toBe('REDIS_SENTINEL_NAME');
    expect(noName.message).toMatch(/^REDIS_SENTINEL_NAME is required with REDIS_SENTINELS/);
    const noSentinels = configError(socketEnv({ REDIS_SENTINEL_NAME: 'mymaster' }));
    expect(noSentinels.variable).toBe('REDIS_SENTINEL_NAME');
    expect(noSentinels.message).toMatch(/^REDIS_SENTINEL_NAME is set without REDIS_SENTINELS/);
  });

  it('takes a Cluster from REDIS_CLUSTER_NODES, with REDIS_PASSWORD', () => {
    const config = loadConfig(
      socketEnv({
        REDIS_CLUSTER_NODES: '10.0.0.1:7000,10.0.0.2:7001,redis-c',
        REDIS_PASSWORD: 'redispassword',
      }),
    );
    expect(config.redis).toEqual({
      kind: 'cluster',
      nodes: [
        { host: '10.0.0.1', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
        { host: 'redis-c', port: 6379 },
      ],
      password: 'redispassword',
    });
    expect(config.redisUrl).toBe('cluster 10.0.0.1:7000,10.0.0.2:7001,redis-c:6379');
  });

  it.each([
    ['REDIS_SENTINELS', 's1:26379;s2:26379'],
    ['REDIS_SENTINELS', 's1:0'],
    ['REDIS_CLUSTER_NODES', '10.0.0.1:7000,,10.0.0.2:7001'],
    ['REDIS_CLUSTER_NODES', 'redis://10.0.0.1:7000'],
  ])('refuses a malformed %s=%s', (name, value) => {
    const err = configError(
      socketEnv({ [name]: value, REDIS_SENTINEL_NAME: name === 'REDIS_SENTINELS' ? 'm' : '' }),
    );
    expect(err.variable).toBe(name);
    expect(err.message).toContain('host:port,host:port');
  });

  it.each([
    ['REDIS_CLUSTER_NODES', 'redis://:redispassword@node1:6379,redis://:redispassword@node2:6379'],
    ['REDIS_CLUSTER_NODES', 'default:redispassword@node1:6379'],
    ['REDIS_CLUSTER_NODES', 'node1:6379?password=redispassword'],
    ['REDIS_SENTINELS', 'admin:redispassword@s1:26379'],
    ['REDIS_SENTINELS', 'redis://:redispassword@s1:26379,s2:26379'],
  ])('refuses %s=%s without showing the password it carries', (name, value) => {
    // configError checks that no line holds "redispassword".
    const err = configError(
      socketEnv({ [name]: value, REDIS_SENTINEL_NAME: name === 'REDIS_SENTINELS' ? 'm' : '' }),
    );
    expect(err.variable).toBe(name);
    expect(err.message).toMatch(
      new RegExp(`^${name} must list .* as host:port,host:port \\(got .*not shown`),
    );
  });

  it.each([
    ['REDIS_URL', 'REDIS_SENTINELS'],
    ['REDIS_URL', 'REDIS_CLUSTER_NODES'],
    ['REDIS_SENTINELS', 'REDIS_CLUSTER_NODES'],
  ])('refuses %s together with %s, naming both on one line', (first, second) => {
    const values: Record<string, string> = {
      REDIS_URL: 'redis://127.0.0.1:6379',
      REDIS_SENTINELS: 's1:26379',
      REDIS_CLUSTER_NODES: '10.0.0.1:7000',
    };
    const err = configError(
      socketEnv({ [first]: values[first], [second]: values[second], REDIS_SENTINEL_NAME: 'mymaster' }),
    );
    expect(err.message).toMatch(new RegExp(`^${first} and ${second} are both set`));
  });

  it('refuses a password variable that nothing would use', () => {
    expect(configError(socketEnv({ REDIS_PASSWORD: 'redispassword' })).variable).toBe('REDIS_PASSWORD');
    const withUrl = configError(socketEnv({ REDIS_URL: 'redis://h:6379', REDIS_PASSWORD: 'redispassword' }));
    expect(withUrl.message).toMatch(/^REDIS_PASSWORD is set, but .* put the password in REDIS_URL/);
    expect(configError(socketEnv({ REDIS_SENTINEL_PASSWORD: 'x' })).variable).toBe('REDIS_SENTINEL_PASSWORD');
    expect(
      configError(socketEnv({ REDIS_CLUSTER_NODES: 'h:7000', REDIS_SENTINEL_PASSWORD: 'x' })).variable,
    ).toBe('REDIS_SENTINEL_PASSWORD');
  });
});

describe('a Redis without a password', () => {
  // Anything that can write to Redis can write itself a grant: the agent reaches what the bot does.
  /** socketEnv without its REDIS_ALLOW_NO_PASSWORD. */
  const strictEnv = (overrides: Record<string, string | undefined> = {}) =>
    socketEnv({ REDIS_ALLOW_NO_PASSWORD: undefined, ...overrides });
  const OR_ALLOW = 'or set REDIS_ALLOW_NO_PASSWORD=true where nothing else can reach Redis';

  it('is refused when REDIS_URL is unset: its default has none', () => {
    const err = configError(strictEnv());
    expect(err.variable).toBe('REDIS_URL');
    expect(err.message).toBe(
      `REDIS_URL is unset, and its default redis://127.0.0.1:6379 has no password: an agent that can reach this Redis could write itself a grant; set a password (redis://:PASSWORD@host:6379, requirepass) ${OR_ALLOW}`,
    );
  });

  it.each([
    'redis://redis.internal:6379',
    'rediss://redis.internal:6380/2',
    'redis://countersign@redis.internal:6379',
    'redis://:@redis.internal:6379',
  ])('is refused in REDIS_URL=%s, in one line naming REDIS_URL', (url) => {
    const err = configError(strictEnv({ REDIS_URL: url }));
    expect(err.variable).toBe('REDIS_URL');
    expect(err.message).toBe(
      `REDIS_URL has no password: an agent that can reach this Redis could write itself a grant; set a password (redis://:PASSWORD@host:6379, requirepass) ${OR_ALLOW}`,
    );
  });

  it('is refused in a redis+sentinel:// REDIS_URL, even with the sentinels’ own password', () => {
    const err = configError(
      strictEnv({
        REDIS_URL: 'redis+sentinel://s1:26379/mymaster',
        REDIS_SENTINEL_PASSWORD: 'sentinelsecret',
      }),
    );
    expect(err.variable).toBe('REDIS_URL');
    expect(err.message).toBe(
      `REDIS_URL has no password for the master: an agent that can reach this Redis could write itself a grant; put the master's password (requirepass) in it: redis+sentinel://:PASSWORD@host:26379/masterName ${OR_ALLOW}`,
    );
  });

  it('is refused with REDIS_SENTINELS or REDIS_CLUSTER_NODES but no REDIS_PASSWORD, naming REDIS_PASSWORD', () => {
    const sentinels = configError(
      strictEnv({
        REDIS_SENTINELS: 's1:26379',
        REDIS_SENTINEL_NAME: 'mymaster',
        REDIS_SENTINEL_PASSWORD: 'sentinelsecret',
      }),
    );
    expect(sentinels.variable).toBe('REDIS_PASSWORD');
    expect(sentinels.message).toBe(
      `REDIS_PASSWORD is unset, so the master the sentinels name is reached with no password: an agent that can reach this Redis could write itself a grant; set REDIS_PASSWORD to the master's password (requirepass) ${OR_ALLOW}`,
    );
    const cluster = configError(strictEnv({ REDIS_CLUSTER_NODES: 'node1:6379,node2:6379' }));
    expect(cluster.variable).toBe('REDIS_PASSWORD');
    expect(cluster.message).toBe(
      `REDIS_PASSWORD is unset, so the nodes of REDIS_CLUSTER_NODES are reached with no password: an agent that can reach this Redis could write itself a grant; set REDIS_PASSWORD to the nodes' password (requirepass) ${OR_ALLOW}`,
    );
  });

  it('is reported with the other invalid settings', () => {
    let thrown: unknown;
    try {
      loadConfig(strictEnv({ PORT: 'http', REDIS_URL: 'redis://redis.internal:6379' }));
    } catch (error) {
      thrown = error;
    }
    expect(eachConfigError(thrown as ConfigError).map((e) => e.variable)).toEqual(['PORT', 'REDIS_URL']);
  });

  it('is taken with REDIS_ALLOW_NO_PASSWORD=true, and said in the config', () => {
    for (const env of [
      strictEnv({ REDIS_ALLOW_NO_PASSWORD: 'true' }),
      strictEnv({ REDIS_ALLOW_NO_PASSWORD: 'TRUE', REDIS_URL: 'redis://redis.internal:6379/2' }),
      strictEnv({
        REDIS_ALLOW_NO_PASSWORD: 'true',
        REDIS_SENTINELS: 's1:26379',
        REDIS_SENTINEL_NAME: 'mymaster',
      }),
      strictEnv({ REDIS_ALLOW_NO_PASSWORD: 'true', REDIS_CLUSTER_NODES: 'node1:6379' }),
    ]) {
      expect(loadConfig(env).redisUnauthenticated).toBe(true);
    }
    expect(loadConfig(strictEnv({ REDIS_ALLOW_NO_PASSWORD: 'true' })).redis).toEqual({
      kind: 'single',
      url: 'redis://127.0.0.1:6379',
    });
  });

  it('REDIS_ALLOW_NO_PASSWORD=false refuses it as unset does', () => {
    const err = configError(strictEnv({ REDIS_ALLOW_NO_PASSWORD: 'false', REDIS_URL: 'redis://h:6379' }));
    expect(err.variable).toBe('REDIS_URL');
  });

  it('REDIS_ALLOW_NO_PASSWORD other than true or false stops start-up, even with a password', () => {
    for (const url of ['redis://h:6379', 'redis://:redispassword@h:6379']) {
      const err = configError(strictEnv({ REDIS_ALLOW_NO_PASSWORD: 'yes', REDIS_URL: url }));
      expect(err.variable).toBe('REDIS_ALLOW_NO_PASSWORD');
      expect(err.message).toBe('REDIS_ALLOW_NO_PASSWORD must be true or false (got "yes"): fix or unset it');
    }
  });

  it('with a password, needs no REDIS_ALLOW_NO_PASSWORD', () => {
    const cases: Array<[Record<string, string>, RedisTarget['kind']]> = [
      [{ REDIS_URL: 'redis://:redispassword@redis.internal:6379' }, 'single'],
      [{ REDIS_URL: 'rediss://countersign:redispassword@redis.internal:6380/2' }, 'single'],
      [{ REDIS_URL: 'redis+sentinel://:redispassword@s1:26379/mymaster' }, 'sentinel'],
      [
        { REDIS_SENTINELS: 's1:26379', REDIS_SENTINEL_NAME: 'mymaster', REDIS_PASSWORD: 'redispassword' },
        'sentinel',
      ],
      [{ REDIS_CLUSTER_NODES: 'node1:6379', REDIS_PASSWORD: 'redispassword' }, 'cluster'],
    ];
    for (const [env, kind] of cases) {
      const config = loadConfig(strictEnv(env));
      expect(config.redis.kind).toBe(kind);
      expect(config.redisUnauthenticated).toBe(false);
      expect(config.redisAllowNoPassword).toBe(false);
    }
    // Set beside a password, it only spares the check that Redis asks for it (wiring/redis.ts).
    const allowed = loadConfig(
      strictEnv({ REDIS_ALLOW_NO_PASSWORD: 'true', REDIS_URL: 'redis://:redispassword@h:6379' }),
    );
    expect(allowed.redisUnauthenticated).toBe(false);
    expect(allowed.redisAllowNoPassword).toBe(true);
  });
});

describe('redactedConfig', () => {
  it('hides every token and secret', () => {
    const config = loadConfig(
      socketEnv({
        SLACK_SIGNING_SECRET: SIGNING_SECRET,
        REDIS_URL: 'redis://default:redispassword@redis.internal:6379/0',
        PAGERDUTY_ROUTING_KEY: ROUTING_KEY,
        PAGERDUTY_API_TOKEN: PD_TOKEN,
        COUNTERSIGN_REPLICA_SECRET: REPLICA_SECRET,
      }),
    );
    const redacted = redactedConfig(config);
    const text = JSON.stringify(redacted);
    for (const secret of SECRETS) expect(text).not.toContain(secret);
    expect(redacted.slack.botToken).toBe('[set]');
    expect(redacted.slack.appToken).toBe('[set]');
    expect(redacted.slack.signingSecret).toBe('[set]');
    expect(redacted.pagerDuty.routingKey).toBe('[set]');
    expect(redacted.pagerDuty.apiToken).toBe('[set]');
    expect(redacted.replicaSecret).toBe('[set]');
    expect(redacted.redisUrl).toBe('redis://default:[redacted]@redis.internal:6379/0');
    expect(redacted.slack.channel).toBe('C0123456789');
    // The original is untouched.
    expect(config.slack.botToken).toBe(BOT_TOKEN);
  });

  it('hides the Sentinel and Cluster passwords', () => {
    const sentinel = redactedConfig(
      loadConfig(
        socketEnv({
          REDIS_URL: 'redis+sentinel://:redispassword@s1:26379/mymaster',
          REDIS_SENTINEL_PASSWORD: 'sentinelsecret',
        }),
      ),
    );
    expect(JSON.stringify(sentinel)).not.toMatch(/redispassword|sentinelsecret/);
    expect(sentinel.redis).toMatchObject({ kind: 'sentinel', password: '[set]', sentinelPassword: '[set]' });
    const cluster = redactedConfig(
      loadConfig(socketEnv({ REDIS_CLUSTER_NODES: 'h:7000', REDIS_PASSWORD: 'redispassword' })),
    );
    expect(JSON.stringify(cluster)).not.toContain('redispassword');
    expect(cluster.redis).toEqual({ kind: 'cluster', nodes: [{ host: 'h', port: 7000 }], password: '[set]' });
    const single = redactedConfig(loadConfig(socketEnv({ REDIS_URL: 'redis://:redispassword@h:6379' })));
    expect(single.redis).toEqual({ kind: 'single', url: 'redis://:[redacted]@h:6379' });
  });

  it('hides a secret by what it means, at any depth: a step’s routing key, host env values, any URL’s password', () => {
    const stepKey = 'STEPROUTINGKEYSUPERSECRET000000';
    const agentKey = ['sk', 'ant', 'agentkey', 'SUPERSECRET', '0123456789'].join('-');
    const file = configFile(`
hosts:
  - id: main
    command: "HOST_TOKEN=hosttokenSUPERSECRET muse serve --api-key agentflagSUPERSECRET"
    env: { ANTHROPIC_API_KEY: ${agentKey}, MUSE_PROFILE: quiet }
routes:
  - name: deploys
    channel: C0DEPLOYS
    match: { tools: [deploy] }
    escalation:
      - { after: 5m, action: page, routingKey: ${stepKey} }
  - channel: C0REST
`);
    const config = loadConfig(
      socketEnv({
        MSP_HOST_COMMAND: undefined,
        COUNTERSIGN_CONFIG: file,
        PAGERDUTY_ROUTING_KEY: ROUTING_KEY,
        PAGERDUTY_API_URL: 'https://pd-proxy:pdproxy%2FSUPERSECRET@pd.internal/api',
        SLACK_API_URL: 'https://slack-proxy:slackproxySUPERSECRET@slack.internal/api/',
      }),
    );
    const redacted = redactedConfig(config);
    expect(JSON.stringify(redacted)).not.toMatch(/SUPERSECRET/);
    expect(redacted.routes[0]?.escalation).toEqual([
      { afterMs: 300_000, action: 'page', routingKey: '[set]' },
    ]);
    expect(redacted.msp.hosts[0]).toEqual({
      id: 'main',
      command: 'HOST_TOKEN=[masked secret-value] muse serve --api-key [masked secret-value]',
      sandboxMode: 'default',
      env: { ANTHROPIC_API_KEY: '[redacted]', MUSE_PROFILE: '[redacted]' },
    });
    expect(redacted.pagerDuty.apiUrl).toBe('https://pd-proxy:[redacted]@pd.internal/api');
    expect(redacted.slack.apiUrl).toBe('https://slack-proxy:[redacted]@slack.internal/api/');
    // What is not secret reads as it was.
    expect(redacted.routes[1]).toEqual({ channel: 'C0REST' });
    expect(redacted.routes[0]?.name).toBe('deploys');
    expect(redacted.pagerDuty.eventsUrl).toBe('https://events.pagerduty.com/v2/enqueue');

    // The logger is told each hidden value, and a URL's password also as it is written there.
    expect(configSecrets(config)).toEqual(
      expect.arrayContaining([
        BOT_TOKEN,
        APP_TOKEN,
        ROUTING_KEY,
        stepKey,
        agentKey,
        'quiet',
        'hosttokenSUPERSECRET',
        'agentflagSUPERSECRET',
        'pdproxy%2FSUPERSECRET',
        'pdproxy/SUPERSECRET',
        'slackproxySUPERSECRET',
      ]),
    );
    expect(configSecrets(config)).not.toContain('muse');
  });

  it('leaves unset secrets out', () => {
    const redacted = redactedConfig(loadConfig(socketEnv()));
    expect(redacted.pagerDuty).not.toHaveProperty('routingKey');
    expect(redacted.pagerDuty).not.toHaveProperty('apiToken');
    expect(redacted.slack).not.toHaveProperty('signingSecret');
    expect(redacted).not.toHaveProperty('replicaSecret');
  });

  it('logs [set] for the secrets that are set and nothing for the others', () => {
    const { logger, lines } = captureLogger('info');
    logger.info(
      { config: redactedConfig(loadConfig(httpEnv({ PAGERDUTY_API_TOKEN: PD_TOKEN }))) },
      'listening',
    );
    expect(lines[0]?.config).toMatchObject({
      slack: { botToken: '[set]', signingSecret: '[set]' },
      pagerDuty: { apiToken: '[set]' },
    });
    const config = lines[0]?.config as { slack: object; pagerDuty: object };
    expect(config.slack).not.toHaveProperty('appToken');
    expect(config.pagerDuty).not.toHaveProperty('routingKey');
    // A real secret under the same path is still redacted by the logger.
    logger.info({ config: { slack: { botToken: BOT_TOKEN } } }, 'raw');
    expect(lines[1]?.config).toEqual({ slack: { botToken: '[redacted]' } });
  });
});
