import type { DecisionVia } from '../domain/audit.js';
import { type DecisionFact, decidedBy, type StatsSummary, summarize } from '../domain/decisionStats.js';
import { keys } from './keys.js';
import type { RedisClient } from './redisConnection.js';

/**
 * The most audit entries one summary reads, newest first. Past it the window's oldest part is
 * left out and the summary says so: the cost of /countersign stats and of the App Home section
 * stays bounded however busy the stream is (docs/performance.md, "Decision analytics").
 */
export const STATS_READ_CAP = 5_000;
/** Entries read per round trip. */
const STATS_PAGE = 500;
/** How long a summary may be served again while no decision was written since. */
export const STATS_CACHE_MS = 60_000;

const VIA: ReadonlySet<string> = new Set<DecisionVia>([
  'click',
  'grant',
  'timeout',
  'policy',
  'reviewer',
  'otherClient',
  'host',
]);

/** The stats' view of one audit entry, or undefined for one that is not a decision. */
export function factOf(fields: readonly string[]): DecisionFact | undefined {
  const f: Record<string, string> = {};
  for (let i = 0; i + 1 < fields.length; i += 2) f[fields[i]!] = fields[i + 1]!;
  // An unsettled entry (a decide its host went away with) may or may not have decided anything.
  if (f.kind !== 'decision' || !f.via || !VIA.has(f.via) || f.unsettled !== undefined) return undefined;
  const waitedMs = Number(f.waitedMs);
  return {
    route: f.route ?? '(none)',
    tool: f.tool ?? '',
    by: decidedBy(f.via as DecisionVia),
    ...(f.waitedMs !== undefined && Number.isFinite(waitedMs) ? { waitedMs } : {}),
    steps: Number(f.steps ?? 0) || 0,
    slaTracked: f.slaMs !== undefined,
    slaBreached: f.slaBreached === 'true',
    ...(f.command ? { command: f.command } : {}),
  };
}

interface Cached {
  generation: string;
  summary: StatsSummary;
}

/**
 * Decision analytics over the audit stream (`cs:{audit}`): one XREVRANGE from now back to the
 * window's start, capped at STATS_READ_CAP entries. The summary (every route's figures) is kept
 * in Redis for every replica, tagged with the stream's stats generation, which each decision
 * entry bumps: it is served again only while no decision has been written since, and for at most
 * STATS_CACHE_MS. Who sees which route is the caller's business.
 */
export class DecisionStatsReader {
  private readonly cap: number;
  private readonly now: () => number;
  /** Scans under way, by window and generation: callers that ask meanwhile share them. */
  private readonly scans = new Map<string, Promise<StatsSummary>>();

  constructor(
    private readonly redis: RedisClient,
    options: { cap?: number; now?: () => number } = {},
  ) {
    this.cap = options.cap ?? STATS_READ_CAP;
    this.now = options.now ?? Date.now;
  }

  /**
   * `staleMs`: a summary made that recently is served even if decisions were written since. App
   * Home passes one: its publishes follow every change, and a scan per change would cost a busy
   * bot a read of the whole slice each time (docs/performance.md). /countersign stats passes none.
   */
  async summary(windowMs: number, staleMs = 0): Promise<StatsSummary> {
    const cacheKey = keys.statsCache(windowMs);
    const [raw, generation] = await this.redis.mget(cacheKey, keys.statsGeneration);
    const gen = generation ?? '0';
    if (raw) {
      const cached = JSON.parse(raw) as Cached;
      if (cached.generation === gen || this.now() - cached.summary.untilMs < staleMs) return cached.summary;
    }
    // Every open Home is published again at once after a change: those that find the kept
    // summary gone share one scan of the same generation rather than each reading the slice.
    const flight = `${windowMs}:${gen}`;
    let scan = this.scans.get(flight);
    if (!scan) {
      scan = this.scan(windowMs, gen, cacheKey).finally(() => this.scans.delete(flight));
      this.scans.set(flight, scan);
    }
    return scan;
  }

  private async scan(windowMs: number, gen: string, cacheKey: string): Promise<StatsSummary> {
    const untilMs = this.now();
    const sinceMs = untilMs - windowMs;
    const facts: DecisionFact[] = [];
    let read = 0;
    let end = '+';
    // Pages, not one read of the whole cap: one XREVRANGE of 5,000 entries holds Redis for
    // about 15 ms, in which every other replica's commands wait; a page holds it for about 1.5.
    while (read < this.cap) {
      const page = await this.redis.xrevrange(
        keys.audit,
        end,
        String(sinceMs),
        'COUNT',
        Math.min(STATS_PAGE, this.cap - read),
      );
      read += page.length;
      for (const [, fields] of page) {
        const fact = factOf(fields);
        if (fact) facts.push(fact);
      }
      const last = page.at(-1);
      if (!last || page.length < STATS_PAGE) break;
      end = `(${last[0]}`;
    }
    const summary: StatsSummary = {
      sinceMs,
      untilMs,
      read,
      capped: read >= this.cap,
      routes: summarize(facts),
    };
    const cached: Cached = { generation: gen, summary };
    await this.redis.set(cacheKey, JSON.stringify(cached), 'PX', STATS_CACHE_MS);
    return summary;
  }
}
