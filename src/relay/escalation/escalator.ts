import type { Logger } from 'pino';
import type { EscalationFailureKind, EscalationFailures, Metrics } from '../../domain/metrics.js';
import type { ApprovalRecord, FiredStep } from '../../domain/record.js';
import type { EscalationStep } from '../../domain/route.js';
import { type DueStep, RESOLVE_STEP, type Unresolved } from '../../store/escalationStore.js';
import type { RecordKeeper } from '../records/recordKeeper.js';
import { escalationFired, escalationStarted } from '../records/recordMutations.js';
import { EveryoneAway } from './awayFilter.js';
import {
  CutShort,
  EscalationSteps,
  type EscalationStepsOptions,
  escalationOver,
  NobodyMaySee,
  TimeoutNotYet,
} from './escalationSteps.js';
import { lineageOf } from './lineage.js';

// On-call escalation (routes[].escalation): reminders, mentions, DMs, pages and a timeout, each
// fired once per request. Nothing is timed in memory: due steps sit in Redis (EscalationStore),
// one poll loop per process takes what is due with an atomic claim, and reads the record again
// after the claim, so a step claimed as the approval resolves does nothing.
//
// The loop sleeps until the schedule's next step falls due (each look at it says when), or until
// this process schedules an earlier one, and looks at least once every `idlePollMs` for steps
// other processes added: a replica that scheduled a step fires it on time itself, so that bound
// only delays a step whose replica died. An idle process asks Redis once a second, not five times.
//
// stop() claims nothing more and cuts short the steps under way that have not reached anyone yet
// (EscalationSteps.act, CutShort): they go back in the schedule, due now, for another process or
// the next start. Waiting for them instead would lose them whenever PagerDuty answers slower than
// the shutdown's drain (a claimed step is out of the schedule and marked fired). A claim on its
// way is waited for, and a step it wins goes back the same way, unfired. A PagerDuty resolve
// under way is cut short and handed on the same way (resolveAll): the request it resolves has
// ended, and nothing else would send it.

export interface EscalatorOptions extends EscalationStepsOptions {
  keeper: RecordKeeper;
  ladderOf: (route: string | undefined) => readonly EscalationStep[];
  /** The longest the loop sleeps between looks at the schedule (ms; default 1,000). */
  idlePollMs?: number;
  now?: () => Date;
  /** Told of each step fired. */
  metrics?: Pick<Metrics, 'escalationStep'>;
  /**
   * How long a timeout that could not decide waits before it is tried again (ms; default 5,000),
   * doubled each time up to TIMEOUT_RETRY_MAX_MS.
   */
  timeoutRetryMs?: number;
}

/**
 * How long a process resolving an ended request's pages holds them before another may take them
 * over: longer than a resolve with all its retries and waits (PagerDuty client: 4 attempts of 5 s,
 * waits of up to 30 s between them), so that a live resolver is rarely doubled (a resolve sent
 * twice is harmless: PagerDuty resolves one incident per dedup_key).
 */
const RESOLVE_LEASE_MS = 3 * 60_000;

/** The longest a timeout that could not decide waits before it is tried again. */
const TIMEOUT_RETRY_MAX_MS = 60_000;

/**
 * The most steps one process fires at once: a look claims more only as one of them ends, which
 * bounds what a slow PagerDuty or Slack leaves waiting in memory.
 */
const FIRES_AT_ONCE = 32;

/** How long a step missing from this process's ladder waits before a process looks at it again. */
const POSTPONE_MS = 60_000;

export class Escalator {
  private readonly now: () => Date;
  private readonly starting = new Set<string>();
  private readonly cancelled = new Set<string>();
  private readonly work = new Set<Promise<unknown>>();
  private running = false;
  /** Aborted (with a CutShort) by stop(): the steps under way end early where they still can. */
  private stopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  /** When the armed timer fires (ms, by `now`). */
  private timerAt = Number.POSITIVE_INFINITY;
  /** The earliest wake asked for while a look was under way: armed once it ends. */
  private wantedAt = Number.POSITIVE_INFINITY;
  private polling = false;
  /** Steps claimed and firing (see FIRES_AT_ONCE), and the claims waiting for one to end. */
  private firing = 0;
  private readonly fireSlotWaiters: Array<() => void> = [];
  /** Steps that failed to reach anyone, by action, and steps that threw: /metrics shows them. */
  readonly failures: EscalationFailures = {};

  private readonly steps: EscalationSteps;

  constructor(private readonly options: EscalatorOptions) {
    this.now = options.now ?? (() => new Date());
    this.steps = new EscalationSteps(
      options,
      (kind) => this.count(kind),
      () => this.resolveLeaseUntil(),
      RESOLVE_LEASE_MS,
    );
  }

  start(): void {
    if (this.running) return;
    this.running = true;
    if (this.stopping.signal.aborted) this.stopping = new AbortController();
    this.wakeAt(this.now().getTime());
  }

  async stop(): Promise<void> {
    this.running = false;
    this.stopping.abort(new CutShort());
    clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Number.POSITIVE_INFINITY;
    await this.settled();
  }

  /**
   * Resolves once the work under way (a look and its claims, steps firing, which a look does not
   * wait for, clocks starting, requests ending) is done, and what it set off too. stop() waits for
   * it; so do tests, for the steps one poll() claimed.
   */
  async settled(): Promise<void> {
    while (this.work.size > 0) await Promise.allSettled([...this.work]);
  }

  /** Looks at the schedule at `atMs` (by `now`) at the latest; an earlier wake already armed stands. */
  private wakeAt(atMs: number): void {
    if (!this.running) return;
    if (this.polling) {
      this.wantedAt = Math.min(this.wantedAt, atMs);
      return;
    }
    if (this.timer && this.timerAt <= atMs) return;
    clearTimeout(this.timer);
    this.timerAt = atMs;
    this.timer = setTimeout(
      () => {
        this.timer = undefined;
        this.timerAt = Number.POSITIVE_INFINITY;
        void this.poll();
      },
      Math.max(0, atMs - this.now().getTime()),
    );
    this.timer.unref();
  }

  /**
   * RecordKeeper follower: a posted card starts its clock; a final record, or one nobody can
   * decide any more (escalationOver), cancels the rest.
   */
  follow(record: ApprovalRecord): void {
    const ladder = this.options.ladderOf(record.route);
    if (escalationOver(record)) {
      if (record.escalation || ladder.length > 0) this.track(this.finish(record, ladder));
      return;
    }
    if (ladder.length === 0 || !record.slack.ts || record.escalation || this.starting.has(record.approvalId))
      return;
    this.starting.add(record.approvalId);
    this.track(this.begin(record, ladder).finally(() => this.starting.delete(record.approvalId)));
  }

  /**
   * One look at the schedule: claims what is due and sets it firing (waiting for the claims, not
   * for the steps to be done), then (once started) sleeps until the next step falls due or
   * `idlePollMs` has passed. Exposed for tests. Tracked as work, so that stop() waits for the
   * claims a look has in flight: one landing after stop() returned would be this process's to
   * fire or give back once it said it was done, with its Redis connection closing under it.
   */
  async poll(): Promise<void> {
    if (this.polling) return;
    this.polling = true;
    const looking = this.lookOnce();
    this.track(looking);
    await looking;
  }

  private async lookOnce(): Promise<void> {
    const idleUntil = this.now().getTime() + (this.options.idlePollMs ?? 1_000);
    let nextMs = idleUntil;
    try {
      const nowMs = this.now().getTime();
      const look = await this.options.schedule.look(nowMs);
      await Promise.all(look.due.map((step) => this.take(step)));
      // More due than the look took: looked at again at once, but only when this one had steps to
      // take off the head (each is claimed, dropped or put off); entries it cannot read (another
      // version's) would be found again, the very same.
      if (look.nextMs !== undefined && (look.nextMs > nowMs || look.due.length > 0))
        nextMs = Math.min(nextMs, look.nextMs);
    } catch (err) {
      this.options.logger.warn({ err }, 'escalation poll failed');
    } finally {
      this.polling = false;
    }
    const wanted = this.wantedAt;
    this.wantedAt = Number.POSITIVE_INFINITY;
    this.wakeAt(Math.min(nextMs, wanted));
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
    // This process fires the request's steps on time itself; another looks within idlePollMs.
    this.wakeAt(started.startMs + Math.min(...ladder.map((step) => step.afterMs)));
    await this.options.keeper.mutateAndSync(
      record.approvalId,
      escalationStarted({
        startedAt: new Date(started.startMs).toISOString(),
        origin: started.origin,
        fired: started.fired,
      }),
    );
  }

  private async finish(record: ApprovalRecord, ladder: readonly EscalationStep[]): Promise<void> {
    const steps = ladder.length;
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
    await this.timedOut(record, ladder);
    const unresolved = await this.options.schedule.endPaged(
      lineage,
      { approvalId, dedupKey: record.escalation.origin },
      this.resolveLeaseUntil(),
    );
    if (unresolved) await this.resolveAll(unresolved);
  }

  /** When a lease on an ended request's pages runs out: later than any resolve with its retries. */
  private resolveLeaseUntil(): number {
    return this.now().getTime() + RESOLVE_LEASE_MS;
  }

  /**
   * Resolves each page an ended request left (each service the ladder paged has an incident of its
   * own). A page whose resolve settled is not sent again; one cut short by stop() is handed on,
   * due at once, for another process or the next start; one whose routing key this config lacks
   * is left for another replica, due when a lease taken now runs out. Until then the lease stands:
   * should this process die, whoever claims it when it runs out resolves what is left.
   */
  private async resolveAll(unresolved: Unresolved): Promise<void> {
    const { schedule } = this.options;
    const outcomes = await Promise.all(
      unresolved.services.map((service) => this.steps.resolveLeft(unresolved, service, this.stopping.signal)),
    );
    if (outcomes.every((outcome) => outcome === 'settled')) {
      await schedule.resolved(unresolved);
      return;
    }
    // Only what is still to send is left for the next: a process dying before this sends all
    // again, which PagerDuty takes as one resolve.
    await schedule.resolvedPages(
      unresolved.lineage,
      unresolved.services.filter((_, i) => outcomes[i] === 'settled'),
    );
    if (!outcomes.includes('cut')) {
      // Not at once: this replica, lacking the key, would take it straight back, again and again.
      await schedule.leaseResolve(unresolved.lineage, unresolved.approvalId, this.resolveLeaseUntil());
      return;
    }
    await schedule.leaseResolve(unresolved.lineage, unresolved.approvalId, this.now().getTime());
    this.options.logger.warn(
      { approvalId: unresolved.approvalId, dedupKey: unresolved.dedupKey },
      'PagerDuty resolve cut short by the stop; put back for another process',
    );
  }

  /** A due resolve: an ended request's pages whose resolver stopped, or died and let its lease run out. */
  private async takeResolve(due: DueStep): Promise<void> {
    if (this.stopping.signal.aborted) return;
    const unresolved = await this.options.schedule.takeResolve(
      due,
      this.now().getTime(),
      this.resolveLeaseUntil(),
    );
    // Sent beside the loop, as a step is fired: a look waits for no resolve and its retries.
    if (unresolved) this.track(this.resolveAll(unresolved));
  }

  /**
   * An approval the timeout decided shows the step fired (the card says "Timed out after …") even
   * when the process that fired it did not hear so: the replica that owns the host carried the
   * decision out after it stopped waiting, and it put the step back to try again. Only the card.
   * A step still marked fired is the claimer's to write, as it does once it hears the outcome.
   */
  private async timedOut(record: ApprovalRecord, ladder: readonly EscalationStep[]): Promise<void> {
    const escalation = record.escalation;
    if (!escalation || record.resolution?.via !== 'timeout') return;
    const index = ladder.findIndex((step) => step.action === 'timeout');
    const step = ladder[index];
    if (!step || escalation.fired.some((f) => f.step === index)) return;
    if (await this.options.schedule.marked(lineageOf(record), index)) return;
    const fired: FiredStep = {
      step: index,
      action: 'timeout',
      afterMs: step.afterMs,
      at: this.now().toISOString(),
    };
    await this.options.keeper.mutateAndSync(
      record.approvalId,
      escalationFired(fired, { startedAt: escalation.startedAt, origin: escalation.origin }),
    );
  }

  /** Deals with one due step: claims and fires it, or takes it off the head of the schedule. */
  private async take(due: DueStep): Promise<void> {
    if (due.step === RESOLVE_STEP) return this.takeResolve(due);
    const seen = await this.options.store.get(due.approvalId);
    if (!seen) {
      await this.options.schedule.drop(due);
      return;
    }
    // A step of an approval that is over is dropped, not claimed: a claim marks the step fired for
    // the whole request, and a superseded approval's successor must still fire it.
    if (escalationOver(seen)) {
      await this.options.schedule.drop(due);
      return;
    }
    // Stopping: a look under way claims nothing more, and leaves what is due to the others.
    if (this.stopping.signal.aborted) return;
    const step = this.options.ladderOf(seen.route)[due.step];
    if (!step) {
      await this.putOff(due);
      return;
    }
    const firing: FiredStep = {
      step: due.step,
      action: step.action,
      afterMs: step.afterMs,
      at: this.now().toISOString(),
    };
    await this.fireSlot();
    // Stopping while this waited for a slot: it claims nothing more.
    if (this.stopping.signal.aborted) {
      this.freeFireSlot();
      return;
    }
    let claimed = false;
    try {
      claimed = await this.options.schedule.claim(due, firing);
    } finally {
      if (!claimed) this.freeFireSlot();
    }
    if (!claimed) return;
    // Stopping while the claim was on its way: the step is given back rather than fired. Fired
    // now, it would mostly be cut short at once, and a timeout (never cut short) would decide in
    // a process that is shutting down; given back, another process fires it, once, as any claim.
    if (this.stopping.signal.aborted) {
      this.freeFireSlot();
      await this.putBack(
        due,
        this.options.logger.child({ approvalId: due.approvalId, step: due.step, action: step.action }),
      );
      return;
    }
    // Not awaited: the look waits for its claims only, so that a slow step (a page while
    // PagerDuty asks to wait, Slack's retries) holds up no step due after it. stop() waits for it.
    this.track(
      this.fire(due, step)
        .catch((err: unknown) => {
          this.count('internal');
          this.options.logger.error(
            { err, approvalId: due.approvalId, step: due.step },
            'escalation step failed',
          );
        })
        .finally(() => this.freeFireSlot()),
    );
  }

  /** Waits until fewer than FIRES_AT_ONCE steps are firing, and counts one more. */
  private async fireSlot(): Promise<void> {
    while (this.firing >= FIRES_AT_ONCE)
      await new Promise<void>((resolve) => this.fireSlotWaiters.push(resolve));
    this.firing += 1;
  }

  private freeFireSlot(): void {
    this.firing -= 1;
    this.fireSlotWaiters.shift()?.();
  }

  /**
   * A step missing from this process's ladder for its route (another route set, a replica not yet
   * restarted with the new file, a ladder a restart shortened or a route it removed): left for a
   * process whose file has it, but due a while later, so that it does not sit at the head of the
   * schedule, where every look would find it again and the steps behind it would wait. A step no
   * file has is looked at once every POSTPONE_MS until its approval ends and cancels it.
   */
  private async putOff(due: DueStep): Promise<void> {
    await this.options.schedule.postpone(due, this.now().getTime() + POSTPONE_MS);
  }

  /**
   * Everyone the step would reach is away with nobody standing in, or (a DM) may not decide the
   * approval (NobodyMaySee, `refused`): the next step is made due now
   * rather than at its time, so the escalation goes on instead of reaching nobody. A timeout is
   * never brought forward: it decides, and an absence must not cut an approval's time short.
   */
  private async fallThrough(record: ApprovalRecord, due: DueStep, refused: boolean): Promise<void> {
    const next = this.options.ladderOf(record.route)[due.step + 1];
    if (!next || next.action === 'timeout') return;
    this.options.logger.info(
      { approvalId: due.approvalId, step: due.step, next: due.step + 1 },
      refused
        ? 'nobody this step would reach may see the approval; the next step falls due now'
        : 'everyone this step would reach is away; the next step falls due now',
    );
    await this.options.schedule.hasten(due.approvalId, due.step + 1, due.lineage, this.now().getTime());
    this.wakeAt(this.now().getTime());
  }

  /**
   * Puts a timeout that could not decide back in the schedule, a little later, while its approval
   * is open: it is tried again until it decides or the approval ends otherwise, never marked
   * fired (nor failed) meanwhile. The wait doubles with each try, so a host that keeps refusing
   * is asked about once a minute. `over` when the approval is over (or gone): decided otherwise,
   * or by this very timeout as the replica that owns the host carried it out. `lost` when its
   * request ended: the step is then marked as it went, as any other.
   */
  private async timeoutAgain(
    due: DueStep,
    err: TimeoutNotYet,
    log: Logger,
  ): Promise<'again' | 'over' | 'lost'> {
    const current = await this.options.store.get(due.approvalId);
    if (!current || escalationOver(current)) return 'over';
    const baseMs = this.options.timeoutRetryMs ?? 5_000;
    const nowMs = this.now().getTime();
    let waitMs = baseMs;
    const times = await this.options.schedule.retry(due, (times) => {
      waitMs = Math.min(baseMs * 2 ** Math.min(times - 1, 16), TIMEOUT_RETRY_MAX_MS);
      return nowMs + waitMs;
    });
    if (times === 0) return 'lost';
    log.warn(
      { why: err.why, ...outcomeOf(err), retry: times, inMs: waitMs },
      'escalation timeout could not decide; trying again',
    );
    this.wakeAt(nowMs + waitMs);
    return 'again';
  }

  /**
   * Puts a step cut short by stop() back in the schedule, due now and no longer marked fired, so
   * that another process claims it (within its idle look) or the next start does. Nothing is
   * written to the card: the step has not happened yet.
   */
  private async putBack(due: DueStep, log: Logger): Promise<void> {
    const times = await this.options.schedule.retry(due, () => this.now().getTime());
    if (times === 0) return;
    log.warn('escalation step cut short by the stop; put back for another process');
  }

  private count(kind: EscalationFailureKind): void {
    this.failures[kind] = (this.failures[kind] ?? 0) + 1;
  }

  /**
   * Gives up a step claimed as its approval ended, so that the approval carrying the request on (a
   * superseded one's successor) fires it: it was done for neither, and the claim's fired mark
   * would otherwise make the successor pass it by as done.
   */
  private async release(due: DueStep, claimed: EscalationStep): Promise<void> {
    const back = await this.options.schedule.release(due, claimed.afterMs);
    if (back === 0) return;
    this.options.logger.info(
      { approvalId: due.approvalId, step: due.step, successors: back },
      'escalation step claimed as its approval ended; put back for the approval that carries the request on',
    );
    this.wakeAt(this.now().getTime());
  }

  /** `claimed`: the step as the look before the claim found it in the file. */
  private async fire(due: DueStep, claimed: EscalationStep): Promise<void> {
    const { approvalId } = due;
    // Read after the claim: an approval resolved (or rerouted) meanwhile, or now, fires nothing.
    const record = await this.options.store.get(approvalId);
    if (!record || escalationOver(record)) {
      await this.release(due, claimed);
      return;
    }
    if (!record.slack.ts) return;
    const step = this.options.ladderOf(record.route)[due.step];
    if (!step) return;
    const startMs = record.escalation ? Date.parse(record.escalation.startedAt) : Date.parse(record.openedAt);
    const waitedMs = this.now().getTime() - startMs;
    const log = this.options.logger.child({ approvalId, step: due.step, action: step.action });
    let who: string | undefined;
    let action = step.action;
    let failed = false;
    try {
      const done = await this.steps.act(record, step, waitedMs, this.stopping.signal);
      who = done.who;
      action = done.as ?? action;
      log.info({ who, ...(done.as ? { as: done.as } : {}) }, 'escalation step fired');
    } catch (err) {
      if (err instanceof CutShort) {
        await this.putBack(due, log);
        return;
      }
      if (err instanceof TimeoutNotYet) {
        const next = await this.timeoutAgain(due, err, log);
        if (next === 'again') return;
        if (next === 'over') {
          // Nothing failed: a timeout has nothing left to do once the approval is over. Given up
          // like any step claimed as its approval ended, for a superseded one's successor; a
          // card the timeout decided says so (finish()).
          log.info(
            { why: err.why, ...outcomeOf(err) },
            'escalation timeout not carried out: the approval is over',
          );
          await this.release(due, step);
          return;
        }
      }
      failed = true;
      this.count(step.action);
      log.error(
        {
          err: err instanceof Error ? err.message : String(err),
          ...(err instanceof TimeoutNotYet ? outcomeOf(err) : {}),
        },
        'escalation step could not reach anyone',
      );
      if (err instanceof EveryoneAway || err instanceof NobodyMaySee)
        await this.fallThrough(record, due, err instanceof NobodyMaySee);
    }
    this.options.metrics?.escalationStep(action);
    const fired: FiredStep = {
      step: due.step,
      action,
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
}

/** A timeout's decide that came to nothing, for its log line: what the Decider said. */
function outcomeOf(err: TimeoutNotYet): { outcome?: string; errorKind?: string } {
  if (!err.outcome) return {};
  return {
    outcome: err.outcome.kind,
    ...(err.outcome.errorKind ? { errorKind: err.outcome.errorKind } : {}),
  };
}
