import { isDeepStrictEqual } from 'node:util';
import type { Logger } from 'pino';
import type { AuditTrail } from '../../domain/audit.js';
import type { Grant } from '../../domain/grants/grant.js';
import { callerFor } from '../../domain/grants/match.js';
import type { Metrics } from '../../domain/metrics.js';
import type { ApprovalRecord, RiskMark } from '../../domain/record.js';
import { isTerminal } from '../../domain/record.js';
import type { RouteGrants } from '../../domain/route.js';
import type { ApprovalHost, HostEvent } from '../../msp/events.js';
import type { ApprovalRequestParams, ApprovalSubject } from '../../msp/protocol.js';
import type { RiskInput } from '../../routing/risks.js';
import { type ChosenRoute, FALLBACK_ROUTE_NAME, type RouteInput } from '../../routing/router.js';
import { type ApprovalStore, FOR_HOST, type Mutation } from '../../store/approvalStore.js';
import { Turns } from '../../util/turns.js';
import type { Decider } from '../deciding/decider.js';
import type { ClaimedAtCreate } from '../grants/grantAnswerer.js';
import type { RecordKeeper } from '../records/recordKeeper.js';
import {
  openRecord,
  type Reopening,
  type Rerouting,
  reopened,
  rerouted,
  resolved,
  riskMarked,
  heldElsewhere as sessionHeldElsewhere,
  updated,
} from '../records/recordMutations.js';
import { AskedApprovals } from './askedApprovals.js';
import { HeldEvents, type RedisAvailability } from './heldEvents.js';
import { fullTextFields } from './intake/takeFullText.js';
import { takeTool } from './intake/takeRequest.js';
import { KnownSessions } from './knownSessions.js';
import type { OpenApprovalCap } from './openApprovalCap.js';
import { OpenApprovals } from './openApprovals.js';
import { TakenIds } from './takenIds.js';

export interface HostEventHandlerOptions {
  keeper: RecordKeeper;
  store: ApprovalStore;
  /** Replays decisions a restart interrupted. */
  decider: Decider;
  host: (hostId: string) => ApprovalHost | undefined;
  logger: Logger;
  /** Which route, and so which channel, an approval's card goes to (see routing/). */
  routeFor: (input: RouteInput) => ChosenRoute & { quorum?: number };
  /**
   * Whether the route a record names is still in the file (or the fallback); without it, every
   * route is. A re-asked question is compared with its record's route only while it is: a route
   * gone from the file is decided by admins, or by the route that would place the record now.
   */
  knowsRoute?: (route: string | undefined) => boolean;
  /** The sandbox mode a host runs its agent in, stored on each of its approvals. */
  sandboxModeOf: (hostId: string) => string;
  /** A route's grants; without it, no approval waits for a grant. */
  grantsOf?: (route: string) => RouteGrants | undefined;
  /** The Slack user whose agent a host runs (a route's grants may follow them). */
  ownerOf?: (hostId: string) => string | undefined;
  /** Answers by remembered grant what it can (see GrantAnswerer). */
  grants?: GrantAnswering;
  /** The risk rules a request matches (routing/risks.ts); without it, none. */
  risksFor?: (input: RiskInput) => RiskMark[];
  /** Where what a risk rule changed about an approval is recorded. */
  audit?: AuditTrail;
  now?: () => Date;
  /** Without it, Redis is taken to be always there. */
  redis?: RedisAvailability;
  /** Host events held while Redis is away; past this they are dropped and re-read later. */
  maxBufferedEvents?: number;
  /**
   * Whether this process may act for the host now (it holds the host's lease); default always.
   * Events of a host it lost are dropped: the new owner's own host process reports them again.
   */
  mayAct?: (hostId: string) => boolean;
  /** Told of each grant lookup made for a request it created, and whether it found one. */
  metrics?: Pick<Metrics, 'grantLookup'>;
  /** How many approvals a host may have open (openApprovalCap.ts); without it, no cap. */
  cap?: OpenApprovalCap;
  /**
   * Says in `channel` that the host asked an approval whose id another host's approval has, so
   * that it gets no card (takenIds.ts); without it, only the log says so.
   */
  tellTakenId?: (hostId: string, approvalId: string, channel: string) => Promise<void>;
  /** Sessions remembered per host (knownSessions.ts); for tests. */
  maxSessionsPerHost?: number;
}

/** What the relay asks of the GrantAnswerer. */
export interface GrantAnswering {
  /** The live grant that answers the record's current stage, if any: one round trip. Never rejects. */
  find(record: ApprovalRecord): Promise<Grant | undefined>;
  /** The record about to be created deferred is answered by `grant` (no second lookup); undefined forgets it. */
  expect(approvalId: string, grant: Grant | undefined): void;
  /** Looks at a deferred record again: answers it by grant or shows its card. */
  consider(approvalId: string): void;
  /** Whether a grant answered a request like this one lately: look it up before creating it. */
  expectsGrant(record: ApprovalRecord): boolean;
  /** The record to create already claimed by the grant that answers it, if any. Never rejects. */
  claimAtCreate(fresh: ApprovalRecord): Promise<ClaimedAtCreate | undefined>;
  /** Whether the grant of a record created claimed still answers; read with its create. Never rejects. */
  readGrant(answer: ClaimedAtCreate): Promise<boolean>;
  /** Sends the decision of a record created claimed, unless `grantRead` says its grant no longer answers. */
  decideClaimed(answer: ClaimedAtCreate, grantRead?: Promise<boolean>): void;
  /** A record claimed at its create already existed: what was taken for it is given back. */
  dropClaimed(answer: ClaimedAtCreate): Promise<void>;
}

const DEFAULT_MAX_BUFFERED_EVENTS = 10_000;

/**
 * What happens to an approval when the host says something about it: every event becomes a
 * record change in the approval's own queue (RecordKeeper), and the card follows.
 */
export class HostEventHandler {
  private readonly now: () => Date;
  /**
   * What cards show and are routed on about each session, per host and bounded (knownSessions.ts).
   * Memory is enough: a restarted bot learns it again from session/list before it sees any
   * approval.
   */
  private readonly sessions: KnownSessions;
  /** Events held while Redis is away; none without `redis`. */
  private readonly held: HeldEvents | undefined;
  /** Reconciles a host's (or a session's) open approvals with what the host says is left. */
  private readonly sweep: OpenApprovals;
  /** When each approval was last asked: which ones a session's listing can close. */
  private readonly asked = new AskedApprovals();
  /** Per channel, in the order approvals came: see opened(). */
  private readonly turns = new Turns();
  /** Approvals asked under another host's approval's id, told in their channel; none without tellTakenId. */
  private readonly takenIds: TakenIds | undefined;

  constructor(private readonly options: HostEventHandlerOptions) {
    this.now = options.now ?? (() => new Date());
    this.sessions = new KnownSessions(options.maxSessionsPerHost);
    this.held = options.redis
      ? new HeldEvents({
          redis: options.redis,
          logger: options.logger,
          max: options.maxBufferedEvents ?? DEFAULT_MAX_BUFFERED_EVENTS,
          dispatch: (event) => this.dispatch(event),
          reread: (hostId) => options.host(hostId)?.refreshAll(),
        })
      : undefined;
    this.sweep = new OpenApprovals({ ...options, asked: this.asked });
    this.takenIds = options.tellTakenId
      ? new TakenIds({ tell: options.tellTakenId, logger: options.logger })
      : undefined;
  }

  handleHostEvent(event: HostEvent): void {
    if (event.type === 'sessionSeen') {
      this.sessions.seen(event.hostId, event.sessionId, event);
      return;
    }
    // Noted as it arrives, held or not: a listing requested later names it if it is still pending.
    if (event.type === 'approvalOpened') {
      this.asked.noteAsked(event.hostId, event.incarnation, event.params.approvalId);
    }
    if (this.held?.mustWait()) {
      this.held.hold(event);
      return;
    }
    this.dispatch(event);
  }

  /** Resolves when all queued and background work has settled. */
  idle(): Promise<void> {
    return this.options.keeper.idle();
  }

  /** Drops the cap's re-counts not started yet: Redis is about to go. */
  stop(): void {
    this.options.cap?.stop();
  }

  private dispatch(event: HostEvent): void {
    const { keeper } = this.options;
    if (this.options.mayAct && !this.options.mayAct(event.hostId)) {
      this.options.logger.warn(
        { hostId: event.hostId, event: event.type },
        'event of a host this replica no longer owns; dropped',
      );
      return;
    }
    switch (event.type) {
      case 'approvalOpened':
        keeper.enqueue(event.params.approvalId, () =>
          this.opened(event.params, event.hostId, event.incarnation, 'pending', {
            heldElsewhere: event.heldElsewhere === true,
            asked: event.via !== 'listPending',
          }),
        );
        return;
      case 'approvalReviewing':
        keeper.enqueue(event.params.approvalId, () =>
          this.opened(event.params, event.hostId, event.incarnation, 'reviewing', { asked: true }),
        );
        return;
      case 'approvalUpdated': {
        const { approvalId, subject, sessionId } = event.params;
        const { hostId } = event;
        // An update names no tool and no protected write: the record's, routed on the new subject.
        const placement = (record: ApprovalRecord): Placement => ({
          sessionId,
          tool: record.tool,
          route: this.routeOf({
            hostId,
            tool: record.tool,
            subject,
            sessionId,
            protectedWrite: record.protectedWrite,
          }).name,
        });
        keeper.enqueue(approvalId, async () => {
          const record = await this.mutateMarkingRisks(
            approvalId,
            hostId,
            this.placedAgain(hostId, approvalId, placement, updated(event.params)),
            subject,
          );
          if (record?.hostId === event.hostId) await this.keepFullSubject(record, subject);
        });
        return;
      }
      case 'approvalResolved':
        this.asked.forget(event.hostId, event.params.approvalId);
        this.change(
          event.params.approvalId,
          this.ofHost(
            event.hostId,
            resolved(event.params, event.incarnation, this.now(), (facts) =>
              this.options.logger.warn(
                { ...facts, hostId: event.hostId },
                facts.askedOtherwise
                  ? 'the host asked again what our decide was sent for, then resolved it; recorded as its own'
                  : 'the host resolved our decide with another decision or rule than the choice sent; recorded as its own',
              ),
            ),
          ),
        );
        return;
      case 'sessionReconciled':
        keeper.track(
          this.sweep.reconcileSession(
            event.hostId,
            event.sessionId,
            event.pendingApprovalIds,
            event.incarnation,
            event.listRequestedAt,
          ),
        );
        return;
      case 'sessionHeldElsewhere':
        keeper.track(this.sweep.changeSession(event.hostId, event.sessionId, sessionHeldElsewhere));
        return;
      case 'hostUp':
        // A host that keeps nothing came up: whatever an earlier process of it asked is gone,
        // even when this bot was not running to see that process die.
        if (!event.durable) keeper.track(this.sweep.orphanAll(event.hostId, event.incarnation));
        return;
      case 'hostDown':
        if (!event.durable) keeper.track(this.sweep.orphanAll(event.hostId));
        return;
      case 'sessionSeen':
        return;
    }
  }

  /**
   * `mutation`, for a record of `hostId` only: a host never changes another host's approval. An
   * approvalId is the host's to choose, and one host (an agent that took it over) could otherwise
   * name another's approval: resolve it, or put its own command on a card whose decision goes to
   * the other host.
   */
  private ofHost(hostId: string, mutation: Mutation): Mutation {
    return (record) => {
      if (record.hostId === hostId) return mutation(record);
      this.options.logger.warn(
        { approvalId: record.approvalId, hostId, approvalHostId: record.hostId },
        "a host spoke of another host's approval; ignored",
      );
      return undefined;
    };
  }

  private change(approvalId: string, mutation: Mutation): void {
    const { keeper } = this.options;
    keeper.enqueue(approvalId, () => keeper.mutate(approvalId, mutation, undefined, FOR_HOST));
  }

  /**
   * A new subject that intake cut: its full text replaces the one kept for "View full". Written
   * right after the record, while the card update is still on its way to Slack.
   */
  private async keepFullSubject(
    record: ApprovalRecord,
    subject: ApprovalSubject,
    rawArgs?: string,
  ): Promise<void> {
    if (isTerminal(record)) return;
    // The arguments too once a re-ask changed them (reopened): "View full" must not show the first ones.
    const fields = fullTextFields(record, {
      subject,
      ...(record.argsReasked && rawArgs !== undefined ? { rawArgs } : {}),
    });
    if (fields) await this.options.store.saveFullText(record.approvalId, fields);
  }

  private async opened(
    params: ApprovalRequestParams,
    hostId: string,
    incarnation: string,
    phase: 'pending' | 'reviewing',
    { heldElsewhere = false, asked = false }: Reopening,
  ): Promise<void> {
    const { keeper, store, logger } = this.options;
    const session = this.sessions.get(hostId, params.sessionId);
    const workspaceRoot = this.workspaceRootOf(params.subject, hostId, params.sessionId);
    const route = this.routeOf({
      hostId,
      tool: params.toolName,
      subject: params.subject,
      sessionId: params.sessionId,
      protectedWrite: params.protectedWrite === true,
    });
    // A new approval past its host's cap gets no record and no card, and stays pending at the
    // host (openApprovalCap.ts). Far from the cap that is a counter here, no round trip.
    const { cap } = this.options;
    if (cap) {
      const admitted = cap.admit(hostId, params.approvalId, route.channel);
      if (admitted !== true && !(await admitted)) return;
    }
    const grants = this.options.grantsOf?.(route.name);
    const caller = callerFor(grants?.caller ?? 'session', {
      sessionId: params.sessionId,
      hostId,
      owner: this.options.ownerOf?.(hostId),
    });
    const risks =
      this.options.risksFor?.({ tool: params.toolName, subject: params.subject, workspaceRoot }) ?? [];
    const { record: fresh, fullText } = openRecord(params, {
      hostId,
      incarnation,
      channel: route.channel,
      route: route.name,
      ...(route.quorum !== undefined && route.quorum > 1 ? { quorum: route.quorum } : {}),
      caller: caller ?? `session:${params.sessionId}`,
      sandboxMode: this.options.sandboxModeOf(hostId),
      phase,
      heldElsewhere,
      now: this.now(),
      ...(session?.label
        ? { sessionTitle: session.label.text, sessionTitleIntake: session.label.intake }
        : {}),
      ...(risks.length > 0 ? { risks } : {}),
    });
    // Cards of one channel are posted in the order their approvals came: the turn is taken now
    // and passed on once the record's write has left.
    const turn = this.turns.take(route.channel);
    const answerer = this.options.grants;
    const mayAnswer = answerer !== undefined && caller !== undefined && phase === 'pending' && !heldElsewhere;
    // A request like one a grant answered lately is looked up first (started now, before its
    // channel's turn comes) and, when a grant answers it, created already claimed: no card, and
    // one write where the lookup made with the create leaves two more (docs/performance.md).
    // Not a request described again (approval/request, then approval/requested): its record
    // exists, and a use taken for it would be missing to another request until given back.
    const early =
      mayAnswer && answerer.expectsGrant(fresh) && !store.knows(fresh.approvalId)
        ? answerer.claimAtCreate(fresh)
        : undefined;
    let claimedAtCreate: ClaimedAtCreate | undefined;
    let grant: Grant | undefined;
    let created = false;
    try {
      await turn.ready;
      claimedAtCreate = await early;
      // Otherwise a grant lookup, made only for what a grant could answer, goes out with the
      // create: one round trip for both. A request a grant answers gets no card: the answerer
      // decides it.
      const answered =
        mayAnswer && !early
          ? answerer.find(fresh).then((found) => {
              grant = found;
              if (found) answerer.expect(fresh.approvalId, found);
              return found !== undefined;
            })
          : undefined;
      // A record created claimed has its grant read again in the create's round trip: a
      // revocation stored since the lookup stops its decision (DecisionRequest.grantRead).
      const grantRead = claimedAtCreate && answerer?.readGrant(claimedAtCreate);
      const storing = keeper.store(claimedAtCreate?.record ?? fresh, fullText, answered);
      // Its create has left for Redis: a count of the host's open set read from now on has it.
      cap?.sent(hostId, params.approvalId);
      turn.done();
      const stored = await storing;
      created = stored !== false;
      // Counted once per request: the host may describe it twice, and only one of them creates it.
      if (created && (answered || early)) {
        this.options.metrics?.grantLookup(grant !== undefined || claimedAtCreate !== undefined);
      }
      if (stored && claimedAtCreate) answerer?.decideClaimed(claimedAtCreate, grantRead);
      if (stored) {
        if (risks.length > 0) this.auditRisks(fresh, risks);
        // At debug: it sits between the host's frame and the card's post, where every line shows in
        // the latency (docs/performance.md); "card posted" says the same at info once it is out.
        logger.debug({ approvalId: params.approvalId, tool: fresh.tool, phase }, 'approval opened');
        // The approval's queue waits for the card; this function's state need not.
        return stored.posted;
      }
    } finally {
      turn.done();
      cap?.sent(hostId, params.approvalId);
      // The grant found is for this creation only: an existing record is looked at afresh.
      if (grant && !created) answerer?.expect(fresh.approvalId, undefined);
      // A use taken for a record not created (it existed, or storing it failed) is given back.
      const unused = created ? undefined : await early;
      if (unused) await answerer?.dropClaimed(unused);
    }
    // The route as the router gives it for this question: the one a new record would get.
    const placement = (): Placement => ({
      sessionId: params.sessionId,
      tool: takeTool(params.toolName),
      route: route.name,
    });
    const record = await this.mutateMarkingRisks(
      params.approvalId,
      hostId,
      this.placedAgain(
        hostId,
        params.approvalId,
        placement,
        reopened(params, incarnation, phase, { heldElsewhere, asked }),
      ),
      params.subject,
    );
    if (record && record.hostId !== hostId) {
      // Another host's approval has this id: this one gets no card (TakenIds), and its create left
      // nothing in this host's open sets (ApprovalStore.createIfAbsent).
      this.takenIds?.taken(hostId, params.approvalId, route.channel);
      return;
    }
    if (record && isTerminal(record)) await store.forgetOpen(record);
    else if (record) await this.keepFullSubject(record, params.subject, params.rawArgs);
    if (record?.phase === 'deciding' && record.claim) this.options.decider.replay(record);
    // A process that stopped between storing the record and answering it left the card waiting.
    else if (record?.slack.deferred && !isTerminal(record)) this.options.grants?.consider(record.approvalId);
  }

  /**
   * The route a question goes to, as a new record's (opened()): on its tool, its workspace root,
   * its session's title, its kind and whether it is a protected write.
   */
  private routeOf(question: {
    hostId: string;
    tool: string;
    subject: ApprovalSubject;
    sessionId: string;
    protectedWrite: boolean;
  }): ChosenRoute & { quorum?: number } {
    const { hostId, tool, subject, sessionId, protectedWrite } = question;
    return this.options.routeFor({
      hostId,
      tool,
      workspaceRoot: this.workspaceRootOf(subject, hostId, sessionId),
      sessionTitle: this.sessions.get(hostId, sessionId)?.title,
      subjectKind: subject.kind,
      protectedWrite,
    });
  }

  /**
   * `mutation` (a re-ask or an update of an approval we know), then the check that the question it
   * leaves is still one its record's route, tool and session would place. The record keeps the
   * route, channel, quorum and caller the first question was placed with, and the card is in that
   * route's channel, before its approvers: a host (or an agent whose words it relays) could ask a
   * harmless command in a lax workspace, then ask the same approvalId again with `rm -rf` in
   * production. Such a record is not decided at all (recordMutations.rerouted): the smallest safe
   * answer, where moving the card, its votes, escalation and grants to another route would be a new
   * path of its own. The host's approval stays pending: it may ask under a new approvalId, which is
   * placed afresh. Logged at warn as it is marked (again if compare-and-set runs the mutation again).
   */
  private placedAgain(
    hostId: string,
    approvalId: string,
    placement: (record: ApprovalRecord) => Placement,
    mutation: Mutation,
  ): Mutation {
    const { knowsRoute, logger } = this.options;
    return (record) => {
      const next = mutation(record);
      const asked = next ?? record;
      // A terminal record asked again is revived by the re-ask (reopened): checked like any other.
      if (isTerminal(asked)) return next;
      if (record.rerouted) return rerouted(undefined)(asked) ?? next;
      const now = placement(record);
      // The same question asked again (a listing after a restart) is the one its route's approvers
      // were shown: a route it would get today is the file's edit (or a session renamed), and
      // deciding it where it is lets no other question through. Only another question is checked.
      const sameQuestion =
        isDeepStrictEqual(asked.subject, record.subject) && asked.rawArgs === record.rawArgs;
      const change = changeOfPlacement(record, now, sameQuestion, knowsRoute);
      const marked = rerouted(change)(asked);
      if (change && marked) {
        logger.warn(
          {
            hostId,
            approvalId,
            route: record.route ?? FALLBACK_ROUTE_NAME,
            routeNow: now.route,
            change: change.change,
          },
          'the host asked an approval again on another route, tool or session than its card was placed for; it is not decided from that card',
        );
      }
      return marked ?? next;
    };
  }

  /**
   * `mutation`, with the risk rules the new question matches (on the subject as the host sent it)
   * added to the record's: a later stage or a re-asked question may match a rule the first did
   * not. Resolves with the stored record; the rules it added are audited.
   */
  private async mutateMarkingRisks(
    approvalId: string,
    hostId: string,
    mutation: Mutation,
    subject: RiskInput['subject'],
  ): Promise<ApprovalRecord | undefined> {
    const { keeper } = this.options;
    const risksFor = this.options.risksFor;
    if (!risksFor) return keeper.mutate(approvalId, this.ofHost(hostId, mutation), undefined, FOR_HOST);
    // Compare-and-set may run the mutation more than once: what its last run added was stored.
    let added: RiskMark[] = [];
    // The marking too is the host's own: another host's question adds no rule to this record.
    const stored = await keeper.mutate(
      approvalId,
      this.ofHost(hostId, (record) => {
        const next = mutation(record);
        const workspaceRoot = this.workspaceRootOf(subject, record.hostId, record.sessionId);
        const marked = riskMarked((tool) => risksFor({ tool, subject, workspaceRoot }))(next ?? record);
        added = marked
          ? (marked.risks ?? []).filter((m) => !record.risks?.some((r) => r.name === m.name))
          : [];
        return marked ?? next;
      }),
      undefined,
      FOR_HOST,
    );
    if (stored) this.auditRisks(stored, added);
    return stored;
  }

  /**
   * What the request's relative paths are relative to, for routes and risk rules alike. A shell
   * subject names its own working directory; the session's is known only once the bot has seen
   * the session listed, by the host whose session it is.
   */
  private workspaceRootOf(subject: ApprovalSubject, hostId: string, sessionId: string): string | undefined {
    return subject.workspaceRoot ?? this.sessions.get(hostId, sessionId)?.workspaceRoot;
  }

  /** Everything a risk rule changes about an approval is in the audit stream, by the rule's name. */
  private auditRisks(record: ApprovalRecord, marks: readonly RiskMark[]): void {
    const { audit, logger } = this.options;
    if (!audit || marks.length === 0) return;
    const at = this.now().toISOString();
    for (const mark of marks) {
      audit
        .append({
          kind: 'risk',
          approvalId: record.approvalId,
          hostId: record.hostId,
          ...(record.route ? { route: record.route } : {}),
          tool: record.tool,
          rule: mark.name,
          warning: mark.warning,
          ...(mark.quorum === undefined ? {} : { quorum: mark.quorum }),
          ...(mark.approvers ? { approvers: mark.approvers } : {}),
          ...(mark.confirm ? { confirm: mark.confirm } : {}),
          grantsOff: true,
          at,
        })
        .catch((err: unknown) => {
          logger.warn({ err, approvalId: record.approvalId }, 'could not append to the audit trail');
        });
    }
  }
}

/** How a question asked again would be placed now: the route the router gives it, its tool, its session. */
interface Placement {
  route: string;
  /** As the record keeps it (intake). */
  tool: string;
  sessionId: string;
}

/** What of a record's placement a question asked again changes, if anything. */
function changeOfPlacement(
  record: ApprovalRecord,
  now: Placement,
  sameQuestion: boolean,
  knowsRoute: ((route: string | undefined) => boolean) | undefined,
): Rerouting | undefined {
  if (now.sessionId !== record.sessionId) return { change: 'session' };
  if (now.tool !== record.tool) return { change: 'tool' };
  const from = record.route ?? FALLBACK_ROUTE_NAME;
  if (now.route === from || sameQuestion) return undefined;
  // A route gone from the file has rules of its own (docs/routing.md): admins decide.
  if (knowsRoute && !knowsRoute(record.route)) return undefined;
  return { change: 'route', from, to: now.route };
}
