import type { Logger } from 'pino';
import { type ApprovalRecord, isTerminal } from '../../domain/record.js';
import { type ApprovalStore, FOR_HOST, type Mutation } from '../../store/approvalStore.js';
import type { Decider } from '../deciding/decider.js';
import type { RecordKeeper } from '../records/recordKeeper.js';
import { noLongerListed, orphaned } from '../records/recordMutations.js';
import type { AskedApprovals } from './askedApprovals.js';

export interface OpenApprovalsOptions {
  keeper: RecordKeeper;
  store: ApprovalStore;
  /** Settles a decision of ours that may have closed an approval the host no longer lists. */
  decider: Decider;
  logger: Logger;
  /** When each approval was last asked, to tell what a session's listing may predate. */
  asked: AskedApprovals;
}

/**
 * A host's open approvals against what the host says of them: a session's listing, a session
 * held elsewhere, a host that keeps nothing going down or coming up again.
 */
export class OpenApprovals {
  constructor(private readonly options: OpenApprovalsOptions) {}

  /**
   * The host listed what is still pending in a session, in a listing requested at
   * `listRequestedAt` (performance.now()). An approval not listed that was asked by an earlier
   * host process, or by this one before the request, was closed or replaced by the host: this
   * is the make-up for an approval/resolved that never reached us (dropped while Redis was away).
   */
  async reconcileSession(
    hostId: string,
    sessionId: string,
    pendingApprovalIds: string[],
    incarnation: string,
    listRequestedAt: number,
  ): Promise<void> {
    const pending = new Set(pendingApprovalIds);
    await this.forEachOpen(hostId, sessionId, (record) => {
      if (pending.has(record.approvalId)) return undefined;
      if (record.incarnation === incarnation && this.mayPredate(record, listRequestedAt)) return undefined;
      // Ours may have been the decision that closed it: the host says so when asked again. A
      // claim held elsewhere too (heldElsewhere()): it may have been applied before.
      if (record.claim) {
        this.options.decider.settle(record);
        return undefined;
      }
      return noLongerListed;
    });
  }

  /**
   * Whether a listing requested at `listRequestedAt` by the record's own host process may have
   * been made before the record was asked, and so says nothing of it. An approval this process
   * does not remember asked (its memory is bounded) counts as asked after: closing one still
   * pending would leave the agent waiting on a request no card answers any more, while leaving
   * one open that was resolved only keeps buttons whose press the host refuses.
   */
  private mayPredate(record: ApprovalRecord, listRequestedAt: number): boolean {
    // Held elsewhere: known from the session's listings only (no frame of it reaches us), so a
    // listing that leaves it out closes it.
    if (record.phase === 'unavailable') return false;
    return !this.options.asked.askedBefore(record, listRequestedAt);
  }

  changeSession(hostId: string, sessionId: string, mutation: Mutation): Promise<void> {
    return this.forEachOpen(hostId, sessionId, () => mutation);
  }

  /** A host that keeps nothing died (or a new process of it came up): its approvals died with it. */
  orphanAll(hostId: string, survivingIncarnation?: string): Promise<void> {
    return this.forEachOpen(hostId, undefined, (record) =>
      record.incarnation === survivingIncarnation ? undefined : orphaned,
    );
  }

  /**
   * Applies the mutation `pick` chooses to each open approval of a host (or of one of its
   * sessions), each in its own queue. Only that session's approvals are read.
   */
  private async forEachOpen(
    hostId: string,
    sessionId: string | undefined,
    pick: (record: NonNullable<Awaited<ReturnType<ApprovalStore['get']>>>) => Mutation | undefined,
  ): Promise<void> {
    const { keeper, store, logger } = this.options;
    try {
      const ids = await store.openApprovalIds(hostId, sessionId);
      await Promise.all(
        ids.map((approvalId) =>
          keeper.run(approvalId, async () => {
            const record = await store.get(approvalId);
            // Another host's approval under an id in this host's sets (left by a create that found
            // it, before that create took its entry back): never this host's to change.
            if (record && record.hostId !== hostId) {
              await store.forgetOpenId(hostId, approvalId, sessionId);
              return;
            }
            if (!record || isTerminal(record)) {
              if (record) await store.forgetOpen(record);
              else await store.forgetOpenId(hostId, approvalId, sessionId);
              return;
            }
            if (sessionId !== undefined && record.sessionId !== sessionId) return;
            const mutation = pick(record);
            if (mutation) await keeper.mutate(approvalId, mutation, record, FOR_HOST);
          }),
        ),
      );
    } catch (err) {
      logger.error({ err, hostId, sessionId }, 'reconciling open approvals failed');
    }
  }
}
