import { LRUCache } from 'lru-cache';
import type { Logger } from 'pino';
import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';
import type { WarnLog } from '../util/logBudget.js';
import { approvalLogFields, type EventOrigin } from './approvalEvents.js';
import { type BackoffPolicy, nominalDelay } from './backoff.js';
import { HostGoneError, MspError } from './errors.js';
import type { FollowedSession, HostEvent, SessionMemory } from './events.js';
import { preview } from './jsonRpc.js';
import { HostId, isKeepableCursor, Session, SessionStatusChangedParams } from './protocol.js';
import {
  listAllSessions,
  type PendingListing,
  parsePendingListing,
  type Requester,
} from './sessionListing.js';
import { resumeSession } from './sessionResume.js';

// Follows the sessions of one host incarnation (docs/msp-approvals.md §3, §5.6, §11): pull what
// is pending with approval/listPending, and session/resume the sessions whose approvals we must
// be able to decide (resume subscribes us; decide needs the session loaded on this host).

export type { Requester };

export interface SessionFollowerOptions {
  request: Requester;
  origin: EventOrigin;
  /** Ephemeral hosts have no session/resume (§11). */
  durable: boolean;
  logger: Logger;
  emit: (event: HostEvent) => void;
  /**
   * Sessions followed by this or an earlier incarnation of the host, with the last view cursor
   * of each; the supervisor keeps it across respawns so that a new incarnation resumes them
   * again (§11), and `memory` keeps it across restarts of the bot.
   */
  tracked: Map<string, { viewCursor?: string }>;
  memory?: SessionMemory;
  newCommandId?: () => string;
  /**
   * Where lines about session frames and listing entries that do not parse go: as many as the
   * host sends, so the host's connection keeps them to a few a minute (Incarnation.frameWarnings).
   * The logger when not given.
   */
  frameWarnings?: WarnLog;
  /** Sessions kept in each of its memories (MAX_FOLLOWED_SESSIONS); for tests. */
  maxSessions?: number;
}

const SessionNotification = z.looseObject({ session: Session });
const SessionClosedParams = z.looseObject({ sessionId: HostId, reason: z.string().optional() });
const ViewGapParams = z.looseObject({ sessionId: HostId });

/**
 * Followed sessions kept per host (`tracked`, and `memory` across restarts of the bot), the ones
 * resumed longest ago forgotten first. Each one is resumed again at every respawn and every
 * start, and the host chooses how many it announces: unbounded, one host could fill the bot's
 * memory and Redis for good. Thousands is a busy host; a forgotten session is still followed
 * again when the host lists it or says it needs a decision. The relay keeps as many of a host's
 * sessions (relay/hostEvents/knownSessions.ts takes this number), and so does each of a
 * follower's memories of sessions (known, resumed, flaggedPending, heldElsewhere, refreshRetries).
 */
export const MAX_FOLLOWED_SESSIONS = 10_000;

/**
 * How often sessions held by another host are tried again: 5 s, doubling to 5 min. No frame need
 * tell us that the other host let go (our host sends statusChanged and closed only for sessions
 * loaded on it), so a timer must. No jitter: each bot asks only its own host.
 */
const HELD_RETRY: BackoffPolicy = { initialMs: 5_000, maxMs: 300_000 };
/**
 * How a session read again that the host could not list (overloaded, a timeout) is read again:
 * 1 s, doubling to a minute, until a listing answers. A card may wait on that reading for its
 * buttons (the host said its stage moved), and no frame need come to ask for it again.
 */
const REFRESH_RETRY: BackoffPolicy = { initialMs: 1_000, maxMs: 60_000 };

/** A listing, and when (performance.now()) its approval/listPending was sent. */
type DatedListing = PendingListing & { listRequestedAt: number };

function isLoadedHere(status: string | undefined): boolean {
  return status === 'idle' || status === 'running';
}

export class SessionFollower {
  private readonly request: Requester;
  private readonly origin: EventOrigin;
  private readonly logger: Logger;
  private readonly emit: (event: HostEvent) => void;
  private readonly tracked: Map<string, { viewCursor?: string }>;
  private readonly memory: SessionMemory | undefined;
  private readonly newCommandId: () => string;
  private readonly frameWarnings: WarnLog;
  private readonly maxSessions: number;
  private resumeSupported: boolean;
  private disposed = false;

  // Every memory of sessions below, which the host fills with the session ids it names, keeps at
  // most maxSessions, the session it touched longest ago forgotten first (an LRUCache: set()
  // makes a session the newest, has() and peek() leave the order alone): a host naming millions
  // of sessions must not grow the bot until it dies. Each forgets on its own, so that a flood
  // through one does not empty the others; what each does with a session it forgot is said with
  // it, and none ignores what the host says of that session next. An LRUCache sets aside its
  // slots when made: about 220 KB each at 10,000, measured, so 1.1 MB per host process followed.

  /**
   * Sessions we have listed (or are listing) in this incarnation. One forgotten is followed
   * again when a list row shows it, as one never seen is.
   */
  private readonly known: LRUCache<string, true>;
  /**
   * Sessions this connection is subscribed to. One forgotten is followed again (listed, and
   * resumed) when the host says it needs a decision, or a full reading finds it (syncAll).
   */
  private readonly resumed: LRUCache<string, true>;
  /**
   * Whether the host last said the session has an approval pending (the approvalPending flag of
   * a statusChanged, or a listing with approvals in it): when a statusChanged then comes without
   * the flag, the session is read again once. A session without an entry (never heard of here,
   * or forgotten) may have been flagged, so it is read again too.
   */
  private readonly flaggedPending: LRUCache<string, boolean>;
  /**
   * Sessions another client holds (session/resume said sessionInUse), tried again on a timer.
   * One forgotten is tried again when the host shows it (a list row, a statusChanged).
   */
  private readonly heldElsewhere: LRUCache<string, true>;
  /** One follow at a time per session, in order. */
  private readonly chains = new Map<string, Promise<void>>();
  /**
   * Work asked for a session that has not started yet, by kind and session (chainOnce): one
   * waiting is enough, however many frames asked for it.
   */
  private readonly queued = new Map<string, Promise<void>>();
  /**
   * view/gap frames per session since its last reading again began: that reading logs them as
   * one line, so that a flood of gaps, already one read, is one info line too.
   */
  private readonly gaps = new Map<string, number>();
  /** The one timer that retries every held session, and how many times it has fired. */
  private heldTimer: ReturnType<typeof setTimeout> | undefined;
  private heldAttempt = 0;
  /**
   * Sessions whose reading again failed: the next try's timer, and how many failed in a row. One
   * forgotten is read again when a frame asks for it.
   */
  private readonly refreshRetries: LRUCache<
    string,
    { attempt: number; timer: ReturnType<typeof setTimeout> }
  >;

  constructor(options: SessionFollowerOptions) {
    this.request = options.request;
    this.origin = options.origin;
    this.logger = options.logger;
    this.emit = options.emit;
    this.tracked = options.tracked;
    this.memory = options.memory;
    this.newCommandId = options.newCommandId ?? uuidv7;
    this.resumeSupported = options.durable;
    this.frameWarnings = options.frameWarnings ?? options.logger;
    this.maxSessions = options.maxSessions ?? MAX_FOLLOWED_SESSIONS;
    const max = this.maxSessions;
    this.known = new LRUCache({ max });
    this.resumed = new LRUCache({ max });
    this.flaggedPending = new LRUCache({ max });
    // lru-cache disposes of an entry deleted or set anew as well as of one evicted: only an
    // eviction forgets. A session let go of, or read at last, is still listed and its flag known.
    // No longer tried on the timer: forgotten as listed too, so that a list row follows it again.
    this.heldElsewhere = new LRUCache({
      max,
      disposeAfter: (_held, sessionId, reason) => {
        if (reason === 'evict') this.known.delete(sessionId);
      },
    });
    // No longer read again on a timer: its flag is forgotten too, so that the next statusChanged
    // without it reads the session again.
    this.refreshRetries = new LRUCache({
      max,
      disposeAfter: (retry, sessionId, reason) => {
        if (reason !== 'evict') return;
        clearTimeout(retry.timer);
        this.flaggedPending.delete(sessionId);
      },
    });
  }

  /** The incarnation is gone: stop starting new work. */
  dispose(): void {
    this.disposed = true;
    this.stopHeldRetry();
    for (const sessionId of [...this.refreshRetries.rkeys()]) this.stopRefreshRetry(sessionId);
  }

  isResumed(sessionId: string): boolean {
    return this.resumed.has(sessionId);
  }

  /** How many sessions each of its memories holds now; for tests. */
  sessionCounts(): Record<string, number> {
    return {
      known: this.known.size,
      resumed: this.resumed.size,
      flaggedPending: this.flaggedPending.size,
      heldElsewhere: this.heldElsewhere.size,
      refreshRetries: this.refreshRetries.size,
    };
  }

  /**
   * Lists every session and follows each one (start-up, every respawn, and after events were
   * lost). Sessions followed before that the host no longer lists are asked about too: their
   * cards must not stay open for ever.
   */
  async syncAll(): Promise<void> {
    await this.recall();
    const listed = await listAllSessions(this.request, this.logger, this.frameWarnings);
    for (const session of listed) this.seen(session);
    for (const session of listed) {
      if (this.disposed) return;
      await this.follow(session.sessionId, isLoadedHere(session.status));
    }
    const listedIds = new Set(listed.map((session) => session.sessionId));
    for (const sessionId of [...this.tracked.keys()]) {
      if (this.disposed) return;
      if (!listedIds.has(sessionId)) await this.follow(sessionId, false);
    }
  }

  /**
   * Reads every session's pending approvals again, followed or not (after events were lost):
   * what is pending gets its card, what is not has its card closed.
   */
  async refreshAll(): Promise<void> {
    await this.syncAll();
    // Resumed longest ago first (rkeys: an LRUCache's keys() starts with the newest).
    for (const sessionId of [...this.resumed.rkeys()]) {
      if (this.disposed) return;
      await this.refresh(sessionId);
    }
  }

  /** Reads a session's pending approvals again (listPending), even when it is followed already. */
  refresh(sessionId: string): Promise<void> {
    return this.chainOnce('refresh', sessionId, async () => {
      const gaps = this.gaps.get(sessionId);
      this.gaps.delete(sessionId);
      if (this.disposed) return;
      const log = this.logger.child({ sessionId });
      if (gaps !== undefined) log.info({ gaps }, 'view gap; reading the session again');
      try {
        if (await this.reconcile(sessionId, log)) {
          this.stopRefreshRetry(sessionId);
          return;
        }
      } catch (error) {
        // A host gone is read again in full when it is back (syncAll); anything else, here.
        if (error instanceof HostGoneError) return;
        log.warn({ err: error }, 'reading the session again failed');
      }
      this.retryRefresh(sessionId);
    });
  }

  /** Reads the session again after REFRESH_RETRY's next wait: one timer per session. */
  private retryRefresh(sessionId: string): void {
    if (this.disposed) return;
    const attempt = this.refreshRetries.peek(sessionId)?.attempt ?? 0;
    this.stopRefreshRetry(sessionId);
    const delay = nominalDelay(attempt, REFRESH_RETRY);
    const timer = setTimeout(() => void this.refresh(sessionId), delay);
    // A retry is no reason to keep the process alive.
    timer.unref?.();
    this.refreshRetries.set(sessionId, { attempt: attempt + 1, timer });
  }

  private stopRefreshRetry(sessionId: string): void {
    const retry = this.refreshRetries.peek(sessionId);
    if (!retry) return;
    clearTimeout(retry.timer);
    this.refreshRetries.delete(sessionId);
  }

  /**
   * Adds the sessions remembered across restarts of the bot to those to follow: as many as would
   * be kept (MAX_FOLLOWED_SESSIONS), with ids a frame could carry and cursors small enough to keep
   * (what an earlier version stored may be neither). The rest is forgotten.
   */
  private async recall(): Promise<void> {
    if (!this.memory) return;
    let remembered: FollowedSession[];
    try {
      remembered = await this.memory.recall(this.origin.hostId);
    } catch (error) {
      this.logger.warn(
        { err: error },
        'could not recall the sessions followed before; following listed ones',
      );
      return;
    }
    let dropped = 0;
    for (const { sessionId, viewCursor } of remembered) {
      if (this.tracked.has(sessionId)) continue;
      if (!HostId.safeParse(sessionId).success || this.tracked.size >= this.maxSessions) {
        dropped += 1;
        this.forget(sessionId);
        continue;
      }
      this.tracked.set(sessionId, viewCursor && isKeepableCursor(viewCursor) ? { viewCursor } : {});
    }
    if (dropped > 0) {
      this.logger.warn(
        { dropped, maxSessions: this.maxSessions },
        'forgot remembered sessions past the bound of followed sessions',
      );
    }
  }

  /** Handles the session/* broadcasts; returns false for methods it does not know. */
  handleNotification(method: string, params: unknown): boolean {
    switch (method) {
      case 'session/started': {
        const parsed = SessionNotification.safeParse(params);
        if (!parsed.success) return this.skip(method, params);
        this.seen(parsed.data.session);
        void this.follow(parsed.data.session.sessionId, true);
        return true;
      }
      case 'session/listChanged': {
        const parsed = SessionNotification.safeParse(params);
        if (!parsed.success) return this.skip(method, params);
        const { sessionId, status } = parsed.data.session;
        this.seen(parsed.data.session);
        if (!this.known.has(sessionId)) void this.follow(sessionId, isLoadedHere(status));
        // A held session's row changed: the other host may have let go. Its rows say notLoaded
        // either way, and our host sends nothing else about a session it has not loaded.
        else if (this.heldElsewhere.has(sessionId)) void this.retryHeld(sessionId, isLoadedHere(status));
        return true;
      }
      case 'session/statusChanged': {
        const parsed = SessionStatusChangedParams.safeParse(params);
        if (!parsed.success) return this.skip(method, params);
        const { sessionId, attention } = parsed.data;
        const pendingNow = attention?.includes('approvalPending') === true;
        // Not known here (forgotten past the bound, or never listed): it may have been flagged.
        const wasPending = this.flaggedPending.peek(sessionId) ?? true;
        this.flaggedPending.set(sessionId, pendingNow);
        // Subscribed sessions get their approvals pushed; only unfollowed ones need a pull. A
        // session another client held may have been let go: try to take it again.
        if (this.heldElsewhere.has(sessionId) || (pendingNow && !this.resumed.has(sessionId)))
          void this.follow(sessionId, true);
        // `attention` is present only when a flag is set: without approvalPending nothing is
        // pending there any more. A close we never heard of (its frame dropped, or sent before
        // our subscription) would leave a card open: read the session again. Once per loss of
        // the flag, coalesced with the session's other reads (refresh), so it costs at most one
        // listing per approval the session stops waiting on.
        else if (wasPending && !pendingNow) void this.refresh(sessionId);
        return true;
      }
      case 'session/closed': {
        const parsed = SessionClosedParams.safeParse(params);
        if (!parsed.success) return this.skip(method, params);
        const { sessionId, reason } = parsed.data;
        // Unloaded: a later session/started or statusChanged follows it again.
        this.resumed.delete(sessionId);
        this.known.delete(sessionId);
        this.flaggedPending.delete(sessionId);
        // The host's words, unbounded by the schema: masked and cut as a frame is in the log.
        this.logger.debug(
          { sessionId, ...(reason === undefined ? {} : { reason: preview(reason) }) },
          'session closed',
        );
        if (this.heldElsewhere.has(sessionId)) void this.follow(sessionId, false);
        return true;
      }
      case 'view/gap': {
        const parsed = ViewGapParams.safeParse(params);
        if (!parsed.success) return this.skip(method, params);
        // Events of the session were lost (§11 Gaps): what is pending is read again instead.
        // Logged at info once per reading (refresh), however many gaps it answers.
        const { sessionId } = parsed.data;
        this.logger.debug({ sessionId }, 'view gap');
        this.gaps.set(sessionId, (this.gaps.get(sessionId) ?? 0) + 1);
        void this.refresh(sessionId);
        return true;
      }
      default:
        return false;
    }
  }

  /**
   * session/resume for a decide the host answered sessionNotLoaded, throwing the host's error;
   * then the session is read again, as followNow does after a resume of its own. The resume may
   * recover the session: the host closes what was pending and asks it again under new ids before
   * the subscription starts, so no approval/resolved tells us of the old ones, and the start-up
   * sync skips a session resumed already. Not awaited: the decide's replay need not wait for it.
   */
  async resume(sessionId: string): Promise<void> {
    await this.subscribe(sessionId);
    void this.refresh(sessionId);
  }

  /**
   * session/resume, throwing the host's error. Resumes from the last view cursor where there is
   * one, so the host serves only what came after it.
   */
  private async subscribe(sessionId: string): Promise<void> {
    const viewCursor = await resumeSession(
      this.request,
      this.newCommandId,
      this.logger,
      sessionId,
      this.tracked.get(sessionId)?.viewCursor,
    );
    this.resumed.set(sessionId, true);
    this.releaseHeld(sessionId);
    this.track({ sessionId, ...(viewCursor ? { viewCursor } : {}) });
  }

  /**
   * Keeps a resumed session (and its cursor) to resume again after a respawn or a restart, as the
   * newest one; the oldest beyond maxSessions is forgotten.
   */
  private track(session: FollowedSession): void {
    const { sessionId, viewCursor } = session;
    // Deleted first, so that the Map's order (oldest first) is the order of last resume.
    this.tracked.delete(sessionId);
    this.tracked.set(sessionId, viewCursor ? { viewCursor } : {});
    // Not awaited: whoever resumed reports the session's listing right after the host's answer.
    void this.memory?.remember(this.origin.hostId, session).catch((error: unknown) => {
      this.logger.warn({ err: error, sessionId }, 'could not remember the followed session');
    });
    // A Map trimmed here, not an LRUCache: the supervisor owns it across the host's incarnations
    // (and clears it), while what an eviction does (forget in `memory`) is this follower's.
    for (const oldest of this.tracked.keys()) {
      if (this.tracked.size <= this.maxSessions) break;
      this.tracked.delete(oldest);
      this.forget(oldest);
    }
  }

  /** Nothing of the session is remembered across restarts any more. */
  private forget(sessionId: string): void {
    void this.memory?.forget(this.origin.hostId, sessionId).catch(() => undefined);
  }

  /** Tells the relay what the session is called, for the cards. */
  private seen(session: Session): void {
    const title = session.title || session.name || undefined;
    const label = title ?? (session.firstUserPrompt || undefined);
    this.emit({
      type: 'sessionSeen',
      ...this.origin,
      sessionId: session.sessionId,
      ...(label ? { label } : {}),
      ...(title ? { title } : {}),
      ...(session.workspaceRoot ? { workspaceRoot: session.workspaceRoot } : {}),
    });
  }

  private skip(method: string, params: unknown): true {
    this.frameWarnings.warn(
      { method, ...approvalLogFields(params) },
      'skipping session notification that does not parse',
    );
    return true;
  }

  private follow(sessionId: string, loadedHere: boolean): Promise<void> {
    this.known.set(sessionId, true);
    this.expectListing(sessionId);
    const kind = loadedHere ? 'followLoaded' : 'follow';
    return this.chainOnce(kind, sessionId, () => this.followNow(sessionId, loadedHere));
  }

  /** Runs `task` after everything already chained for the session. */
  private chain(sessionId: string, task: () => Promise<void>): Promise<void> {
    const previous = this.chains.get(sessionId) ?? Promise.resolve();
    const next = previous.then(task);
    this.chains.set(sessionId, next);
    void next.then(() => {
      if (this.chains.get(sessionId) === next) this.chains.delete(sessionId);
    });
    return next;
  }

  /**
   * Chains `task` unless a task of the same kind for the session is already waiting its turn;
   * then that one is the answer. It has not started, so what it reads from the host is read
   * after this request too: a flood of frames (view/gap, statusChanged) costs one request to the
   * host, not one each. A request that comes while the task runs queues one more, so that
   * nothing the running one read too early is missed.
   */
  private chainOnce(kind: string, sessionId: string, task: () => Promise<void>): Promise<void> {
    const key = `${kind}:${sessionId}`;
    const waiting = this.queued.get(key);
    if (waiting) return waiting;
    const next = this.chain(sessionId, () => {
      this.queued.delete(key);
      return task();
    });
    this.queued.set(key, next);
    return next;
  }

  /** Never rejects: one session's trouble must not stop the others. */
  private async followNow(sessionId: string, loadedHere: boolean): Promise<void> {
    if (this.disposed || this.resumed.has(sessionId)) return;
    const log = this.logger.child({ sessionId });
    try {
      const listed = await this.listPending(sessionId, log);
      if (listed === undefined || listed === 'gone') return;
      // Resume only where a decision may be needed: resuming takes the session's writer lease.
      const wantResume = listed.ids.length > 0 || loadedHere;
      // Nothing to decide there: no card waits for its buttons, so stop trying to take it.
      if (!wantResume) this.releaseHeld(sessionId);
      if (!wantResume && this.tracked.has(sessionId)) {
        // Nothing pending and not loaded: no need to remember it (a new approval in it is
        // announced with session/statusChanged, which follows it again).
        this.tracked.delete(sessionId);
        this.forget(sessionId);
      }
      if (!wantResume || !this.resumeSupported || this.disposed) {
        this.report(sessionId, listed);
        return;
      }
      // The listing is reported once we know whether another client holds the session, so that
      // its cards never show buttons that cannot work: nothing of an unresumed session reaches
      // us meanwhile. A resume, though, may recover the session (closing old ids, re-asking
      // under new ones) before it answers, which makes that listing stale: list it again.
      if (await this.tryResume(sessionId, log)) await this.reconcile(sessionId, log);
      else this.report(sessionId, listed);
    } catch (error) {
      if (error instanceof HostGoneError) {
        log.debug('host went away while following the session');
        return;
      }
      log.warn({ err: error }, 'following the session failed');
    }
  }

  /**
   * approval/listPending, reported at once (approvalOpened for each entry, then
   * sessionReconciled) so that no frame handled later can slip between the snapshot and the
   * events built from it.
   */
  private async reconcile(sessionId: string, log: Logger): Promise<boolean> {
    const listed = await this.listPending(sessionId, log);
    if (listed === undefined) return false;
    if (listed !== 'gone') this.report(sessionId, listed);
    return true;
  }

  /**
   * What the host lists as pending in a session: the entries that parse, and the ids of all of
   * them. 'gone' for a session the host does not have (reported here as having nothing pending);
   * undefined when the host did not tell us.
   */
  private async listPending(sessionId: string, log: Logger): Promise<DatedListing | 'gone' | undefined> {
    // Taken before the request goes out: what the host asked before this, it lists if pending.
    const listRequestedAt = performance.now();
    let raw: unknown;
    try {
      raw = await this.request('approval/listPending', { sessionId });
    } catch (error) {
      if (error instanceof MspError && error.kind === 'sessionNotFound') {
        log.info('the host has no such session any more; closing its cards');
        this.releaseHeld(sessionId);
        this.tracked.delete(sessionId);
        this.forget(sessionId);
        this.emit({
          type: 'sessionReconciled',
          ...this.origin,
          sessionId,
          pendingApprovalIds: [],
          listRequestedAt,
        });
        return 'gone';
      }
      if (error instanceof MspError) {
        log.warn({ kind: error.kind, code: error.code }, 'approval/listPending failed');
        return undefined;
      }
      throw error;
    }
    // What does not parse is the host's to repeat: logged through frameWarnings.
    const listed = parsePendingListing(raw, {
      warn: (fields, msg) => this.frameWarnings.warn({ sessionId, ...fields }, msg),
    });
    return listed && { ...listed, listRequestedAt };
  }

  private report(sessionId: string, listed: DatedListing): void {
    const heldElsewhere = this.heldElsewhere.has(sessionId);
    this.flaggedPending.set(sessionId, listed.ids.length > 0);
    for (const params of listed.approvals) {
      this.logger.info(
        { approvalId: params.approvalId, sessionId: params.sessionId },
        'pending approval found',
      );
      this.emit({
        type: 'approvalOpened',
        ...this.origin,
        via: 'listPending',
        params,
        ...(heldElsewhere ? { heldElsewhere } : {}),
      });
    }
    this.emit({
      type: 'sessionReconciled',
      ...this.origin,
      sessionId,
      pendingApprovalIds: listed.ids,
      listRequestedAt: listed.listRequestedAt,
    });
  }

  /** Follows a held session again, unless a retry of it is already waiting its turn. */
  private retryHeld(sessionId: string, loadedHere: boolean): Promise<void> {
    this.known.set(sessionId, true);
    this.expectListing(sessionId);
    return this.chainOnce('retry', sessionId, () => this.followNow(sessionId, loadedHere));
  }

  /**
   * A listing of the session is on its way: until it says otherwise, nothing there is taken to
   * be pending, so a statusChanged meanwhile asks for no reading of its own.
   */
  private expectListing(sessionId: string): void {
    if (!this.flaggedPending.has(sessionId)) this.flaggedPending.set(sessionId, false);
  }

  private releaseHeld(sessionId: string): void {
    if (!this.heldElsewhere.delete(sessionId)) return;
    if (this.heldElsewhere.size === 0) this.stopHeldRetry();
  }

  /** Arms the retry timer unless it is armed already: one timer per follower, whatever the storm. */
  private scheduleHeldRetry(): void {
    if (this.heldTimer !== undefined || this.disposed || this.heldElsewhere.size === 0) return;
    const delay = nominalDelay(this.heldAttempt, HELD_RETRY);
    this.heldTimer = setTimeout(() => void this.retryAllHeld(), delay);
    // A retry is no reason to keep the process alive.
    this.heldTimer.unref?.();
  }

  private async retryAllHeld(): Promise<void> {
    this.heldTimer = undefined;
    this.heldAttempt += 1;
    await Promise.all([...this.heldElsewhere.rkeys()].map((sessionId) => this.retryHeld(sessionId, false)));
    // Armed again (with the next, longer delay) only once this round is done, so that rounds
    // never overlap; a session taken meanwhile left the set.
    this.scheduleHeldRetry();
  }

  private stopHeldRetry(): void {
    if (this.heldTimer !== undefined) clearTimeout(this.heldTimer);
    this.heldTimer = undefined;
    this.heldAttempt = 0;
  }

  /** Resolves with whether the session is now resumed here. */
  private async tryResume(sessionId: string, log: Logger): Promise<boolean> {
    try {
      await this.subscribe(sessionId);
      log.info('session resumed');
      return true;
    } catch (error) {
      if (!(error instanceof MspError)) throw error;
      if (error.kind === 'methodNotFound') {
        // Ephemeral hosts withhold resume; there is nothing to subscribe to.
        this.resumeSupported = false;
        log.info('host has no session/resume (ephemeral); not resuming sessions');
      } else if (error.kind === 'sessionInUse') {
        // Its cards lose their buttons until the other client lets go: a list row for it, a
        // statusChanged or session/closed (should our host load it), or the retry timer makes
        // us try again.
        if (!this.heldElsewhere.has(sessionId)) {
          log.warn(
            'session is held by another client; its approvals cannot be decided from here until it lets go',
          );
        }
        this.heldElsewhere.set(sessionId, true);
        this.scheduleHeldRetry();
        this.emit({ type: 'sessionHeldElsewhere', ...this.origin, sessionId });
      } else {
        log.warn({ kind: error.kind, code: error.code }, 'session/resume failed');
      }
      return false;
    }
  }
}
