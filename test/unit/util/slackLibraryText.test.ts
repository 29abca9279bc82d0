// Slack's libraries log whole messages at debug, through toBoltLogger: what those carry that
// grants something (a payload's response_url and trigger_id, its verification token, a call's
// trigger_id, the Socket Mode URL's ticket) never reaches a line, whatever the configuration says.

import { type App, SocketModeReceiver } from '@slack/bolt';
import { afterEach, describe, expect, it } from 'vitest';
import { createWebClient } from '../../../src/slack/webClient.js';
import { toBoltLogger } from '../../../src/util/log.js';
import {
  FAKE_SLACK_APP_TOKEN,
  FAKE_SLACK_BOT_TOKEN,
  FAKE_SLACK_RESPONSE_URL,
} from '../../support/fakeSecrets.js';
import { FakeSlack } from '../../support/fakeSlack.js';
import { captureLogger } from '../../support/logCapture.js';
import { blockActionsPayload } from '../../support/slackRequests.js';

const TRIGGER_ID = '1234567890.1234567890.abcdef0123456789abcdef0123456789';
const VERIFICATION_TOKEN = 'legacyVerificationToken0017';
const TICKET = 'ticket-0123-4567-89ab-cdef';

let slack: FakeSlack | undefined;
let receiver: SocketModeReceiver | undefined;
afterEach(async () => {
  await receiver?.stop();
  await slack?.close();
  receiver = undefined;
  slack = undefined;
});

describe("Slack's libraries at debug", () => {
  it('a Socket Mode payload, the socket URL and a views.open call leave their capabilities out', async () => {
    slack = await FakeSlack.start();
    const { logger, lines } = captureLogger('debug');
    const bolt = toBoltLogger(logger);
    // Bolt's receiver and its Socket Mode client, as the bot builds them; the app only acks.
    receiver = new SocketModeReceiver({
      appToken: FAKE_SLACK_APP_TOKEN,
      logger: bolt,
      installerOptions: { clientOptions: { slackApiUrl: slack.apiUrl } },
    });
    receiver.init({ processEvent: async ({ ack }) => ack() } as App);
    await receiver.start();
    const socket = await slack.waitForSocket();
    const payload = {
      ...blockActionsPayload({
        userId: 'U0ALICE',
        channel: 'C0APPROVALS',
        ts: '1700000000.000100',
        actionId: 'choice',
        value: 'v',
        responseUrl: FAKE_SLACK_RESPONSE_URL,
        triggerId: TRIGGER_ID,
      }),
      token: VERIFICATION_TOKEN,
    };
    await slack.sendInteractive(payload);
    const web = createWebClient({ token: FAKE_SLACK_BOT_TOKEN, apiUrl: slack.apiUrl, logger: bolt });
    await web.views.open({
      trigger_id: TRIGGER_ID,
      view: { type: 'modal', title: { type: 'plain_text', text: 'Why' }, blocks: [] },
    });

    const written = JSON.stringify(lines);
    for (const capability of [FAKE_SLACK_RESPONSE_URL, TRIGGER_ID, VERIFICATION_TOKEN, socket.ticket]) {
      expect(written).not.toContain(capability);
    }
    // What the lines are for stays: which message came, which call was made and how it went.
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: 'Received a message on the WebSocket',
        type: 'interactive',
        payloadType: 'block_actions',
      }),
    );
    expect(lines).toContainEqual(
      expect.objectContaining({ msg: `http request url: ${slack.apiUrl}views.open` }),
    );
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'http request body' }));
    expect(lines).toContainEqual(expect.objectContaining({ msg: 'http request result', ok: true }));
  });

  it('any other line of theirs is written with those values hidden, in JSON’s escaped spelling too', () => {
    const { logger, lines } = captureLogger('debug');
    const bolt = toBoltLogger(logger);
    const escapedUrl = FAKE_SLACK_RESPONSE_URL.replaceAll('/', '\\/');
    const commandUrl = FAKE_SLACK_RESPONSE_URL.replace('/actions/', '/commands/');
    bolt.debug(
      `Sending a WebSocket message: {"envelope_id":"e1","payload":{"response_urls":[{"response_url":"${escapedUrl}"}]}}`,
    );
    bolt.debug(`ack() call begins (body: {"token":"${VERIFICATION_TOKEN}", "trigger_id" : "${TRIGGER_ID}"})`);
    bolt.warn('http request failed', `POST ${commandUrl} refused`);
    bolt.error(new TypeError(`cannot open wss://wss-primary.slack.com/link/?ticket=${TICKET}&app_id=A1`));
    bolt.debug(
      `Unable to parse an incoming WebSocket message (will ignore): SyntaxError, {"trigger_id":"${TRIGGER_ID}`,
    );

    const written = JSON.stringify(lines);
    for (const capability of [FAKE_SLACK_RESPONSE_URL, commandUrl, TRIGGER_ID, VERIFICATION_TOKEN, TICKET]) {
      for (const spelling of [capability, capability.replaceAll('/', '\\/')])
        expect(written).not.toContain(spelling);
    }
    // An error keeps its class.
    expect(lines[3]?.err).toMatchObject({
      type: 'TypeError',
      message: expect.stringContaining('ticket=[redacted]'),
    });
    expect(lines.map((line) => [line.msg, line.args])).toEqual([
      [
        'Sending a WebSocket message: {"envelope_id":"e1","payload":{"response_urls":[{"response_url":"[redacted]"}]}}',
        undefined,
      ],
      ['ack() call begins (body: {"token":"[redacted]", "trigger_id" : "[redacted]"})', undefined],
      ['http request failed', ['POST https://hooks.slack.com/commands/[redacted] refused']],
      ['cannot open wss://wss-primary.slack.com/link/?ticket=[redacted]&app_id=A1', undefined],
      ['Unable to parse an incoming WebSocket message (will ignore)', undefined],
    ]);
  });
});
