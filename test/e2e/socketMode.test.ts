// Socket Mode end to end: the real bot started with SLACK_APP_TOKEN opens its WebSocket through
// the fake Slack's apps.connections.open (reached through SLACK_API_URL), and a button click that
// arrives over that socket becomes exactly one approval/decide.

import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { APPROVALS_CHANNEL, BOT_TOKEN, type RunningBot, SIGNING_SECRET } from '../support/bot.js';
import { approvalFromTranscript, type FakeHost } from '../support/fakeHost.js';
import { FAKE_SLACK_APP_TOKEN, OTHER_FAKE_SLACK_APP_TOKEN } from '../support/fakeSecrets.js';
import type { FakeSlack } from '../support/fakeSlack.js';
import { blockActionsPayload, postInteraction } from '../support/slackRequests.js';
import { buttonsOf, SESSION, textOf, World } from './world.js';

const APP_TOKEN = FAKE_SLACK_APP_TOKEN;

let world: World;
let slack: FakeSlack;
let host: FakeHost;
let bot: RunningBot;

beforeEach(async () => {
  // Socket Mode needs no signing secret: '' removes the variable startBot sets by default.
  world = await World.start(
    {},
    { SLACK_APP_TOKEN: APP_TOKEN, SLACK_SIGNING_SECRET: '' },
    { slack: { expectedToken: BOT_TOKEN }, appToken: APP_TOKEN },
  );
  ({ slack, host, bot } = world);
  await slack.waitForSocket(10_000);
});

afterEach(async () => {
  await world.close();
});

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
    expect(await open(OTHER_FAKE_SLACK_APP_TOKEN)).toEqual({ ok: false, error: 'invalid_auth' });
    // The app token is used for nothing else, the bot token for everything else.
    expect(
      slack.calls.filter((c) => c.method !== 'apps.connections.open').every((c) => c.token === BOT_TOKEN),
    ).toBe(true);

    for (const path of ['/healthz', '/readyz']) {
      const res = await fetch(`${bot.url}${path}`);
      expect(res.status, path).toBe(200);
      await res.arrayBuffer();
    }
    // /metrics is on METRICS_PORT alone, in Socket Mode too: PORT answers it as any other path.
    for (const path of ['/metrics', '/no-such-path']) {
      const res = await fetch(`${bot.url}${path}`);
      expect({ path, status: res.status, body: await res.text() }).toEqual({ path, status: 404, body: '' });
    }
    const metrics = await (await fetch(`${bot.metricsUrl}/metrics`)).text();
    expect(metrics).toContain('countersign_up{part="slack"} 1');
    expect(Number(/^process_resident_memory_bytes (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(10 * 2 ** 20);
    expect(Number(/^nodejs_heap_size_used_bytes (\d+)$/m.exec(metrics)?.[1])).toBeGreaterThan(2 ** 20);

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

    const card = await world.waitForCard(id, (m) => buttonsOf(m).length > 0);
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

    const final = await world.waitForCard(
      id,
      (m) => buttonsOf(m).length === 0 && textOf(m).includes('Approved'),
    );
    expect(final.ts).toBe(card.ts);
    expect(textOf(final)).toContain('<@U0ALICE>');
    expect(host.decides()).toHaveLength(1);
    expect(slack.cardPosts()).toHaveLength(1);
    // Still the one connection: the bot neither dropped nor reopened its socket.
    expect(slack.socketConnections).toHaveLength(1);
    expect(slack.callsOf('apps.connections.open')).toHaveLength(1);
  });
});
