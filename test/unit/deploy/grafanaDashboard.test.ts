import { describe, expect, it } from 'vitest';
import { PromMetrics } from '../../../src/slack/metrics/promMetrics.js';
import {
  dashboard,
  dashboardMetricNames,
  dashboardQueries,
  declaredNames,
  isServed,
} from '../../support/metricSeries.js';

// deploy/grafana/countersign-dashboard.json: it parses, every query reads a metric the bot serves
// (a renamed metric fails here), and it names no data source of anyone's own Grafana.

type Panel = {
  type: string;
  title: string;
  datasource?: { uid?: string };
  targets?: Array<{ expr: string }>;
};

describe('the Grafana dashboard', () => {
  it('queries only metrics the bot serves', async () => {
    const metrics = new PromMetrics({ routes: [], hosts: ['main'] });
    metrics.observe({
      probe: {
        redis: () => true,
        slack: () => true,
        hosts: () => true,
        whyDown: () => undefined,
        hostStatus: () => [{ hostId: 'main', up: true, role: 'owner' }],
      },
    });
    const served = declaredNames(await metrics.text());
    const used = [...dashboardMetricNames()];
    expect(used.filter((name) => !isServed(name, served))).toEqual([]);
    // Each series the issue asks for has a panel.
    for (const name of [
      'countersign_pending_approvals',
      'countersign_time_to_decision_seconds_bucket',
      'countersign_click_to_decide_seconds_bucket',
      'countersign_slack_failures_total',
      'countersign_slack_rate_limited_total',
      'countersign_refusals_total',
      'countersign_grant_lookups_total',
      'countersign_grant_hits_total',
      'countersign_grant_uses_total',
      'countersign_escalation_steps_total',
      'countersign_redis_errors_total',
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_gc_duration_seconds_sum',
      'process_open_fds',
    ]) {
      expect(used, name).toContain(name);
    }
    // A misspelt suffix is not taken for a histogram's.
    expect(isServed('countersign_click_to_decide_seconds_buckets', served)).toBe(false);
  });

  it('reads its data source from a variable, in every panel and query', () => {
    const json = dashboard() as {
      panels: Panel[];
      templating: { list: Array<{ name: string; type: string }> };
    };
    expect(json.templating.list).toContainEqual(
      expect.objectContaining({ name: 'DS_PROMETHEUS', type: 'datasource' }),
    );
    const panels = json.panels.filter((p) => p.type !== 'row');
    expect(panels.length).toBeGreaterThan(10);
    for (const panel of panels) {
      // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable syntax, not a template.
      expect(panel.datasource?.uid, panel.title).toBe('${DS_PROMETHEUS}');
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
    }
    expect(dashboardQueries().every((q) => q.length > 0)).toBe(true);
  });
});
