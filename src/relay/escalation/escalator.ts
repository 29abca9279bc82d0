import type { Logger } from 'pino';
import { timeoutChoice } from '../../domain/decisionWords.js';
import type { EscalationDm, EscalationReply } from '../../domain/escalationNotice.js';
import { type ApprovalRecord, type FiredStep, isTerminal } from '../../domain/record.js';
import type { Approvers, EscalationStep, OncallSource } from '../../domain/route.js';
import type { TriggerEvent } from '../../pagerduty/pagerDuty.js';
import type { ApprovalStore } from '../../store/approvalStore.js';
import type { DueStep, EscalationStore } from '../../store/escalationStore.js';
import { shortDuration } from '../../util/shortDuration.js';
import type { Decider } from '../deciding/decider.js';
import type { NoticeLedger } from '../deciding/decisionNotices.js';
import type { RecordKeeper } from '../records/recordKeeper.js';
import { escalationFired, escalationStarted } from '../records/recordMutations.js';
import type { OncallResolver } from './oncall.js';

// On-call escalation (routes[].escalation): reminders, mentions, DMs, pages and a timeout, each
// fired once per request. Nothing is timed in memory: due steps sit in Redis (EscalationStore),
// one poll loop per process takes what is due with an atomic claim, and reads the record again
// after the claim, so a step claimed as the approval resolves does nothing.

/**
 * The Slack side of escalation. The relay says what happened (the step, how long the approval
 * has waited, whom it reaches) and the sender words it (cards/renderEscalation.ts).
 */
export interface EscalationSender {
  /** A step's reply in the card's thread, shown in the channel too when `broadcast`. */
  threadReply(
    card: { channel: string; ts: string },
    reply: EscalationReply,
    broadcast: boolean,
  ): Promise<void>;
  /** Opens the DM and posts the escalation DM; resolves with where the message landed. */
  directMessage(userId: string, dm: EscalationDm): Promise<{ channel: string; ts: string }>;
  permalink(channel: string, ts: string): Promise<string | undefined>;
  nameOf(userId: string): Promise<string | undefined>;
}

export interface Pager {
  trigger(event: TriggerEvent): Promise<void>;
  resolve(routingKey: string, dedupKey: string): Promise<void>;
}

export interface EscalatorOptions {
  schedule: EscalationStore;
  store: ApprovalStore;
  keeper: RecordKeeper;
  decider: Decider;
  slack: EscalationSender;
  pager?: Pager;
  oncall: OncallResolver;
  /** PagerDuty's resolve is sent once per page, whichever replica sees the resolution. */
  ledger: NoticeLedger;
  ladderOf: (route: string | undefined) => readonly EscalationStep[];
  oncallOf: (route: string | undefined) => OncallSource | undefined;
  approversOf: (route: string | undefined) => Approvers | undefined;
  defaultRoutingKey?: string;
  /** How long a DM's buttons stay mapped to their approval. */
  dmMappingTtlMs: number;
  logger: Logger;
  pollMs?: number;
  now?: () => Date;
}

export const TIMEOUT_FEEDBACK = 'Nobody answered this approval in time; Countersign rejected it on timeout.';

/** The request a record asks: the same for a superseded approval and the one a restarted host asks again. */
export function lineageOf(
  record: Pick<ApprovalRecord, 'hostId' | 'sessionId' | 'toolCallId' | 'itemId' | 'approvalId'>,
): string {
  const call = record.toolCallId ?? record.itemId;
  return call ? `${record.hostId}:${record.sessionId}:${call}` : `${record.hostId}:${record.approvalId}`;
}

export class Escalator {
  private readonly now: () => Date;
  private readonly starting = new Set<string>();
  private readonly cancelled = new Set<string>();
  private readonly work = new Set<Promise<unknown>>();
  private timer: NodeJS.Timeout | undefined;
  private polling = false;
  /** Steps that failed to reach anyone, by action: /metrics shows them. */
  readonly failures: Record<string, number> = {};

  constructor(private readonly options: EscalatorOptions) {
    this.now = options.now ?? (() => new Date());
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.poll(), this.options.pollMs ?? 200);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.timer = undefined;
    while (this.work.size > 0) await Promise.allSettled([...this.work]);
  }

  /** RecordKeeper follower: a posted card starts its clock; a final record cancels the rest. */
  follow(record: ApprovalRecord): void {
    const ladder = this.options.ladderOf(record.route);
    if (isTerminal(record)) {
      if (record.escalation || ladder.length > 0) this.track(this.finish(record, ladder.length));
      return;
    }
    if (ladder.length === 0 || !record.slack.ts || record.escalation || this.starting.has(record.approvalId))
      return;
    this.starting.add(record.approvalId);
    this.track(this.begin(record, ladder).finally(() => this.starting.delete(record.approvalId)));
  }

  /** One look at the schedule: claims and fires what is due. Exposed for tests. */
  async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    try {
      const due = await this.options.schedule.due(this.now().getTime());
      await Promise.all(due.map((step) => this.take(step)));
    } catch (err) {
      this.options.logger.warn({ err }, 'escalation poll failed');
    } finally {
      this.polling = false;
    }
  }

  private track(task: Promise<unknown>): void {
    const settled = task.catch((err: unknown) =>
      this.options.logger.error({ err }, 'escalation work failed'),
    );
    this.work.add(settled);
    void settled.finally(() => this.work.delete(settled));
  }

  private async begin(record: ApprovalRecord, ladder: readonly EscalationStep[]): Promise<void> {
    const lineage = lineageOf(record);
    const started = await this.options.schedule.schedule(
      record.approvalId,
      lineage,
      this.now().getTime(),
      ladder.map((s) => s.afterMs),
    );
    if (started.origin !== record.approvalId) {
      this.options.logger.info(
        { approvalId: record.approvalId, origin: started.origin, fired: started.fired.length },
        'escalation carried over from a superseded approval',
      );
    }
    await this.options.keeper.mutateAndSync(
      record.approvalId,
      escalationStarted({
        startedAt: new Date(started.startMs).toISOString(),
        origin: started.origin,
        fired: started.fired,
      }),
    );
  }

  private async finish(record: ApprovalRecord, steps: number): Promise<void> {
    const { approvalId } = record;
    const lineage = lineageOf(record);
    if (!this.cancelled.has(approvalId)) {
      this.cancelled.add(approvalId);
      setTimeout(() => this.cancelled.delete(approvalId), 10 * 60_000).unref();
      await this.options.schedule.cancel(
        approvalId,
        lineage,
        Math.max(steps, record.escalation?.fired.length ?? 0, 10),
      );
    }
    // A superseded approval hands its clock and its page over to its successor; anything else
    // ends them. One that never started its clock (decided before its card) has nothing to end.
    if (record.phase === 'superseded' || !record.escalation) return;
    const routingKey = await this.options.schedule.pagedWith(lineage);
    await this.options.schedule.end(lineage);
    if (routingKey) await this.resolvePage(record, routingKey, 'pd-resolve');
  }

  /** Sends PagerDuty's resolve once per page and `kind`, whichever replica gets here first. */
  private async resolvePage(record: ApprovalRecord, routingKey: string, kind: string): Promise<void> {
    const { approvalId } = record;
    if (!this.options.pager) return;
    const dedupKey = record.escalation?.origin ?? approvalId;
    if (!(await this.options.ledger.claim(dedupKey, kind))) return;
    let outcome = 'sent';
    try {
      await this.options.pager.resolve(routingKey, dedupKey);
      this.options.logger.info({ approvalId, dedupKey }, 'PagerDuty page resolved');
    } catch (err) {
      outcome = `failed: ${err instanceof Error ? err.message : String(err)}`.slice(0, 200);
      this.count('resolve');
      this.options.logger.error({ approvalId, dedupKey, err: outcome }, 'PagerDuty resolve failed');
    }
    await this.options.ledger.settle(dedupKey, kind, outcome);
  }

  private async take(due: DueStep): Promise<void> {
    // A look before the claim: a process whose file has no such step (another route set, a
    // replica not yet restarted with the new file) leaves it to one that has.
    const seen = await this.options.store.get(due.approvalId);
    if (!seen) {
      await this.options.schedule.drop(due);
      return;
    }
    // A step of an approval that is over is dropped, not claimed: a claim marks the step fired for
    // the whole request, and a superseded approval's successor must still fire it.
    if (isTerminal(seen)) {
      await this.options.schedule.drop(due);
      return;
    }
    const step = this.options.ladderOf(seen.route)[due.step];
    if (!step) return;
    const firing: FiredStep = {
      step: due.step,
      action: step.action,
      afterMs: step.afterMs,
      at: this.now().toISOString(),
    };
    if (!(await this.options.schedule.claim(due, firing))) return;
    const task = this.fire(due).catch((err: unknown) => {
      this.count('internal');
      this.options.logger.error(
        { err, approvalId: due.approvalId, step: due.step },
        'escalation step failed',
      );
    });
    this.track(task);
    await task;
  }

  private count(kind: string): void {
    this.failures[kind] = (this.failures[kind] ?? 0) + 1;
  }

  private async fire(due: DueStep): Promise<void> {
    const { approvalId } = due;
    // Read after the claim: an approval resolved meanwhile (or now) fires nothing.
    const record = await this.options.store.get(approvalId);
    if (!record || isTerminal(record) || !record.slack.ts) return;
    const step = this.options.ladderOf(record.route)[due.step];
    if (!step) return;
    const startMs = record.escalation ? Date.parse(record.escalation.startedAt) : Date.parse(record.openedAt);
    const waitedMs = this.now().getTime() - startMs;
    const log = this.options.logger.child({ approvalId, step: due.step, action: step.action });
    let who: string | undefined;
    let failed = false;
    try {
      who = await this.act(record, step, waitedMs);
      log.info({ who }, 'escalation step fired');
    } catch (err) {
      failed = true;
      this.count(step.action);
      log.error(
        { err: err instanceof Error ? err.message : String(err) },
        'escalation step could not reach anyone',
      );
    }
    const fired: FiredStep = {
      step: due.step,
      action: step.action,
      afterMs: step.afterMs,
      at: this.now().toISOString(),
      ...(who ? { who } : {}),
      ...(failed ? { failed } : {}),
    };
    await this.options.schedule.fired(due.lineage, fired);
    await this.options.keeper.mutateAndSync(
      approvalId,
      escalationFired(fired, {
        startedAt: new Date(startMs).toISOString(),
        origin: record.escalation?.origin ?? approvalId,
      }),
    );
  }

  /** Does what the step says; resolves with whom it reached, for the card. */
  private async act(
    record: ApprovalRecord,
    step: EscalationStep,
    waitedMs: number,
  ): Promise<string | undefined> {
    const { slack } = this.options;
    const { channel, ts } = record.slack as { channel: string; ts: string };
    switch (step.action) {
      case 'remind':
        await slack.threadReply({ channel, ts }, { kind: 'remind', waitedMs }, false);
        return undefined;
      case 'mention': {
        const target = await this.target(record, step.target ?? 'oncall');
        await slack.threadReply(
          { channel, ts },
          {
            kind: 'mention',
            waitedMs,
            users: target.users,
            ...(target.usergroup ? { usergroup: target.usergroup } : {}),
          },
          step.broadcast === true,
        );
        return target.usergroup ? `@${target.usergroup}` : await this.names(target.users);
      }
      case 'dm': {
        const target = await this.target(record, step.target ?? 'oncall');
        const userId = target.users[0];
        if (!userId) throw new Error('nobody to DM: the on-call source and the approvers name nobody');
        const permalink = await slack.permalink(channel, ts);
        const posted = await slack.directMessage(userId, {
          record,
          waitedMs,
          ...(permalink ? { permalink } : {}),
        });
        // A press in the DM finds its approval the way a press on the card does.
        await this.options.store.mapMessage(
          posted.channel,
          posted.ts,
          record.approvalId,
          this.options.dmMappingTtlMs,
        );
        return this.names([userId]);
      }
      case 'page':
        return this.page(record, step, waitedMs);
      case 'timeout':
        await this.timeout(record, step);
        return undefined;
    }
  }

  private async page(
    record: ApprovalRecord,
    step: EscalationStep,
    waitedMs: number,
  ): Promise<string | undefined> {
    const { pager, slack } = this.options;
    const routingKey = step.routingKey ?? this.options.defaultRoutingKey;
    if (!pager || !routingKey) throw new Error('no PagerDuty routing key');
    const { channel, ts } = record.slack as { channel: string; ts: string };
    const dedupKey = record.escalation?.origin ?? record.approvalId;
    const permalink = await slack.permalink(channel, ts);
    const subject =
      record.subject.kind === 'shell' ? record.subject.command : (record.title ?? record.subject.kind);
    // Marked first: a resolution racing the trigger must still resolve it.
    if (!(await this.options.schedule.paged(lineageOf(record), routingKey))) {
      throw new Error('the approval was resolved as the page was due; not paging');
    }
    await pager.trigger({
      routingKey,
      dedupKey,
      summary: `Approval waiting: ${record.tool} — ${String(subject ?? '')}`.replace(/\s+/g, ' '),
      source: `countersign:${record.hostId}`,
      customDetails: {
        approvalId: record.approvalId,
        sessionId: record.sessionId,
        ...(record.sessionTitle ? { sessionTitle: record.sessionTitle } : {}),
        card: permalink ?? `${channel}/${ts}`,
        age: shortDuration(waitedMs),
        ageSeconds: Math.round(waitedMs / 1000),
      },
      ...(permalink ? { links: [{ href: permalink, text: 'Approval card' }] } : {}),
    });
    // Resolved while the trigger was on its way: its resolve may have reached PagerDuty first.
    const after = await this.options.store.get(record.approvalId);
    if (after && isTerminal(after) && after.phase !== 'superseded') {
      await this.resolvePage(
        { ...after, escalation: after.escalation ?? record.escalation },
        routingKey,
        'pd-resolve-late',
      );
    }
    // The card names who was paged when the route's on-call source is PagerDuty's.
    if (this.options.oncallOf(record.route)?.kind !== 'pagerduty') return 'PagerDuty';
    const target = await this.target(record, 'oncall');
    return target.source === 'pagerduty' ? await this.names(target.users) : 'PagerDuty';
  }

  private async timeout(record: ApprovalRecord, step: EscalationStep): Promise<void> {
    const choice = timeoutChoice(record.availableChoices);
    if (!choice) throw new Error('no reject choice offered: the timeout cannot decide');
    if (record.phase !== 'pending')
      throw new Error(`the approval is ${record.phase}: the timeout cannot decide`);
    const outcome = await this.options.decider.decide({
      record,
      sourceIndex: record.currentRequirementId.sourceIndex,
      choiceId: choice.choiceId,
      feedback: `${TIMEOUT_FEEDBACK} (waited ${shortDuration(step.afterMs)})`,
      by: { via: 'timeout' },
      // A timeout step of this record's route fired for it.
      warranted: true,
    });
    this.options.logger.info(
      { approvalId: record.approvalId, outcome: outcome.kind },
      'escalation timeout decided',
    );
    if (outcome.kind !== 'decided' && outcome.kind !== 'hostUnavailable') {
      throw new Error(`the timeout could not decide: ${outcome.kind}`);
    }
  }

  private async target(record: ApprovalRecord, target: string) {
    if (target === 'oncall') {
      return this.options.oncall.resolve(
        this.options.oncallOf(record.route),
        this.options.approversOf(record.route),
        record.approvalId,
      );
    }
    return target.startsWith('S')
      ? { users: [] as string[], usergroup: target, source: 'approvers' as const }
      : { users: [target], source: 'approvers' as const };
  }

  private async names(users: readonly string[]): Promise<string | undefined> {
    if (users.length === 0) return undefined;
    const shown = await Promise.all(
      users
        .slice(0, 3)
        .map(async (u) => `@${(await this.options.slack.nameOf(u).catch(() => undefined)) ?? u}`),
    );
    return users.length > 3 ? `${shown.join(', ')} and ${users.length - 3} more` : shown.join(', ');
  }
}
