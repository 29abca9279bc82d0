// Decision analytics and card metadata end to end: the real bot, the fake host asking, the fake
// Slack, real Redis. A known sequence of decisions (clicks, a grant, a timeout, one past its SLA)
// and the figures /countersign stats and App Home show for it, to whom; the metadata every card
// post and update carries; and the same across two replicas on one Redis.

import { Redis } from 'ioredis';
import { afterEach, describe, expect, it } from 'vitest';
import { checkMessageLimits } from '../../src/cards/limits.js';
import { keys } from '../../src/store/keys.js';
import { freshRedisDb, type RunningBot, SIGNING_SECRET } from '../support/bot.js';
import { FakeHost } from '../support/fakeHost.js';
import { FakeSlack, type ResponseUrlPost, type SlackMessage } from '../support/fakeSlack.js';
import { startReplicas } from '../support/replicas.js';
import { postSlashCommand } from '../support/slackRequests.js';
import { testRedisUrl } from '../support/testRedis.js';
import { APPROVALS, configFile, configYaml, ladder, route, users } from './fixtures/config.js';
import { grantFrom } from './grantSteps.js';
import { approvalFor, commandAnswer, openHome } from './teamSetup.js';
import { buttonsOf, pressButtonAt, SESSION, textOf, World } from './world.js';

const cleanups: Array<() => Promise<unknown> | unknown> = [];
afterEach(async () => {
  while (cleanups.length) await Promise.resolve(cleanups.pop()!()).catch(() => undefined);
});

const NO_STATS = /Decision stats are shown to the approvers of a route and to admins/;
const PARTNER = 'U0PARTNER';

/**
 * deploys: Alice decides, within an `sla` of 2 s. ops: Alice decides, a remind at 1 s and a
 * timeout at 2.5 s, grants on; the rest Alice too. Ada is an admin; Bob approves nothing; a partner of another team is
 * a stranger.
 */
const STATS_CONFIG = configYaml({
  routes: [
    route('deploys', {
      channel: 'C0DEPLOYS',
      match: { tools: ['deploy'] },
      approvers: users('U0ALICE'),
      sla: '2s',
    }),
    route('ops', {
      channel: APPROVALS,
      match: { tools: ['ops'] },
      approvers: users('U0ALICE'),
      escalation: ladder(['1s', 'remind'], ['2500ms', 'timeout']),
    }),
    // Catches the rest: no open fallback that every channel member would decide on.
    route('rest', { approvers: users('U0ALICE') }),
  ],
  admins: ['U0ADA'],
});

async function statsWorld(): Promise<World> {
  const config = configFile(STATS_CONFIG);
  cleanups.push(config.remove);
  const world = await World.start(
    {},
    { COUNTERSIGN_CONFIG: config.path, MSP_SANDBOX_MODE: 'workspace-write' },
  );
  cleanups.push(() => world.close());
  world.slack.setUser(PARTNER, { team_id: 'T0PARTNER', real_name: 'Partner' });
  return world;
}

interface Table {
  header: string[];
  rows: Map<string, Record<string, string>>;
}

/** The answer's one table, each row keyed by route and column title. */
function tableOf(answer: ResponseUrlPost): Table {
  const blocks = answer.body.blocks as Array<{ type: string; rows?: Array<Array<{ text: string }>> }>;
  const tables = blocks.filter((b) => b.type === 'table');
  expect(tables).toHaveLength(1);
  const [head, ...rest] = tables[0]!.rows!.map((r) => r.map((c) => c.text));
  const rows = new Map(
    rest.map((r) => [r[0]!, Object.fromEntries(head!.map((title, i) => [title, r[i]!]))] as const),
  );
  return { header: head!, rows };
}

function answerText(answer: ResponseUrlPost): string {
  return `${String(answer.body.text)}\n${JSON.stringify(answer.body.blocks ?? [])}`;
}

/** Every version's metadata payload, post first, asserting each has the documented shape. */
function payloadsOf(card: SlackMessage, approvalId: string, route: string): Array<Record<string, unknown>> {
  return card.versions.map((version, i) => {
    expect(version.metadata, `version ${i} of ${approvalId} carries no metadata`).toBeDefined();
    const { event_type, event_payload } = version.metadata as {
      event_type: string;
      event_payload: Record<string, unknown>;
    };
    expect(event_type).toBe('countersign_card');
    expect(event_payload).toMatchObject({
      approval_id: approvalId,
      v: 1,
      route,
      state: expect.stringMatching(/^(reviewing|pending|deciding|unavailable|resolved|superseded|orphaned)$/),
      changed_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(
      Object.keys(event_payload).every((k) =>
        ['approval_id', 'v', 'route', 'state', 'decision', 'decided_via', 'changed_at'].includes(k),
      ),
    ).toBe(true);
    return event_payload;
  });
}

describe('decision analytics and card metadata', { timeout: 60_000 }, () => {
  it('stats match a known sequence of decisions, for approvers and admins only; the SLA shows on the card; metadata on every post and update', async () => {
    const world = await statsWorld();

    // 1. A deploy Alice approves at once: a person's decision, within the SLA.
    const fast = approvalFor('st-fast', 'deploy', { command: ['kubectl', 'rollout', 'restart', 'web'] });
    await world.host.open(fast);
    const fastCard = await world.waitForCard('st-fast', (m) => buttonsOf(m).length > 0);
    expect(textOf(fastCard)).toMatch(/\*SLA\* 2s: due <!date\^\d+\^\{ago\} \(\{time\}\)\|in /);
    await world.press('st-fast', 'Allow once', 'U0ALICE');
    await world.waitForCard('st-fast', (m) => textOf(m).includes('within its SLA of 2s'));

    // 2. A deploy left waiting past its SLA, then approved: the card says so, the breach counts.
    const late = approvalFor('st-late', 'deploy', {
      command: ['kubectl', 'apply', '-f', 'secret-token.yaml'],
    });
    await world.host.open(late);
    await world.waitForCard('st-late', (m) => buttonsOf(m).length > 0);
    // A non-approver's click on the card decides nothing (and says why, to them only).
    await world.press('st-late', 'Allow once', 'U0BOB');
    expect(await world.ephemeralTo('U0BOB')).toBeTruthy();
    await new Promise((r) => setTimeout(r, 2_300));
    await world.press('st-late', 'Allow once', 'U0ALICE');
    const lateDone = await world.waitForCard('st-late', (m) => textOf(m).includes('past its SLA'));
    expect(textOf(lateDone)).toMatch(/Decided after \ds, \*past its SLA\* of 2s/);

    // 3. An ops request Alice approves with a grant, then one the grant answers (no card).
    await grantFrom(world, approvalFor('st-grant-1', 'ops', { command: ['make', 'ship'] }), /^For /);
    await world.host.open(approvalFor('st-grant-2', 'ops', { command: ['make', 'ship'] }));
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'st-grant-2');

    // 4. An ops request nobody decides: a remind fires, then the timeout decides.
    await world.host.open(approvalFor('st-timeout', 'ops', { command: ['git', 'push', 'origin'] }));
    await world.host.waitForDecide((d) => d.frame.params.approvalId === 'st-timeout', 8_000);

    // Every decision is in the audit stream before stats are asked for.
    await expect.poll(async () => (await world.auditEntries()).length, { timeout: 5_000 }).toBe(5);
    const entries = await world.auditEntries();
    const steps = entries.reduce((sum, e) => sum + Number(e.steps ?? 0), 0);
    expect(entries.find((e) => e.approvalId === 'st-timeout')).toMatchObject({ via: 'timeout' });
    expect(Number(entries.find((e) => e.approvalId === 'st-timeout')!.steps)).toBeGreaterThanOrEqual(1);
    expect(entries.find((e) => e.approvalId === 'st-late')).toMatchObject({
      slaMs: '2000',
      slaBreached: 'true',
      command: 'kubectl apply',
    });

    // Alice approves on both routes: one row each, with the figures of the sequence above.
    const alice = await commandAnswer(world, 'U0ALICE', 'stats');
    expect(checkMessageLimits({ text: alice.body.text, blocks: alice.body.blocks })).toEqual([]);
    const table = tableOf(alice);
    expect([...table.rows.keys()]).toEqual(['deploys', 'ops']);
    expect(table.rows.get('deploys')).toMatchObject({
      Decided: '2',
      'Past SLA': '1 of 2',
      'By grant': '0',
      Timeouts: '0',
      'Grant p50/p90': '–',
    });
    expect(table.rows.get('deploys')!['Person p50/p90']).toMatch(/^[\d.]+s \/ [\d.]+s$/);
    // p90 of two waits is the longer, past the 2 s SLA.
    expect(Number.parseFloat(table.rows.get('deploys')!.p90!)).toBeGreaterThan(2);
    expect(table.rows.get('ops')).toMatchObject({
      Decided: '3',
      'By grant': '1',
      'Grant hit rate': '33%',
      Timeouts: '1',
      'Steps fired': String(steps),
      'Past SLA': '–',
    });
    expect(table.rows.get('ops')!['Timeout p50/p90']).toMatch(/^[\d.]+s \/ [\d.]+s$/);
    const text = answerText(alice);
    expect(text).toContain('`make ship` ×2');
    expect(text).toContain('`kubectl rollout` ×1');
    expect(text).not.toContain('secret-token');

    // One route, 30 days: only that route's row.
    const opsOnly = tableOf(await commandAnswer(world, 'U0ALICE', 'stats ops 30d'));
    expect([...opsOnly.rows.keys()]).toEqual(['ops']);

    // The admin sees every route; Bob (no route's approver) and a stranger see nothing, even when
    // naming a route.
    expect([...tableOf(await commandAnswer(world, 'U0ADA', 'stats')).rows.keys()]).toEqual([
      'deploys',
      'ops',
    ]);
    for (const [user, text] of [
      ['U0BOB', 'stats'],
      ['U0BOB', 'stats deploys 30d'],
      [PARTNER, 'stats'],
      [PARTNER, 'stats ops'],
    ] as const) {
      const answer = await commandAnswer(world, user, text);
      expect(answerText(answer)).toMatch(NO_STATS);
      expect(answerText(answer)).not.toContain('table');
    }

    // App Home: Alice's has her routes' section; Bob's and the stranger's have none.
    const homeOf = async (userId: string) => {
      await openHome(world, userId);
      const call = await world.slack.waitFor('views.publish', (c) => c.args.user_id === userId);
      return JSON.stringify(call.args.view);
    };
    const aliceHome = await homeOf('U0ALICE');
    expect(aliceHome).toContain('Your routes, last 7 days');
    expect(aliceHome).toMatch(/\*deploys\*: 2 decided · p50 [\d.]+s, p90 [\d.]+s · 0 by grant \(0%\)/);
    expect(aliceHome).toContain('1 by grant (33%) · 1 timed out');
    expect(aliceHome).toContain('1 past SLA');
    for (const userId of ['U0BOB', PARTNER]) expect(await homeOf(userId)).not.toContain('Your routes');

    // Metadata: the post and every update carry it, from pending to resolved, with no agent text.
    for (const id of ['st-fast', 'st-late']) {
      const card = await world.card(id);
      expect(card.versions.length).toBeGreaterThanOrEqual(2);
      const payloads = payloadsOf(card, id, 'deploys');
      expect(payloads[0]).toMatchObject({ state: 'pending' });
      expect(payloads[0]).not.toHaveProperty('decision');
      expect(payloads.at(-1)).toMatchObject({
        state: 'resolved',
        decision: 'approved',
        decided_via: 'click',
      });
      expect(JSON.stringify(payloads)).not.toMatch(/kubectl|secret-token|restart/);
      expect(card.metadata).toEqual(card.versions.at(-1)!.metadata);
    }
    const timeoutCard = await world.card('st-timeout');
    expect(payloadsOf(timeoutCard, 'st-timeout', 'ops').at(-1)).toMatchObject({
      state: 'resolved',
      decided_via: 'timeout',
    });
  });

  it('two replicas on one Redis: stats at either see the decisions made at both; metadata on every update', async () => {
    const slack = await FakeSlack.start();
    cleanups.push(() => slack.close());
    const host = await FakeHost.start({
      sessions: [{ sessionId: SESSION, title: 'Bump' }],
      recovery: 'sameId',
    });
    cleanups.push(() => host.close());
    const file = configFile({ routes: [route('deploys', { approvers: users('U0ALICE') })], admins: [] });
    cleanups.push(file.remove);
    const redisDb = await freshRedisDb();
    const bots = await startReplicas(
      ['r1', 'r2'],
      { host, slack, redisDb, env: { COUNTERSIGN_CONFIG: file.path } },
      cleanups,
    );
    await host.waitForIncarnation(1);

    const redis = new Redis(testRedisUrl(redisDb));
    cleanups.push(() => redis.quit());
    /** Where an approval's card is, once a replica posted it (its record in Redis). */
    const placeOf = async (approvalId: string) => {
      for (;;) {
        const raw = await redis.hget(keys.approval(approvalId), 'd');
        const place = raw
          ? (JSON.parse(raw) as { slack: { channel: string; ts?: string } }).slack
          : undefined;
        if (place?.ts) return { channel: place.channel, ts: place.ts };
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const cardOf = async (approvalId: string) => {
      const { channel, ts } = await placeOf(approvalId);
      await expect.poll(() => buttonsOf(slack.message(channel, ts)!).length).toBeGreaterThan(0);
      return slack.message(channel, ts)!;
    };
    // One decision clicked at each replica.
    for (const [i, bot] of bots.entries()) {
      const id = `st-rep-${i}`;
      await host.open(approvalFor(id, 'deploy', { command: ['make', `step${i}`] }));
      const card = await cardOf(id);
      const button = buttonsOf(card).find((b) => b.text === 'Allow once')!;
      await pressButtonAt(bot.url, slack, { channel: card.channel, ts: card.ts }, button, 'U0ALICE');
      await host.waitForDecide((d) => d.frame.params.approvalId === id);
    }

    let n = 0;
    const ask = async (bot: RunningBot, userId: string, text: string) => {
      n += 1;
      const id = `rep-stats-${n}`;
      await postSlashCommand(bot.url, SIGNING_SECRET, { userId, text, responseUrl: slack.responseUrl(id) });
      return slack.waitForResponse((r) => r.id === id);
    };
    for (const bot of bots) {
      await expect
        .poll(async () => tableOf(await ask(bot, 'U0ALICE', 'stats')).rows.get('deploys')?.Decided, {
          timeout: 10_000,
        })
        .toBe('2');
      expect(answerText(await ask(bot, 'U0BOB', 'stats'))).toMatch(NO_STATS);
    }

    // Both cards' every version carries the metadata, whichever replica updated it.
    for (const i of [0, 1]) {
      const id = `st-rep-${i}`;
      const { channel, ts } = await placeOf(id);
      await expect
        .poll(() => payloadsOf(slack.message(channel, ts)!, id, 'deploys').at(-1))
        .toMatchObject({ state: 'resolved', decided_via: 'click' });
      expect(payloadsOf(slack.message(channel, ts)!, id, 'deploys')[0]).toMatchObject({ state: 'pending' });
    }
  });
});
