import { describe, expect, it } from 'vitest';
import { PendingApprovals } from '../../../src/slack/metrics/pendingApprovals.js';
import { PromMetrics } from '../../../src/slack/metrics/promMetrics.js';
import { seriesAtZero, seriesValue } from '../../support/metricSeries.js';

/** Every series a fresh registry must show at 0, for routes `deploys` and host `main`. */
function expectedAtZero(): string[] {
  return [
    ...['redis', 'slack', 'host'].map((part) => `countersign_up{part="${part}"}`),
    'countersign_host_owned{host="main"}',
    ...seriesAtZero(['deploys']),
  ];
}

describe('PromMetrics', () => {
  it('lists every series at 0 as soon as it is made, with the default process metrics', async () => {
    const text = await new PromMetrics({ routes: ['deploys'], hosts: ['main'] }).text();
    const missing = expectedAtZero().filter((series) => seriesValue(text, series) !== 0);
    expect(missing).toEqual([]);
    for (const name of ['process_resident_memory_bytes', 'nodejs_heap_size_used_bytes', 'process_open_fds']) {
      expect(seriesValue(text, name), name).toBeGreaterThan(0);
    }
    expect(seriesValue(text, 'nodejs_eventloop_lag_seconds')).toBeGreaterThanOrEqual(0);
    expect(text).toContain('# TYPE nodejs_gc_duration_seconds histogram');
    // Registered once each: prom-client's defaults are not served twice.
    expect(text.match(/^# TYPE process_resident_memory_bytes /gm)).toHaveLength(1);
  });

  it('counts events under closed label sets, apart from any other registry', async () => {
    const metrics = new PromMetrics({ routes: ['deploys'], hosts: ['main'] });
    const other = new PromMetrics({ routes: ['deploys'], hosts: ['main'] });
    metrics.decided('deploys', 'grant', 3);
    metrics.decided(undefined, 'person', 40);
    metrics.decided('a route taken out of the file', 'policy', 1);
    metrics.clickDecided(0.2);
    metrics.slackFailed('chat.postMessage', true);
    metrics.slackFailed('admin.somethingElse', false);
    metrics.grantLookup(true);
    metrics.grantLookup(false);
    metrics.grantUsed();
    metrics.escalationStep('page');
    metrics.redisError();
    const text = await metrics.text();
    const seen = (series: string) => seriesValue(text, series);
    expect(seen('countersign_time_to_decision_seconds_count{route="deploys",outcome="grant"}')).toBe(1);
    expect(seen('countersign_time_to_decision_seconds_bucket{le="5",route="deploys",outcome="grant"}')).toBe(
      1,
    );
    expect(seen('countersign_time_to_decision_seconds_bucket{le="1",route="deploys",outcome="grant"}')).toBe(
      0,
    );
    expect(seen('countersign_time_to_decision_seconds_count{route="(SLACK_CHANNEL)",outcome="person"}')).toBe(
      1,
    );
    expect(seen('countersign_time_to_decision_seconds_count{route="other",outcome="policy"}')).toBe(1);
    expect(seen('countersign_click_to_decide_seconds_bucket{le="0.25"}')).toBe(1);
    expect(seen('countersign_slack_rate_limited_total{method="chat.postMessage"}')).toBe(1);
    expect(seen('countersign_slack_failures_total{method="chat.postMessage"}')).toBe(0);
    expect(seen('countersign_slack_failures_total{method="other"}')).toBe(1);
    expect(text).not.toContain('admin.somethingElse');
    expect(seen('countersign_grant_lookups_total')).toBe(2);
    expect(seen('countersign_grant_hits_total')).toBe(1);
    expect(seen('countersign_grant_uses_total')).toBe(1);
    expect(seen('countersign_escalation_steps_total{action="page"}')).toBe(1);
    expect(seen('countersign_redis_errors_total')).toBe(1);

    const untouched = await other.text();
    expect(seriesValue(untouched, 'countersign_redis_errors_total')).toBe(0);
    expect(seriesValue(untouched, 'countersign_grant_uses_total')).toBe(0);
  });

  it('reads health and the counts kept elsewhere at scrape time', async () => {
    const metrics = new PromMetrics({ routes: [], hosts: ['main', 'ci'] });
    metrics.observe({
      probe: {
        redis: () => true,
        slack: () => false,
        hosts: () => true,
        whyDown: () => undefined,
        hostStatus: () => [
          { hostId: 'main', up: true, role: 'owner' },
          { hostId: 'ci', up: false, role: 'standby' },
        ],
        activity: () => ({ cardsPosted: 4, decisionsSent: 2, noticesSent: 1 }),
        escalationFailures: () => ({ dm: 2, 'pagerduty-trigger': 1 }),
      },
    });
    const text = await metrics.text();
    expect(seriesValue(text, 'countersign_up{part="redis"}')).toBe(1);
    expect(seriesValue(text, 'countersign_up{part="slack"}')).toBe(0);
    expect(seriesValue(text, 'countersign_host_up{host="main"}')).toBe(1);
    // A standby says nothing of a host it does not run.
    expect(text).not.toContain('countersign_host_up{host="ci"}');
    expect(seriesValue(text, 'countersign_host_owned{host="main"}')).toBe(1);
    expect(seriesValue(text, 'countersign_host_owned{host="ci"}')).toBe(0);
    expect(seriesValue(text, 'countersign_cards_posted_total')).toBe(4);
    expect(seriesValue(text, 'countersign_escalation_failures_total{kind="dm"}')).toBe(2);
    expect(seriesValue(text, 'countersign_escalation_failures_total{kind="pagerduty-trigger"}')).toBe(1);
    expect(seriesValue(text, 'countersign_escalation_failures_total{kind="page"}')).toBe(0);
  });
});

describe('PendingApprovals', () => {
  const record = (approvalId: string, route: string | undefined, phase: 'pending' | 'resolved' = 'pending') =>
    ({ approvalId, route, phase }) as Parameters<PendingApprovals['follow']>[0];

  it('counts the open approvals of the hosts this replica runs, by route, reading only routes it never stored', async () => {
    const open: Record<string, string[]> = { main: ['a1', 'a2', 'a3'], ci: ['c1'] };
    let owned = ['main'];
    const reads: string[] = [];
    const pending = new PendingApprovals({
      ownedHosts: () => owned,
      openIds: async (hostId) => open[hostId] ?? [],
      record: async (approvalId) => {
        reads.push(approvalId);
        return { route: 'ops' };
      },
    });
    pending.follow(record('a1', 'deploys'));
    pending.follow(record('a2', undefined));
    expect(await pending.byRoute()).toEqual(
      new Map<string | undefined, number>([
        ['deploys', 1],
        [undefined, 1],
        ['ops', 1],
      ]),
    );
    expect(reads).toEqual(['a3']);
    // Read once: the next scrape knows it. A resolved one is no longer counted.
    pending.follow(record('a1', 'deploys', 'resolved'));
    open.main = ['a2', 'a3'];
    expect(await pending.byRoute()).toEqual(
      new Map<string | undefined, number>([
        [undefined, 1],
        ['ops', 1],
      ]),
    );
    expect(reads).toEqual(['a3']);
    // A standby counts nothing: the owner of the host does.
    owned = [];
    expect(await pending.byRoute()).toEqual(new Map());
  });

  it('remembers a bounded number of routes when nothing scrapes, and reads again what it dropped', async () => {
    const reads: string[] = [];
    const pending = new PendingApprovals({
      ownedHosts: () => ['main'],
      openIds: async () => ['x0', 'late'],
      record: async (approvalId) => {
        reads.push(approvalId);
        return { route: 'ops' };
      },
    });
    for (let i = 0; i < 100_000; i++) pending.follow(record(`x${i}`, 'deploys'));
    pending.follow(record('late', 'deploys'));
    expect(await pending.byRoute()).toEqual(
      new Map<string | undefined, number>([
        ['ops', 1],
        ['deploys', 1],
      ]),
    );
    expect(reads).toEqual(['x0']);
  });

  it('says nothing (the gauge keeps its values) when Redis does not answer', async () => {
    const metrics = new PromMetrics({ routes: ['deploys'], hosts: ['main'] });
    let failing = false;
    const pending = new PendingApprovals({
      ownedHosts: () => ['main'],
      openIds: async () => {
        if (failing) throw new Error('Connection is closed.');
        return ['a1'];
      },
      record: async () => ({ route: 'deploys' }),
    });
    metrics.observe({
      probe: { redis: () => true, slack: () => true, hosts: () => true, whyDown: () => undefined },
      pending,
    });
    expect(seriesValue(await metrics.text(), 'countersign_pending_approvals{route="deploys"}')).toBe(1);
    failing = true;
    expect(await pending.byRoute()).toBeUndefined();
    expect(seriesValue(await metrics.text(), 'countersign_pending_approvals{route="deploys"}')).toBe(1);
  });
});
