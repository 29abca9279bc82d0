import type { Logger } from 'pino';
import { type DecisionEntry, type DecisionTrail, loggableEntry } from '../../domain/audit.js';
import { decisionEntry, unsettledEntry } from '../../domain/decisionEntry.js';
import type { NoticeNames, ResolvedRecord } from '../../domain/decisionNotice.js';
import type { ApprovalRecord, Claim } from '../../domain/record.js';
import type { Activity } from '../../util/activity.js';

/**
 * The Slack side of the notices (slack/slackNotices.ts): the relay hands over the resolved record
 * and the deciders' names, and the sender words them (cards/renderDecisionNotice.ts).
 */
export interface NoticeSender {
  /** The audit line in the card's thread: who decided, with which choice, the feedback, when. */
  decisionLine(
    card: { channel: string; ts: string },
    record: ResolvedRecord,
    names: NoticeNames,
  ): Promise<void>;
  /** The DM to a host's owner; `permalink` is the card's, when Slack gave one. */
  requesterDm(
    userId: string,
    record: ResolvedRecord,
    permalink: string | undefined,
    names: NoticeNames,
  ): Promise<void>;
  /** The card's permalink, or undefined when Slack would not give one. */
  permalink(channel: string, ts: string): Promise<string | undefined>;
  /** A user's display name, or undefined when it is not known. */
  nameOf(userId: string): Promise<string | undefined>;
}

/** Which notices were sent, across replicas and restarts (store/noticeLedger.ts). */
export interface NoticeLedger {
  /** `ride`: the claim may wait a little for another write to leave with (RedisNoticeLedger). */
  claim(approvalId: string, kind: string, how?: { ride?: boolean }): Promise<boolean>;
  settle(approvalId: string, kind: string, outcome: string): Promise<void>;
}

export type NoticeKind = 'thread' | 'dm';

/** How many approvals a process remembers having audited (DecisionNotices.audited). */
const MAX_AUDITED = 10_000;

export interface DecisionNoticesOptions {
  sender: NoticeSender;
  ledger: NoticeLedger;
  /** Where each decision's entry is written once (keys.decisionAudited marks it written). */
  audit: DecisionTrail;
  /**
   * The approvals whose entry the write that resolved them wrote (ApprovalRecords'
   * resolutionAudit): only the log's line is left to do.
   */
  writtenWithResolution?: { take(approvalId: string): boolean };
  /** The Slack user whose agent a host runs (config hosts[].owner). */
  ownerOf: (hostId: string) => string | undefined;
  /**
   * Why the owner is a stranger the record's route does not let in (Authorizer.strangerTo: a
   * guest, another team, deactivated, not confirmed by Slack now), or undefined. Such an owner
   * gets no DM: it names the deciders and their reason. Without it, the owner is always told.
   */
  strangerTo?: (userId: string, record: ApprovalRecord) => Promise<string | undefined>;
  logger: Logger;
  /** Counts for /metrics (notices sent). */
  activity?: Activity;
  /** The `sla` (ms) of the route a record names, when it has one: the entry says if it was kept. */
  slaOf?: (route: string | undefined) => number | undefined;
}

/**
 * Follows stored records (RecordKeeper's onChange) and, once an approval is resolved, audits it
 * (the log's decision line and the audit stream entry: every resolution, so that an operator
 * sees policy and the automated reviewer beside the people) and, once its card is in place,
 * sends the line in the card's thread and the DM to the host's owner.
 *
 * Each is done once per approval, whichever replica sees the resolution and however often it is
 * seen again (the host repeating it, a re-sync, a restart). The stream entry is written exactly
 * once: by the write that resolves the record, in the same step, or else by a script that writes
 * it unless its mark says it is written (DecisionTrail). The thread line and the DM are sent at
 * most once: a Redis claim (SET NX) is taken before sending and settled after. We chose at most
 * once over at least once there: a process that dies between the claim and Slack's answer leaves
 * the notice claimed and it is not sent again, because Slack may already have posted it and a
 * second DM is worse than none. For the same reason a post whose answer is lost is not retried;
 * only 429s (nothing posted) are.
 */
export class DecisionNotices {
  private readonly inFlight = new Set<Promise<void>>();
  /**
   * The approvals whose audit this process has seen to (written, or found written): a resolved
   * record is stored again (its card placed, a late change) and comes back here each time. Bounded:
   * one forgotten costs one more look at its mark, never a second entry.
   */
  private readonly audited = new Set<string>();

  constructor(private readonly options: DecisionNoticesOptions) {}

  /** Called with every stored record; returns at once (the work runs in the background). */
  follow(record: ApprovalRecord): void {
    const ts = record.slack.ts;
    if (record.phase === 'orphaned' && record.unsettledClaim) {
      this.track(this.auditUnsettled(record as ApprovalRecord & { unsettledClaim: Claim }));
      return;
    }
    if (record.phase !== 'resolved' || !record.resolution) return;
    const resolved = record as ResolvedRecord;
    // The trail needs no card: a grant may have answered with none shown, or Slack may not take
    // the card yet (the bot not invited to the channel). Audited once, whenever it is seen.
    this.track(this.auditOnce(resolved));
    // A grant answered it and no card was ever shown: its line in the channel took the thread's
    // place, and its owner is not told of every request a grant answers.
    // Before its card is placed a resolved approval has no thread and no link yet; placing the
    // card is itself a stored change, so it comes back here.
    if (!ts) return;
    this.track(this.notify(resolved, ts));
  }

  private track(work: Promise<void>): void {
    this.inFlight.add(work);
    void work.finally(() => this.inFlight.delete(work));
  }

  /** Resolves when every notice started so far has been sent or given up. */
  async idle(): Promise<void> {
    while (this.inFlight.size > 0) await Promise.allSettled([...this.inFlight]);
  }

  private async notify(record: ResolvedRecord, ts: string): Promise<void> {
    const { sender, ownerOf } = this.options;
    const { channel } = record.slack;
    const owner = ownerOf(record.hostId);
    const names = this.names(record);
    await Promise.all([
      this.once(record, 'thread', async () => {
        await sender.decisionLine({ channel, ts }, record, await names);
        return undefined;
      }),
      owner
        ? this.once(record, 'dm', async () => {
            // Checked as it is sent: the owner may have become a guest since the host was configured.
            const stranger = await this.options.strangerTo?.(owner, record);
            if (stranger) {
              this.options.logger.info(
                { approvalId: record.approvalId, notice: 'dm', owner, why: stranger },
                'decision notice not sent: the host’s owner may not see this route’s approvals',
              );
              return `not sent: ${stranger}`;
            }
            const [permalink, known] = await Promise.all([sender.permalink(channel, ts), names]);
            await sender.requesterDm(owner, record, permalink, known);
            return undefined;
          })
        : undefined,
    ]);
  }

  /** The deciders' names (a quorum's approvers, else the one who decided), looked up once for both notices. */
  private async names(record: ResolvedRecord): Promise<NoticeNames> {
    const { slackUserId, voters, onBehalfOf, stoodInFor } = record.resolution;
    // The earlier stages' deciders are named too (earlierStageLines): a mention would ping them.
    const earlier = (record.stageDecisions ?? []).flatMap((d) => [
      ...(d.voters ?? (d.userId ? [d.userId] : [])),
      ...(d.onBehalfOf ? [d.onBehalfOf] : []),
      ...Object.values(d.stoodInFor ?? {}),
    ]);
    const ids = [
      ...new Set([
        ...(voters ?? (slackUserId ? [slackUserId] : [])),
        ...(onBehalfOf ? [onBehalfOf] : []),
        ...Object.values(stoodInFor ?? {}),
        ...earlier,
      ]),
    ];
    const names = new Map(
      await Promise.all(
        ids.map(async (id) => [id, await this.options.sender.nameOf(id).catch(() => undefined)] as const),
      ),
    );
    return { nameOf: (id: string) => names.get(id) };
  }

  /**
   * The audit of a resolution: the stream entry, and one line in the log at info by the process
   * that wrote it, so each is written once per approval across replicas, re-syncs and restarts;
   * the log line outlives the capped stream and reaches a SIEM through the log pipeline. Never
   * rejects.
   */
  private async auditOnce(record: ResolvedRecord): Promise<void> {
    const { audit, logger } = this.options;
    const { approvalId } = record;
    if (this.audited.has(approvalId)) {
      logger.debug({ approvalId, notice: 'audit' }, 'decision notice already claimed; not sent again');
      return;
    }
    const entry = decisionEntry(record, this.options.slaOf?.(record.route));
    let wrote: boolean;
    try {
      wrote = this.options.writtenWithResolution?.take(approvalId) || (await audit.appendDecision(entry));
    } catch (err) {
      // Not `audit`: that key is the audit lines' own, always a string (their kind).
      logger.error({ err, approvalId, auditEntry: loggableEntry(entry) }, 'audit entry not written');
      return;
    }
    this.remember(approvalId);
    if (!wrote) {
      logger.debug({ approvalId, notice: 'audit' }, 'decision notice already claimed; not sent again');
      return;
    }
    logger.info(decisionLine(record, entry, this.options.ownerOf(record.hostId)), 'decision');
    this.options.activity?.count('noticesSent');
    logger.debug({ approvalId, notice: 'audit' }, 'decision notice sent');
  }

  /**
   * The audit of a decision its host went away with (an orphaned record's unsettledClaim): an
   * entry saying who pressed what and that the outcome is unknown, under the decision's mark, and
   * the log's decision line by the process that wrote it. Always in a step of its own after the
   * record is stored (as a resolution's entry is on a Cluster): a crash between the two leaves no
   * entry. No thread line or DM: the card says it. Never rejects.
   */
  private async auditUnsettled(record: ApprovalRecord & { unsettledClaim: Claim }): Promise<void> {
    const { audit, logger } = this.options;
    const { approvalId } = record;
    if (this.audited.has(approvalId)) return;
    const entry = unsettledEntry(record);
    let wrote: boolean;
    try {
      wrote = await audit.appendDecision(entry);
    } catch (err) {
      logger.error({ err, approvalId, auditEntry: loggableEntry(entry) }, 'audit entry not written');
      return;
    }
    this.remember(approvalId);
    if (!wrote) return;
    logger.info(unsettledLine(record, entry, this.options.ownerOf(record.hostId)), 'decision');
  }

  private remember(approvalId: string): void {
    this.audited.add(approvalId);
    if (this.audited.size > MAX_AUDITED) this.audited.delete(this.audited.values().next().value!);
  }

  /**
   * Runs `send` if this process wins the notice's claim; never rejects. `send` may say why it
   * sent nothing: that is the claim's outcome.
   */
  private async once(
    record: ResolvedRecord,
    kind: NoticeKind,
    send: () => Promise<string | undefined>,
  ): Promise<void> {
    const { ledger, logger } = this.options;
    const { approvalId } = record;
    try {
      if (!(await ledger.claim(approvalId, kind))) {
        logger.debug({ approvalId, notice: kind }, 'decision notice already claimed; not sent again');
        return;
      }
    } catch (err) {
      logger.error({ err, approvalId, notice: kind }, 'notice not sent: its claim could not be stored');
      return;
    }
    let outcome = 'sent';
    try {
      const unsent = await send();
      if (unsent) outcome = unsent;
      else {
        this.options.activity?.count('noticesSent');
        logger.debug({ approvalId, notice: kind }, 'decision notice sent');
      }
    } catch (err) {
      outcome = `failed: ${err instanceof Error ? err.message : String(err)}`.slice(0, 200);
      logger.error({ err, approvalId, notice: kind }, 'decision notice not sent');
    }
    await ledger.settle(approvalId, kind, outcome).catch((err: unknown) => {
      logger.warn({ err, approvalId, notice: kind }, 'notice outcome not stored');
    });
  }
}

/**
 * The log's audit line (docs/operations.md, "Audit"): a stable shape keyed by `audit: "decision"`.
 * It names the arguments by their hash only, and leaves out the feedback: both are the agent's or
 * a person's free text, and the log goes to more places than the stream.
 */
function decisionLine(
  record: ResolvedRecord,
  entry: DecisionEntry,
  owner: string | undefined,
): Record<string, unknown> {
  const { resolution } = record;
  return {
    ...lineHead(entry, resolution.grant?.grantedBy, owner),
    choiceId: resolution.choiceId,
    resolvedBy: entry.resolvedBy,
    ...lineTail(record, entry),
  };
}

/** Who decided, as every audit line of a decision starts. */
function lineHead(entry: DecisionEntry, grantedBy: string | undefined, owner: string | undefined) {
  return {
    audit: 'decision',
    via: entry.via,
    userId: entry.userId,
    voters: entry.voters,
    stoodInFor: entry.stoodInFor,
    onBehalfOf: entry.onBehalfOf,
    grantId: entry.grantId,
    grantedBy,
    owner,
    decision: entry.decision,
  };
}

/** What was decided, as every audit line of a decision ends. */
function lineTail(record: ApprovalRecord, entry: DecisionEntry) {
  return {
    stages: entry.stages,
    approvalId: record.approvalId,
    sessionId: record.sessionId,
    turnId: record.turnId,
    itemId: record.itemId,
    toolCallId: record.toolCallId,
    hostId: record.hostId,
    route: record.route,
    tool: record.tool,
    argsSha256: record.argsSha256,
    argsSha256Of: record.argsSha256Of,
    at: entry.at,
  };
}

/**
 * The log's audit line of an unsettled decision (unsettledEntry): the decision line's shape, with
 * `decision` `unknown`, `unsettled` saying why and the decide's `commandId`.
 */
function unsettledLine(
  record: ApprovalRecord & { unsettledClaim: Claim },
  entry: DecisionEntry,
  owner: string | undefined,
): Record<string, unknown> {
  return {
    ...lineHead(entry, record.unsettledClaim.grant?.grantedBy, owner),
    unsettled: entry.unsettled,
    commandId: entry.commandId,
    choiceId: entry.choiceId,
    ...lineTail(record, entry),
  };
}
