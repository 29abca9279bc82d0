import type { CustomRoute } from '@slack/bolt';
import type { HostStatus } from '../msp/hostFleet.js';
import type { RefusalCounts } from '../store/refusalCounts.js';
import type { ActivityKind } from '../util/activity.js';

export type HealthPart = 'redis' | 'slack' | 'host';

/**
 * What /readyz and /metrics report: each answers "is this part up right now?". Readiness is made
 * of Redis and Slack only (READINESS_PARTS); the hosts are reported beside it.
 */
export interface HealthProbe {
  redis(): boolean;
  slack(): boolean;
  hosts(): boolean;
  /** Why a part is down, in one sentence an operator can act on; asked only about parts that are. */
  whyDown(part: HealthPart): string | undefined;
  /** Each host on its own: the bot stays ready while one is up, so /readyz names the others' trouble. */
  hostStatus?(): HostStatus[];
  /** Escalation steps and PagerDuty calls that failed for good, by kind (trigger, resolve, dm, …). */
  escalationFailures?(): Record<string, number>;
  /** This process's identity among the replicas (`<replica>#<nonce>`). */
  replica?(): string;
  /** What the bot did since it started (cards posted, decisions sent, notices sent). */
  activity?(): Record<ActivityKind, number>;
  /** Refused attempts since the bot started, by reason. */
  refusals?(): RefusalCounts;
}

const ACTIVITY_METRICS: Record<ActivityKind, { name: string; help: string }> = {
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

/** One counter per kind of activity: per-approval work is counted here, not logged at info. */
function activityCounters(counts: Record<ActivityKind, number> | undefined): string[] {
  if (!counts) return [];
  return (Object.entries(counts) as Array<[ActivityKind, number]>).flatMap(([kind, n]) => {
    const { name, help } = ACTIVITY_METRICS[kind];
    return [`# HELP ${name} ${help}`, `# TYPE ${name} counter`, `${name} ${n}`];
  });
}

/** Reasons are a closed set of our own words (refusalCounts.ts): safe as label values. */
function refusalCounters(counts: RefusalCounts | undefined): string[] {
  if (!counts) return [];
  const series = (name: string, byReason: Record<string, number>) =>
    Object.entries(byReason).map(([reason, n]) => `${name}{reason="${reason}"} ${n}`);
  return [
    '# HELP countersign_refusals_total Refused attempts (clicks, modals, commands, revocations), by reason.',
    '# TYPE countersign_refusals_total counter',
    ...series('countersign_refusals_total', counts.total),
    '# HELP countersign_refusals_over_limit_total Refusals past the limit per user and minute: counted, not written to the audit trail.',
    '# TYPE countersign_refusals_over_limit_total counter',
    ...series('countersign_refusals_over_limit_total', counts.overLimit),
  ];
}

/** Which hosts this replica runs and which it stands by for (their owner runs them). */
function replicaShown(id: string | undefined, statuses: HostStatus[]) {
  if (id === undefined) return {};
  return {
    replica: {
      id,
      owns: statuses.filter((s) => s.role !== 'standby').map((s) => s.hostId),
      standby: statuses.filter((s) => s.role === 'standby').map((s) => s.hostId),
    },
  };
}

function ownershipGauges(statuses: HostStatus[]): string[] {
  if (statuses.length === 0) return [];
  return [
    '# HELP countersign_host_owned Whether this replica runs the MSP host (1) or stands by for it (0).',
    '# TYPE countersign_host_owned gauge',
    ...statuses.map(
      ({ hostId, role }) => `countersign_host_owned{host="${hostId}"} ${role === 'standby' ? 0 : 1}`,
    ),
  ];
}

/** One counter per failure kind. Kinds are fixed words of ours: safe as label values. */
function escalationCounters(failures: Record<string, number> | undefined): string[] {
  if (!failures) return [];
  return [
    '# HELP countersign_escalation_failures_total Escalation steps and PagerDuty calls that failed, by kind.',
    '# TYPE countersign_escalation_failures_total counter',
    ...Object.entries(failures).map(
      ([kind, n]) => `countersign_escalation_failures_total{kind="${kind}"} ${n}`,
    ),
  ];
}

/** `{"main": {"up": true}, "ci": {"up": false, "reason": "…"}}`: names the hosts that are down and why. */
function hostsShown(statuses: HostStatus[]): Record<string, { up: boolean; reason?: string }> {
  return Object.fromEntries(statuses.map(({ hostId, ...rest }) => [hostId, rest]));
}

/** One gauge per host. Host ids are letters, digits, ".", "_" and "-" (configFile.ts): safe as label values. */
function hostGauges(all: HostStatus[]): string[] {
  // A standby's view of a host it does not run says nothing of the host: its owner reports it.
  const statuses = all.filter((s) => s.role !== 'standby');
  if (statuses.length === 0) return [];
  return [
    '# HELP countersign_host_up Whether an MSP host is up (handshake done on a live connection).',
    '# TYPE countersign_host_up gauge',
    ...statuses.map(({ hostId, up }) => `countersign_host_up{host="${hostId}"} ${up ? 1 : 0}`),
  ];
}

/**
 * The parts without which this replica cannot take a Slack request and answer it truthfully.
 * Not the MSP host: with it down the bot still answers each click ("the host is unavailable")
 * and keeps the card; were the host part of readiness, every replica of a Deployment would go
 * unready at once and Slack would meet an ingress error instead (docs/operations.md#readiness).
 */
export const READINESS_PARTS: readonly HealthPart[] = ['redis', 'slack'];

export function healthRoutes(probe: HealthProbe): CustomRoute[] {
  const parts = (): Record<HealthPart, boolean> => ({
    redis: probe.redis(),
    slack: probe.slack(),
    host: probe.hosts(),
  });
  const reasons = (status: Record<HealthPart, boolean>): Partial<Record<HealthPart, string>> => {
    const out: Partial<Record<HealthPart, string>> = {};
    for (const [part, up] of Object.entries(status) as Array<[HealthPart, boolean]>) {
      if (!up) out[part] = probe.whyDown(part) ?? `${part} is down`;
    }
    return out;
  };
  return [
    {
      path: '/healthz',
      method: ['GET'],
      handler: (_req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('ok\n');
      },
    },
    {
      path: '/readyz',
      method: ['GET'],
      handler: (_req, res) => {
        const status = parts();
        const ready = READINESS_PARTS.every((part) => status[part]);
        // With one host, `host` and its reason already say it all.
        const statuses = probe.hostStatus?.() ?? [];
        const hosts = statuses.length > 1 ? { hosts: hostsShown(statuses) } : {};
        const replica = replicaShown(probe.replica?.(), statuses);
        res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' });
        res.end(`${JSON.stringify({ ready, ...status, ...hosts, ...replica, reasons: reasons(status) })}\n`);
      },
    },
    {
      path: '/metrics',
      method: ['GET'],
      handler: (_req, res) => {
        const status = parts();
        const lines = Object.entries(status).map(
          ([part, up]) => `countersign_up{part="${part}"} ${up ? 1 : 0}`,
        );
        const memory = process.memoryUsage();
        res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
        res.end(
          [
            '# HELP countersign_up Whether a part the bot depends on is up.',
            '# TYPE countersign_up gauge',
            ...lines,
            ...hostGauges(probe.hostStatus?.() ?? []),
            ...ownershipGauges(probe.hostStatus?.() ?? []),
            ...escalationCounters(probe.escalationFailures?.()),
            ...activityCounters(probe.activity?.()),
            ...refusalCounters(probe.refusals?.()),
            '# HELP process_resident_memory_bytes Resident memory size in bytes.',
            '# TYPE process_resident_memory_bytes gauge',
            `process_resident_memory_bytes ${memory.rss}`,
            '# HELP nodejs_heap_size_used_bytes V8 heap in use, in bytes.',
            '# TYPE nodejs_heap_size_used_bytes gauge',
            `nodejs_heap_size_used_bytes ${memory.heapUsed}`,
            '',
          ].join('\n'),
        );
      },
    },
  ];
}
