import { createHash, randomUUID } from 'node:crypto';
import { FiredStep } from '../domain/record.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

// The escalation schedule (relay/escalator.ts): due steps in one sorted set, claimed with ZREM so
// that of any number of processes exactly one fires a step; a lineage hash per request, so that a
// step fires once for the request however many approvals (a superseded one, its successor) carry it.
// The schedule and a lineage live in different Cluster slots, so no script touches both: each
// step below is atomic in one slot, and the order of the steps keeps the guarantees (see claim()).
// A request is live while its lineage has `start`, which START writes as it creates the lineage:
// only a claim's mark landing after the request ended wrote a lineage without it (an earlier
// release's MARK_FIRED), and such a lineage counts as ended.

/** Whether the lineage (KEYS[1]) is a live request's: one ended or run out has no `start`. */
const LIVE = "redis.call('HEXISTS', KEYS[1], 'start') == 1";

/**
 * Starts the request's clock unless it runs already and notes the approval as scheduled; returns
 * the lineage as it stands. What an ended request left without `start` (LIVE) goes first: a new
 * request does not inherit its marks. KEYS: lineage. ARGV: approvalId, now, lineage TTL.
 */
const START = `
local start = redis.call('HGET', KEYS[1], 'start')
if not start then
  redis.call('DEL', KEYS[1])
  start = ARGV[2]
  redis.call('HSET', KEYS[1], 'start', start, 'origin', ARGV[1])
end
local fresh = redis.call('HSETNX', KEYS[1], 's:' .. ARGV[1], '1')
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {start, redis.call('HGET', KEYS[1], 'origin'), fresh, redis.call('HGETALL', KEYS[1])}
`;

/**
 * Takes a due step out of the schedule for one claim: 1 for exactly one caller. The claim's token
 * is kept a while beside it, so that the same claim sent again (ioredis resends a command whose
 * reply a dropped connection lost) still answers 1: the step went out for it.
 * KEYS: schedule, claim mark. ARGV: member, token, mark TTL (ms).
 */
const TAKE_DUE = `
if redis.call('ZREM', KEYS[1], ARGV[1]) == 1 then
  redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
  return 1
end
if redis.call('GET', KEYS[2]) == ARGV[2] then return 1 end
return 0
`;

/**
 * Takes a due resolve's lease for one caller: moves it, still due, to when the caller's lease runs
 * out. As TAKE_DUE, the same call sent again answers 1 from its token.
 * KEYS: schedule, claim mark. ARGV: member, now, lease until, token, mark TTL (ms).
 */
const TAKE_LEASE = `
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if score and tonumber(score) <= tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], 'XX', ARGV[3], ARGV[1])
  redis.call('SET', KEYS[2], ARGV[4], 'PX', ARGV[5])
  return 1
end
if redis.call('GET', KEYS[2]) == ARGV[4] then return 1 end
return 0
`;

/**
 * Marks a step of the request fired: true for the first of the request's approvals only, and for
 * the same claim sent again (its token, kept beside the mark). False when the request ended (or
 * ran out) before the mark landed: the step was taken from the schedule, but the request is over
 * and nothing may fire for it, and a mark written then would bring its lineage back, live to
 * paged() and ended() with nobody left to end it. The lineage lives at least a TTL past each
 * claim, so that a timeout tried again and again keeps it.
 * KEYS: lineage. ARGV: step, lineage TTL, what fires (JSON), claim token.
 */
const MARK_FIRED = `
if not (${LIVE}) then return 0 end
local won = redis.call('HSETNX', KEYS[1], 'f' .. ARGV[1], ARGV[3])
if won == 1 then
  redis.call('HSET', KEYS[1], 'c' .. ARGV[1], ARGV[4])
elseif redis.call('HGET', KEYS[1], 'c' .. ARGV[1]) == ARGV[4] then
  won = 1
end
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return won
`;

/** How long a claim's token is kept: far longer than ioredis takes to reconnect and resend. */
const CLAIM_MARK_TTL_MS = 5 * 60_000;

/**
 * Takes a claimed step's fired mark off a lineage that still exists, so that the step may be
 * claimed again, and counts how often that was done. 0: the request ended meanwhile.
 * KEYS: lineage. ARGV: step.
 */
const UNMARK_FIRED = `
if not (${LIVE}) then return 0 end
redis.call('HDEL', KEYS[1], 'f' .. ARGV[1], 'c' .. ARGV[1])
return redis.call('HINCRBY', KEYS[1], 'r' .. ARGV[1], 1)
`;

/**
 * Takes a claimed step's fired mark off, the step not done (its approval ended as it was claimed),
 * and names the request's other approvals, those a successor card scheduled: an empty list when
 * the mark was gone already or the request ended. An ended request's lineage that an earlier
 * release's mark brought back goes whole. KEYS: lineage. ARGV: step, approvalId of the claim.
 */
const RELEASE = `
local start = redis.call('HGET', KEYS[1], 'start')
if not start then
  redis.call('DEL', KEYS[1])
  return {}
end
if redis.call('HDEL', KEYS[1], 'f' .. ARGV[1]) == 0 then return {} end
redis.call('HDEL', KEYS[1], 'c' .. ARGV[1])
local out = {start}
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  if string.sub(field, 1, 2) == 's:' and field ~= 's:' .. ARGV[2] then
    table.insert(out, string.sub(field, 3))
  end
end
return out
`;

/** Writes a field of a live request's lineage: one ended meanwhile is not brought back. */
const SET_IF_LIVE = `
if not (${LIVE}) then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`;

/**
 * Ends a request: moves the services it paged (with whom to resolve them as) to its unresolved
 * hash and deletes its lineage, in one step, so that of any number of callers one gets the pages
 * to resolve, and a page marked before is among them. Returns the services' fields and values.
 * KEYS: lineage, unresolved. ARGV: approvalId, dedupKey, TTL.
 */
const END_PAGED = `
local paged = {}
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  if field == 'paged' or string.sub(field, 1, 6) == 'paged:' then
    table.insert(paged, field)
    table.insert(paged, redis.call('HGET', KEYS[1], field))
  end
end
redis.call('DEL', KEYS[1])
if #paged == 0 then return paged end
redis.call('HSET', KEYS[2], 'approvalId', ARGV[1], 'dedupKey', ARGV[2], unpack(paged))
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return paged
`;

export interface Lineage {
  /** When the clock started (ms). */
  startMs: number;
  /** The approval whose card started it: PagerDuty's dedup_key. */
  origin: string;
  /** Steps the request fired already, under any of its approvals. */
  fired: FiredStep[];
  /** True when this call scheduled the approval's steps (false: it was scheduled before). */
  scheduled: boolean;
}

export interface DueStep {
  member: string;
  approvalId: string;
  step: number;
  lineage: string;
}

export interface ScheduleLook {
  due: DueStep[];
  /** When the earliest step not yet due falls due (ms). */
  nextMs?: number;
}

export class EscalationStore {
  constructor(
    private readonly redis: RedisClient,
    private readonly options: { lineageTtlMs: number },
  ) {}

  /**
   * Puts an approval's steps (`afters`, ms after the clock's start) in the schedule, once. The
   * lineage is written first, then the steps the request has not fired go into the schedule. Steps
   * are added on every call, not only the first: a process that died between the two leaves the
   * approval without its escalation recorded, so the next one to see it calls this again, and
   * adding a step already there changes nothing. One added after it fired elsewhere is refused by
   * claim(). The lineage lives a TTL past the last step, so that a request still open when a step
   * of a long ladder falls due has not ended for claim() (see MARK_FIRED).
   */
  async schedule(
    approvalId: string,
    lineage: string,
    nowMs: number,
    afters: readonly number[],
  ): Promise<Lineage> {
    const reply = (await this.redis.eval(
      START,
      1,
      keys.escalationLineage(lineage),
      approvalId,
      String(nowMs),
      String(this.options.lineageTtlMs + Math.max(0, ...afters)),
    )) as [string, string, number, string[]];
    const [start, origin, fresh, flat] = reply;
    const fields = new Map<string, string>();
    for (let i = 0; i + 1 < flat.length; i += 2) fields.set(flat[i]!, flat[i + 1]!);
    const scoresAndMembers = afters.flatMap((after, step) =>
      fields.has(`f${step}`) ? [] : [Number(start) + after, memberOf(approvalId, step, lineage)],
    );
    if (scoresAndMembers.length > 0) await this.redis.zadd(keys.escalationDue(), ...scoresAndMembers);
    const fired: FiredStep[] = [];
    for (const [field, value] of fields) {
      if (!/^f\d+$/.test(field)) continue;
      const parsed = FiredStep.safeParse(safeJson(value));
      if (parsed.success) fired.push(parsed.data);
    }
    fired.sort((a, b) => a.step - b.step);
    return { startMs: Number(start), origin, fired, scheduled: fresh === 1 };
  }

  /** Steps due by `nowMs`, earliest first. Seeing one is not owning it: claim() decides. */
  async due(nowMs: number, limit = 50): Promise<DueStep[]> {
    return (await this.look(nowMs, limit)).due;
  }

  /**
   * Steps due by `nowMs` (at most `limit`, earliest first), and when the next one falls due: in
   * one read, so that a poller can sleep until then rather than ask again and again. `nextMs` is
   * `nowMs` when more than `limit` are due (look again once these are out of the way), and absent
   * when nothing waits at all.
   */
  async look(nowMs: number, limit = 50): Promise<ScheduleLook> {
    const flat = await this.redis.zrangebyscore(
      keys.escalationDue(),
      '-inf',
      '+inf',
      'WITHSCORES',
      'LIMIT',
      0,
      limit + 1,
    );
    const due: DueStep[] = [];
    for (let i = 0; i + 1 < flat.length; i += 2) {
      const score = Number(flat[i + 1]);
      if (score > nowMs) return { due, nextMs: score };
      if (i / 2 === limit) return { due, nextMs: nowMs };
      const step = dueStepOf(flat[i]!);
      if (step) due.push(step);
    }
    return { due };
  }

  /** Takes `due` out of the schedule for this caller (TAKE_DUE): true for exactly one. */
  private async takeDue(due: DueStep, token: string): Promise<boolean> {
    const taken = await this.redis.eval(
      TAKE_DUE,
      2,
      keys.escalationDue(),
      keys.escalationClaim(due.member),
      due.member,
      token,
      String(CLAIM_MARK_TTL_MS),
    );
    return taken === 1;
  }

  /**
   * True for exactly one caller, and only while the step is due and its request never fired it.
   * Taking the step out of the schedule (ZREM) picks one of the processes polling it, and only a
   * step still due can be taken: a cancelled one is not. The winner then marks the step fired on
   * the lineage (HSETNX), which picks one of the approvals carrying the request. A process that
   * dies between the two loses the step, as one dying between the claim and firing it always did.
   * Both carry a token of this claim, so that either, sent again after a dropped connection lost
   * its reply, still answers as its first run did.
   */
  async claim(due: DueStep, firing: FiredStep): Promise<boolean> {
    const token = randomUUID();
    if (!(await this.takeDue(due, token))) return false;
    // The mark says what is about to fire: should this process die once it acted but before
    // fired() says how it went, a successor card still shows the step.
    const won = await this.redis.eval(
      MARK_FIRED,
      1,
      keys.escalationLineage(due.lineage),
      String(due.step),
      String(this.options.lineageTtlMs),
      JSON.stringify(firing),
      token,
    );
    return won === 1;
  }

  /**
   * Puts a step this process claimed back in the schedule, due at `atMs`, because it could not do
   * it yet (a timeout that could not decide, a step cut short by a stop: escalator.ts). Only the claim's winner calls this, so
   * nobody else holds the step meanwhile. The mark the claim set is taken off first, then the step
   * goes back: the next claim (ZREM, then HSETNX) wins it once, as the first did. A request that
   * ended meanwhile (its lineage gone) gets nothing back. `atMs` says when it falls due again,
   * from how many times it has been put back, this time included. Resolves with that count, 0
   * when the step was not put back.
   */
  async retry(due: DueStep, atMs: (times: number) => number): Promise<number> {
    const times = Number(
      await this.redis.eval(UNMARK_FIRED, 1, keys.escalationLineage(due.lineage), String(due.step)),
    );
    if (times === 0) return 0;
    // NX: should the approval have been scheduled again meanwhile, its own time stands.
    await this.redis.zadd(keys.escalationDue(), 'NX', atMs(times), due.member);
    return times;
  }

  /**
   * Gives up a step this process claimed but did not do, because its approval ended meanwhile
   * (superseded by the approval a restarted host asks again, most often). Only the claim's winner
   * calls this. The mark the claim set comes off, so a successor scheduled later fires the step;
   * one scheduled while the mark stood left the step out of the schedule, so it goes back in for
   * each of the request's other approvals, due when it was: the clock is the request's. Steps of
   * approvals that are over are dropped when due (escalator.ts). Resolves with how many went back.
   */
  async release(due: DueStep, afterMs: number): Promise<number> {
    const [start, ...others] = (await this.redis.eval(
      RELEASE,
      1,
      keys.escalationLineage(due.lineage),
      String(due.step),
      due.approvalId,
    )) as string[];
    if (start === undefined || others.length === 0) return 0;
    const atMs = Number(start) + afterMs;
    // NX: a step the successor scheduled itself keeps its time.
    await this.redis.zadd(
      keys.escalationDue(),
      'NX',
      ...others.flatMap((approvalId) => [atMs, memberOf(approvalId, due.step, due.lineage)]),
    );
    return others.length;
  }

  /** Whether the step is marked fired for the request: a process claimed it, and holds it or did it. */
  async marked(lineage: string, step: number): Promise<boolean> {
    return (await this.redis.hexists(keys.escalationLineage(lineage), `f${step}`)) === 1;
  }

  /** What a claimed step did, for a successor to carry over. */
  async fired(lineage: string, fired: FiredStep): Promise<void> {
    await this.redis.eval(
      SET_IF_LIVE,
      1,
      keys.escalationLineage(lineage),
      `f${fired.step}`,
      JSON.stringify(fired),
    );
  }

  /**
   * The request is being paged on this service: its resolution must resolve the page. False when
   * the request already ended (nothing would resolve the page, so it must not be sent). Each
   * service paged is kept in a field of its own, so that a ladder paging two services resolves
   * both. Kept by its tag alone (TAG_ONLY): whoever resolves it finds the key in its own config.
   */
  async paged(lineage: string, service: PagedService): Promise<boolean> {
    const field = `${PAGED}${service.tag}`;
    return (await this.redis.eval(SET_IF_LIVE, 1, keys.escalationLineage(lineage), field, TAG_ONLY)) === 1;
  }

  /**
   * Whether the request is over: its lineage was ended (or ran out), whichever of its approvals
   * ended it. Asked after a page's trigger, which is late if so: the resolve may have gone first.
   */
  async ended(lineage: string): Promise<boolean> {
    return (await this.redis.hexists(keys.escalationLineage(lineage), 'start')) === 0;
  }

  /**
   * Ends the request (decided, or its host lost it: a later approval of the same tool call is a
   * new question, with a clock of its own) and hands over the pages it sent, to be resolved: undefined when it
   * paged nothing, or another caller ended it first. The pages wait in the request's unresolved
   * hash until each resolve settles (resolvedPages), and the schedule holds a lease on them
   * (leaseResolve), due `leaseUntilMs`: should this process die or stop before, whoever claims
   * the lease resolves what is left (takeResolve).
   */
  async endPaged(
    lineage: string,
    by: { approvalId: string; dedupKey: string },
    leaseUntilMs: number,
  ): Promise<Unresolved | undefined> {
    const flat = (await this.redis.eval(
      END_PAGED,
      2,
      keys.escalationLineage(lineage),
      keys.escalationUnresolved(lineage),
      by.approvalId,
      by.dedupKey,
      String(this.options.lineageTtlMs),
    )) as string[];
    const fields: Record<string, string> = {};
    for (let i = 0; i + 1 < flat.length; i += 2) fields[flat[i]!] = flat[i + 1]!;
    const services = pagedServicesOf(fields);
    if (services.length === 0) return undefined;
    await this.leaseResolve(lineage, by.approvalId, leaseUntilMs);
    return { lineage, ...by, services };
  }

  /**
   * Makes the request's unresolved pages due at `atMs`: when a resolver's lease runs out, or at
   * once for one cut short by a stop. Whoever claims it then resolves them.
   */
  async leaseResolve(lineage: string, approvalId: string, atMs: number): Promise<void> {
    await this.redis.zadd(keys.escalationDue(), atMs, resolveMemberOf(approvalId, lineage));
  }

  /**
   * True for one caller of a due resolve: the pages of its request left to resolve, leased again
   * until `leaseUntilMs` for the caller. Undefined when another claimed it, or none is left (its
   * lease then goes). The lease is moved, never taken out and put back: a caller dying at any
   * point leaves it in the schedule, due when it runs out.
   */
  async takeResolve(due: DueStep, nowMs: number, leaseUntilMs: number): Promise<Unresolved | undefined> {
    const taken = await this.redis.eval(
      TAKE_LEASE,
      2,
      keys.escalationDue(),
      keys.escalationClaim(due.member),
      due.member,
      String(nowMs),
      String(leaseUntilMs),
      randomUUID(),
      String(CLAIM_MARK_TTL_MS),
    );
    if (taken !== 1) return undefined;
    const fields = await this.redis.hgetall(keys.escalationUnresolved(due.lineage));
    const services = pagedServicesOf(fields);
    const unresolved = {
      lineage: due.lineage,
      approvalId: fields.approvalId ?? due.approvalId,
      dedupKey: fields.dedupKey ?? '',
      services,
    };
    if (services.length > 0 && fields.dedupKey) return unresolved;
    await this.resolved(unresolved);
    return undefined;
  }

  /**
   * These pages' resolves settled (sent, or failed for good) while others were cut short: they are
   * not sent again by whoever takes the lease. The field `paged` an earlier release wrote goes
   * with the service read from it.
   */
  async resolvedPages(lineage: string, services: readonly PagedService[]): Promise<void> {
    if (services.length === 0) return;
    await this.redis.hdel(
      keys.escalationUnresolved(lineage),
      ...services.flatMap((service) => [
        `${PAGED}${service.tag}`,
        ...(service.namedAlone ? [LEGACY_PAGED] : []),
      ]),
    );
  }

  /**
   * A page whose resolve is still to send after its request ended (a late trigger's, leased as it
   * is sent): kept in the request's unresolved hash, due at `atMs`, for whoever claims it.
   */
  async handOnResolve(
    lineage: string,
    by: { approvalId: string; dedupKey: string },
    service: PagedService,
    atMs: number,
  ): Promise<void> {
    const unresolved = keys.escalationUnresolved(lineage);
    await this.redis
      .multi()
      .hset(
        unresolved,
        'approvalId',
        by.approvalId,
        'dedupKey',
        by.dedupKey,
        `${PAGED}${service.tag}`,
        TAG_ONLY,
      )
      .pexpire(unresolved, this.options.lineageTtlMs)
      .exec();
    await this.leaseResolve(lineage, by.approvalId, atMs);
  }

  /**
   * Whether the request's unresolved pages are kept longer than `ms` yet: a page left for another
   * replica must still be there when that one takes the lease (its hash runs out a TTL after the
   * request ended, and with it the page, unlogged).
   */
  async unresolvedOutlives(lineage: string, ms: number): Promise<boolean> {
    return (await this.redis.pttl(keys.escalationUnresolved(lineage))) > ms;
  }

  /** Every page of the request settled: its unresolved hash and its lease go. */
  async resolved(unresolved: Unresolved): Promise<void> {
    await this.redis.del(keys.escalationUnresolved(unresolved.lineage));
    await this.redis.zrem(keys.escalationDue(), resolveMemberOf(unresolved.approvalId, unresolved.lineage));
  }

  /**
   * Makes a step still waiting in the schedule due at `nowMs`, if it was due later: one that fired
   * or was cancelled is not brought back (XX), and one due sooner keeps its time (LT).
   */
  async hasten(approvalId: string, step: number, lineage: string, nowMs: number): Promise<void> {
    await this.redis.zadd(keys.escalationDue(), 'XX', 'LT', nowMs, memberOf(approvalId, step, lineage));
  }

  /**
   * Makes a step still waiting in the schedule due at `atMs`, if it was due sooner: one that was
   * claimed or cancelled meanwhile is not brought back (XX), and one due later keeps its time (GT).
   */
  async postpone(due: DueStep, atMs: number): Promise<void> {
    await this.redis.zadd(keys.escalationDue(), 'XX', 'GT', atMs, due.member);
  }

  /** Takes one step out of the schedule without firing it (its approval is gone). */
  async drop(due: DueStep): Promise<void> {
    await this.redis.zrem(keys.escalationDue(), due.member);
  }

  /** Takes an approval's remaining steps out of the schedule. */
  async cancel(approvalId: string, lineage: string, steps: number): Promise<number> {
    if (steps <= 0) return 0;
    const members = Array.from({ length: steps }, (_, step) => memberOf(approvalId, step, lineage));
    return this.redis.zrem(keys.escalationDue(), ...members);
  }
}

/** Prefix of a lineage's fields naming a service paged, by its tag. */
const PAGED = 'paged:';

/** The field a release before tags wrote for a request's one service, its routing key the value. */
const LEGACY_PAGED = 'paged';

/**
 * The value of a `paged:<tag>` field: the service is known by its tag alone. Any other value was
 * written by an earlier release, which kept the routing key itself there; such a page is still
 * resolved with it (a rolling upgrade, a request that outlived one).
 */
const TAG_ONLY = 'tag';

/**
 * A PagerDuty service a request paged, named by `tag`, a short hash of its routing key (a secret
 * that goes to PagerDuty and nowhere else, Redis included). `tag` also names the service in logs
 * and notice kinds. `routingKey` is the key when it is known here: the page was sent by this
 * process, or an earlier release's entry held it; otherwise the resolver looks it up by tag among
 * the keys of its own config (routingKeysByTag).
 */
export interface PagedService {
  tag: string;
  routingKey?: string;
  /** Read from the field `paged` (LEGACY_PAGED): it goes when the page's resolve settled. */
  namedAlone?: boolean;
}

/**
 * The tag of a routing key: 12 hex digits of its SHA-256, unsalted, so that every replica and
 * release computes the same one. A routing key is 32 random hex digits (128 bits): the tag,
 * which Redis and the logs hold, is of no use for finding it.
 */
export function pagedService(routingKey: string): PagedService & { routingKey: string } {
  return { routingKey, tag: createHash('sha256').update(routingKey).digest('hex').slice(0, 12) };
}

/** The routing keys a config names, each by its tag: how a resolve finds the key Redis does not hold. */
export function routingKeysByTag(routingKeys: Iterable<string | undefined>): ReadonlyMap<string, string> {
  const byTag = new Map<string, string>();
  for (const routingKey of routingKeys) {
    if (routingKey) byTag.set(pagedService(routingKey).tag, routingKey);
  }
  return byTag;
}

function pagedServicesOf(fields: Record<string, string>): PagedService[] {
  const services = new Map<string, PagedService>();
  for (const [field, value] of Object.entries(fields)) {
    let service: PagedService;
    if (field === LEGACY_PAGED) service = { ...pagedService(value), namedAlone: true };
    else if (field.startsWith(PAGED))
      service = { tag: field.slice(PAGED.length), ...(value === TAG_ONLY ? {} : { routingKey: value }) };
    else continue;
    // The same service under both fields (an earlier release's lineage) is one page to resolve.
    const known = services.get(service.tag);
    services.set(service.tag, { ...known, ...service, ...(known?.namedAlone ? { namedAlone: true } : {}) });
  }
  return [...services.values()];
}

/**
 * The step number of a due resolve (takeResolve): no step of a ladder. Its member has no step at
 * all, so that a process of an earlier version passes it by rather than take it for a step.
 */
export const RESOLVE_STEP = -1;

/** An ended request's pages left to resolve, and as whom: PagerDuty's dedup_key, the approval. */
export interface Unresolved {
  lineage: string;
  approvalId: string;
  dedupKey: string;
  services: PagedService[];
}

function resolveMemberOf(approvalId: string, lineage: string): string {
  return JSON.stringify(['resolve', approvalId, lineage]);
}

function dueStepOf(member: string): DueStep | undefined {
  const parsed = safeJson(member);
  if (!Array.isArray(parsed) || parsed.length !== 3) return undefined;
  if (parsed[0] === 'resolve' && typeof parsed[1] === 'string' && typeof parsed[2] === 'string')
    return { member, approvalId: parsed[1], step: RESOLVE_STEP, lineage: parsed[2] };
  const [approvalId, step, lineage] = parsed as [unknown, unknown, unknown];
  if (typeof approvalId !== 'string' || typeof step !== 'number' || typeof lineage !== 'string')
    return undefined;
  return { member, approvalId, step, lineage };
}

function memberOf(approvalId: string, step: number, lineage: string): string {
  return JSON.stringify([approvalId, step, lineage]);
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
