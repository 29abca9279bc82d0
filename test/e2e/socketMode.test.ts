// Socket Mode end to end: the real bot started with SLACK_APP_TOKEN opens its WebSocket through
// the fake Slack's apps.connections.open (reached through SLACK_API_URL), and a button click that
// arrives over that socket becomes exactly one approval/decide.

import { Redis } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { keys } from '../../src/store/keys.js';
import {
  APPROVALS_CHANNEL,
  BOT_TOKEN,
  freshRedisDb,
  type RunningBot,
  SIGNING_SECRET,
  startBot,
} from '../support/bot.js';
import { approvalFromTranscript, FakeHost } from '../support/fakeHost.js';
import { FakeSlack, type SlackMessage } from '../support/fakeSlack.js';
import { blockActionsPayload, postInteraction } from '../support/slackRequests.js';
import { buttonsOf, SESSION, textOf } from './world.js';

const APP_TOKEN = 'xapp-1-A_TEST-123-abc';

let slack: FakeSlack;
let host: FakeHost;
let redis: Redis;
let bot: RunningBot;

beforeEach(async () => {
  slack = await FakeSlack.start({ expectedToken: BOT_TOKEN });
  slack.expectedAppToken = APP_TOKEN;
  host = await FakeHost.start({ sessions: [{ sessionId: SESSION, title: 'Bump the version' }] });
  const redisDb = await freshRedisDb();
  redis = new Redis(`redis://127.0.0.1:6379/${redisDb}`);
  // Socket Mode needs no signing secret: '' removes the variable startBot sets by default.
  bot = await startBot({
    host,
    slack,
    redisDb,
    env: { SLACK_APP_TOKEN: APP_TOKEN, SLACK_SIGNING_SECRET: '' },
  });
  await bot.waitReady(15_000);
  await slack.waitForSocket(10_000);
});

afterEach(async () => {
  await bot.stop(5_000).catch(() => undefined);
  await Promise.all([host.close(), slack.close(), redis.quit()]);
});

/** The card of an approval once the bot has posted it and it satisfies `predicate`. */
async function waitForCard(
  approvalId: string,
  predicate: (m: SlackMessage) => boolean,
  timeoutMs = 5_000,
): Promise<SlackMessage> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const raw = await redis.hget(keys.approval(approvalId), 'd');
    const ts = raw ? (JSON.parse(raw) as { slack?: { ts?: string } }).slack?.ts : undefined;
    const card = slack.messagesIn(APPROVALS_CHANNEL).find((m) => m.ts === ts);
    if (card && predicate(card)) return structuredClone(card);
    if (Date.now() > deadline) {
      throw new Error(
        `card of ${approvalId} never matched; last: ${card ? textOf(card).slice(0, 2000) : '(not posted)'}\n${slack.summary()}\n${bot.tail(30)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('Socket Mode', () => {
  it('connects with the app token through SLACK_API_URL and serves only the health routes on PORT', async () => {
    const opens = slack.callsOf('apps.connections.open');
    expect(opens).toHaveLength(1);
    expect(opens[0]?.token).toBe(APP_TOKEN);
    expect(opens[0]?.response.ok).toBe(true);
    expect(slack.socketConnections).toHaveLength(1);
    expect(slack.socketConnections[0]?.closedAt).toBeUndefined();
    // The fake insists on the app token, as Slack does.
    const open = async (token: string) =>
      (await (
        await fetch(`${slack.apiUrl}apps.connections.open`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}` },
        })
      ).json()) as { ok: boolean; error?: string };
    expect(await open(BOT_TOKEN)).toEqual({ ok: false, error: 'not_allowed_token_type' });
    expect(await open('xapp-1-A_TEST-999-wrong')).toEqual({ ok: false, error: 'invalid_auth' });
    // The app token is used for nothing else, the bot token for everything else.
    expect(
      slack.calls.filter((c) => c.method !== 'apps.connections.open').every((c) => c.token === BOT_TOKEN),
    ).toBe(true);

    for (const path of ['/healthz', '/readyz', '/metrics']) {
      const res = await fetch(`${bot.url}${path}`);
      expect(res.status, path).toBe(200);
      await res.arrayBuffer();
    }
    const metrics = await (await fetch(`${bot.url}/metrics`)).text();
    expect(metrics).toContain('countersign_up{part="slack"} 1');

    // No HTTP receiver in Socket Mode: even a correctly signed interaction is not served.
    const res = await postInteraction(
      bot.url,
      SIGNING_SECRET,
      blockActionsPayload({
        userId: 'U0ALICE',
        channel: APPROVALS_CHANNEL,
        ts: '1700000000.000101',
        actionId: 'anything',
        value: '{}',
        responseUrl: slack.responseUrl('r-http'),
      }),
    );
    expect(res.status).toBe(404);
    await res.arrayBuffer();
    expect(host.decides()).toHaveLength(0);
  });

  it('a click delivered over the WebSocket is acked and becomes exactly one approval/decide', async () => {
    const approval = approvalFromTranscript('approval-round-trip');
    const id = approval.approvalId;
    await host.open(approval, { via: 'both' });

    const card = await waitForCard(id, (m) => buttonsOf(m).length > 0);
    const allowOnce = buttonsOf(card).find((b) => b.text === 'Allow once');
    expect(
      allowOnce,
      buttonsOf(card)
        .map((b) => b.text)
        .join(', '),
    ).toBeDefined();

    const ack = await slack.sendInteractive(
      blockActionsPayload({
        userId: 'U0ALICE',
        channel: APPROVALS_CHANNEL,
        ts: card.ts,
        actionId: allowOnce!.actionId,
        value: allowOnce!.value,
        buttonText: allowOnce!.text,
        messageText: card.text,
        messageBlocks: card.blocks,
        responseUrl: slack.responseUrl('r-U0ALICE'),
      }),
    );
    expect(ack.envelope_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(ack.connection).toBe(0);
    expect(slack.socketConnections[0]?.received.map((f) => f.envelope_id)).toEqual([ack.envelope_id]);

    const decide = await host.waitForDecide();
    expect(decide.frame.params).toMatchObject({
      sessionId: SESSION,
      approvalId: id,
      requirementId: { approvalId: id, sourceIndex: 0 },
      choiceId: 'allow_once',
    });

    const final = await waitForCard(id, (m) => buttonsOf(m).length === 0 && textOf(m).includes('Approved'));
    expect(final.ts).toBe(card.ts);
    expect(textOf(final)).toContain('<@U0ALICE>');
    expect(host.decides()).toHaveLength(1);
    expect(slack.callsOf('chat.postMessage')).toHaveLength(1);
    // Still the one connection: the bot neither dropped nor reopened its socket.
    expect(slack.socketConnections).toHaveLength(1);
    expect(slack.callsOf('apps.connections.open')).toHaveLength(1);
  });
});
