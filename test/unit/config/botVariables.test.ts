// The variables the bot reads (test/support/botVariables.ts, observed on its configuration loader)
// are the ones docs/configuration.md documents: deployment files are checked against the first,
// operators read the second.

import { expect, test } from 'vitest';
import { botVariables, documentedVariables, loadObserved } from '../../support/botVariables.js';
import { FAKE_SLACK_APP_TOKEN, FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';
import { NO_REDIS_PASSWORD } from '../../support/testRedis.js';

test('the configuration loader reads exactly the variables docs/configuration.md documents', () => {
  const read = [...botVariables()].sort();
  expect(read.length).toBeGreaterThan(10);
  expect(read).toEqual([...documentedVariables()].sort());
});

test('a variable is seen as read only when the loader asks for it', () => {
  const { read } = loadObserved({
    SLACK_BOT_TOKEN: FAKE_SLACK_BOT_TOKEN,
    SLACK_APP_TOKEN: FAKE_SLACK_APP_TOKEN,
    SLACK_CHANNEL: 'C0123456789',
    MSP_HOST_COMMAND: 'muse serve',
    ...NO_REDIS_PASSWORD,
    NOT_A_SETTING: 'x',
  });
  expect(read.has('SLACK_BOT_TOKEN')).toBe(true);
  expect(read.has('NOT_A_SETTING')).toBe(false);
});
