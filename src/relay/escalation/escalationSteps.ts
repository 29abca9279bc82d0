import type { Logger } from 'pino';
import type { Authorization } from '../../domain/authorization.js';
import { timeoutChoice } from '../../domain/decisionWords.js';
import type { EscalationDm, EscalationReply } from '../../domain/escalationNotice.js';
import type { EscalationFailureKind } from '../../domain/metrics.js';
import { type ApprovalRecord, isTerminal } from '../../domain/record.js';
import type { Approvers, EscalationStep, OncallSource } from '../../domain/route.js';
import { type BackoffPolicy, backoffDelay, sleep } from '../../msp/backoff.js';
import type { TriggerEvent } from '../../pagerduty/pagerDuty.js';
import type { ApprovalStore } from '../../store/approvalStore.js';
import {
  type EscalationStore,
  type PagedService,
  pagedService,
  routingKeysByTag,
  type Unresolved,
} from '../../store/escalationStore.js';
import { abortable } from '../../util/abortable.js';
import { shortDuration } from '../../util/shortDuration.js';
import type { Decider } from '../deciding/decider.js';
import { type AwayLookup, EveryoneAway, type MayStandIn, type Present, withoutAway } from './awayFilter.js';
import { lineageOf } from './lineage.js';
import type { OnCall, OncallResolver } from './oncall.js';
import { pageDetails, pageSummary } from './pageText.js';

// What each escalation step does once the escalator (escalator.ts) has claimed it: a reminder or
// a mention in the card's thread, a DM with the card's buttons, a PagerDuty page, the timeout's
// reject. Each resolves with whom it reached, for the card's escalation line.

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

/** What a step did: whom it reached (for the card), and `as`, when it did other than the step says. */
export interface StepDone {
  who?: string | undefined;
  as?: EscalationStep['action'];
}

/**
 * Whether a user may decide an approval as its record stands: the check a click on the card gets
 * (Authorizer.check). A DM carries the request's text and the card's buttons, so it goes to
 * nobody refused: not a stranger, and not one who may read the card but whose press would be
 * refused (a channel member a risk rule's or a protected write's approvers leave out).
 */
export type MayDecide = (userId: string, record: ApprovalRecord) => Promise<Authorization>;

/**
 * A DM found nobody to reach because everyone it would ask may not decide the approval (a guest,
 * a user of another team, someone its approvers leave out), or is away: the
 * escalation falls through to its next step at once, as when everyone is away (Escalator).
 */
export class NobodyMaySee extends Error {
  constructor(
    readonly refused: readonly string[],
    readonly away: readonly string[],
  ) {
    super('nobody this step would reach may see the approval');
  }
}

/**
 * The timeout could not decide as it fell due, for a reason that passes: the approval was being
 * decided or was held elsewhere, or the decide came to nothing (the host refused a click's claim
 * still in flight, Redis failed, this process was stopping). The Escalator puts the step back in
 * the schedule rather than marking it failed: a timeout that never decides leaves the agent
 * waiting for good.
 */
export class TimeoutNotYet extends Error {
  constructor(
    readonly why: string,
    /** What the decide came to, when it was tried (absent: the approval could not be decided yet). */
    readonly outcome?: { kind: string; errorKind?: string },
  ) {
    super(`the timeout could not decide yet: ${why}`);
  }
}

/**
 * The process began stopping before the step reached anyone, as far as it knows: a Slack message
 * not yet sent, or a page PagerDuty had not yet confirmed. The Escalator puts the step back in the
 * schedule for another process (or the next start) rather than losing it. Never thrown once a
 * Slack message is on its way: a message sent twice shows, a page sent twice does not (PagerDuty
 * keeps one incident per dedup_key).
 */
export class CutShort extends Error {
  constructor() {
    super('the process is stopping; the step was not done');
  }
}

export interface Pager {
  /** `signal` cuts the trigger short, retries and all: it then rejects with the signal's reason. */
  trigger(event: TriggerEvent, signal?: AbortSignal): Promise<void>;
  /** `signal` cuts the resolve short as the trigger's does. */
  resolve(routingKey: string, dedupKey: string, signal?: AbortSignal): Promise<void>;
}

export interface EscalationStepsOptions {
  schedule: EscalationStore;
  store: ApprovalStore;
  decider: Decider;
  slack: EscalationSender;
  pager?: Pager;
  oncall: OncallResolver;
  oncallOf: (route: string | undefined) => OncallSource | undefined;
  /**
   * Who may decide the approval as its record stands (Authorizer.shown): a protected write's
   * approvers, a risk rule's, the admins for a route gone; the route's own approvers otherwise.
   * Whom the steps reach when the on-call source fails, names nobody, or nobody it names may be
   * reached.
   */
  approversOf: (record: ApprovalRecord) => Approvers | undefined;
  defaultRoutingKey?: string;
  /**
   * Every other routing key the config pages with (each page step's routingKey). Redis keeps a
   * page by its key's tag alone: its resolve, by whichever process, finds the key among these and
   * defaultRoutingKey.
   */
  routingKeys?: readonly string[];
  /** How long a DM's buttons stay mapped to their approval. */
  dmMappingTtlMs: number;
  /** Who is away: passed by, their delegates reached instead. Without it, everyone is reached. */
  away?: AwayLookup;
  /** Whether a delegate may stand in as the step fires (awayFilter.ts); without it, any may. */
  mayStandIn?: MayStandIn;
  /** Whether a user may decide the approval: a DM (or a page's DM) goes to nobody else. */
  mayDecide: MayDecide;
  logger: Logger;
}

/**
 * How a DM's button mapping is tried again: as a Slack call a person waits on is (three tries, from
 * 200 ms, at most a second apart), the Redis client itself never retrying (redisAccess.ts).
 */
const DM_MAP_TRIES = 3;
const DM_MAP_BACKOFF: BackoffPolicy = { initialMs: 200, maxMs: 1_000 };

export const TIMEOUT_FEEDBACK = 'Nobody answered this approval in time; Countersign rejected it on timeout.';

/**
 * Whether an approval's escalation is over: it is final, or it was asked again on another route,
 * tool or session (record.rerouted, never cleared), so that no press on its card and no timeout
 * can decide it (decisionCheck.ts). Reminders, DMs and pages about it would call people to a card
 * without buttons (a page to the first route's on-call, with the new request's text if the step
 * carries it), and its timeout would be tried again for ever. The other `unavailable` reasons
 * pass (a session held elsewhere, a stage being read again, a host resolving it): the approval
 * may yet be decided here, or it ends by itself.
 */
export function escalationOver(record: ApprovalRecord): boolean {
  return isTerminal(record) || record.rerouted !== undefined;
}

export class EscalationSteps {
  /** The config's routing keys by tag, for the resolves of pages Redis knows by tag (resolveLeft). */
  private readonly routingKeys: ReadonlyMap<string, string>;

  constructor(
    private readonly options: EscalationStepsOptions,
    /** Counts a step that failed to reach anyone, by action (Escalator.failures). */
    private readonly count: (kind: EscalationFailureKind) => void,
    /** When a lease on a resolve taken now runs out (ms): Escalator.resolveLeaseUntil. */
    private readonly resolveLeaseUntil: () => number,
    /** How long such a lease lasts (ms): a page left for another replica must outlive it. */
    private readonly resolveLeaseMs: number,
  ) {
    this.routingKeys = routingKeysByTag([options.defaultRoutingKey, ...(options.routingKeys ?? [])]);
  }

  /**
   * Does what the step says; resolves with whom it reached, for the card, and what it did when
   * that was not what the step says (a page nobody present would answer is a DM, see page()).
   * `stopping` (aborted with a CutShort) ends the step early where nothing was sent yet, and a
   * page until PagerDuty confirms it; the timeout's decide is not cut short (it is retried anyway).
   */
  async act(
    record: ApprovalRecord,
    step: EscalationStep,
    waitedMs: number,
    stopping?: AbortSignal,
  ): Promise<StepDone> {
    const { slack } = this.options;
    const { channel, ts } = record.slack as { channel: string; ts: string };
    switch (step.action) {
      case 'remind':
        stopping?.throwIfAborted();
        await slack.threadReply({ channel, ts }, { kind: 'remind', waitedMs }, false);
        return {};
      case 'mention': {
        const target = await abortable(this.target(record, step.target ?? 'oncall'), stopping);
        // From here on the message may be sent: it is not cut short, nor put back.
        stopping?.throwIfAborted();
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
        if (target.allAway) throw new EveryoneAway(target.allAway);
        return { who: target.usergroup ? `@${target.usergroup}` : await this.names(target.users) };
      }
      case 'dm':
        return {
          who: await this.dm(
            record,
            await abortable(this.target(record, step.target ?? 'oncall', undefined, true), stopping),
            waitedMs,
            stopping,
          ),
        };
      case 'page': {
        // Whom PagerDuty would wake is away: they are passed by as a mention or a DM would pass
        // them by, and whoever stands in is asked by DM, since a page cannot be sent to one person.
        const standIn = await abortable(this.standInForPage(record), stopping);
        if (standIn) return { who: await this.dm(record, standIn, waitedMs, stopping), as: 'dm' };
        return { who: await this.page(record, step, waitedMs, stopping) };
      }
      case 'timeout':
        await this.timeout(record, step);
        return {};
    }
  }

  /** DMs the first of `target` the card's question and buttons; resolves with their name. */
  private async dm(
    record: ApprovalRecord,
    target: OnCall,
    waitedMs: number,
    stopping?: AbortSignal,
  ): Promise<string | undefined> {
    const { slack } = this.options;
    const { channel, ts } = record.slack as { channel: string; ts: string };
    const userId = target.users[0];
    if (!userId && target.refused) throw new NobodyMaySee(target.refused, target.allAway ?? []);
    if (!userId && target.allAway) throw new EveryoneAway(target.allAway);
    if (!userId) throw new Error('nobody to DM: the on-call source and the approvers name nobody');
    const permalink = await abortable(slack.permalink(channel, ts), stopping);
    // A delegate asked in place of someone away is told whom for, by name (a mention would ping them).
    const awayUser = target.inPlaceOf?.[userId];
    const inPlaceOf = awayUser ? await abortable(this.names([awayUser]), stopping) : undefined;
    // From here on the DM may be sent: it is not cut short, nor put back.
    stopping?.throwIfAborted();
    const posted = await slack.directMessage(userId, {
      record,
      waitedMs,
      ...(permalink ? { permalink } : {}),
      ...(inPlaceOf ? { inPlaceOf } : {}),
    });
    await this.mapDm(posted, record.approvalId);
    return this.names([userId]);
  }

  /**
   * Maps a DM's buttons to their approval, so that a press in it finds the approval the way a press
   * on the card does. The DM is sent by now: a failed write is tried again (a few quick tries, as a
   * person may press soon), and one that never lands does not fail the step, which did reach
   * someone (the card would say the DM failed, and the step is not sent again). Its buttons then
   * answer as a card's the bot does not know, which the warn line says.
   */
  private async mapDm(posted: { channel: string; ts: string }, approvalId: string): Promise<void> {
    const { store, dmMappingTtlMs, logger } = this.options;
    for (let attempt = 1; ; attempt++) {
      try {
        await store.mapMessage(posted.channel, posted.ts, approvalId, dmMappingTtlMs);
        return;
      } catch (err) {
        if (attempt >= DM_MAP_TRIES) {
          logger.warn(
            { err, approvalId, channel: posted.channel, attempts: attempt },
            "escalation DM sent, but its buttons could not be tied to the approval: a press in it won't decide",
          );
          return;
        }
        await sleep(backoffDelay(attempt - 1, DM_MAP_BACKOFF));
      }
    }
  }

  /**
   * Whom to ask instead of paging, when the route's on-call source is PagerDuty's and everyone it
   * has on call is away: their delegates, else the route's approvers (target()), or nobody left
   * (`allAway`: the step falls through). Undefined, the page goes: someone on call is present, or
   * who is on call is not known here (another source, or PagerDuty did not answer), and then
   * PagerDuty's own overrides decide whom it wakes.
   */
  private async standInForPage(record: ApprovalRecord): Promise<OnCall | undefined> {
    const { away, oncall, oncallOf, approversOf, logger } = this.options;
    const source = oncallOf(record.route);
    if (!away || source?.kind !== 'pagerduty') return undefined;
    const found = await oncall.resolve(source, approversOf(record), record.approvalId);
    if (found.source !== 'pagerduty' || found.users.length === 0) return undefined;
    const absent = await away.whoIsAway(found.users);
    if (absent.size < found.users.length) return undefined;
    logger.info(
      { approvalId: record.approvalId, away: [...absent.keys()] },
      'everyone PagerDuty has on call is away; not paging',
    );
    return this.target(record, 'oncall', found, true);
  }

  private async page(
    record: ApprovalRecord,
    step: EscalationStep,
    waitedMs: number,
    stopping?: AbortSignal,
  ): Promise<string | undefined> {
    const { pager, slack } = this.options;
    const routingKey = step.routingKey ?? this.options.defaultRoutingKey;
    if (!pager || !routingKey) throw new Error('no PagerDuty routing key');
    const { channel, ts } = record.slack as { channel: string; ts: string };
    const dedupKey = record.escalation?.origin ?? record.approvalId;
    const permalink = await abortable(slack.permalink(channel, ts), stopping);
    // The request's text goes to PagerDuty only where the step says so: nobody checks whom it reaches.
    const includeRequest = step.includeRequest === true;
    // Marked first: a resolution racing the trigger must still resolve it.
    if (!(await this.options.schedule.paged(lineageOf(record), pagedService(routingKey)))) {
      throw new Error('the approval was resolved as the page was due; not paging');
    }
    // Cut short until PagerDuty confirms it: sent again by whoever fires the step next, it is the
    // same incident (same dedup_key), where a lost page would wake nobody.
    await pager.trigger(
      {
        routingKey,
        dedupKey,
        summary: pageSummary(record, waitedMs, includeRequest),
        source: `countersign:${record.hostId}`,
        customDetails: pageDetails(record, permalink ?? `${channel}/${ts}`, waitedMs, includeRequest),
        ...(permalink ? { links: [{ href: permalink, text: 'Approval card' }] } : {}),
      },
      stopping,
    );
    await this.resolveIfLate(record, routingKey, stopping);
    // The card names who was paged when the route's on-call source is PagerDuty's: whom PagerDuty
    // has on call, as it pages them, not their delegates (whom a page never reaches).
    const source = this.options.oncallOf(record.route);
    // Stopping: the page is sent, and the card should say so before the process exits.
    if (source?.kind !== 'pagerduty' || stopping?.aborted) return 'PagerDuty';
    const paged = await this.options.oncall.resolve(
      source,
      this.options.approversOf(record),
      record.approvalId,
    );
    return paged.source === 'pagerduty' ? await this.names(paged.users) : 'PagerDuty';
  }

  /**
   * The request ended while the trigger was on its way: its resolve may have reached PagerDuty
   * first, and PagerDuty opens a new incident for a trigger after a resolve. Asked of the request,
   * not of this approval: one superseded meanwhile hands its page to its successor, whose decision
   * may have sent the resolve already. The approval is asked too, as it stands now: decided (not
   * superseded), its request is over whatever its lineage says (a later approval of the same tool
   * call may have started it afresh meanwhile), and the resolve goes now. Should the ending still
   * be to come, it resolves the page again, which is harmless. The resolve is leased as an
   * ending's pages are (endPaged), before it is sent: should this process die while it is on its
   * way, whoever claims the lease when it runs out sends it. Settled, the page comes off the
   * request's unresolved hash, which an ending's pages may share; the lease then finds nothing
   * left and goes.
   */
  private async resolveIfLate(
    record: ApprovalRecord,
    routingKey: string,
    stopping: AbortSignal | undefined,
  ): Promise<void> {
    const lineage = lineageOf(record);
    if (!(await this.options.schedule.ended(lineage)) && !(await this.decided(record.approvalId))) return;
    const service = pagedService(routingKey);
    const by = { approvalId: record.approvalId, dedupKey: record.escalation?.origin ?? record.approvalId };
    const { schedule } = this.options;
    await schedule.handOnResolve(lineage, by, service, this.resolveLeaseUntil());
    const outcome = await this.resolveLeft({ lineage, ...by, services: [service] }, service, stopping);
    if (outcome === 'settled') await schedule.resolvedPages(lineage, [service]);
    // Cut short by a stop: handed on like an ended request's pages, due at once (score 0). Never
    // `elsewhere`: the page came with its key.
    else if (outcome === 'cut') await schedule.leaseResolve(lineage, by.approvalId, 0);
  }

  /** Whether the approval, read again, is over other than by a successor taking it on. */
  private async decided(approvalId: string): Promise<boolean> {
    const now = await this.options.store.get(approvalId);
    return now !== undefined && escalationOver(now) && now.phase !== 'superseded';
  }

  private async timeout(record: ApprovalRecord, step: EscalationStep): Promise<void> {
    const choice = timeoutChoice(record.availableChoices);
    if (!choice) throw new Error('no reject choice offered: the timeout cannot decide');
    if (record.phase !== 'pending') throw new TimeoutNotYet(`the approval is ${record.phase}`);
    const outcome = await this.options.decider.decide({
      record,
      sourceIndex: record.currentRequirementId.sourceIndex,
      choiceId: choice.choiceId,
      feedback: `${TIMEOUT_FEEDBACK} (waited ${shortDuration(step.afterMs)})`,
      by: { via: 'timeout' },
      // A timeout step of this record's route fired for it.
      warranted: true,
    });
    const { logger } = this.options;
    const { approvalId } = record;
    switch (outcome.kind) {
      case 'decided':
        logger.info(
          { approvalId, outcome: outcome.kind, terminal: outcome.terminal },
          'escalation timeout decided',
        );
        return;
      case 'hostUnavailable':
        // The claim is kept and sent when the host is back (or the next process starts).
        logger.warn(
          { approvalId, outcome: outcome.kind, ...(outcome.why ? { why: outcome.why } : {}) },
          'escalation timeout claimed; the host is unavailable, the decision is sent when it is back',
        );
        return;
    }
    // Nothing was decided, or nothing is known to be: the Escalator logs it, with the outcome, as
    // it puts the step back. `forwarded`: the replica that owns the host has not said how its
    // decide went, and should it be refused there nobody would hear of it (only a click's asker is
    // answered late). Tried again, it is decided once all the same: a decision is a claim on the
    // record by compare-and-set, so whichever try the host takes first ends the approval, and the
    // others find it being decided or over.
    const errorKind = outcome.kind === 'refused' ? outcome.errorKind : undefined;
    const why =
      outcome.kind === 'forwarded'
        ? 'handed to the replica that owns the host, which has not said how it went'
        : errorKind
          ? `refused (${errorKind})`
          : outcome.kind;
    throw new TimeoutNotYet(why, {
      kind: outcome.kind,
      ...(errorKind ? { errorKind } : {}),
    });
  }

  /**
   * Whom a step reaches: the on-call (or the step's own target) with those away passed by and
   * their delegates asked instead, and for a DM (`dm`) those who may not decide the approval
   * passed by too (reachable()). When that leaves nobody the on-call source names (everyone away
   * with nobody standing in, or nobody who may decide it), the step falls through to the approval's own
   * approvers (approversOf), as when the source names nobody, rather than reaching nobody.
   */
  private async target(
    record: ApprovalRecord,
    target: string,
    resolved?: OnCall,
    dm = false,
  ): Promise<OnCall> {
    const approvers = this.options.approversOf(record);
    // `resolved`: the on-call source's answer, when the caller has just asked it (standInForPage).
    const found: OnCall =
      resolved ??
      (target === 'oncall'
        ? await this.options.oncall.resolve(this.options.oncallOf(record.route), approvers, record.approvalId)
        : target.startsWith('S')
          ? { users: [], usergroup: target, source: 'approvers' }
          : { users: [target], source: 'approvers' });
    const present = await this.reachable(record, found, dm);
    if (present.target.users.length > 0 || present.target.usergroup) return present.target;
    // Nobody reached only because of absences or refusals: the Escalator then moves on to the next step.
    const nobody = (target: OnCall, skipped: string[], refused: string[]): OnCall => ({
      ...target,
      ...(skipped.length > 0 ? { allAway: skipped } : {}),
      ...(refused.length > 0 ? { refused } : {}),
    });
    if (target !== 'oncall' || found.source === 'approvers')
      return nobody(present.target, present.skipped, present.refused);
    this.options.logger.info(
      { approvalId: record.approvalId },
      present.refused.length > 0
        ? 'nobody on call may see the approval; reaching its approvers instead'
        : 'everyone on call is away; reaching the route approvers instead',
    );
    const fallback = await this.options.oncall.resolve(undefined, approvers, record.approvalId);
    const approversPresent = await this.reachable(record, fallback, dm);
    if (approversPresent.target.users.length > 0 || approversPresent.target.usergroup)
      return approversPresent.target;
    return nobody(
      approversPresent.target,
      [...new Set([...present.skipped, ...approversPresent.skipped])],
      [...new Set([...present.refused, ...approversPresent.refused])],
    );
  }

  /**
   * `found` without those away, their delegates asked in their place (awayFilter.ts); for a DM,
   * which carries the request's text and asks its reader to decide, also without anyone who may
   * not decide the approval as its record stands (mayDecide, as a click is checked): one who may
   * only read the card would find its buttons refused, and the step would count as done with
   * nobody reached who could answer. The first who may is the one asked, never a group.
   * `refused`: those passed by for that.
   */
  private async reachable(
    record: ApprovalRecord,
    found: OnCall,
    dm: boolean,
  ): Promise<Present & { refused: string[] }> {
    const { away, logger } = this.options;
    let present: Present = { target: found, skipped: [] };
    if (away) {
      const members = (group: string) => this.options.oncall.members(group);
      present = await withoutAway(found, away, members, this.options.mayStandIn);
      if (present.skipped.length > 0) {
        logger.info(
          { approvalId: record.approvalId, away: present.skipped, reached: present.target.users },
          'escalation passed by people who are away',
        );
      }
    }
    if (!dm) return { ...present, refused: [] };
    const refused: { userId: string; why: string }[] = [];
    let decider: string | undefined;
    for (const userId of present.target.users) {
      const deciding = await this.mayDecide(userId, record);
      if (deciding.allowed) {
        decider = userId;
        break;
      }
      refused.push({ userId, why: deciding.why });
    }
    if (refused.length > 0) {
      // The message is the one operators know; `why` says whether each may not even see it.
      logger.info(
        { approvalId: record.approvalId, refused, ...(decider ? { reached: decider } : {}) },
        'escalation DM passed by people who may not see the approval',
      );
    }
    const { usergroup: _group, ...rest } = present.target;
    return {
      target: { ...rest, users: decider ? [decider] : [] },
      skipped: present.skipped,
      refused: refused.map((r) => r.userId),
    };
  }

  /** Authorizer.check; a check that fails refuses: the request's text goes to nobody on a guess. */
  private async mayDecide(userId: string, record: ApprovalRecord): Promise<Authorization> {
    try {
      return await this.options.mayDecide(userId, record);
    } catch (err) {
      this.options.logger.warn(
        { approvalId: record.approvalId, userId, err: err instanceof Error ? err.message : String(err) },
        'could not check who may decide an approval; not DMing them',
      );
      return { allowed: false, why: 'unverified', route: record.route ?? '(none)', what: 'user' };
    }
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

  /**
   * Sends PagerDuty's resolve of one page an ended request left (Escalator.resolveAll); `settled`
   * once it is sent or failed for good, `cut` when `stopping` cut it short and it is still to send,
   * `elsewhere` when it is left for another replica. Once per page by the lease on the request's
   * pages, not by the notice ledger: a resolve cut short, or whose process died, is sent by the
   * next to claim the lease. The routing key is the config's of the page's tag, unless the page
   * came with its key (PagedService). A tag this config does not have may be another replica's
   * (a config change rolling out, replicas whose configs differ): the page is left for whoever
   * takes the lease next, as long as its unresolved hash outlives that lease. Once it would not,
   * nobody had the key in time (it was removed before the resolve): it fails for good, logged
   * and counted, and the page is dropped.
   */
  async resolveLeft(
    unresolved: Unresolved,
    service: PagedService,
    stopping?: AbortSignal,
  ): Promise<'settled' | 'cut' | 'elsewhere'> {
    const { pager, logger } = this.options;
    if (!pager) return 'settled';
    const { approvalId, dedupKey } = unresolved;
    const log = logger.child({ approvalId, dedupKey, service: service.tag });
    const routingKey = service.routingKey ?? this.routingKeys.get(service.tag);
    if (!routingKey) {
      if (await this.options.schedule.unresolvedOutlives(unresolved.lineage, this.resolveLeaseMs)) {
        log.info(
          'PagerDuty page not resolved here: its routing key is not in this config; left for another replica',
        );
        return 'elsewhere';
      }
      this.count('resolve');
      log.warn(
        'PagerDuty page not resolved: its routing key is no longer in the config; resolve it in PagerDuty',
      );
      return 'settled';
    }
    try {
      await pager.resolve(routingKey, dedupKey, stopping);
      log.info('PagerDuty page resolved');
    } catch (err) {
      if (stopping?.aborted) return 'cut';
      this.count('resolve');
      const why = (err instanceof Error ? err.message : String(err)).slice(0, 200);
      log.error({ err: why }, 'PagerDuty resolve failed');
    }
    return 'settled';
  }
}
