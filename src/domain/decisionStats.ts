import type { ApprovalSubject } from '../msp/protocol.js';
import type { DecisionVia } from './audit.js';
import type { ApprovalRecord, Resolution } from './record.js';

// Decision analytics (/countersign stats, App Home): pure sums over the audit stream's decision
// entries. The store reads a bounded slice of the stream (store/decisionStatsReader.ts); this
// turns it into figures per route.

/** How a decision was made, as the stats group them: the host's own ways are one group. */
export type DecidedBy = 'person' | 'grant' | 'timeout' | 'policy';

export const DECIDED_BY: readonly DecidedBy[] = ['person', 'grant', 'timeout', 'policy'];

export function decidedBy(via: DecisionVia): DecidedBy {
  if (via === 'click') return 'person';
  if (via === 'grant' || via === 'timeout') return via;
  // policy, reviewer, otherClient, host: the host decided without us.
  return 'policy';
}

/** What stats read of one decision entry (the audit stream's fields, parsed). */
export interface DecisionFact {
  route: string;
  tool: string;
  by: DecidedBy;
  /** From the card's clock start to the decision; absent on entries written before it was kept. */
  waitedMs?: number;
  /** Escalation steps that fired before the decision. */
  steps: number;
  /** The route had an `sla`, and the decision came after it. */
  slaBreached: boolean;
  /** The route had an `sla` when it was decided. */
  slaTracked: boolean;
  /** "git push": the program and its subcommand, for shell requests. */
  command?: string;
}

/** p50 and p90 of the waits (ms), over `count` decisions that have one. */
export interface Waits {
  count: number;
  p50?: number;
  p90?: number;
}

export interface Ranked {
  name: string;
  count: number;
}

export interface RouteStats {
  route: string;
  decisions: number;
  waits: Waits;
  byDecider: Record<DecidedBy, Waits>;
  timeouts: number;
  stepsFired: number;
  /** Decided by a remembered grant without a card. */
  byGrant: number;
  slaTracked: number;
  slaBreached: number;
  /** Most requested first, at most TOP_RANKED. */
  tools: Ranked[];
  commands: Ranked[];
}

export interface StatsSummary {
  /** The window's start and end (ms since the epoch). */
  sinceMs: number;
  untilMs: number;
  /** Entries read; when the cap was reached, the oldest part of the window was not. */
  read: number;
  capped: boolean;
  routes: RouteStats[];
}

/** How many tools and commands each route keeps, most requested first. */
export const TOP_RANKED = 5;

/** Nearest-rank percentile of sorted values. */
export function percentile(sorted: readonly number[], p: number): number | undefined {
  if (sorted.length === 0) return undefined;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}

function waitsOf(values: number[]): Waits {
  const sorted = [...values].sort((a, b) => a - b);
  const p50 = percentile(sorted, 50);
  const p90 = percentile(sorted, 90);
  return {
    count: sorted.length,
    ...(p50 !== undefined ? { p50 } : {}),
    ...(p90 !== undefined ? { p90 } : {}),
  };
}

function ranked(counts: Map<string, number>): Ranked[] {
  return [...counts]
    .map(([name, count]) => ({ name, count }))
    .sort((a, b) => b.count - a.count || a.name.localeCompare(b.name))
    .slice(0, TOP_RANKED);
}

/** Figures per route, routes by name. */
export function summarize(facts: readonly DecisionFact[]): RouteStats[] {
  const byRoute = new Map<string, DecisionFact[]>();
  for (const fact of facts) {
    const list = byRoute.get(fact.route);
    if (list) list.push(fact);
    else byRoute.set(fact.route, [fact]);
  }
  return [...byRoute]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([route, list]) => {
      const waits = (of: readonly DecisionFact[]) =>
        waitsOf(of.flatMap((f) => (f.waitedMs !== undefined ? [f.waitedMs] : [])));
      const tools = new Map<string, number>();
      const commands = new Map<string, number>();
      for (const f of list) {
        tools.set(f.tool, (tools.get(f.tool) ?? 0) + 1);
        if (f.command) commands.set(f.command, (commands.get(f.command) ?? 0) + 1);
      }
      const byDecider = Object.fromEntries(
        DECIDED_BY.map((by) => [by, waits(list.filter((f) => f.by === by))]),
      ) as Record<DecidedBy, Waits>;
      return {
        route,
        decisions: list.length,
        waits: waits(list),
        byDecider,
        timeouts: list.filter((f) => f.by === 'timeout').length,
        stepsFired: list.reduce((sum, f) => sum + f.steps, 0),
        byGrant: list.filter((f) => f.by === 'grant').length,
        slaTracked: list.filter((f) => f.slaTracked).length,
        slaBreached: list.filter((f) => f.slaBreached).length,
        tools: ranked(tools),
        commands: ranked(commands),
      };
    });
}

const PROGRAM = /^[A-Za-z0-9._+-]{1,40}$/;
/** A subcommand's shape: a lower-case word, never a path, a host or a file name (no dots). */
const SUBCOMMAND = /^[a-z][a-z0-9-]{0,30}$/;
/**
 * Programs whose first word is a subcommand. Of any other program the second word is an argument
 * (`ssh db01`, `cat secrets`), which may name a host, a file or worse: only the program is kept.
 */
const WITH_SUBCOMMANDS = new Set([
  'apt',
  'apt-get',
  'aws',
  'az',
  'brew',
  'bun',
  'bundle',
  'cargo',
  'composer',
  'deno',
  'docker',
  'dotnet',
  'gcloud',
  'gh',
  'git',
  'go',
  'gradle',
  'helm',
  'kubectl',
  'make',
  'mvn',
  'npm',
  'pip',
  'pip3',
  'pnpm',
  'poetry',
  'podman',
  'rails',
  'rake',
  'systemctl',
  'terraform',
  'uv',
  'yarn',
]);

/**
 * "git push" for a shell request: the first stage's program (its base name) and, for a program
 * known to take subcommands, the next word when it looks like one. Nothing else of the command
 * line is kept: arguments may hold paths, hosts or secrets, and the audit stream is read by more
 * people than the card.
 */
export function commandOf(subject: Pick<ApprovalSubject, 'kind' | 'stages' | 'command'>): string | undefined {
  if (subject.kind !== 'shell') return undefined;
  const argv = subject.stages?.[0]?.argv ?? subject.command?.trim().split(/\s+/) ?? [];
  const program = argv[0]?.split('/').pop();
  if (!program || !PROGRAM.test(program)) return undefined;
  const sub = argv[1];
  return sub && WITH_SUBCOMMANDS.has(program) && SUBCOMMAND.test(sub) ? `${program} ${sub}` : program;
}

/**
 * How long the request waited: from its clock's start (the first card's) to the decision, both by
 * the bot's clock. The host's `decidedAt` stands in only for a record resolved before the bot kept
 * its own time (`recordedAt`): the host's clock may be skewed, or give whole seconds.
 */
export function waitedFor(
  record: Pick<ApprovalRecord, 'openedAt' | 'escalation'> & {
    resolution?: Pick<Resolution, 'decidedAt' | 'recordedAt'>;
  },
  now?: Date,
): number | undefined {
  const start = Date.parse(record.escalation?.startedAt ?? record.openedAt);
  const { resolution } = record;
  const end = resolution ? Date.parse(resolution.recordedAt ?? resolution.decidedAt) : now?.getTime();
  if (end === undefined || Number.isNaN(start) || Number.isNaN(end)) return undefined;
  return Math.max(0, end - start);
}
