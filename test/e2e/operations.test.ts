import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { BOT_TOKEN, freePort, freshRedisDb, SIGNING_SECRET, startBot } from '../support/bot.js';
import { approvalFromTranscript, FakeHost, shellApproval } from '../support/fakeHost.js';
import { FAKE_SLACK_APP_TOKEN } from '../support/fakeSecrets.js';
import { FakeSlack } from '../support/fakeSlack.js';
import {
  dashboardMetricNames,
  declaredNames,
  isServed,
  seriesAtZero,
  seriesValue,
} from '../support/metricSeries.js';
import { postEvent } from '../support/slackRequests.js';
import { grantFrom } from './grantSteps.js';
import { commandAnswer } from './teamSetup.js';
import { buttonsOf, SESSION, World } from './world.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  while (cleanups.length) await cleanups.pop()!().catch(() => undefined);
});

async function peers() {
  const slack = await FakeSlack.start();
  const host = await FakeHost.start();
  cleanups.push(
    () => slack.close(),
    () => host.close(),
  );
  return { slack, host };
}

describe('running it', () => {
  it('a missing setting stops start-up with one line naming it', async () => {
    const { slack, host } = await peers();
    const bot = await startBot({ host, slack, redisDb: await freshRedisDb(), env: { SLACK_BOT_TOKEN: '' } });
    const exit = await bot.exited;
    expect(exit.code).toBe(1);
    const stderr = bot.logs.filter((l) => l.stream === 'stderr').map((l) => l.raw);
    expect(stderr).toHaveLength(1);
    expect(stderr[0]).toMatch(/SLACK_BOT_TOKEN/);
    expect(host.incarnations).toHaveLength(0);
  });

  it("with Redis unreachable it stays alive, says so and why in the log; PORT's /readyz says not ready alone", async () => {
    const { slack, host } = await peers();
    const bot = await startBot({ host, slack, redisDb: 0, env: { REDIS_URL: 'redis://127.0.0.1:1/0' } });
    cleanups.push(() => bot.kill());
    await bot.waitForLog((l) => /redis unreachable/.test(l.msg ?? ''), 10_000);
    expect((await fetch(`${bot.url}/healthz`)).status).toBe(200);
    await bot.waitForLog((l) => l.msg === 'slack auth ok', 10_000);
    // PORT (public in HTTP mode) says not ready and nothing of why: not the Redis address, not
    // the replica; the log does, once the start-up grace is over.
    const ready = await fetch(`${bot.url}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toEqual({ ready: false });
    const notReady = await bot.waitForLog((l) => l.msg === 'not ready (/readyz answers 503)', 20_000);
    expect(notReady.level).toBe(40);
    expect(notReady.json).toMatchObject({
      ready: false,
      redis: false,
      slack: true,
      host: false,
      reasons: {
        redis: expect.stringMatching(/^cannot reach Redis at redis:\/\/127\.0\.0\.1:1\/0: .*ECONNREFUSED/),
        // Without Redis no replica can hold the host's lease, so none runs it (another might).
        host: 'no replica has taken an MSP host yet',
      },
    });
    expect(host.incarnations).toHaveLength(0);
    expect(bot.proc.exitCode).toBeNull();
    const metrics = await (await fetch(`${bot.metricsUrl}/metrics`)).text();
    expect(seriesValue(metrics, 'countersign_redis_errors_total')).toBeGreaterThanOrEqual(1);
    expect(seriesValue(metrics, 'countersign_up{part="redis"}')).toBe(0);
  });

  it('without METRICS_PORT, /metrics is off: PORT answers it 404, and the log says how to turn it on', async () => {
    const { slack, host } = await peers();
    const bot = await startBot({ host, slack, redisDb: await freshRedisDb(), env: { METRICS_PORT: '' } });
    cleanups.push(() => bot.kill());
    await bot.waitReady();
    const off = await bot.waitForLog((l) => /^\/metrics is off/.test(l.msg ?? ''));
    expect(off.json).toMatchObject({
      level: 30,
      msg: '/metrics is off: set METRICS_PORT (e.g. 9464) to serve it on a port of its own; PORT never serves it',
    });
    expect(bot.logs.filter((l) => /^\/metrics is off/.test(l.msg ?? ''))).toHaveLength(1);
    // PORT is the port Slack reaches: /metrics there is a path like any it does not serve.
    for (const path of ['/metrics', '/no-such-path']) {
      const res = await fetch(`${bot.url}${path}`);
      expect({ path, status: res.status, body: await res.text() }).toEqual({ path, status: 404, body: '' });
    }
  });

  it('never writes the bot token to its logs', async () => {
    const world = await World.start();
    cleanups.push(() => world.close());
    await world.host.open(approvalFromTranscript('approval-round-trip'), { via: 'both' });
    await world.waitForCard('0198f0ac-7777-7000-8000-0000000000e1', (m) => buttonsOf(m).length > 0);
    expect(world.bot.logs.length).toBeGreaterThan(5);
    // The start-up line shows the configuration; of each secret only whether it is set.
    const started = world.bot.logs.find((l) => l.msg === 'countersign listening');
    expect(started?.json).toMatchObject({
      config: { slack: { botToken: '[set]', signingSecret: '[set]', mode: 'http' } },
    });
    expect(started?.json?.config).not.toHaveProperty('slack.appToken');
    expect(world.bot.logs.some((l) => l.raw.includes(BOT_TOKEN) || l.raw.includes(SIGNING_SECRET))).toBe(
      false,
    );
  });

  it('/metrics: every series at 0 from the start, then each moves with what the bot did; per-approval lines stay at debug', async () => {
    const metricsPort = await freePort();
    const world = await World.start(
      {},
      { MSP_SANDBOX_MODE: 'workspace-write', METRICS_PORT: String(metricsPort) },
    );
    cleanups.push(() => world.close());
    const metricsUrl = `http://127.0.0.1:${metricsPort}`;
    const scrape = async () => {
      const res = await fetch(`${metricsUrl}/metrics`);
      expect(res.status).toBe(200);
      return res.text();
    };

    // Right after start-up, before any event: every series is there, at 0.
    const first = await scrape();
    expect(seriesAtZero([]).filter((series) => seriesValue(first, series) !== 0)).toEqual([]);
    expect(seriesValue(first, 'process_resident_memory_bytes')).toBeGreaterThan(10 * 2 ** 20);
    expect(seriesValue(first, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    // Every metric a dashboard panel asks for is one the bot serves.
    const served = declaredNames(first);
    const missing = [...dashboardMetricNames()].filter((name) => !isServed(name, served));
    expect(missing).toEqual([]);
    // METRICS_PORT takes /metrics and /readyz's reasons off the port Slack reaches; health stays on both.
    expect((await fetch(`${world.bot.url}/metrics`)).status).toBe(404);
    expect((await fetch(`${metricsUrl}/healthz`)).status).toBe(200);
    const ready = await fetch(`${metricsUrl}/readyz`);
    expect(await ready.json()).toMatchObject({ ready: true, host: true, reasons: {} });
    const readyOnPort = await fetch(`${world.bot.url}/readyz`);
    expect(readyOnPort.headers.get('content-type')).toBe('application/json');
    expect(await readyOnPort.json()).toEqual({ ready: true });

    const metric = async (series: string) => seriesValue(await scrape(), series);
    // A click decides, remembering the request: one lookup (no grant yet), one decision by a person.
    const grantId = await grantFrom(
      world,
      shellApproval({ approvalId: 'count-0001', sessionId: SESSION, stages: [['git', 'push']] }),
      /^For /,
    );
    expect(grantId).toBeDefined();
    await world.bot.waitForLog((l) => l.msg === 'decision notice sent');
    expect(await metric('countersign_cards_posted_total')).toBe(1);
    expect(await metric('countersign_decisions_sent_total')).toBe(1);
    expect(await metric('countersign_notices_sent_total')).toBeGreaterThanOrEqual(1);
    expect(await metric('countersign_click_to_decide_seconds_count')).toBe(1);
    await expect
      .poll(() =>
        metric('countersign_time_to_decision_seconds_count{route="(SLACK_CHANNEL)",outcome="person"}'),
      )
      .toBe(1);
    expect(await metric('countersign_grant_lookups_total')).toBe(1);
    expect(await metric('countersign_grant_hits_total')).toBe(0);

    // The same request again: the grant decides it, with no card.
    await world.host.open(
      shellApproval({ approvalId: 'count-0002', sessionId: SESSION, stages: [['git', 'push']] }),
    );
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'count-0002');
    await expect.poll(() => metric('countersign_grant_uses_total')).toBe(1);
    expect(await metric('countersign_grant_lookups_total')).toBe(2);
    expect(await metric('countersign_grant_hits_total')).toBe(1);
    await expect
      .poll(() =>
        metric('countersign_time_to_decision_seconds_count{route="(SLACK_CHANNEL)",outcome="grant"}'),
      )
      .toBe(1);
    expect(await metric('countersign_click_to_decide_seconds_count')).toBe(1);

    // Slack answers the next card's post 429 once: counted by method, not as a failure.
    world.slack.rateLimit('chat.postMessage', { times: 1, retryAfterSec: 1 });
    await world.host.open(
      shellApproval({ approvalId: 'count-0003', sessionId: SESSION, stages: [['make', 'deploy']] }),
    );
    await world.waitForCard('count-0003', (m) => buttonsOf(m).length > 0);
    expect(await metric('countersign_slack_rate_limited_total{method="chat.postMessage"}')).toBe(1);
    expect(await metric('countersign_slack_failures_total{method="chat.postMessage"}')).toBe(0);
    expect(await metric('countersign_pending_approvals{route="(SLACK_CHANNEL)"}')).toBe(1);

    // A user of another team is refused; Slack fails the ephemeral that tells them once.
    world.slack.setUser('U0PARTNER', { team_id: 'T0PARTNER', real_name: 'Partner' });
    world.slack.failNext('chat.postEphemeral', 'internal_error');
    await world.press('count-0003', 'Allow once', 'U0PARTNER');
    await expect.poll(() => metric('countersign_refusals_total{reason="external"}')).toBe(1);
    await expect.poll(() => metric('countersign_slack_failures_total{method="chat.postEphemeral"}')).toBe(1);
    expect(await metric('countersign_slack_rate_limited_total{method="chat.postEphemeral"}')).toBe(0);
    expect(await metric('countersign_pending_approvals{route="(SLACK_CHANNEL)"}')).toBe(1);

    const perApproval = ['card posted', 'decision accepted', 'decision notice sent'];
    const lines = world.bot.logs.filter((l) => perApproval.includes(l.msg ?? ''));
    expect(lines.length).toBeGreaterThanOrEqual(3);
    expect(lines.every((l) => l.level === 20)).toBe(true);
  });

  it.each([
    ['HTTP mode', {}],
    ['Socket Mode', { SLACK_APP_TOKEN: FAKE_SLACK_APP_TOKEN, SLACK_SIGNING_SECRET: '' }],
  ])('METRICS_PORT already in use (%s): one line naming it, nothing started', async (_mode, env) => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '0.0.0.0', () => resolve()));
    cleanups.push(() => new Promise((resolve) => taken.close(resolve)));
    const port = (taken.address() as net.AddressInfo).port;
    const { slack, host } = await peers();
    slack.expectedAppToken = FAKE_SLACK_APP_TOKEN;
    const bot = await startBot({
      host,
      slack,
      redisDb: await freshRedisDb(),
      env: { ...env, METRICS_PORT: String(port) },
    });
    cleanups.push(() => bot.kill());
    expect(await bot.exited).toEqual({ code: 1, signal: null });
    expect(bot.logs.filter((l) => l.stream === 'stderr').map((l) => l.raw)).toEqual([
      `countersign: METRICS_PORT ${port} is already in use by another process: stop that process, or set METRICS_PORT to a free port`,
    ]);
    expect(host.incarnations).toHaveLength(0);
  });

  it('SIGTERM finishes the decision in flight before it closes the host', async () => {
    const world = await World.start();
    cleanups.push(() => world.close());
    await world.host.open(approvalFromTranscript('approval-round-trip', { approvalId: 'drain-0001' }), {
      via: 'both',
    });
    await world.waitForCard('drain-0001', (m) => buttonsOf(m).length > 0);
    await world.host.delayDecide(1_500);
    await world.press('drain-0001', 'Allow once');
    await world.host.waitForDecide();

    const exit = await world.bot.stop(15_000);
    expect(exit).toEqual({ code: 0, signal: null });
    const accepted = world.bot.logs.findIndex((l) => l.msg === 'decision accepted');
    const hostStopping = world.bot.logs.findIndex((l) => l.msg === 'stopping host');
    expect(accepted).toBeGreaterThan(-1);
    expect(hostStopping).toBeGreaterThan(accepted);
  });

  it('stopping the bot with a non-durable host marks its open cards before Redis goes', async () => {
    const world = await World.start({ durability: 'ephemeral' });
    cleanups.push(() => world.close());
    await world.host.open(approvalFromTranscript('approval-round-trip', { approvalId: 'gone-0001' }), {
      via: 'both',
    });
    await world.waitForCard('gone-0001', (m) => buttonsOf(m).length > 0);
    expect(await world.bot.stop(15_000)).toEqual({ code: 0, signal: null });
    const card = await world.card('gone-0001');
    expect(buttonsOf(card)).toHaveLength(0);
    expect(JSON.stringify(card.blocks)).toContain('could not keep this request');
  });

  it('SIGTERM drains: the host gets EOF, the process exits 0', async () => {
    const world = await World.start();
    cleanups.push(() => world.close());
    await world.host.waitForIncarnation(1);
    const exit = await world.bot.stop(10_000);
    expect(exit).toEqual({ code: 0, signal: null });
    expect(world.bot.logs.some((l) => l.msg === 'shutting down')).toBe(true);
    // The host saw its stdin close and ended on its own rather than being killed.
    const stopped = world.bot.logs.find((l) => l.msg === 'host stopped');
    expect(stopped?.json).toMatchObject({ exitCode: 0, signal: null });
  });

  it('/countersign answers at once and says where the cards are', async () => {
    const world = await World.start();
    cleanups.push(() => world.close());
    // Acked at once and empty; help asks Slack who Alice is first, then answers her alone.
    const answer = await commandAnswer(world, 'U0ALICE', '');
    expect(String(answer.body.text)).toContain(`<#${world.channel}>`);
  });

  it('App Home shows where the cards are and whether the host is up', async () => {
    const world = await World.start();
    cleanups.push(() => world.close());
    const response = await postEvent(world.bot.url, SIGNING_SECRET, {
      type: 'app_home_opened',
      user: 'U0ALICE',
      channel: 'D0ALICE',
      tab: 'home',
      event_ts: '1700000000.000001',
    });
    expect(response.status).toBe(200);
    const published = await world.slack.waitFor('views.publish');
    expect(published.args.user_id).toBe('U0ALICE');
    const view = JSON.stringify(published.args.view);
    expect(view).toContain(`<#${world.channel}>`);
    expect(view).toContain('Agent host: :large_green_circle: up');
  });
});
