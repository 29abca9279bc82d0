// What a host inherits of the bot's environment (src/config/hostEnvironment.ts): every name the
// configuration reads is withheld, whichever branch reads it, and what is not the bot's passes.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { hostEnvironment, isBotSetting, withheldSettings } from '../../../src/config/hostEnvironment.js';

const BOT_TOKEN = ['xoxb', 'test', '1111', '2222', 'HOSTENV'].join('-');
const APP_TOKEN = ['xapp', 'test', 'HOSTENV'].join('-');

/** The names `loadConfig` reads of `env` (set or not), and whether it accepted it. */
function namesRead(env: NodeJS.ProcessEnv): Set<string> {
  const names = new Set<string>();
  const recording = new Proxy(env, {
    get(target, name) {
      if (typeof name === 'string') names.add(name);
      return Reflect.get(target, name);
    },
    has(target, name) {
      if (typeof name === 'string') names.add(name);
      return Reflect.has(target, name);
    },
  });
  try {
    loadConfig(recording);
  } catch {
    // An invalid environment is read too: its reads count as well.
  }
  return names;
}

function hostsFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'countersign-hostenv-'));
  const path = join(dir, 'countersign.yml');
  writeFileSync(
    path,
    'hosts:\n  - id: main\n    command: muse serve\n    env: { MUSE_PROFILE: ci }\nroutes:\n  - channel: C0123456789\n',
  );
  return path;
}

it('withholds every variable the configuration reads, in every mode and Redis deployment', () => {
  const base = { SLACK_BOT_TOKEN: BOT_TOKEN, SLACK_CHANNEL: 'C0123456789', MSP_HOST_COMMAND: 'muse serve' };
  const environments: NodeJS.ProcessEnv[] = [
    {},
    { ...base, SLACK_APP_TOKEN: APP_TOKEN },
    { ...base, SLACK_SIGNING_SECRET: 'signing-secret-hostenv', METRICS_PORT: '9100' },
    { ...base, SLACK_APP_TOKEN: APP_TOKEN, REDIS_SENTINELS: 'a:26379', REDIS_SENTINEL_NAME: 'mymaster' },
    { ...base, SLACK_APP_TOKEN: APP_TOKEN, REDIS_CLUSTER_NODES: 'a:6379', REDIS_PASSWORD: 'pw-hostenv' },
    { ...base, SLACK_APP_TOKEN: APP_TOKEN, REDIS_URL: 'redis+sentinel://:pw@a:26379/mymaster' },
    {
      SLACK_BOT_TOKEN: BOT_TOKEN,
      SLACK_APP_TOKEN: APP_TOKEN,
      COUNTERSIGN_CONFIG: hostsFile(),
      PAGERDUTY_ROUTING_KEY: 'routing-key-hostenv',
    },
  ];
  const read = new Set(environments.flatMap((env) => [...namesRead(env)]));
  // The recording sees the reads: the test is not empty.
  expect([...read]).toEqual(
    expect.arrayContaining([
      'SLACK_BOT_TOKEN',
      'REDIS_URL',
      'COUNTERSIGN_REPLICA_SECRET',
      'PORT',
      'LOG_LEVEL',
    ]),
  );
  expect(read.size).toBeGreaterThan(30);
  expect([...read].filter((name) => !isBotSetting(name))).toEqual([]);
});

it("passes what is not the bot's, and the host's own env over everything", () => {
  const botEnv = {
    PATH: '/usr/bin',
    OPENAI_API_KEY: 'provider-key',
    SLACK_SIGNING_SECRET: 'signing',
    REDIS_URL: 'redis://:pw@redis:6379',
    PORT: '3000',
    LOG_LEVEL: 'debug',
    COUNTERSIGN_REPLICA_SECRET: 'replica',
    PAGERDUTY_API_TOKEN: 'pd',
    SLACK_PORT: undefined,
  };
  expect(hostEnvironment(botEnv, { MUSE_PROFILE: 'ci', LOG_LEVEL: 'warn' })).toEqual({
    PATH: '/usr/bin',
    OPENAI_API_KEY: 'provider-key',
    MUSE_PROFILE: 'ci',
    LOG_LEVEL: 'warn',
  });
  expect(hostEnvironment(botEnv, undefined)).toEqual({ PATH: '/usr/bin', OPENAI_API_KEY: 'provider-key' });
  expect(withheldSettings(botEnv)).toEqual([
    'COUNTERSIGN_REPLICA_SECRET',
    'LOG_LEVEL',
    'PAGERDUTY_API_TOKEN',
    'PORT',
    'REDIS_URL',
    'SLACK_SIGNING_SECRET',
  ]);
});
