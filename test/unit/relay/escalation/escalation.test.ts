// Escalation's pure parts: the rotation's handover, the ladder's config keys, the card's line,
// the timeout's reject choice, the DM's buttons, and the PagerDuty client's retries.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Logger, pino } from 'pino';
import { afterEach, describe, expect, expectTypeOf, it, vi } from 'vitest';
import { renderCard } from '../../../../src/cards/renderCard.js';
import {
  escalationLine,
  renderEscalationDm,
  renderEscalationReply,
  timedOutLine,
} from '../../../../src/cards/renderEscalation.js';
import { ConfigError, loadConfig } from '../../../../src/config/config.js';
import { oncall } from '../../../../src/config/file/escalation.js';
import { timeoutChoice } from '../../../../src/domain/decisionWords.js';
import type { EscalationFailures } from '../../../../src/domain/metrics.js';
import type { ApprovalRecord, FiredStep } from '../../../../src/domain/record.js';
import type { EscalationStep } from '../../../../src/domain/route.js';
import { PagerDuty } from '../../../../src/pagerduty/pagerDuty.js';
import type { Decider, DecisionOutcome, DecisionRequest } from '../../../../src/relay/deciding/decider.js';
import { Escalator } from '../../../../src/relay/escalation/escalator.js';
import { lineageOf } from '../../../../src/relay/escalation/lineage.js';
import { OncallResolver } from '../../../../src/relay/escalation/oncall.js';
import type { RecordKeeper } from '../../../../src/relay/records/recordKeeper.js';
import { rotationUser } from '../../../../src/routing/rotation.js';
import { PromMetrics } from '../../../../src/slack/metrics/promMetrics.js';
import type { ApprovalStore } from '../../../../src/store/approvalStore.js';
import type { DueStep, EscalationStore } from '../../../../src/store/escalationStore.js';
import { shortDuration } from '../../../../src/util/shortDuration.js';
import { quietEscalatorParts } from '../../../support/escalatorParts.js';
import { FAKE_SLACK_APP_TOKEN, FAKE_SLACK_BOT_TOKEN } from '../../../support/fakeSecrets.js';
import { captureLogger } from '../../../support/logCapture.js';
import { seriesValue } from '../../../support/metricSeries.js';
import { NO_REDIS_PASSWORD } from '../../../support/testRedis.js';

const silent = pino({ level: 'silent' });

function configFile(yaml: string): string {
  const file = join(mkdtempSync(join(tmpdir(), 'countersign-esc-')), 'countersign.yml');
  writeFileSync(file, yaml);
  return file;
}

function load(yaml: string, env: Record<string, string> = {}) {
  return loadConfig({
    SLACK_BOT_TOKEN: FAKE_SLACK_BOT_TOKEN,
    SLACK_APP_TOKEN: FAKE_SLACK_APP_TOKEN,
    MSP_HOST_COMMAND: 'muse serve',
    COUNTERSIGN_CONFIG: configFile(yaml),
    ...NO_REDIS_PASSWORD,
    ...env,
  });
}

function errorOf(yaml: string, env: Record<string, string> = {}): string {
  try {
    load(yaml, env);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as Error).message).not.toMatch(/\n/);
    return (err as Error).message;
  }
  throw new Error('expected a ConfigError');
}

const route = (extra: string) => `
routes:
  - name: default
    channel: C0APPROVALS
${extra}`;

describe('rotation', () => {
  const weekly = {
    users: ['U0ANA', 'U0BEN', 'U0CID'],
    startMs: Date.parse('2026-11-30T09:00:00Z'),
    everyMs: 7 * 86_400_000,
    timezone: 'UTC',
  };

  it('hands over exactly at the boundary, and wraps around', () => {
    expect(rotationUser(weekly, new Date('2026-11-30T09:00:00Z'))).toBe('U0ANA');
    expect(rotationUser(weekly, new Date('2026-12-07T08:59:59.999Z'))).toBe('U0ANA');
    expect(rotationUser(weekly, new Date('2026-12-07T09:00:00Z'))).toBe('U0BEN');
    expect(rotationUser(weekly, new Date('2026-12-14T09:00:00Z'))).toBe('U0CID');
    expect(rotationUser(weekly, new Date('2026-12-21T09:00:00Z'))).toBe('U0ANA');
  });

  it('before the start, the first person is on call', () => {
    expect(rotationUser(weekly, new Date('2026-11-01T00:00:00Z'))).toBe('U0ANA');
  });

  it('keeps the local handover time across a DST change in its time zone', () => {
    // 09:00 in Berlin is 07:00Z in summer time and 08:00Z in winter time.
    const berlin = {
      users: ['U0ANA', 'U0BEN'],
      startMs: Date.parse('2026-10-19T07:00:00Z'), // Monday 09:00 CEST
      everyMs: 7 * 86_400_000,
      timezone: 'Europe/Berlin',
    };
    // The clocks go back on 25 October: the next handover is Monday 26 October, 09:00 CET = 08:00Z.
    expect(rotationUser(berlin, new Date('2026-10-26T07:30:00Z'))).toBe('U0ANA');
    expect(rotationUser(berlin, new Date('2026-10-26T08:00:00Z'))).toBe('U0BEN');
    // In UTC the same rotation would have handed over an hour earlier.
    expect(rotationUser({ ...berlin, timezone: 'UTC' }, new Date('2026-10-26T07:30:00Z'))).toBe('U0BEN');
  });

  it('shifts shorter than a day follow real time: none comes back or is skipped at a DST change', () => {
    // Each user's number is their shift's, so a shift going back or skipped shows.
    const users = Array.from({ length: 200 }, (_, i) => `U${i}`);
    const shiftAt = (rotation: { startMs: number; everyMs: number }, ms: number) =>
      Number(rotationUser({ ...rotation, users, timezone: 'Europe/Berlin' }, new Date(ms)).slice(1));
    const MINUTE = 60_000;
    const nights = [
      ['2026-10-24T22:00:00Z', '2026-10-25T04:00:00Z'], // 03:00 CEST becomes 02:00 CET at 01:00Z
      ['2026-03-28T23:00:00Z', '2026-03-29T04:00:00Z'], // 02:00 CET becomes 03:00 CEST at 01:00Z
    ] as const;
    for (const everyMs of [30 * MINUTE, 60 * MINUTE, 12 * 60 * MINUTE]) {
      for (const [from, to] of nights) {
        const rotation = { startMs: Date.parse(from), everyMs };
        for (let ms = Date.parse(from); ms <= Date.parse(to); ms += 5 * MINUTE) {
          expect(shiftAt(rotation, ms), `every ${everyMs / MINUTE}m at ${new Date(ms).toISOString()}`).toBe(
            Math.floor((ms - rotation.startMs) / everyMs),
          );
        }
      }
    }
    // The night the reviewer walked through: B at 00:59Z, then C, never A again.
    const halfHourly = { startMs: Date.parse('2026-10-24T22:00:00Z'), everyMs: 30 * MINUTE };
    expect(shiftAt(halfHourly, Date.parse('2026-10-25T00:59:00Z'))).toBe(5);
    expect(shiftAt(halfHourly, Date.parse('2026-10-25T01:00:00Z'))).toBe(6);
  });

  it('a daily rotation still hands over at the same local time across a DST change', () => {
    const daily = {
      users: ['U0ANA', 'U0BEN'],
      startMs: Date.parse('2026-10-24T07:00:00Z'), // Saturday 09:00 CEST
      everyMs: 86_400_000,
      timezone: 'Europe/Berlin',
    };
    // Sunday 25 October, after the clocks went back: 09:00 CET is 08:00Z.
    expect(rotationUser(daily, new Date('2026-10-25T07:59:59Z'))).toBe('U0ANA');
    expect(rotationUser(daily, new Date('2026-10-25T08:00:00Z'))).toBe('U0BEN');
  });

  it('short shifts, as tests use them', () => {
    const quick = { users: ['U0ANA', 'U0BEN'], startMs: 0, everyMs: 2_000, timezone: 'UTC' };
    expect(rotationUser(quick, new Date(1_999))).toBe('U0ANA');
    expect(rotationUser(quick, new Date(2_000))).toBe('U0BEN');
    expect(rotationUser(quick, new Date(4_000))).toBe('U0ANA');
  });
});

describe('routes[].escalation and routes[].oncall', () => {
  it('parse into steps and a source', () => {
    const config = load(
      route(`    oncall:
      rotation: { users: [U0ANA, U0BEN], start: "2026-11-30T09:00:00Z", every: 7d, timezone: Europe/Berlin }
    escalation:
      - { after: 10m, action: remind }
      - { after: 20m, action: mention, target: oncall, broadcast: true }
      - { after: 30m, action: dm, target: U0ANA }
      - { after: 45m, action: page, routingKey: RKEY }
      - { after: 1h, action: page, routingKey: RKEY2, includeRequest: true }
      - { after: 2h, action: timeout }`),
    );
    expect(config.routes[0]?.oncall).toEqual({
      kind: 'rotation',
      users: ['U0ANA', 'U0BEN'],
      startMs: Date.parse('2026-11-30T09:00:00Z'),
      everyMs: 7 * 86_400_000,
      timezone: 'Europe/Berlin',
    });
    expect(config.routes[0]?.escalation).toEqual([
      { afterMs: 600_000, action: 'remind' },
      { afterMs: 1_200_000, action: 'mention', target: 'oncall', broadcast: true },
      { afterMs: 1_800_000, action: 'dm', target: 'U0ANA' },
      { afterMs: 2_700_000, action: 'page', routingKey: 'RKEY' },
      { afterMs: 3_600_000, action: 'page', routingKey: 'RKEY2', includeRequest: true },
      { afterMs: 7_200_000, action: 'timeout' },
    ]);
  });

  it('take a step 24d after the card (a timer waits that long) and a rotation of 4w (no timer does)', () => {
    const config = load(
      route(`    oncall: { rotation: { users: [U0ANA, U0BEN], start: "2026-11-30T09:00:00Z", every: 4w } }
    escalation: [{ after: 24d, action: timeout }]`),
    );
    expect(config.routes[0]?.oncall).toMatchObject({ everyMs: 28 * 86_400_000 });
    expect(config.routes[0]?.escalation).toEqual([{ afterMs: 24 * 86_400_000, action: 'timeout' }]);
  });

  it('a rotation start names its zone and a day of the calendar: a server in another zone reads it the same', () => {
    const rotation = (start: string) => ({
      rotation: { users: ['U0A'], start, every: '7d', timezone: 'Europe/Berlin' },
    });
    // Without a zone Date.parse would read it in the process's TZ, so replicas would disagree.
    expect(oncall.safeParse(rotation('2026-11-30T09:00:00')).success).toBe(false);
    // Date.parse would roll it over to 2 March.
    expect(oncall.safeParse(rotation('2026-02-30T09:00:00Z')).success).toBe(false);
    expect(oncall.safeParse(rotation('2026-11-30T24:00:00Z')).success).toBe(false);
    expect(oncall.parse(rotation('2026-11-30T09:00:00+01:00'))).toMatchObject({
      startMs: Date.parse('2026-11-30T08:00:00Z'),
    });
    expect(oncall.parse(rotation('2028-02-29T09:00Z'))).toMatchObject({
      startMs: Date.parse('2028-02-29T09:00:00Z'),
    });
  });

  it('usergroup and pagerduty sources', () => {
    expect(load(route('    oncall: { usergroup: S0ONCALL }')).routes[0]?.oncall).toEqual({
      kind: 'usergroup',
      usergroup: 'S0ONCALL',
    });
    expect(
      load(route('    oncall: { pagerduty: { scheduleId: P123ABC } }'), {
        PAGERDUTY_API_TOKEN: 'pdtoken0000000000000',
      }).routes[0]?.oncall,
    ).toEqual({ kind: 'pagerduty', scheduleId: 'P123ABC' });
  });

  it.each([
    [
      '    escalation: [{ after: 10m, action: shout }]',
      'routes[0].escalation[0].action must be remind, mention, dm, page or timeout (got "shout")',
    ],
    ['    escalation: [{ after: soon, action: remind }]', 'routes[0].escalation[0].after must be a duration'],
    [
      '    escalation: [{ after: 10m, action: remind }, { after: 30d, action: timeout }]',
      `routes[0].escalation[1].after must be at most 24d (got "30d"): Node's timers wait no longer, and a longer one fires at once`,
    ],
    ['    escalation: [{ after: 10m, action: remind, when: now }]', 'key "when" is not supported'],
    ['    escalation: [{ after: 10m, action: mention }]', 'needs a target'],
    ['    escalation: [{ after: 10m, action: remind, target: U0ANA }]', 'target is only for mention and dm'],
    ['    escalation: [{ after: 10m, action: dm, target: S0GROUP }]', 'a dm goes to a person'],
    [
      '    escalation: [{ after: 10m, action: dm, target: U0ANA, includeRequest: true }]',
      'routes[0].escalation[0] includeRequest is only for page',
    ],
    [
      '    escalation: [{ after: 10m, action: page, routingKey: R, includeRequest: yes please }]',
      'routes[0].escalation[0].includeRequest must be true or false',
    ],
    [
      '    escalation: [{ after: 20m, action: remind }, { after: 10m, action: remind }]',
      'routes[0].escalation[1].after comes before the step above it',
    ],
    [
      '    escalation: [{ after: 20m, action: timeout }, { after: 30m, action: remind }]',
      'routes[0].escalation[0].action timeout ends the approval',
    ],
    [
      '    escalation: [{ after: 20m, action: mention, target: oncall }]',
      'routes[0].escalation[0].target is oncall, but routes[0] has no oncall',
    ],
    [
      '    oncall: { usergroup: S0A, rotation: { users: [U0A], start: "2026-11-30T09:00:00Z", every: 1d } }',
      'routes[0].oncall must name exactly one of usergroup, rotation and pagerduty',
    ],
    [
      '    oncall: { rotation: { users: [U0A], start: "2026-11-30T09:00:00Z", every: 1d, timezone: Mars/Olympus } }',
      'must be an IANA time zone',
    ],
    [
      '    oncall: { rotation: { users: [U0A], start: "2026-11-30T09:00:00", every: 7d, timezone: Europe/Berlin } }',
      'routes[0].oncall.rotation.start must name its zone (Z or an offset such as +01:00)',
    ],
    [
      '    oncall: { rotation: { users: [U0A], start: "2026-02-30T09:00:00Z", every: 7d } }',
      'routes[0].oncall.rotation.start names a day, time or offset that does not exist (got "2026-02-30T09:00:00Z")',
    ],
    [
      '    escalation: [{ after: 1m, action: page }]',
      'routes[0].escalation[0] pages, but there is no routing key',
    ],
    ['    oncall: { pagerduty: { scheduleId: P1 } }', 'routes[0].oncall.pagerduty needs PAGERDUTY_API_TOKEN'],
  ])('refuses %s', (yaml, message) => {
    expect(errorOf(route(yaml))).toContain(message);
  });
});

const LADDER: EscalationStep[] = [
  { afterMs: 600_000, action: 'remind' },
  { afterMs: 1_800_000, action: 'page' },
  { afterMs: 2_700_000, action: 'dm', target: 'oncall' },
];

describe('the escalation line', () => {
  const startedAt = '2026-11-30T10:00:00.000Z';
  const at = (ms: number) => new Date(Date.parse(startedAt) + ms);

  it('says what fired, by whom, and what comes next', () => {
    const line = escalationLine(
      {
        startedAt,
        origin: 'a1',
        fired: [
          { step: 0, action: 'remind', afterMs: 600_000, at: '' },
          { step: 1, action: 'page', afterMs: 1_800_000, at: '', who: '@bob' },
        ],
      },
      LADDER,
      at(1_800_000),
      true,
    );
    expect(line).toBe(
      ':rotating_light: Escalation: reminded at 10 min · paged @bob at 30 min · next: DM in 15 min',
    );
  });

  it('names the first step before the clock starts, nothing next once final, nothing without a ladder', () => {
    expect(escalationLine(undefined, LADDER, at(0), true)).toBe(
      ':rotating_light: Escalation: next: reminder at 10 min',
    );
    expect(
      escalationLine(
        { startedAt, origin: 'a1', fired: [{ step: 0, action: 'remind', afterMs: 600_000, at: '' }] },
        LADDER,
        at(900_000),
        false,
      ),
    ).toBe(':rotating_light: Escalation: reminded at 10 min');
    expect(escalationLine(undefined, [], at(0), true)).toBeUndefined();
  });

  it('says so when a step could not reach anyone', () => {
    const line = escalationLine(
      {
        startedAt,
        origin: 'a1',
        fired: [
          { step: 0, action: 'remind', afterMs: 600_000, at: '' },
          { step: 1, action: 'page', afterMs: 1_800_000, at: '', failed: true },
        ],
      },
      LADDER,
      at(1_800_000),
      true,
    );
    expect(line).toBe(
      ':rotating_light: Escalation: reminded at 10 min · page failed at 30 min · next: DM in 15 min',
    );
  });

  it('escapes a name that would format or mention', () => {
    const line = escalationLine(
      {
        startedAt,
        origin: 'a1',
        fired: [{ step: 1, action: 'page', afterMs: 1_000, at: '', who: '<!channel> *x*' }],
      },
      LADDER,
      at(1_000),
      false,
    );
    expect(line).not.toContain('<!channel>');
  });

  it('durations in the fewest words', () => {
    expect(
      [1_000, 59_000, 600_000, 3_600_000, 5_400_000, 7_200_000, 3 * 86_400_000].map(shortDuration),
    ).toEqual(['1s', '59s', '10 min', '1h', '1h 30 min', '2h', '3d']);
    expect(timedOutLine(7_200_000)).toContain('Timed out after 2h — rejected');
  });
});

function record(overrides: Partial<ApprovalRecord> = {}): ApprovalRecord {
  return {
    approvalId: 'a1',
    hostId: 'default',
    incarnation: 'inc-1',
    sessionId: 's-1',
    toolCallId: 'call_1',
    caller: 'session:s-1',
    tool: 'bash',
    rawArgs: '{}',
    subject: { kind: 'shell', command: 'make deploy' },
    requiredCapabilities: [],
    sandboxMode: 'default',
    protectedWrite: false,
    judgeEscalated: false,
    currentRequirementId: { approvalId: 'a1', sourceIndex: 0 },
    availableChoices: [
      { choiceId: 'allow_once', label: 'Allow once', decision: 'approved', scope: 'once' },
      { choiceId: 'deny', label: 'Deny', decision: 'denied', scope: 'once' },
      { choiceId: 'abort', label: 'Reject', decision: 'abort', scope: 'once', acceptsFeedback: true },
    ],
    phase: 'pending',
    slack: { channel: 'C1', ts: '1.1' },
    openedAt: '2026-11-30T10:00:00.000Z',
    updatedAt: '2026-11-30T10:00:00.000Z',
    version: 1,
    ...overrides,
  };
}

describe('the timeout and the DM', () => {
  it('rejects with a choice that is not an approval, preferring one that takes feedback', () => {
    expect(timeoutChoice(record().availableChoices)?.choiceId).toBe('abort');
    expect(timeoutChoice(record().availableChoices.slice(0, 2))?.choiceId).toBe('deny');
    expect(timeoutChoice(record().availableChoices.slice(0, 1))).toBeUndefined();
  });

  it('a timed-out card says so plainly', () => {
    const card = renderCard(
      record({
        phase: 'resolved',
        resolution: {
          decision: 'abort',
          resolvedBy: 'user',
          decidedAt: '2026-11-30T12:00:00Z',
          via: 'timeout',
        },
        escalation: {
          startedAt: '2026-11-30T10:00:00Z',
          origin: 'a1',
          fired: [{ step: 0, action: 'timeout', afterMs: 7_200_000, at: '' }],
          timedOutAfterMs: 7_200_000,
        },
      }),
      { now: new Date('2026-11-30T12:00:00Z') },
    );
    const text = JSON.stringify(card.blocks);
    expect(card.text).toMatch(/^Timed out: bash/);
    expect(text).toContain('Timed out after 2h — rejected');
    expect(text).toContain('the escalation timeout');
  });

  it('the DM carries the summary, the link and the card’s own buttons', () => {
    const dm = renderEscalationDm(record(), {
      permalink: 'https://x.slack.com/archives/C1/p11',
      waitedMs: 1_800_000,
    });
    const card = renderCard(record(), { now: new Date() });
    const buttons = (blocks: unknown[]) =>
      JSON.stringify(
        blocks
          .filter((b) => (b as { type: string }).type === 'actions')
          .flatMap((b) => (b as { elements: unknown[] }).elements),
      );
    expect(buttons(dm.blocks)).toBe(
      buttons(card.blocks.filter((b) => (b as { block_id?: string }).block_id?.startsWith('cs_choices'))),
    );
    const text = JSON.stringify(dm.blocks);
    expect(text).toContain('make deploy');
    expect(text).toContain('<https://x.slack.com/archives/C1/p11|Open the card>');
    expect(text).toContain('waited 30 min');
  });

  it('a successor is the same request: same host, session and tool call', () => {
    expect(lineageOf(record())).toBe(lineageOf(record({ approvalId: 'a2' })));
    expect(lineageOf(record())).not.toBe(lineageOf(record({ toolCallId: 'call_2' })));
  });
});

describe('on-call sources', () => {
  const groups = {
    members: async (id: string) => new Set(id === 'S0ONCALL' ? ['U0BOB', 'U0CAROL'] : ['U0ZED']),
  };

  it('a user group is mentioned as such, its members in order', async () => {
    const resolver = new OncallResolver({ groups, logger: silent });
    expect(await resolver.resolve({ kind: 'usergroup', usergroup: 'S0ONCALL' }, undefined, 'a1')).toEqual({
      users: ['U0BOB', 'U0CAROL'],
      usergroup: 'S0ONCALL',
      source: 'usergroup',
    });
  });

  it('a failing source falls back to the approvers, and says so in the log', async () => {
    const lines: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => lines.push(line) });
    const resolver = new OncallResolver({
      groups,
      pagerDuty: {
        slackUsers: async () => {
          throw new Error('PagerDuty answered 500');
        },
      },
      logger,
    });
    const found = await resolver.resolve(
      { kind: 'pagerduty', scheduleId: 'P1' },
      { users: ['U0ANA'], usergroups: ['S0SRE'] },
      'a1',
    );
    expect(found).toEqual({ users: ['U0ANA', 'U0ZED'], source: 'approvers' });
    expect(lines.join('')).toContain('on-call source failed');
    expect(lines.join('')).toContain('"approvalId":"a1"');
  });
});

describe('PagerDuty client', () => {
  function fakeFetch(statuses: number[]) {
    const calls: Array<{ url: string; body: unknown }> = [];
    const fetch = (async (url: string, init: RequestInit) => {
      calls.push({ url, body: init.body ? JSON.parse(String(init.body)) : undefined });
      const status = statuses.shift() ?? 202;
      return new Response(status < 300 ? '{"status":"success"}' : '{"status":"error"}', { status });
    }) as unknown as typeof globalThis.fetch;
    return { fetch, calls };
  }

  it('retries 429 and 5xx with backoff, then succeeds', async () => {
    const { fetch, calls } = fakeFetch([429, 503]);
    const pd = new PagerDuty({
      eventsUrl: 'http://pd/v2/enqueue',
      apiUrl: 'http://pd/',
      logger: silent,
      fetch,
      baseDelayMs: 1,
    });
    await pd.trigger({
      routingKey: 'R',
      dedupKey: 'a1',
      summary: 'bash — make',
      source: 'countersign',
      customDetails: {},
    });
    expect(calls).toHaveLength(3);
    expect(calls[2]!.body).toMatchObject({ routing_key: 'R', event_action: 'trigger', dedup_key: 'a1' });
    expect(pd.failures.trigger).toBe(0);
  });

  it('does not retry a 400, and counts the failure', async () => {
    const { fetch, calls } = fakeFetch([400]);
    const pd = new PagerDuty({
      eventsUrl: 'http://pd/v2/enqueue',
      apiUrl: 'http://pd/',
      logger: silent,
      fetch,
      baseDelayMs: 1,
    });
    await expect(pd.resolve('R', 'a1')).rejects.toThrow(/400/);
    expect(calls).toHaveLength(1);
    expect(pd.failures.resolve).toBe(1);
  });

  it('cuts a long summary to 1,024 characters, never inside an emoji', async () => {
    const { fetch, calls } = fakeFetch([]);
    const pd = new PagerDuty({
      eventsUrl: 'http://pd/v2/enqueue',
      apiUrl: 'http://pd/',
      logger: silent,
      fetch,
    });
    const summary = `${'a'.repeat(1023)}😀tail`;
    await pd.trigger({ routingKey: 'R', dedupKey: 'a1', summary, source: 'c', customDetails: {} });
    expect((calls[0]!.body as { payload: { summary: string } }).payload.summary).toBe('a'.repeat(1023));
  });

  it('gives up after its attempts, counting one failure', async () => {
    const { fetch, calls } = fakeFetch([500, 500, 500, 500]);
    const pd = new PagerDuty({
      eventsUrl: 'http://pd/v2/enqueue',
      apiUrl: 'http://pd/',
      logger: silent,
      fetch,
      baseDelayMs: 1,
    });
    await expect(pd.resolve('R', 'a1')).rejects.toThrow(/500/);
    expect(calls).toHaveLength(4);
    expect(pd.failures.resolve).toBe(1);
  });

  it('a trigger cut short by its signal ends at once with its reason, in a call or a backoff, uncounted', async () => {
    const hangs = ((_url: string, init: RequestInit) =>
      new Promise((_resolve, reject) => {
        init.signal?.addEventListener('abort', () => reject(init.signal?.reason));
      })) as unknown as typeof globalThis.fetch;
    const { fetch: failsOnce, calls } = fakeFetch([503]);
    for (const [fetch, baseDelayMs] of [
      [hangs, 1],
      [failsOnce, 60_000],
    ] as const) {
      const pd = new PagerDuty({
        eventsUrl: 'http://pd/v2/enqueue',
        apiUrl: 'http://pd/',
        logger: silent,
        fetch,
        timeoutMs: 60_000,
        baseDelayMs,
      });
      const stop = new AbortController();
      const why = new Error('stopping');
      const started = Date.now();
      const sent = pd.trigger(
        { routingKey: 'R', dedupKey: 'a1', summary: 's', source: 'c', customDetails: {} },
        stop.signal,
      );
      await new Promise((r) => setTimeout(r, 20));
      stop.abort(why);
      await expect(sent).rejects.toBe(why);
      expect(Date.now() - started).toBeLessThan(2_000);
      expect(pd.failures.trigger).toBe(0);
    }
    // The backoff was cut short: no second attempt.
    expect(calls).toHaveLength(1);
  });

  it('times out a call that never answers', async () => {
    const fetch = ((_url: string, init: RequestInit) =>
      new Promise((_resolve, reject) => {
        init.signal?.addEventListener('abort', () => reject(init.signal?.reason));
      })) as unknown as typeof globalThis.fetch;
    const pd = new PagerDuty({
      eventsUrl: 'http://pd/v2/enqueue',
      apiUrl: 'http://pd/',
      logger: silent,
      fetch,
      timeoutMs: 50,
      attempts: 2,
      baseDelayMs: 1,
    });
    const started = Date.now();
    await expect(pd.resolve('R', 'a1')).rejects.toThrow(/unreachable/);
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe('Escalator', () => {
  /** Resolves once `probe` holds (the escalator's work runs on microtasks and ticks). */
  async function until(probe: () => boolean): Promise<void> {
    for (let i = 0; i < 200 && !probe(); i++) await new Promise((r) => setTimeout(r, 1));
    expect(probe()).toBe(true);
  }

  /** What an escalator is given that these tests never reach, or reach only to note a step. */
  const untouched = () => ({
    keeper: { mutateAndSync: async () => undefined } as unknown as RecordKeeper,
    // Nobody may decide: these tests send no DM.
    ...quietEscalatorParts(),
  });

  function world(
    /** The approval as each read finds it: a function is asked at every read. */
    stored: ApprovalRecord | undefined | (() => ApprovalRecord | undefined),
    ladder: EscalationStep[] = [{ afterMs: 0, action: 'remind' }],
    decider: Decider = {} as Decider,
    logger: Logger = silent,
    /** What the one look finds due (one step of a1 by default), and how a thread reply is sent. */
    given: { due?: DueStep[]; threadReply?: () => Promise<void> } = {},
  ) {
    const sent: string[] = [];
    const marked: number[] = [];
    const firedSteps: FiredStep[] = [];
    const claims: string[] = [];
    /** When each step put back falls due again (ms). */
    const retries: number[] = [];
    /** When each step put off (not claimed) falls due again (ms). */
    const postponed: number[] = [];
    const due = { member: 'm', approvalId: 'a1', step: 0, lineage: 'l' };
    const escalator = new Escalator({
      schedule: {
        look: async () => ({ due: given.due ?? [due] }),
        claim: async () => {
          claims.push('claim');
          return true;
        },
        drop: async () => {
          claims.push('drop');
        },
        release: async () => {
          claims.push('release');
          return 0;
        },
        fired: async (_l: string, f: FiredStep) => {
          marked.push(f.step);
          firedSteps.push(f);
        },
        retry: async (_due: unknown, atMs: (times: number) => number) => {
          retries.push(atMs(retries.length + 1));
          return retries.length;
        },
        postpone: async (_due: unknown, atMs: number) => {
          postponed.push(atMs);
        },
      } as unknown as EscalationStore,
      store: {
        get: async () => (typeof stored === 'function' ? stored() : stored),
      } as unknown as ApprovalStore,
      slack: {
        threadReply: async (_card, reply) => {
          await given.threadReply?.();
          sent.push(renderEscalationReply(reply));
        },
        directMessage: async () => ({ channel: 'D1', ts: '1' }),
        permalink: async () => undefined,
        nameOf: async () => undefined,
      },
      ladderOf: () => ladder,
      ...untouched(),
      decider,
      logger,
      now: () => new Date(0),
    });
    return { escalator, sent, marked, firedSteps, claims, retries, postponed };
  }

  describe('steps firing at once', () => {
    /** 33 due steps whose reminders hang until the test lets each go. */
    function crowded() {
      const held: Array<() => void> = [];
      const due = Array.from({ length: 33 }, (_, i) => ({
        member: `m${i}`,
        approvalId: 'a1',
        step: 0,
        lineage: `l${i}`,
      }));
      const w = world(record(), undefined, undefined, undefined, {
        due,
        threadReply: () => new Promise<void>((resolve) => held.push(resolve)),
      });
      const claimed = () => w.claims.filter((c) => c === 'claim').length;
      return { ...w, held, claimed };
    }

    it('are 32 at most: the 33rd is claimed once one of them is done', async () => {
      const { escalator, held, claimed } = crowded();
      const polling = escalator.poll();
      await until(() => held.length === 32);
      await new Promise((r) => setTimeout(r, 20));
      expect(claimed()).toBe(32);
      held.shift()!();
      await polling;
      expect(claimed()).toBe(33);
      await until(() => held.length === 32);
      for (const release of held.splice(0)) release();
      await escalator.stop();
    });

    it('a stop claims nothing for a step still waiting for its turn', async () => {
      const { escalator, held, claimed } = crowded();
      const polling = escalator.poll();
      await until(() => held.length === 32);
      const stopping = escalator.stop();
      for (const release of held.splice(0)) release();
      await Promise.all([polling, stopping]);
      expect(claimed()).toBe(32);
      expect(held).toEqual([]);
    });
  });

  it('a step claimed as its approval resolves does nothing: the record is read after the claim', async () => {
    const resolved = world(
      record({
        phase: 'resolved',
        resolution: { decision: 'approved', resolvedBy: 'user', decidedAt: 'now' },
      }),
    );
    await resolved.escalator.poll();
    await resolved.escalator.stop();
    expect(resolved.sent).toEqual([]);
    expect(resolved.marked).toEqual([]);
    // The same step on an open approval does fire.
    const open = world(record());
    await open.escalator.poll();
    await open.escalator.stop();
    expect(open.sent).toHaveLength(1);
    expect(open.marked).toEqual([0]);
  });

  it('a step of an approval asked again on another route is dropped, or given up once claimed: nobody may decide it', async () => {
    // recordMutations.rerouted: for good, unlike the other reasons a card is unavailable.
    const reasked = record({
      phase: 'unavailable',
      unavailable: 'routeChanged',
      rerouted: { change: 'route', from: 'dev', to: 'prod' },
    });
    const dropped = world(reasked);
    await dropped.escalator.poll();
    await dropped.escalator.stop();
    expect(dropped.claims).toEqual(['drop']);
    expect(dropped.sent).toEqual([]);
    // Asked again between the look and the read after the claim.
    let reads = 0;
    const released = world(() => (++reads <= 1 ? record() : reasked));
    await released.escalator.poll();
    await released.escalator.stop();
    expect(released.claims).toEqual(['claim', 'release']);
    expect(released.sent).toEqual([]);
    expect(released.marked).toEqual([]);
  });

  it('a process whose file has no such step leaves it due for one that has; a step of a gone approval is dropped', async () => {
    const stranger = world(record(), []);
    await stranger.escalator.poll();
    await stranger.escalator.stop();
    expect(stranger.claims).toEqual([]);
    expect(stranger.sent).toEqual([]);
    // Due a minute later, off the head of the schedule, where it would hold up the steps behind.
    expect(stranger.postponed).toEqual([60_000]);
    const gone = world(undefined);
    await gone.escalator.poll();
    await gone.escalator.stop();
    expect(gone.claims).toEqual(['drop']);
  });

  it('counts a step that threw as `internal`, a kind /metrics serves at 0 from the start', async () => {
    // Any other failure is counted under the step's action. A kind missing from the registry's
    // list would only appear at its first failure, and an alert on its rate would miss that one.
    let reads = 0;
    const threw = world(() => {
      if (++reads > 1) throw new Error('Redis went away');
      return record();
    });
    await threw.escalator.poll();
    await threw.escalator.stop();
    expect(threw.escalator.failures).toEqual({ internal: 1 });
    // And by its type it counts no kind outside the list /metrics serves.
    expectTypeOf(threw.escalator.failures).toEqualTypeOf<EscalationFailures>();
    const atStart = await new PromMetrics({ routes: [], hosts: [] }).text();
    expect(seriesValue(atStart, 'countersign_escalation_failures_total{kind="internal"}')).toBe(0);
  });

  describe('a timeout that could not decide', () => {
    const TIMEOUT: EscalationStep[] = [{ afterMs: 0, action: 'timeout' }];
    /** A Decider that answers every decide with `outcome`, recording who decided. */
    function deciding(outcome: DecisionOutcome) {
      const asked: DecisionRequest[] = [];
      const decider = {
        decide: async (request: DecisionRequest) => {
          asked.push(request);
          return outcome;
        },
      } as unknown as Decider;
      return { decider, asked };
    }

    it('due while its approval is being decided: put back a little later, not marked fired nor failed', async () => {
      const { decider, asked } = deciding({ kind: 'decided', terminal: true });
      const held = world(record({ phase: 'deciding' }), TIMEOUT, decider);
      await held.escalator.poll();
      await held.escalator.stop();
      expect(asked).toEqual([]);
      expect(held.marked).toEqual([]);
      expect(held.retries).toEqual([5_000]);
    });

    it('a decide that came to nothing (the host refused, Redis failed) is tried again, later each time', async () => {
      const { decider, asked } = deciding({ kind: 'refused', errorKind: 'internal' });
      const refused = world(record(), TIMEOUT, decider);
      await refused.escalator.poll();
      await refused.escalator.poll();
      await refused.escalator.stop();
      expect(asked.map((r) => r.by)).toEqual([{ via: 'timeout' }, { via: 'timeout' }]);
      expect(refused.marked).toEqual([]);
      expect(refused.retries).toEqual([5_000, 10_000]);
    });

    it('handed to the replica that owns the host, which has not said how it went: tried again, not marked fired', async () => {
      // The owner may still refuse it (the approval changed, a click in flight), and nobody would
      // hear: only a click's asker is answered late. Tried again, the claim on the record decides
      // once: a try that finds the owner deciding it, or the approval over, decides nothing.
      const { decider, asked } = deciding({ kind: 'forwarded' });
      const { logger, lines } = captureLogger('info');
      const forwarded = world(record(), TIMEOUT, decider, logger);
      await forwarded.escalator.poll();
      await forwarded.escalator.poll();
      await forwarded.escalator.stop();
      expect(asked).toHaveLength(2);
      expect(forwarded.retries).toEqual([5_000, 10_000]);
      expect(forwarded.firedSteps).toEqual([]);
      expect(
        lines.filter((l) => l.msg === 'escalation timeout could not decide; trying again'),
      ).toMatchObject([
        { outcome: 'forwarded', retry: 1 },
        { outcome: 'forwarded', retry: 2 },
      ]);
    });

    it('a try that finds the approval over (the owner decided it meanwhile) has not failed', async () => {
      const { decider } = deciding({ kind: 'forwarded' });
      const timedOut = record({
        phase: 'resolved',
        resolution: { decision: 'abort', resolvedBy: 'user', decidedAt: 'now', via: 'timeout' },
      });
      let reads = 0;
      // The look before the claim and the read after it find it open; the owner then decides it.
      const over = world(() => (++reads <= 2 ? record() : timedOut), TIMEOUT, decider);
      await over.escalator.poll();
      await over.escalator.stop();
      expect(over.retries).toEqual([]);
      expect(over.firedSteps).toEqual([]);
      expect(over.escalator.failures).toEqual({});
      // The claim's mark is given up, as for any step claimed as its approval ended.
      expect(over.claims).toEqual(['claim', 'release']);
    });

    it('a try that finds the approval asked again on another route is over, not tried again', async () => {
      const { decider, asked } = deciding({ kind: 'forwarded' });
      const { logger, lines } = captureLogger('info');
      let reads = 0;
      // Being decided as the claim lands (not yet), then asked again as a production command.
      const reasked = world(
        () =>
          ++reads <= 2
            ? record({ phase: 'deciding' })
            : record({
                phase: 'unavailable',
                unavailable: 'routeChanged',
                rerouted: { change: 'route', from: 'dev', to: 'prod' },
              }),
        TIMEOUT,
        decider,
        logger,
      );
      await reasked.escalator.poll();
      await reasked.escalator.stop();
      expect(asked).toEqual([]);
      expect(reasked.retries).toEqual([]);
      expect(reasked.firedSteps).toEqual([]);
      expect(reasked.escalator.failures).toEqual({});
      expect(reasked.claims).toEqual(['claim', 'release']);
      expect(lines.map((l) => l.msg)).not.toContain('escalation timeout could not decide; trying again');
    });

    it('an approval the timeout decided shows it timed out, though the step was put back meanwhile', async () => {
      const mutations: Array<(r: ApprovalRecord) => ApprovalRecord | undefined> = [];
      let held = false;
      const escalator = new Escalator({
        ...untouched(),
        schedule: {
          cancel: async () => 0,
          marked: async () => held,
          endPaged: async () => undefined,
        } as unknown as EscalationStore,
        store: {} as ApprovalStore,
        slack: {} as never,
        keeper: {
          mutateAndSync: async (_id: string, m: (r: ApprovalRecord) => ApprovalRecord | undefined) => {
            mutations.push(m);
          },
        } as unknown as RecordKeeper,
        ladderOf: () => [
          { afterMs: 1_000, action: 'remind' },
          { afterMs: 7_200_000, action: 'timeout' },
        ],
        now: () => new Date(0),
      });
      const decided = record({
        phase: 'resolved',
        resolution: { decision: 'abort', resolvedBy: 'user', decidedAt: 'now', via: 'timeout' },
        escalation: { startedAt: new Date(0).toISOString(), origin: 'a1', fired: [] },
      });
      escalator.follow(decided);
      await escalator.stop();
      expect(mutations).toHaveLength(1);
      expect(mutations[0]!(decided)?.escalation).toMatchObject({
        timedOutAfterMs: 7_200_000,
        fired: [{ step: 1, action: 'timeout', afterMs: 7_200_000 }],
      });
      // A step still marked fired is its claimer's to write, once it hears the outcome.
      held = true;
      escalator.follow({ ...decided, approvalId: 'a2' });
      await escalator.stop();
      expect(mutations).toHaveLength(1);
    });

    it('the log says what came of the decide: "decided" only when the host took it', async () => {
      /** The timeout's log lines for one decide that came to `outcome`. */
      async function linesFor(outcome: DecisionOutcome) {
        const { logger, lines } = captureLogger('info');
        const w = world(record(), TIMEOUT, deciding(outcome).decider, logger);
        await w.escalator.poll();
        await w.escalator.stop();
        return lines
          .filter((l) => String(l.msg).startsWith('escalation '))
          .map((l) => ({
            level: l.level,
            msg: l.msg,
            outcome: l.outcome,
            ...(l.errorKind ? { errorKind: l.errorKind } : {}),
          }));
      }
      const [INFO, WARN] = [30, 40];
      expect(await linesFor({ kind: 'decided', terminal: true })).toEqual([
        { level: INFO, msg: 'escalation timeout decided', outcome: 'decided' },
        { level: INFO, msg: 'escalation step fired', outcome: undefined },
      ]);
      // Refused by the host, or the approval moved on: nothing was decided, and the line says so.
      expect(await linesFor({ kind: 'refused', errorKind: 'internal' })).toEqual([
        {
          level: WARN,
          msg: 'escalation timeout could not decide; trying again',
          outcome: 'refused',
          errorKind: 'internal',
        },
      ]);
      expect(await linesFor({ kind: 'stale' })).toEqual([
        { level: WARN, msg: 'escalation timeout could not decide; trying again', outcome: 'stale' },
      ]);
      // Claimed, but the host is down: sent when it is back, which is not "decided" yet.
      const away = await linesFor({ kind: 'hostUnavailable' });
      expect(away.map((l) => l.msg)).not.toContain('escalation timeout decided');
      expect(away[0]).toEqual({
        level: WARN,
        msg: 'escalation timeout claimed; the host is unavailable, the decision is sent when it is back',
        outcome: 'hostUnavailable',
      });
    });

    it('with no reject choice to send it fails for good, as before', async () => {
      const { decider, asked } = deciding({ kind: 'decided', terminal: true });
      const choiceless = world(
        record({ availableChoices: record().availableChoices.slice(0, 1) }),
        TIMEOUT,
        decider,
      );
      await choiceless.escalator.poll();
      await choiceless.escalator.stop();
      expect(asked).toEqual([]);
      expect(choiceless.retries).toEqual([]);
      expect(choiceless.firedSteps.map((f) => f.failed)).toEqual([true]);
    });
  });

  describe('when it stops', () => {
    /** A promise and the function that settles it: a gate a test opens when it chooses. */
    function gate<T = void>() {
      let open!: (value: T) => void;
      const shut = new Promise<T>((resolve) => {
        open = resolve;
      });
      return { shut, open };
    }

    /**
     * An escalator with one step due, whose parts a test may hold up: the schedule's look, the
     * claim's answer, the record as read after the claim (`fireGet`), the thread reply, and
     * PagerDuty's trigger. A timeout it fires decides at once.
     */
    function stopping(
      ladder: EscalationStep[],
      held: {
        look?: Promise<void>;
        claim?: Promise<void>;
        fireGet?: Promise<void>;
        reply?: Promise<void>;
        trigger?: (signal: AbortSignal | undefined) => Promise<void>;
      } = {},
    ) {
      const sent: string[] = [];
      const triggers: string[] = [];
      const claims: string[] = [];
      const marked: number[] = [];
      const written: string[] = [];
      const retries: number[] = [];
      const decided: string[] = [];
      let gets = 0;
      const due = { member: 'm', approvalId: 'a1', step: 0, lineage: 'l' };
      const escalator = new Escalator({
        schedule: {
          look: async () => {
            await held.look;
            return { due: [due] };
          },
          claim: async () => {
            claims.push('claim');
            await held.claim;
            return true;
          },
          paged: async () => true,
          ended: async () => false,
          fired: async (_l: string, f: FiredStep) => {
            marked.push(f.step);
          },
          retry: async (_due: unknown, atMs: (times: number) => number) => {
            retries.push(atMs(retries.length + 1));
            return retries.length;
          },
        } as unknown as EscalationStore,
        store: {
          get: async () => {
            gets += 1;
            // The first read is the look before the claim; the second, the one after it.
            if (gets === 2) await held.fireGet;
            return record();
          },
        } as unknown as ApprovalStore,
        slack: {
          threadReply: async (_card, reply) => {
            await held.reply;
            sent.push(renderEscalationReply(reply));
          },
          directMessage: async () => ({ channel: 'D1', ts: '1' }),
          permalink: async () => undefined,
          nameOf: async () => undefined,
        },
        pager: {
          trigger: async (event, signal) => {
            triggers.push(event.dedupKey);
            await held.trigger?.(signal);
          },
          resolve: async () => undefined,
        },
        defaultRoutingKey: 'R',
        ladderOf: () => ladder,
        ...untouched(),
        keeper: {
          mutateAndSync: async () => {
            written.push('escalationFired');
          },
        } as unknown as RecordKeeper,
        decider: {
          decide: async (request: DecisionRequest) => {
            decided.push(request.record.approvalId);
            return { kind: 'decided', terminal: true };
          },
        } as unknown as Decider,
        now: () => new Date(0),
      });
      return { escalator, sent, triggers, claims, marked, written, retries, decided };
    }

    /** PagerDuty that never answers: the trigger ends only when its signal aborts. */
    const hanging = (signal: AbortSignal | undefined) =>
      new Promise<void>((_resolve, reject) => {
        signal?.addEventListener('abort', () => reject(signal.reason));
      });

    it('a page PagerDuty has not confirmed is cut short and put back, due now, not marked fired', async () => {
      const w = stopping([{ afterMs: 0, action: 'page' }], { trigger: hanging });
      const polled = w.escalator.poll();
      await until(() => w.triggers.length === 1);
      await w.escalator.stop();
      await polled;
      expect(w.triggers).toEqual(['a1']);
      expect(w.retries).toEqual([0]);
      expect(w.marked).toEqual([]);
      expect(w.written).toEqual([]);
      expect(w.escalator.failures).toEqual({});
    });

    it('a page PagerDuty confirmed is marked fired as ever, never put back', async () => {
      const confirmed = gate();
      const w = stopping([{ afterMs: 0, action: 'page' }], { trigger: () => confirmed.shut });
      const polled = w.escalator.poll();
      await until(() => w.triggers.length === 1);
      const stopped = w.escalator.stop();
      confirmed.open();
      await stopped;
      await polled;
      expect(w.retries).toEqual([]);
      expect(w.marked).toEqual([0]);
      expect(w.written).toEqual(['escalationFired']);
    });

    it('a reminder not yet sent is put back; one on its way is sent and marked, not put back', async () => {
      const read = gate();
      const before = stopping([{ afterMs: 0, action: 'remind' }], { fireGet: read.shut });
      const polled = before.escalator.poll();
      await until(() => before.claims.length === 1);
      const stopped = before.escalator.stop();
      read.open();
      await stopped;
      await polled;
      expect(before.sent).toEqual([]);
      expect(before.retries).toEqual([0]);
      expect(before.marked).toEqual([]);

      // Once the reply may have reached Slack, a second one would show: it is let finish instead.
      const posted = gate();
      const sending = stopping([{ afterMs: 0, action: 'remind' }], { reply: posted.shut });
      const polling = sending.escalator.poll();
      await until(() => sending.claims.length === 1);
      await new Promise((r) => setTimeout(r, 5));
      const stopping_ = sending.escalator.stop();
      posted.open();
      await stopping_;
      await polling;
      expect(sending.sent).toHaveLength(1);
      expect(sending.retries).toEqual([]);
      expect(sending.marked).toEqual([0]);
    });

    it('a claim on its way as it stops is waited for, and the step it won is given back unfired', async () => {
      // A timeout, which no stop cuts short: fired by the claim, it would decide in a process that
      // had said it was done. Given back, due now, another process decides it, once.
      const answered = gate();
      const w = stopping([{ afterMs: 0, action: 'timeout' }], { claim: answered.shut });
      const polled = w.escalator.poll();
      await until(() => w.claims.length === 1);
      let stopped = false;
      const stopping_ = w.escalator.stop().then(() => {
        stopped = true;
      });
      await new Promise((r) => setTimeout(r, 5));
      expect(stopped).toBe(false);
      answered.open();
      await stopping_;
      // Given back by the time stop() resolved, and nothing done after.
      expect(w.retries).toEqual([0]);
      await polled;
      await new Promise((r) => setTimeout(r, 5));
      expect(w.retries).toEqual([0]);
      expect(w.decided).toEqual([]);
      expect(w.marked).toEqual([]);
      expect(w.written).toEqual([]);
      expect(w.escalator.failures).toEqual({});
    });

    it('a look under way as it stops claims nothing', async () => {
      const looked = gate();
      const w = stopping([{ afterMs: 0, action: 'remind' }], { look: looked.shut });
      const polled = w.escalator.poll();
      const stopped = w.escalator.stop();
      looked.open();
      await stopped;
      await polled;
      expect(w.claims).toEqual([]);
      expect(w.sent).toEqual([]);
    });
  });

  describe('when it looks at the schedule', () => {
    afterEach(() => {
      vi.useRealTimers();
    });

    /**
     * An escalator on a schedule that answers each look from `answer` (ms since the start, by the
     * faked clock), recording when it was asked; nothing in it is ever due unless `answer` says so.
     */
    function timed(
      answer: (atMs: number) => { due?: DueStep[]; nextMs?: number },
      ladder: EscalationStep[] = [],
      get: () => Promise<ApprovalRecord | undefined> = async () => undefined,
    ) {
      vi.useFakeTimers({ now: 0 });
      const looks: number[] = [];
      const scheduled: string[] = [];
      const escalator = new Escalator({
        schedule: {
          look: async () => {
            looks.push(Date.now());
            return { due: [], ...answer(Date.now()) };
          },
          drop: async () => undefined,
          schedule: async (approvalId: string) => {
            scheduled.push(approvalId);
            return { startMs: Date.now(), origin: approvalId, fired: [], scheduled: true };
          },
        } as unknown as EscalationStore,
        store: { get } as unknown as ApprovalStore,
        slack: {} as never,
        ladderOf: () => ladder,
        idlePollMs: 1_000,
        ...untouched(),
      });
      return { escalator, looks, scheduled };
    }

    it('an idle schedule is looked at once a second, not five times', async () => {
      const { escalator, looks } = timed(() => ({}));
      escalator.start();
      await vi.advanceTimersByTimeAsync(5_000);
      await escalator.stop();
      expect(looks).toEqual([0, 1_000, 2_000, 3_000, 4_000, 5_000]);
    });

    it('sleeps until the next step falls due, when that is sooner than the idle bound', async () => {
      const { escalator, looks } = timed((at) => (at < 300 ? { nextMs: 300 } : {}));
      escalator.start();
      await vi.advanceTimersByTimeAsync(1_500);
      await escalator.stop();
      expect(looks).toEqual([0, 300, 1_300]);
    });

    /** A full look: the step it took (of an approval gone, so dropped), and more due now. */
    const full = (at: number) => ({
      due: [{ member: 'm', approvalId: 'gone', step: 0, lineage: 'l' }],
      nextMs: at,
    });

    it('more due than one look takes: looks again at once', async () => {
      const { escalator, looks } = timed((at) => (looks.length < 3 ? full(at) : {}));
      escalator.start();
      await vi.advanceTimersByTimeAsync(10);
      await escalator.stop();
      // Each look again at once (a zero timeout, which the faked clock counts as a millisecond).
      expect(looks).toHaveLength(3);
      expect(Math.max(...looks)).toBeLessThan(10);
    });

    it('more due than one look takes, none of which it can read: looks again at the idle bound', async () => {
      // The head holds entries of another version (nothing this process takes): the next look
      // would find the very same ones.
      const { escalator, looks } = timed((at) => ({ due: [], nextMs: at }));
      escalator.start();
      await vi.advanceTimersByTimeAsync(2_500);
      await escalator.stop();
      expect(looks).toEqual([0, 1_000, 2_000]);
    });

    it("a step this process schedules wakes it at the step's time, not at the next idle look", async () => {
      const { escalator, looks, scheduled } = timed(
        () => ({}),
        [
          { afterMs: 250, action: 'remind' },
          { afterMs: 600, action: 'remind' },
        ],
      );
      escalator.start();
      await vi.advanceTimersByTimeAsync(100);
      escalator.follow(record());
      await vi.advanceTimersByTimeAsync(500);
      await escalator.stop();
      expect(scheduled).toEqual(['a1']);
      expect(looks).toEqual([0, 350]);
    });

    it('a stopped escalator looks no more', async () => {
      const { escalator, looks } = timed(() => ({ nextMs: 50 }));
      escalator.start();
      await vi.advanceTimersByTimeAsync(0);
      await escalator.stop();
      await vi.advanceTimersByTimeAsync(5_000);
      expect(looks).toEqual([0]);
    });
  });
});
