// Reading the Prometheus text of /metrics in tests: one series' value, and the series the bot must
// serve at 0 from its start (built from the same closed sets as the bot, so a label value added
// there is expected here too).

import { readFileSync } from 'node:fs';
import { DECISION_OUTCOMES, ESCALATION_ACTIONS, SLACK_METHODS } from '../../src/domain/metrics.js';
import { REFUSAL_REASON_LABELS } from '../../src/store/refusalCounts.js';

/** The value of one series (its whole name, labels in the registry's order); undefined when absent. */
export function seriesValue(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** The metric names a text exposition declares (`# TYPE name kind`). */
export function declaredNames(text: string): Set<string> {
  return new Set([...text.matchAll(/^# TYPE (\S+) \S+$/gm)].map((m) => m[1]!));
}

/** Every counted series, at 0 before anything happened; `routes`: the configured route names. */
export function seriesAtZero(routes: readonly string[]): string[] {
  const routeLabels = [...routes, '(SLACK_CHANNEL)', 'other'];
  return [
    ...routeLabels.map((route) => `countersign_pending_approvals{route="${route}"}`),
    'countersign_cards_posted_total',
    'countersign_decisions_sent_total',
    'countersign_notices_sent_total',
    ...REFUSAL_REASON_LABELS.flatMap((reason) => [
      `countersign_refusals_total{reason="${reason}"}`,
      `countersign_refusals_over_limit_total{reason="${reason}"}`,
    ]),
    ...[
      ...ESCALATION_ACTIONS,
      'resolve',
      'internal',
      'pagerduty-trigger',
      'pagerduty-resolve',
      'pagerduty-oncalls',
    ].map((kind) => `countersign_escalation_failures_total{kind="${kind}"}`),
    ...routeLabels.flatMap((route) =>
      DECISION_OUTCOMES.flatMap((outcome) => [
        `countersign_time_to_decision_seconds_count{route="${route}",outcome="${outcome}"}`,
        `countersign_time_to_decision_seconds_bucket{le="+Inf",route="${route}",outcome="${outcome}"}`,
      ]),
    ),
    'countersign_click_to_decide_seconds_count',
    'countersign_click_to_decide_seconds_sum',
    ...SLACK_METHODS.flatMap((method) => [
      `countersign_slack_failures_total{method="${method}"}`,
      `countersign_slack_rate_limited_total{method="${method}"}`,
    ]),
    'countersign_grant_lookups_total',
    'countersign_grant_hits_total',
    'countersign_grant_uses_total',
    ...ESCALATION_ACTIONS.map((action) => `countersign_escalation_steps_total{action="${action}"}`),
    'countersign_redis_errors_total',
  ];
}

/** The Grafana dashboard shipped in deploy/, parsed. */
export function dashboard(): Record<string, unknown> {
  const path = new URL('../../deploy/grafana/countersign-dashboard.json', import.meta.url);
  return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
}

/** Every PromQL query anywhere in the dashboard: panels' `expr`, variables' `definition`. */
export function dashboardQueries(): string[] {
  const found: string[] = [];
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(walk);
    else if (value !== null && typeof value === 'object') {
      for (const [key, inner] of Object.entries(value)) {
        if ((key === 'expr' || key === 'definition') && typeof inner === 'string') found.push(inner);
        else walk(inner);
      }
    }
  };
  walk(dashboard());
  return found;
}

/** The metric names the dashboard's queries use, histogram suffixes included. */
export function dashboardMetricNames(): Set<string> {
  return new Set(
    dashboardQueries().flatMap((expr) =>
      [...expr.matchAll(/\b(?:countersign|process|nodejs)_\w+/g)].map((m) => m[0]),
    ),
  );
}

/** A name served as a metric, or one of a histogram's series (`_bucket`, `_sum`, `_count`). */
export function isServed(name: string, served: Set<string>): boolean {
  return served.has(name) || served.has(name.replace(/_(bucket|sum|count)$/, ''));
}
