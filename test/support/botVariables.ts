// The environment variables the bot reads, taken from the bot itself: the names its configuration
// loader (src/config) asks its environment for. Deployment files (Kubernetes, Compose) are checked
// against this, not against a list copied by hand; test/unit/config/botVariables.test.ts checks
// that docs/configuration.md documents the same names.

import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Config, loadConfig } from '../../src/config/config.js';
import { PROJECT_ROOT } from './bot.js';
import { FAKE_SLACK_APP_TOKEN, FAKE_SLACK_BOT_TOKEN } from './fakeSecrets.js';
import { NO_REDIS_PASSWORD } from './testRedis.js';

/** loadConfig on `env`, with the names it read (set or not) recorded. Throws what loadConfig throws. */
export function loadObserved(env: Record<string, string>): { config: Config; read: Set<string> } {
  const read = new Set<string>();
  const observed = new Proxy(env, {
    get(target, name) {
      if (typeof name === 'string') read.add(name);
      return Reflect.get(target, name);
    },
  });
  return { config: loadConfig(observed), read };
}

/**
 * The least a bot needs in each Slack mode (its Redis, the default, has no password): the loader
 * then reads every variable it knows.
 */
const MINIMAL = {
  socket: {
    SLACK_BOT_TOKEN: FAKE_SLACK_BOT_TOKEN,
    SLACK_APP_TOKEN: FAKE_SLACK_APP_TOKEN,
    SLACK_CHANNEL: 'C0123456789',
    MSP_HOST_COMMAND: 'muse serve',
    ...NO_REDIS_PASSWORD,
  },
  http: {
    SLACK_BOT_TOKEN: FAKE_SLACK_BOT_TOKEN,
    SLACK_SIGNING_SECRET: 'f'.repeat(32),
    SLACK_CHANNEL: 'C0123456789',
    MSP_HOST_COMMAND: 'muse serve',
    ...NO_REDIS_PASSWORD,
  },
};

let cached: ReadonlySet<string> | undefined;

/** Every environment variable the configuration loader reads, in Socket Mode or HTTP mode. */
export function botVariables(): ReadonlySet<string> {
  cached ??= new Set([...loadObserved(MINIMAL.socket).read, ...loadObserved(MINIMAL.http).read]);
  return cached;
}

/** The variables of the table under "## Environment variables" in docs/configuration.md. */
export function documentedVariables(): string[] {
  const doc = readFileSync(join(PROJECT_ROOT, 'docs', 'configuration.md'), 'utf8');
  const start = doc.indexOf('## Environment variables');
  const table = doc.slice(start, doc.indexOf('\n## ', start));
  return [...table.matchAll(/^\| `([A-Z0-9_]+)` \|/gm)].map((m) => m[1]!);
}
