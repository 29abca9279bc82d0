// .env.example: every variable of the configuration table (docs/configuration.md) is in it, and
// loading it the way the README says (set -a; . ./.env; set +a) gives a configuration the bot accepts.

import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect, test } from 'vitest';
import { loadConfig } from '../../../src/config/config.js';
import { PROJECT_ROOT } from '../../support/bot.js';
import { documentedVariables } from '../../support/botVariables.js';
import { FAKE_SLACK_APP_TOKEN, FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';

const example = readFileSync(join(PROJECT_ROOT, '.env.example'), 'utf8');

test('names every variable of the configuration reference (docs/configuration.md)', () => {
  const variables = documentedVariables();
  expect(variables.length).toBeGreaterThan(10);
  const named = new Set([...example.matchAll(/^(?:# )?([A-Z0-9_]+)=/gm)].map((m) => m[1]));
  expect(variables.filter((v) => !named.has(v))).toEqual([]);
});

/** .env.example sourced by the shell as README says, with `fill` set on top of it. */
function sourced(fill: Record<string, string> = {}): NodeJS.ProcessEnv {
  const out = execFileSync('/bin/sh', ['-c', 'set -a; . ./.env.example; set +a; env -0'], {
    cwd: PROJECT_ROOT,
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
    encoding: 'utf8',
  });
  const env = Object.fromEntries(
    out
      .split('\0')
      .filter((line) => line.includes('='))
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
  return { ...env, ...fill };
}

test('holds no token: the Slack tokens are left empty, and start-up then names the missing one', () => {
  const env = sourced();
  expect(env.SLACK_BOT_TOKEN).toBe('');
  expect(env.SLACK_APP_TOKEN).toBe('');
  expect(example).not.toMatch(/\b(?:xox[abposre]|xapp)-[0-9A-Za-z-]{4,}/);
  expect(() => loadConfig(env)).toThrow(/^SLACK_BOT_TOKEN is required/);
});

test('filled in with the Slack tokens, it is a configuration the bot accepts', () => {
  const env = sourced({ SLACK_BOT_TOKEN: FAKE_SLACK_BOT_TOKEN, SLACK_APP_TOKEN: FAKE_SLACK_APP_TOKEN });
  expect(env.MSP_HOST_COMMAND).toBe('muse serve');
  const config = loadConfig(env);
  expect(config.slack.mode).toBe('socket');
  expect(config.slack.channel).toBe('C0123456789');
});

test('names COUNTERSIGN_REPLICA_SECRET, left unset: replicas then seal with the bot token', () => {
  expect(example).toMatch(/^# COUNTERSIGN_REPLICA_SECRET=/m);
  const config = loadConfig(
    sourced({ SLACK_BOT_TOKEN: FAKE_SLACK_BOT_TOKEN, SLACK_APP_TOKEN: FAKE_SLACK_APP_TOKEN }),
  );
  expect(config.replicaSecret).toBeUndefined();
});
