import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { v7 as uuidv7 } from 'uuid';
import type { Config } from '../config/config.js';
import type { HostFleet } from '../msp/hostFleet.js';
import type { ClickHandler } from '../relay/deciding/clickHandler.js';
import type { Decider } from '../relay/deciding/decider.js';
import type { GrantAnswerer } from '../relay/grants/grantAnswerer.js';
import type { RecordKeeper } from '../relay/records/recordKeeper.js';
import { DecisionForwarding } from '../replicas/decisionForwarding.js';
import type { FenceBook } from '../replicas/fenceBook.js';
import { HostOwnership, LeaseLostError } from '../replicas/hostOwnership.js';
import { ReplicaSeal } from '../replicas/replicaSeal.js';
import type { ApprovalStore } from '../store/approvalStore.js';
import { DecisionStream } from '../store/decisionStream.js';
import { HostLeases, processIdentity } from '../store/hostLeases.js';
import type { RedisClient } from '../store/redisConnection.js';
import type { Late } from './late.js';

export interface ReplicasNeeds {
  config: Config;
  logger: Logger;
  redis: RedisClient;
  /** Written by the lease owner built here; read by the store, the keeper and the hosts. */
  fences: FenceBook;
  store: ApprovalStore;
  keeper: RecordKeeper;
  hosts: HostFleet;
  /** The owner carries forwarded decisions out through its Decider (deciding.ts, built on these). */
  decider: Late<Decider>;
  /** And answers the person itself once the asker stopped waiting (ClickHandler.answerLate). */
  clicks: Late<ClickHandler>;
  /** And counts a grant's use then, which the asker no longer does (GrantAnswerer.decidedUnheard). */
  grantAnswerer: Late<GrantAnswerer>;
}

/**
 * Several replicas may share this Redis: each host is run by the one holding its lease, and every
 * write for a host carries that lease's fencing token (replicas/hostOwnership.ts).
 */
export function wireReplicas(needs: ReplicasNeeds) {
  const { config, logger, redis, fences, store, keeper, hosts } = needs;
  const replicaId = processIdentity(config.replicaName ?? hostname(), process.pid, randomUUID().slice(0, 8));
  // A decision taken here for a host another replica runs is carried out by that replica.
  const forwarding = new DecisionForwarding({
    stream: new DecisionStream(redis),
    // Every replica of one app has the bot token; a secret of their own keeps working across
    // a token rotation and lets the token alone not open the stream.
    seal: new ReplicaSeal(config.replicaSecret ?? config.slack.botToken),
    store,
    decide: (request) => needs.decider.get().decide(request),
    readerConnection: () => {
      const reader = redis.duplicate();
      // Same server, same credentials: the main connection's listener (wiring/redis.ts) says
      // what is wrong. Without a listener ioredis prints a stack trace on stderr at every retry.
      reader.on('error', () => {});
      return reader;
    },
    replicaId,
    newCommandId: () => uuidv7(),
    mayAct: (hostId) => fences.holds(hostId),
    logger: logger.child({ component: 'forwarding' }),
    onLateOutcome: (asker, approvalId, outcome) => needs.clicks.get().answerLate(asker, approvalId, outcome),
    onUnheard: (request, outcome) => needs.grantAnswerer.get().decidedUnheard(request, outcome),
  });
  const ownership = new HostOwnership({
    leases: new HostLeases(redis),
    replicaId,
    hostIds: config.msp.hosts.map((spec) => spec.id),
    ttlMs: config.leaseTtlMs,
    logger: logger.child({ component: 'leases' }),
    fences,
    onGained: async (hostId, token) => {
      // Before the host runs: from here on, a replica that held it before can change none of its
      // approvals, even one that wakes from a pause and has not yet noticed it lost the lease.
      await store.fenceOpen(hostId, token);
      // The lease may have run out while that waited (Redis stalled past it): onLost has then
      // already run, with nothing yet to stop, and another replica may be running the host.
      if (fences.fenceOf(hostId) !== token) throw new LeaseLostError(hostId);
      // Cards the previous owner left behind their records (it died mid-update) are re-rendered.
      keeper.track(
        keeper
          .recoverCards(new Date())
          .catch((err: unknown) => logger.warn({ err }, 'could not look for cards left behind')),
      );
      const running = hosts.run(hostId);
      await forwarding.serve(hostId);
      await running;
    },
    onLost: (hostId) => {
      hosts.kill(hostId);
      forwarding.stopServing(hostId);
    },
  });
  return { replicaId, forwarding, ownership };
}
