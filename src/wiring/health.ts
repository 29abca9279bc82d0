import type { EscalationFailures } from '../domain/metrics.js';
import type { HostOutput } from '../msp/hostFailure.js';
import type { HostFleet, HostStatus } from '../msp/hostFleet.js';
import type { HostOwnership, HostStanding } from '../replicas/hostOwnership.js';
import type { HealthPart, HealthProbe } from '../slack/healthRoutes.js';
import type { RedisAuditTrail } from '../store/auditStream.js';
import type { Activity } from '../util/activity.js';

/** A part of the process that is up or not, and says why not. */
interface Part {
  up(): boolean;
  whyDown(): string;
}

export interface HealthNeeds {
  redis: Part;
  slack: Part;
  hosts: HostFleet;
  ownership: HostOwnership;
  replicaId: string;
  activity: Activity;
  auditTrail: RedisAuditTrail;
  escalationFailures: () => EscalationFailures;
  /**
   * What the reasons pass through before /readyz shows them: the logger's scrubber of the
   * configuration's secrets (util/log.ts secretScrubber over configSecrets). A host's stderr
   * may quote its `env`, and PORT is often public.
   */
  scrub: (text: string) => string;
}

/** What /healthz, /readyz, /metrics and App Home say about this process. */
export function wireHealth(needs: HealthNeeds) {
  const { redis, slack, hosts, ownership, replicaId, scrub } = needs;
  const whyDown: Record<HealthPart, () => string> = {
    redis: () => redis.whyDown(),
    slack: () => slack.whyDown(),
    host: () =>
      hosts.downReason('quoted') ??
      (ownership.standings().every((s) => s.role === 'standby' && s.ownerReplica === undefined)
        ? 'no replica has taken an MSP host yet'
        : 'no MSP host is up'),
  };
  return {
    redis: () => redis.up(),
    slack: () => slack.up(),
    // A standby is ready when the hosts it forwards to are run elsewhere: it takes clicks for them.
    // A host this replica has just taken but not started yet does not count: it is not up.
    hosts: () =>
      hosts.anyUp() ||
      (hosts.all().length === 0 &&
        ownership
          .standings()
          .some((s) => s.role === 'standby' && s.ownerReplica !== undefined && s.ownerReplica !== replicaId)),
    whyDown: (part: HealthPart) => scrub(whyDown[part]()),
    // /metrics asks without `output`: it reads `up` and `role` only, so nothing is quoted for it.
    hostStatus: (output: HostOutput = 'withheld') =>
      hostStatus(hosts.status(output), ownership.standings()).map((s) =>
        s.reason === undefined ? s : { ...s, reason: scrub(s.reason) },
      ),
    replica: () => replicaId,
    activity: () => needs.activity.counts,
    refusals: () => needs.auditTrail.refusals,
    escalationFailures: () => needs.escalationFailures(),
  } satisfies HealthProbe;
}

/** Each configured host: its health where this replica runs it, else who does. */
function hostStatus(running: HostStatus[], standings: HostStanding[]): HostStatus[] {
  return standings.map((standing) => {
    const here = running.find((s) => s.hostId === standing.hostId);
    const owner = standing.ownerReplica ? { ownerReplica: standing.ownerReplica } : {};
    if (here && standing.role === 'owner') return { ...here, role: 'owner', ...owner };
    return {
      hostId: standing.hostId,
      up: false,
      role: 'standby',
      reason: standing.ownerReplica ? `run by replica ${standing.ownerReplica}` : 'no replica runs it yet',
      ...owner,
    };
  });
}
