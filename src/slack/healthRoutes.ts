import type { CustomRoute } from '@slack/bolt';
import type { HostStatus } from '../msp/hostFleet.js';
import type { RefusalCounts } from '../store/refusalCounts.js';
import type { ActivityKind } from '../util/activity.js';

export type HealthPart = 'redis' | 'slack' | 'host';

/** What readiness is made of: each answers "is this part up right now?". */
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
        const ready = status.redis && status.slack && status.host;
        // With one host, `host` and its reason already say it all.
        const statuses = probe.hostStatus?.() ?? [];
        const hosts = statuses.length > 1 ? { hosts: hostsShown(statuses) } : {};
        const replica = replicaShown(probe.replica?.(), statuses);
        res.writeHead(ready ? 200 : 503, { 'content-type': 'application/json' });
        res.end(`${JSON.stringify({ ready, ...status, ...hosts, ...replica, reasons: reasons(status) })}\n`);
      },
    },
  ];
}
