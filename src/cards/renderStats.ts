import type { KnownBlock } from '@slack/types';
import {
  DECIDED_BY,
  type DecidedBy,
  type Ranked,
  type RouteStats,
  TOP_RANKED,
  type Waits,
} from '../domain/decisionStats.js';
import type { RenderedMessage } from '../domain/messages.js';
import { shortDuration } from '../util/shortDuration.js';
import { context, header, packSections, section } from './blocks.js';
import { clip, inlineCode } from './escape.js';

// Decision analytics as Slack shows them: /countersign stats as a message with one table block
// (a table is allowed in messages only, one per message, at most 100 rows of 20 cells), and a
// short App Home section in plain sections. Route names come from the config file and tools and
// commands from the agent: all of it is escaped or goes into raw_text cells, which Slack never
// formats.

/** What one user may see of a window's stats. */
export interface StatsView {
  /** "7d" or "30d". */
  window: string;
  /** The routes the user approves on (every route for an admin), by name. */
  routes: readonly RouteStats[];
  /** The read stopped at its cap: the window's oldest decisions are not counted. */
  capped: boolean;
  read: number;
}

/** A table holds 100 rows; one is the header. */
export const MAX_STATS_ROWS = 99;
/** The App Home names this many routes; /countersign stats has the rest. */
export const MAX_HOME_STATS_ROUTES = 5;

const BY_LABEL: Record<DecidedBy, string> = {
  person: 'Person',
  grant: 'Grant',
  timeout: 'Timeout',
  policy: 'Policy',
};

/** "0.4s", "12s", "3 min": a wait, precise enough at the short end where grants answer. */
export function formatWait(ms: number | undefined): string {
  if (ms === undefined) return '–';
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)}s`;
  return shortDuration(ms);
}

function pair(waits: Waits): string {
  return waits.count === 0 ? '–' : `${formatWait(waits.p50)} / ${formatWait(waits.p90)}`;
}

function percent(part: number, whole: number): string {
  return whole === 0 ? '–' : `${Math.round((100 * part) / whole)}%`;
}

/** Past its SLA: "2 of 5", or "–" on a route without an `sla`. */
function slaCell(route: RouteStats): string {
  return route.slaTracked === 0 ? '–' : `${route.slaBreached} of ${route.slaTracked}`;
}

function cell(text: string) {
  return { type: 'raw_text', text: clip(text, 200) };
}

const COLUMNS = [
  'Route',
  'Decided',
  'p50',
  'p90',
  ...DECIDED_BY.map((by) => `${BY_LABEL[by]} p50/p90`),
  'Timeouts',
  'Steps fired',
  'By grant',
  'Grant hit rate',
  'Past SLA',
];

function row(route: RouteStats): string[] {
  return [
    route.route,
    String(route.decisions),
    formatWait(route.waits.p50),
    formatWait(route.waits.p90),
    ...DECIDED_BY.map((by) => pair(route.byDecider[by])),
    String(route.timeouts),
    String(route.stepsFired),
    String(route.byGrant),
    percent(route.byGrant, route.decisions),
    slaCell(route),
  ];
}

/** Counts of the same name across routes, most first. */
function merged(lists: ReadonlyArray<readonly Ranked[]>): Ranked[] {
  const counts = new Map<string, number>();
  for (const list of lists) for (const r of list) counts.set(r.name, (counts.get(r.name) ?? 0) + r.count);
  return [...counts]
    .map(([name, count]) => ({ name, count }))
    .sort((a, b) => b.count - a.count || a.name.localeCompare(b.name))
    .slice(0, TOP_RANKED);
}

function rankedLine(title: string, ranked: readonly Ranked[]): string {
  if (ranked.length === 0) return `*${title}:* none`;
  return `*${title}:* ${ranked.map((r) => `${inlineCode(r.name, 60)} ×${r.count}`).join(', ')}`;
}

function cappedNote(view: StatsView): string[] {
  return view.capped
    ? [`Only the newest ${view.read} audit entries were read: older decisions of the window are left out.`]
    : [];
}

/** The answer to `/countersign stats`, for a user who approves on at least one route. */
export function renderStats(view: StatsView): RenderedMessage {
  const title = `Decisions in the last ${view.window === '30d' ? '30 days' : '7 days'}`;
  if (view.routes.length === 0) {
    const text = `${title}: none on your routes.`;
    return { text, blocks: [section(text)] };
  }
  const shown = view.routes.slice(0, MAX_STATS_ROWS);
  const blocks: KnownBlock[] = [
    header(title),
    {
      type: 'table',
      column_settings: [{ is_wrapped: true }],
      rows: [COLUMNS.map(cell), ...shown.map((r) => row(r).map(cell))],
    } as unknown as KnownBlock,
    ...packSections([
      rankedLine('Most requested tools', merged(view.routes.map((r) => r.tools))),
      rankedLine('Most requested commands', merged(view.routes.map((r) => r.commands))),
    ]),
  ];
  const notes = [
    'Wait: from the card to the decision. Grant hit rate: decisions a remembered grant made, of all.',
    ...cappedNote(view),
    ...(view.routes.length > shown.length
      ? [`${view.routes.length - shown.length} more routes left out.`]
      : []),
  ];
  blocks.push(context(notes));
  const total = view.routes.reduce((sum, r) => sum + r.decisions, 0);
  return { text: `${title}: ${total} on ${view.routes.length} route(s).`, blocks };
}

/** One route in a line, for App Home. */
function homeLine(route: RouteStats): string {
  const parts = [
    `*${clip(route.route, 80)}*: ${route.decisions} decided`,
    `p50 ${formatWait(route.waits.p50)}, p90 ${formatWait(route.waits.p90)}`,
    `${route.byGrant} by grant (${percent(route.byGrant, route.decisions)})`,
    `${route.timeouts} timed out`,
    `${route.stepsFired} escalation steps`,
  ];
  if (route.slaTracked > 0) parts.push(`${route.slaBreached} past SLA`);
  return parts.join(' · ');
}

/** The App Home section: nothing at all for a user who approves on no route. */
export function renderHomeStats(view: StatsView | undefined): KnownBlock[] {
  if (!view || view.routes.length === 0) return [];
  const blocks: KnownBlock[] = [header('Your routes, last 7 days')];
  const shown = view.routes.slice(0, MAX_HOME_STATS_ROUTES);
  blocks.push(...packSections(shown.map(homeLine)));
  const notes = [...cappedNote(view)];
  if (view.routes.length > shown.length)
    notes.push(`…and ${view.routes.length - shown.length} more routes: /countersign stats`);
  else notes.push('More in /countersign stats [route] [7d|30d].');
  blocks.push(context(notes));
  return blocks;
}
