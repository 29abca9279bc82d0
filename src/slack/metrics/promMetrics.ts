import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client';
import {
  DECISION_OUTCOMES,
  type DecisionOutcome,
  ESCALATION_ACTIONS,
  ESCALATION_FAILURE_KINDS,
  type Metrics,
  SLACK_METHODS,
  slackMethodLabel,
} from '../../domain/metrics.js';
import type { FiredStep } from '../../domain/record.js';
import { FALLBACK_ROUTE_NAME } from '../../routing/router.js';
import { REFUSAL_REASON_LABELS } from '../../store/refusalCounts.js';
import type { ActivityKind } from '../../util/activity.js';
import type { HealthPart, HealthProbe } from '../healthRoutes.js';

// /metrics with prom-client. One Registry per PromMetrics (never prom-client's global one), so
// two bots in one process, or two tests, never share a series. Every series is there from the
// start at 0: each label value is known up front (routes from the configuration, our own closed
// sets of words), and each is set to 0 when the registry is made. A series that only appears after
// its first event cannot be told apart from one that is not scraped, and rate() misses the first.

/** Routes a record can name that the configuration does not: a route taken out of the file. */
const GONE_ROUTE = 'other';
const PARTS: readonly HealthPart[] = ['redis', 'slack', 'host'];
const ACTIVITY: Record<ActivityKind, { name: string; help: string }> = {
  cardsPosted: { name: 'countersign_cards_posted_total', help: 'Approval cards posted to Slack.' },
  decisionsSent: {
    name: 'countersign_decisions_sent_total',
    help: 'Decisions the MSP host accepted (approval/decide), whoever made them.',
  },
  noticesSent: {
    name: 'countersign_notices_sent_total',
    help: 'Decision notices sent: thread lines, audit entries and requester DMs.',
  },
};

/** From an approval opened to its resolution: seconds to a day. */
const DECISION_BUCKETS = [1, 5, 15, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400, 43200, 86400];
/** From a click to the host's acceptance: Slack wants an answer within 3 s. */
const CLICK_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Pending approvals by route, read at scrape time; undefined when they cannot be read now. */
export interface PendingCounter {
  byRoute(): Promise<Map<string | undefined, number> | undefined>;
}

/** What is read at scrape time rather than counted: health, and counts kept elsewhere. */
export interface ScrapeSources {
  probe: HealthProbe;
  pending?: PendingCounter;
}

export interface PromMetricsOptions {
  /** The configured routes' names: the `route` label's values, with the fallback and `other`. */
  routes: readonly string[];
  /** The configured hosts' ids: the `host` label's values. */
  hosts: readonly string[];
}

export class PromMetrics implements Metrics {
  readonly registry = new Registry();
  private sources: ScrapeSources | undefined;
  private readonly routes: ReadonlySet<string>;
  private readonly decisions: Histogram<'route' | 'outcome'>;
  private readonly clicks: Histogram<never>;
  private readonly slackFailures: Counter<'method'>;
  private readonly slackRateLimited: Counter<'method'>;
  private readonly grantLookups: Counter<never>;
  private readonly grantHits: Counter<never>;
  private readonly grantUses: Counter<never>;
  private readonly escalationSteps: Counter<'action'>;
  private readonly redisErrors: Counter<never>;

  constructor(options: PromMetricsOptions) {
    const registers = [this.registry];
    // Event-loop lag, GC, file descriptors, resident memory, heap: process_resident_memory_bytes
    // and nodejs_heap_size_used_bytes, which /metrics served before, are among them.
    collectDefaultMetrics({ register: this.registry });
    this.routes = new Set([...options.routes, FALLBACK_ROUTE_NAME]);
    const routeLabels = [...this.routes, GONE_ROUTE];
    const self = this;

    new Gauge({
      name: 'countersign_up',
      help: 'Whether a part the bot depends on is up.',
      labelNames: ['part'],
      registers,
      collect() {
        const probe = self.sources?.probe;
        for (const part of PARTS) this.set({ part }, probe && upOf(probe, part) ? 1 : 0);
      },
    });
    // A standby's view of a host it does not run says nothing of the host: its owner reports it.
    new Gauge({
      name: 'countersign_host_up',
      help: 'Whether an MSP host this replica runs is up (handshake done on a live connection).',
      labelNames: ['host'],
      registers,
      collect() {
        this.reset();
        for (const s of self.sources?.probe.hostStatus?.() ?? []) {
          if (s.role !== 'standby') this.set({ host: s.hostId }, s.up ? 1 : 0);
        }
      },
    });
    const owned = new Gauge({
      name: 'countersign_host_owned',
      help: 'Whether this replica runs the MSP host (1) or stands by for it (0).',
      labelNames: ['host'],
      registers,
      collect() {
        for (const s of self.sources?.probe.hostStatus?.() ?? []) {
          this.set({ host: s.hostId }, s.role === 'standby' ? 0 : 1);
        }
      },
    });
    for (const host of options.hosts) owned.set({ host }, 0);
    const pending = new Gauge({
      name: 'countersign_pending_approvals',
      help: 'Approvals asked and not yet final on the hosts this replica runs, by route.',
      labelNames: ['route'],
      registers,
      async collect() {
        const counts = await self.sources?.pending?.byRoute();
        // Unreadable now (Redis away): the last values stand rather than a false drop to 0.
        if (counts === undefined) return;
        for (const route of routeLabels) this.set({ route }, 0);
        for (const [route, n] of counts) this.inc({ route: self.routeLabel(route) }, n);
      },
    });
    for (const route of routeLabels) pending.set({ route }, 0);
    // Counted where they happen (Activity, RefusalCounts, the escalator, PagerDuty) and copied here.
    for (const [kind, { name, help }] of Object.entries(ACTIVITY) as Array<
      [ActivityKind, (typeof ACTIVITY)[ActivityKind]]
    >) {
      new Counter({
        name,
        help,
        registers,
        collect() {
          this.reset();
          this.inc(self.sources?.probe.activity?.()[kind] ?? 0);
        },
      });
    }
    const refusals = (name: string, help: string, pick: 'total' | 'overLimit') =>
      new Counter({
        name,
        help,
        labelNames: ['reason'],
        registers,
        collect() {
          const counts = self.sources?.probe.refusals?.()[pick];
          this.reset();
          for (const reason of REFUSAL_REASON_LABELS) this.inc({ reason }, counts?.[reason] ?? 0);
        },
      });
    refusals(
      'countersign_refusals_total',
      'Refused attempts (clicks, modals, commands, revocations), by reason.',
      'total',
    );
    refusals(
      'countersign_refusals_over_limit_total',
      'Refusals past the limit per user and minute: counted, not written to the audit trail.',
      'overLimit',
    );
    new Counter({
      name: 'countersign_escalation_failures_total',
      help: 'Escalation steps and PagerDuty calls that failed, by kind.',
      labelNames: ['kind'],
      registers,
      collect() {
        const failures = self.sources?.probe.escalationFailures?.() ?? {};
        this.reset();
        for (const kind of ESCALATION_FAILURE_KINDS) this.inc({ kind }, failures[kind] ?? 0);
      },
    });

    // Counted here, as they happen.
    this.decisions = new Histogram({
      name: 'countersign_time_to_decision_seconds',
      help: 'From an approval opened to its resolution, by route and outcome (person, grant, policy, timeout).',
      labelNames: ['route', 'outcome'],
      buckets: DECISION_BUCKETS,
      registers,
    });
    for (const route of routeLabels) {
      for (const outcome of DECISION_OUTCOMES) this.decisions.zero({ route, outcome });
    }
    this.clicks = new Histogram({
      name: 'countersign_click_to_decide_seconds',
      help: 'From a click reaching the bot to the MSP host accepting its decision.',
      buckets: CLICK_BUCKETS,
      registers,
    });
    this.slackFailures = new Counter({
      name: 'countersign_slack_failures_total',
      help: 'Slack Web API calls that failed (network, timeout, 5xx, an error answer; 429s apart), by method.',
      labelNames: ['method'],
      registers,
    });
    this.slackRateLimited = new Counter({
      name: 'countersign_slack_rate_limited_total',
      help: 'Slack Web API calls answered 429 (rate limited), by method.',
      labelNames: ['method'],
      registers,
    });
    for (const method of SLACK_METHODS) {
      this.slackFailures.inc({ method }, 0);
      this.slackRateLimited.inc({ method }, 0);
    }
    this.grantLookups = new Counter({
      name: 'countersign_grant_lookups_total',
      help: 'Requests a remembered grant could answer, looked up as they arrived.',
      registers,
    });
    this.grantHits = new Counter({
      name: 'countersign_grant_hits_total',
      help: 'Grant lookups that found a live grant answering the request.',
      registers,
    });
    this.grantUses = new Counter({
      name: 'countersign_grant_uses_total',
      help: 'Requests a remembered grant decided (the host accepted the decision).',
      registers,
    });
    this.escalationSteps = new Counter({
      name: 'countersign_escalation_steps_total',
      help: 'Escalation steps fired, by action (whether or not they reached anyone).',
      labelNames: ['action'],
      registers,
    });
    for (const action of ESCALATION_ACTIONS) this.escalationSteps.inc({ action }, 0);
    this.redisErrors = new Counter({
      name: 'countersign_redis_errors_total',
      help: 'Errors the Redis client reported: connection refused or lost, authentication refused.',
      registers,
    });
  }

  /** Health and the counts kept elsewhere, read at each scrape (built after the metrics are). */
  observe(sources: ScrapeSources): void {
    this.sources = sources;
  }

  /** The Prometheus text exposition. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  decided(route: string | undefined, outcome: DecisionOutcome, seconds: number): void {
    this.decisions.observe({ route: this.routeLabel(route), outcome }, Math.max(0, seconds));
  }

  clickDecided(seconds: number): void {
    this.clicks.observe(Math.max(0, seconds));
  }

  grantLookup(hit: boolean): void {
    this.grantLookups.inc();
    if (hit) this.grantHits.inc();
  }

  grantUsed(): void {
    this.grantUses.inc();
  }

  escalationStep(action: FiredStep['action']): void {
    this.escalationSteps.inc({ action });
  }

  slackFailed(method: string, rateLimited: boolean): void {
    (rateLimited ? this.slackRateLimited : this.slackFailures).inc({ method: slackMethodLabel(method) });
  }

  redisError(): void {
    this.redisErrors.inc();
  }

  /** A record without a route went to the fallback (SLACK_CHANNEL); one of a route gone is `other`. */
  private routeLabel(route: string | undefined): string {
    if (route === undefined) return FALLBACK_ROUTE_NAME;
    return this.routes.has(route) ? route : GONE_ROUTE;
  }
}

function upOf(probe: HealthProbe, part: HealthPart): boolean {
  if (part === 'redis') return probe.redis();
  if (part === 'slack') return probe.slack();
  return probe.hosts();
}
