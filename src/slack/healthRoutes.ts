import type { CustomRoute } from '@slack/bolt';
import type { EscalationFailures } from '../domain/metrics.js';
import type { HostOutput } from '../msp/hostFailure.js';
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
  /**
   * Why a part is down, in one sentence an operator can act on (quoting what a host wrote); asked
   * only about parts that are, for METRICS_PORT's /readyz and the readiness log line.
   */
  whyDown(part: HealthPart): string | undefined;
  /** Each host on its own: the bot stays ready while one is up, so /readyz names the others' trouble. */
  hostStatus?(output?: HostOutput): HostStatus[];
  /** Escalation steps and PagerDuty calls that failed for good, by kind (trigger, resolve, dm, …). */
  escalationFailures?(): EscalationFailures;
  /** This process's identity among the replicas (`<replica>#<nonce>`). */
  replica?(): string;
  /** What the bot did since it started (cards posted, decisions sent, notices sent). */
  activity?(): Record<ActivityKind, number>;
  /** Refused attempts since the bot started, by reason. */
  refusals?(): RefusalCounts;
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

/** `{"main": {"up": true}, "ci": {"up": false, "reason": "…"}}`: names the hosts that are down and why. */
function hostsShown(statuses: HostStatus[]): Record<string, { up: boolean; reason?: string }> {
  return Object.fromEntries(statuses.map(({ hostId, ...rest }) => [hostId, rest]));
}

/**
 * The parts without which this replica cannot take a Slack request and answer it truthfully.
 * Not the MSP host: with it down the bot still answers each click ("the host is unavailable")
 * and keeps the card; were the host part of readiness, every replica of a Deployment would go
 * unready at once and Slack would meet an ingress error instead (docs/operations.md#readiness).
 */
export const READINESS_PARTS: readonly HealthPart[] = ['redis', 'slack'];

/** Whether each part is up right now. */
export function partsUp(probe: HealthProbe): Record<HealthPart, boolean> {
  return { redis: probe.redis(), slack: probe.slack(), host: probe.hosts() };
}

/** Whether the replica is ready: every part of READINESS_PARTS up. */
export function isReady(status: Record<HealthPart, boolean>): boolean {
  return READINESS_PARTS.every((part) => status[part]);
}

/** Why each part that is down is down. */
export function reasonsDown(
  probe: HealthProbe,
  status: Record<HealthPart, boolean>,
): Partial<Record<HealthPart, string>> {
  const out: Partial<Record<HealthPart, string>> = {};
  for (const [part, up] of Object.entries(status) as Array<[HealthPart, boolean]>) {
    if (!up) out[part] = probe.whyDown(part) ?? `${part} is down`;
  }
  return out;
}

/**
 * How much a port's /readyz says. `full` on METRICS_PORT, a private port: every part, host and
 * reason, the replica's and the hosts' ids, what a host wrote. `readyOnly` on PORT, with or
 * without METRICS_PORT: in HTTP mode Slack reaches it, and so the internet, and a stranger has no
 * need of the Redis address, the Slack URL, the ids or why a part is down. Without METRICS_PORT
 * the log says why (readinessLog.ts); the status code is the same on every port, for the probes.
 */
export type ReadyzDetail = 'full' | 'readyOnly';

export function healthRoutes(probe: HealthProbe, detail: ReadyzDetail): CustomRoute[] {
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
        const status = partsUp(probe);
        const ready = isReady(status);
        res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' });
        if (detail === 'readyOnly') {
          res.end(`${JSON.stringify({ ready })}\n`);
          return;
        }
        // With one host, `host` and its reason already say it all.
        const statuses = probe.hostStatus?.('quoted') ?? [];
        const hosts = statuses.length > 1 ? { hosts: hostsShown(statuses) } : {};
        const replica = replicaShown(probe.replica?.(), statuses);
        const reasons = reasonsDown(probe, status);
        res.end(`${JSON.stringify({ ready, ...status, ...hosts, ...replica, reasons })}\n`);
      },
    },
  ];
}
