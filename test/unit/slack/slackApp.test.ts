import type { FetchFunction } from '@slack/web-api';
import { afterEach, expect, it } from 'vitest';
import { encodeChoiceValue } from '../../../src/cards/ids.js';
import { loadConfig } from '../../../src/config/config.js';
import { OPEN_RULES } from '../../../src/domain/route.js';
import type { Authorizer } from '../../../src/relay/deciding/authorizer.js';
import type { ClickHandler } from '../../../src/relay/deciding/clickHandler.js';
import type { GrantLists } from '../../../src/relay/grants/grantLists.js';
import type { GrantRevoker } from '../../../src/relay/grants/grantRevoker.js';
import type { Router } from '../../../src/routing/router.js';
import { createSlackApp, type SlackService } from '../../../src/slack/createSlackApp.js';
import type { HomeTab } from '../../../src/slack/homeTab.js';
import { createSlackFetch } from '../../../src/slack/slackFetch.js';
import { SlackReachability } from '../../../src/slack/slackReachability.js';
import { slackViews } from '../../../src/slack/slackViews.js';
import type { WaitingApprovals } from '../../../src/slack/waitingApprovals.js';
import { createWebClient } from '../../../src/slack/webClient.js';
import { freePort } from '../../support/bot.js';
import { FAKE_SLACK_BOT_TOKEN } from '../../support/fakeSecrets.js';
import { FakeSlack } from '../../support/fakeSlack.js';
import { captureLogger } from '../../support/logCapture.js';
import { blockActionsPayload, postEvent, postInteraction } from '../../support/slackRequests.js';
import { NO_REDIS_PASSWORD } from '../../support/testRedis.js';

// One Web API client for the whole bot: the listeners call Slack through the client the card
// channel uses (and its one connection pool), and Bolt's own client makes no call at all.

const TOKEN = FAKE_SLACK_BOT_TOKEN;
const SECRET = 'test-signing-secret';

let slack: FakeSlack | undefined;
let app: SlackService | undefined;
afterEach(async () => {
  await app?.stop();
  await slack?.close();
  app = undefined;
  slack = undefined;
});

/** The shared transport, counting the requests that go through it. */
function countingTransport(): { fetch: FetchFunction; urls: string[] } {
  const inner = createSlackFetch();
  const urls: string[] = [];
  return {
    urls,
    fetch: (url, init) => {
      urls.push(String(url));
      return inner(url, init);
    },
  };
}

it('listeners call Slack through the shared client; Bolt’s own client makes no Web API call', async () => {
  slack = await FakeSlack.start({ expectedToken: TOKEN });
  const fake = slack;
  const transport = countingTransport();
  const web = createWebClient({ token: TOKEN, apiUrl: fake.apiUrl, fetch: transport.fetch });
  const config = loadConfig({
    SLACK_BOT_TOKEN: TOKEN,
    SLACK_SIGNING_SECRET: SECRET,
    SLACK_API_URL: fake.apiUrl,
    SLACK_CHANNEL: 'C0APPROVALS',
    MSP_HOST_COMMAND: 'true',
    PORT: String(await freePort()),
    ...NO_REDIS_PASSWORD,
  });
  const clicks = {
    check: async () => ({
      ok: true,
      record: { approvalId: 'appr-1', tool: 'shell', subject: { kind: 'shell', command: 'make deploy' } },
      choice: { choiceId: 'deny', label: 'Reject', acceptsFeedback: true },
      rules: OPEN_RULES,
    }),
    checkInTime: (_click: unknown, checking: Promise<unknown>) => checking,
    click: async () => undefined,
    refuse: async () => undefined,
  } as unknown as ClickHandler;
  const logger = captureLogger().logger;
  const service = createSlackApp({
    config,
    logger,
    clicks,
    fullText: { getWithFullText: async () => undefined },
    health: { redis: () => true, slack: () => true, hosts: () => true, whyDown: () => undefined },
    metrics: { path: '/metrics', method: ['GET'], handler: (_req, res) => res.end() },
    identity: () => ({ botId: 'B_BOT', botUserId: 'U_BOT' }),
    web,
    transport: transport.fetch,
    reachability: new SlackReachability(logger),
    // wiring/home.ts gives App Home the shared client's views, as here.
    team: {
      authorizer: {} as Authorizer,
      router: {} as Router,
      waiting: {} as WaitingApprovals,
      home: {
        opened: (user: string) => slackViews(web).publish(user, { type: 'home', blocks: [] }),
      } as HomeTab,
      grants: {} as GrantLists,
      revoker: {} as GrantRevoker,
    },
  });
  app = service;
  await service.start();
  const base = `http://127.0.0.1:${config.port}`;
  // What neither the press route nor Bolt serves is answered as Bolt's own server answers it.
  expect((await fetch(`${base}/no-such-path`)).status).toBe(404);

  // A card is posted through the shared client, then a click opens a modal and App Home is
  // published: both listener calls come through the same client and pool, with the bot token.
  await web.chat.postMessage({ channel: 'C0APPROVALS', text: 'card' });
  const click = await postInteraction(
    base,
    SECRET,
    blockActionsPayload({
      userId: 'U0ALICE',
      channel: 'C0APPROVALS',
      ts: fake.messagesIn('C0APPROVALS')[0]!.ts,
      actionId: 'cs_choice_1',
      value: encodeChoiceValue({ s: 0, c: 'deny' }),
      responseUrl: fake.responseUrl('r1'),
    }),
  );
  expect(click.status).toBe(200);
  const opened = await fake.waitFor('views.open');
  expect(opened.token).toBe(TOKEN);
  expect(
    (await postEvent(base, SECRET, { type: 'app_home_opened', user: 'U0ALICE', tab: 'home' })).status,
  ).toBe(200);
  const published = await fake.waitFor('views.publish');
  expect(published.token).toBe(TOKEN);

  expect(fake.calls.map((c) => c.method)).toEqual(['chat.postMessage', 'views.open', 'views.publish']);
  expect(transport.urls).toEqual(fake.calls.map((c) => `${fake.apiUrl}${c.method}`));

  // Bolt still builds a client of its own; it cannot reach the Web API beside the shared one.
  await expect(service.bolt.client.auth.test({ token: TOKEN })).rejects.toThrow(/shared client/);
  expect(fake.calls).toHaveLength(3);
});
