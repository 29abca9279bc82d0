// Self-tests of FakeSlack (through the real @slack/web-api client) and of the signed-request
// helpers (through a tiny Bolt HTTP app).

import { existsSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { App, LogLevel } from '@slack/bolt';
import { WebClient, WebClientEvent } from '@slack/web-api';
import { afterEach, describe, expect, test } from 'vitest';
import { FAKE_SLACK_BOT_TOKEN, OTHER_FAKE_SLACK_BOT_TOKEN } from './fakeSecrets.js';
import { FakeSlack } from './fakeSlack.js';
import {
  blockActionsPayload,
  postInteraction,
  postSigned,
  signRequest,
  slashCommandBody,
  viewSubmissionPayload,
} from './slackRequests.js';

let slack: FakeSlack | undefined;
const cleanups: Array<() => Promise<unknown>> = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
  await slack?.close();
  slack = undefined;
});

function client(s: FakeSlack, token = FAKE_SLACK_BOT_TOKEN): WebClient {
  return new WebClient(token, {
    slackApiUrl: s.apiUrl,
    retryConfig: { retries: 2, minTimeout: 10, maxTimeout: 50 },
    timeout: 5000,
    logLevel: LogLevel.ERROR,
  });
}

const section = (text: string) => ({ type: 'section', text: { type: 'mrkdwn', text } });

describe('FakeSlack', () => {
  test('records posts and updates as form data and keeps the latest message state', async () => {
    slack = await FakeSlack.start({ expectedToken: FAKE_SLACK_BOT_TOKEN });
    const web = client(slack);

    const auth = await web.auth.test();
    expect(auth).toMatchObject({ ok: true, user_id: 'U_BOT', bot_id: 'B_BOT', team_id: 'T1' });

    const posted = await web.chat.postMessage({ channel: 'C1', text: 'card', blocks: [section('*hello*')] });
    const posted2 = await web.chat.postMessage({ channel: 'C1', text: 'second' });
    // ts follow the clock, as Slack's do (conversations.history's oldest/latest rely on it).
    expect(posted.ts).toMatch(/^\d{10}\.\d{6}$/);
    expect(Math.abs(Number(posted.ts) * 1000 - Date.now())).toBeLessThan(60_000);
    expect(Number(posted2.ts)).toBeGreaterThan(Number(posted.ts));
    const call = slack.callsOf('chat.postMessage')[0];
    expect(call?.args.blocks).toEqual([section('*hello*')]);
    expect(call?.token).toBe(FAKE_SLACK_BOT_TOKEN);

    const ts = posted.ts as string;
    await web.chat.update({ channel: 'C1', ts, text: 'card v2', blocks: [section('v2')] });
    expect(slack.message('C1', ts)).toMatchObject({ text: 'card v2', blocks: [section('v2')] });
    expect(slack.message('C1', ts)?.versions).toHaveLength(2);
    await web.chat.postMessage({ channel: 'C1', text: 'audit', thread_ts: ts });
    expect(slack.messagesIn('C1').map((m) => m.text)).toEqual(['card v2', 'second']);
    expect(slack.repliesTo('C1', ts).map((m) => m.text)).toEqual(['audit']);

    await expect(web.chat.update({ channel: 'C1', ts: '1.2', text: 'x' })).rejects.toMatchObject({
      data: { error: 'message_not_found' },
    });
    const blocks = Array.from({ length: 51 }, (_, i) => section(`b${i}`));
    await expect(web.chat.postMessage({ channel: 'C1', text: 'big', blocks })).rejects.toMatchObject({
      data: { error: 'invalid_blocks' },
    });
    expect(slack.messagesIn('C1')).toHaveLength(2);

    await web.chat.postEphemeral({ channel: 'C1', user: 'U2', text: 'only you' });
    expect(slack.ephemerals[0]).toMatchObject({ channel: 'C1', user: 'U2', text: 'only you' });
    const dm = await web.conversations.open({ users: 'U9' });
    expect(dm.channel?.id).toBe('DU9');
    const user = await web.users.info({ user: 'U9' });
    expect(user.user).toMatchObject({ id: 'U9', real_name: expect.any(String) });
    const opened = await web.views.open({
      trigger_id: 't1',
      view: { type: 'modal', title: { type: 'plain_text', text: 'Hi' }, blocks: [] },
    });
    expect(opened.view).toMatchObject({ id: expect.stringMatching(/^V/), hash: expect.stringMatching(/^h/) });
    await expect(
      web.views.update({
        view_id: opened.view?.id as string,
        hash: 'stale',
        view: { type: 'modal', title: { type: 'plain_text', text: 'Hi' }, blocks: [] },
      }),
    ).rejects.toMatchObject({ data: { error: 'hash_conflict' } });

    const wrong = client(slack, OTHER_FAKE_SLACK_BOT_TOKEN);
    await expect(wrong.auth.test()).rejects.toMatchObject({ data: { error: 'invalid_auth' } });
  });

  const limitsModule = new URL('../../src/cards/limits.ts', import.meta.url);
  test.skipIf(!existsSync(limitsModule))('payloads are checked with src/cards/limits.ts', async () => {
    slack = await FakeSlack.start();
    const web = client(slack);
    const header = { type: 'header', text: { type: 'plain_text', text: 'h'.repeat(151) } };
    const err = await web.chat
      .postMessage({ channel: 'C1', text: 'x', blocks: [header] })
      .catch((e: unknown) => e);
    expect(err).toMatchObject({
      data: { error: 'invalid_blocks', violations: expect.arrayContaining([expect.any(String)]) },
    });
    expect(slack.messagesIn('C1')).toHaveLength(0);
  });

  test('waitFor resolves on past and future calls and explains a timeout', async () => {
    slack = await FakeSlack.start();
    const web = client(slack);
    await web.chat.postMessage({ channel: 'C1', text: 'one' });
    const past = await slack.waitFor('chat.postMessage');
    expect(past.args.text).toBe('one');

    const since = slack.calls.length;
    const future = slack.waitFor('chat.postMessage', (c) => c.args.text === 'two', 2000, { since });
    setTimeout(() => void web.chat.postMessage({ channel: 'C1', text: 'two' }), 20);
    expect((await future).args.text).toBe('two');
    expect(await slack.waitForCount('chat.postMessage', 2, 1000)).toHaveLength(2);

    await expect(slack.waitFor('chat.update', undefined, 100)).rejects.toThrow(
      /no matching chat\.update within 100 ms[\s\S]*chat\.postMessage\(channel="C1"/,
    );
    await expect(slack.waitForCount('chat.postMessage', 3, 100)).rejects.toThrow(
      /expected 3 chat\.postMessage/,
    );
  });

  test('onChange tells a listener after each answered call until it unsubscribes', async () => {
    slack = await FakeSlack.start();
    const web = client(slack);
    const seen: number[] = [];
    const unsubscribe = slack.onChange(() => seen.push(slack?.calls.length ?? -1));
    const posted = await web.chat.postMessage({ channel: 'C1', text: 'one' });
    await web.chat.update({ channel: 'C1', ts: posted.ts!, text: 'two' });
    // Each listener call comes once the call is recorded, so the state is already current.
    expect(seen).toEqual([1, 2]);
    unsubscribe();
    await web.chat.postMessage({ channel: 'C1', text: 'three' });
    expect(seen).toEqual([1, 2]);
  });

  test('a per-channel limit answers 429 with Retry-After for that channel and method only', async () => {
    slack = await FakeSlack.start();
    const web = new WebClient(FAKE_SLACK_BOT_TOKEN, {
      slackApiUrl: slack.apiUrl,
      rejectRateLimitedCalls: true,
    });
    slack.rateLimitPerChannel('chat.postMessage', 2);
    await web.chat.postMessage({ channel: 'C1', text: '1' });
    await web.chat.postMessage({ channel: 'C1', text: '2' });
    await expect(web.chat.postMessage({ channel: 'C1', text: '3' })).rejects.toMatchObject({
      code: 'slack_webapi_rate_limited_error',
      retryAfter: 1,
    });
    // Another channel, and another method in the same channel, are not held back.
    await web.chat.postMessage({ channel: 'C2', text: 'other channel' });
    const ts = slack.messagesIn('C1')[0]!.ts;
    await web.chat.update({ channel: 'C1', ts, text: 'edited' });
    expect(slack.rateLimited.map((c) => [c.method, c.args.channel])).toEqual([['chat.postMessage', 'C1']]);
    expect(slack.messagesIn('C1')).toHaveLength(2);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    await web.chat.postMessage({ channel: 'C1', text: '3' });
    expect(slack.messagesIn('C1')).toHaveLength(3);
  });

  test('429 with Retry-After is retried by WebClient and recorded as rate-limited', async () => {
    slack = await FakeSlack.start();
    const web = client(slack);
    let rateLimitedEvents = 0;
    web.on(WebClientEvent.RATE_LIMITED, () => {
      rateLimitedEvents += 1;
    });
    slack.rateLimit('chat.postMessage', { times: 1, retryAfterSec: 1 });
    const started = Date.now();
    const res = await web.chat.postMessage({ channel: 'C1', text: 'eventually' });
    expect(res.ok).toBe(true);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(rateLimitedEvents).toBe(1);
    expect(slack.rateLimited).toHaveLength(1);
    expect(slack.rateLimited[0]).toMatchObject({ method: 'chat.postMessage', retryAfterSec: 1 });
    expect(slack.callsOf('chat.postMessage')).toHaveLength(1);
    expect(slack.messagesIn('C1')).toHaveLength(1);

    slack.failNext('chat.postMessage', 'not_in_channel');
    await expect(web.chat.postMessage({ channel: 'C1', text: 'x' })).rejects.toMatchObject({
      data: { error: 'not_in_channel' },
    });
  });

  test('faults: HTTP errors before or after carrying a call out, dropped connections, late answers', async () => {
    slack = await FakeSlack.start();
    const web = new WebClient(FAKE_SLACK_BOT_TOKEN, {
      slackApiUrl: slack.apiUrl,
      retryConfig: { retries: 0 },
      timeout: 300,
      logLevel: LogLevel.ERROR,
    });
    const post = (text: string) => web.chat.postMessage({ channel: 'C1', text });

    slack.fault('chat.postMessage', { status: 503 });
    await expect(post('never')).rejects.toMatchObject({ code: 'slack_webapi_http_error', statusCode: 503 });
    expect(slack.messagesIn('C1')).toHaveLength(0);
    expect(slack.httpFailed.map((c) => [c.method, c.status])).toEqual([['chat.postMessage', 503]]);

    slack.fault('chat.postMessage', { status: 500, applied: true });
    await expect(post('posted, answer lost')).rejects.toMatchObject({ statusCode: 500 });
    slack.fault('chat.postMessage', { reset: true });
    await expect(post('posted, connection dropped')).rejects.toMatchObject({
      code: 'slack_webapi_request_error',
    });
    slack.fault('chat.postMessage', { delayMs: 1_000 });
    const started = Date.now();
    await expect(post('posted, answered too late')).rejects.toMatchObject({
      code: 'slack_webapi_request_error',
    });
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(slack.messagesIn('C1').map((m) => m.text)).toEqual([
      'posted, answer lost',
      'posted, connection dropped',
      'posted, answered too late',
    ]);
    expect(slack.callsOf('chat.postMessage').map((c) => c.lost)).toEqual(['status', 'reset', 'late']);
    await post('fine again');
    expect(slack.requests.map((r) => r.outcome)).toEqual(['httpFailed', 'lost', 'lost', 'lost', 'answered']);

    // A fault can be limited to matching calls and last until Slack is healed.
    const ts = slack.messagesIn('C1')[0]!.ts;
    slack.fault(
      'chat.update',
      { status: 502 },
      { times: Number.POSITIVE_INFINITY, match: (a) => a.text === 'bad' },
    );
    await web.chat.update({ channel: 'C1', ts, text: 'good' });
    await expect(web.chat.update({ channel: 'C1', ts, text: 'bad' })).rejects.toMatchObject({
      statusCode: 502,
    });
    await expect(web.chat.update({ channel: 'C1', ts, text: 'bad' })).rejects.toMatchObject({
      statusCode: 502,
    });
    slack.heal('chat.update');
    await web.chat.update({ channel: 'C1', ts, text: 'bad' });
    expect(slack.message('C1', ts)?.versions.map((v) => v.text)).toEqual([
      'posted, answer lost',
      'good',
      'bad',
    ]);
    const failedUpdates = await slack.waitForRequests(
      (r) => r.method === 'chat.update' && r.outcome === 'httpFailed',
      2,
      100,
    );
    expect(failedUpdates.map((r) => r.args.text)).toEqual(['bad', 'bad']);
    await expect(slack.waitForRequests((r) => r.method === 'views.open', 1, 50)).rejects.toThrow(
      /expected 1 matching requests within 50 ms, got 0/,
    );

    // A held call is carried out only once the test lets it go: a later call overtakes it.
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    slack.fault('chat.update', { until: gate }, { match: (a) => a.text === 'held' });
    const held = web.chat.update({ channel: 'C1', ts, text: 'held' });
    await web.chat.update({ channel: 'C1', ts, text: 'after' });
    release();
    await held;
    expect(
      slack
        .message('C1', ts)
        ?.versions.map((v) => v.text)
        .slice(-2),
    ).toEqual(['after', 'held']);
  });

  test('once told the bot’s channels, posting and reading history elsewhere answer not_in_channel', async () => {
    slack = await FakeSlack.start();
    const web = client(slack);
    await web.chat.postMessage({ channel: 'C1', text: 'anywhere until told' });
    slack.setBotChannels(['C1']);
    const notIn = { data: { error: 'not_in_channel' } };
    await expect(web.chat.postMessage({ channel: 'C2', text: 'x' })).rejects.toMatchObject(notIn);
    await expect(web.conversations.history({ channel: 'C2' })).rejects.toMatchObject(notIn);
    expect((await web.conversations.history({ channel: 'C1' })).messages).toHaveLength(1);
    // DMs are always open to the bot.
    await web.chat.postMessage({ channel: 'U9', text: 'dm' });
    slack.inviteBot('C2');
    await web.chat.postMessage({ channel: 'C2', text: 'invited' });
    slack.removeBot('C1');
    await expect(web.conversations.history({ channel: 'C1' })).rejects.toMatchObject(notIn);
    // An app with chat:write.public may post in a public channel it is not in, never read it.
    slack.chatWritePublic = true;
    await web.chat.postMessage({ channel: 'C1', text: 'public' });
    await expect(web.chat.postMessage({ channel: 'G1', text: 'private' })).rejects.toMatchObject(notIn);
    await expect(web.conversations.history({ channel: 'C1' })).rejects.toMatchObject(notIn);
    expect(slack.messagesIn('C1').map((m) => m.text)).toEqual(['anywhere until told', 'public']);
    expect(slack.messagesIn('C2').map((m) => m.text)).toEqual(['invited']);
  });

  test('conversations.history pages a channel newest first, with metadata only on request', async () => {
    slack = await FakeSlack.start();
    const web = client(slack);
    const metadata = (n: number) => ({
      event_type: 'countersign_card',
      event_payload: { approval_id: `a${n}` },
    });
    const ts: string[] = [];
    for (let n = 1; n <= 5; n++) {
      const posted = await web.chat.postMessage({ channel: 'C1', text: `m${n}`, metadata: metadata(n) });
      ts.push(posted.ts as string);
    }
    expect(slack.callsOf('chat.postMessage')[0]!.response.message).toMatchObject({ metadata: metadata(1) });
    await web.chat.postMessage({ channel: 'C2', text: 'elsewhere' });
    await web.chat.postMessage({ channel: 'C1', text: 'a reply', thread_ts: ts[0] });

    const texts = (r: { messages?: Array<{ text?: string }> }) => r.messages?.map((m) => m.text);
    const first = await web.conversations.history({ channel: 'C1', limit: 2, include_all_metadata: true });
    expect(texts(first)).toEqual(['m5', 'm4']);
    expect(first.messages?.[0]).toMatchObject({ ts: ts[4], metadata: metadata(5), bot_id: 'B_BOT' });
    expect(first.has_more).toBe(true);
    const second = await web.conversations.history({
      channel: 'C1',
      limit: 2,
      cursor: first.response_metadata?.next_cursor as string,
    });
    expect(texts(second)).toEqual(['m3', 'm2']);
    expect(second.messages?.[0]).not.toHaveProperty('metadata');
    const last = await web.conversations.history({
      channel: 'C1',
      limit: 2,
      cursor: second.response_metadata?.next_cursor as string,
    });
    expect(texts(last)).toEqual(['m1']);
    expect(last.has_more).toBe(false);
    expect(last.response_metadata?.next_cursor).toBe('');

    expect(texts(await web.conversations.history({ channel: 'C1', oldest: ts[2] }))).toEqual(['m5', 'm4']);
    expect(
      texts(
        await web.conversations.history({ channel: 'C1', oldest: ts[2], latest: ts[4], inclusive: true }),
      ),
    ).toEqual(['m5', 'm4', 'm3']);
    expect(texts(await web.conversations.history({ channel: 'C1', latest: ts[1] }))).toEqual(['m1']);
    await expect(web.conversations.history({ channel: '#approvals' })).rejects.toMatchObject({
      data: { error: 'channel_not_found' },
    });

    // An update without metadata keeps the message's own.
    await web.chat.update({ channel: 'C1', ts: ts[0]!, text: 'm1 edited' });
    expect(slack.message('C1', ts[0]!)?.metadata).toEqual(metadata(1));
  });

  test('a list of Retry-After values answers one 429 with each, in order', async () => {
    slack = await FakeSlack.start();
    const web = new WebClient(FAKE_SLACK_BOT_TOKEN, {
      slackApiUrl: slack.apiUrl,
      rejectRateLimitedCalls: true,
    });
    slack.rateLimit('chat.update', { retryAfterSec: [2, 3] });
    const update = () => web.chat.update({ channel: 'C1', ts: '1.1', text: 'x' });
    await expect(update()).rejects.toMatchObject({ retryAfter: 2 });
    await expect(update()).rejects.toMatchObject({ retryAfter: 3 });
    await expect(update()).rejects.toMatchObject({ data: { error: 'message_not_found' } });
    expect(slack.rateLimited.map((c) => c.retryAfterSec)).toEqual([2, 3]);
    expect(slack.requests.map((r) => r.outcome)).toEqual(['rateLimited', 'rateLimited', 'answered']);
  });

  test('refuseResponses answers the next response_url posts with an HTTP error; they land apart', async () => {
    slack = await FakeSlack.start();
    slack.refuseResponses(2, 410);
    const post = (id: string) =>
      fetch(slack!.responseUrl(id), { method: 'POST', body: JSON.stringify({ text: id }) });
    expect((await post('a')).status).toBe(410);
    expect((await post('b')).status).toBe(410);
    expect((await post('c')).status).toBe(200);
    expect(slack.refusedResponses.map((r) => r.body)).toEqual([{ text: 'a' }, { text: 'b' }]);
    expect(slack.responses.map((r) => r.body)).toEqual([{ text: 'c' }]);
  });

  test('signed requests reach a Bolt HTTP app; respond() lands in responses', async () => {
    slack = await FakeSlack.start();
    const s = slack;
    const secret = 'test-signing-secret';
    const app = new App({
      token: FAKE_SLACK_BOT_TOKEN,
      signingSecret: secret,
      botId: 'B_BOT',
      botUserId: 'U_BOT',
      logLevel: LogLevel.ERROR,
      clientOptions: { slackApiUrl: s.apiUrl, retryConfig: { retries: 0 }, timeout: 2000 },
    });
    app.action('decide', async ({ ack, body, client: web, respond, action }) => {
      await ack();
      const b = body as unknown as {
        container: { channel_id: string; message_ts: string };
        user: { id: string };
      };
      const value = (action as { value?: string }).value ?? '';
      await web.chat.update({
        channel: b.container.channel_id,
        ts: b.container.message_ts,
        text: `${b.user.id}:${value}`,
      });
      await respond({ text: 'done', response_type: 'ephemeral' });
    });
    app.view('feedback', async ({ ack, view }) => {
      await ack({ response_action: 'errors', errors: { reason: `got ${view.private_metadata}` } });
    });
    app.command('/countersign', async ({ ack, command }) => {
      await ack(`hi ${command.user_id} ${command.text}`);
    });
    const server = (await app.start(0)) as unknown as { address(): AddressInfo };
    cleanups.push(() => app.stop());
    const base = `http://127.0.0.1:${server.address().port}`;

    const posted = await client(s).chat.postMessage({ channel: 'C0APPROVALS', text: 'card' });
    const ts = posted.ts as string;
    const payload = blockActionsPayload({
      userId: 'U_ALICE',
      channel: 'C0APPROVALS',
      ts,
      actionId: 'decide',
      value: 'opaque-1',
      responseUrl: s.responseUrl('click-1'),
    });
    const res = await postInteraction(base, secret, payload);
    expect(res.status).toBe(200);
    await s.waitFor('chat.update', (c) => c.args.text === 'U_ALICE:opaque-1');
    expect(s.message('C0APPROVALS', ts)?.text).toBe('U_ALICE:opaque-1');
    expect((await s.waitForResponse((r) => r.id === 'click-1')).body).toMatchObject({ text: 'done' });

    expect((await postInteraction(base, 'wrong-secret', payload)).status).toBe(401);
    const stale = Math.floor(Date.now() / 1000) - 301;
    expect((await postInteraction(base, secret, payload, { ts: stale })).status).toBe(401);
    const raw = `payload=${encodeURIComponent(JSON.stringify(payload))}`;
    expect(
      (await postSigned(base, secret, raw, 'application/x-www-form-urlencoded; charset=utf-8')).status,
    ).toBe(400);
    expect(signRequest(secret, raw)['content-type']).toBe('application/x-www-form-urlencoded');

    const submitted = await postInteraction(
      base,
      secret,
      viewSubmissionPayload({
        userId: 'U_ALICE',
        callbackId: 'feedback',
        privateMetadata: '{"approvalId":"a1"}',
        values: { reason: { text: { type: 'plain_text_input', value: 'no' } } },
      }),
    );
    expect(await submitted.json()).toEqual({
      response_action: 'errors',
      errors: { reason: 'got {"approvalId":"a1"}' },
    });

    const cmd = await postSigned(base, secret, slashCommandBody({ userId: 'U_BOB', text: 'grants list' }));
    expect(await cmd.text()).toBe('hi U_BOB grants list');
  });
});
