import { burstRatio, GOAL, type Goals, GRANT_GOAL, ROUND_TRIP_GOAL, youngGeneration } from './lib/goals.js';
import type { Summary } from './lib/stats.js';
import type { BurstResult } from './scenarios/burst.js';
import type { GrantResult } from './scenarios/grantLatency.js';
import type { RedisCost } from './scenarios/redisCost.js';
import type { ReplicasResult } from './scenarios/replicas.js';
import { SCALE_LIMIT, type ScaleCheck, type ScaleRow } from './scenarios/scale.js';
import type { ThroughputResult } from './scenarios/throughput.js';

// The table `npm run bench` prints (Markdown, so docs/performance.md can quote it).

interface Row {
  measure: string;
  bot: string;
  floor: string;
  ratio: string;
  target: string;
  met?: boolean;
}

const ms = (n: number) => `${n.toFixed(2)} ms`;
const x = (n: number) => `${n.toFixed(2)}×`;

// biome-ignore lint/suspicious/noExplicitAny: the results object is built in run.ts and only read here
export function rows(r: any): Row[] {
  const relayBot: Summary = r.relay.bot;
  const relayFloor: Summary = r.relay.floor;
  const relayRaw: Summary = r.relay.rawFloor;
  return [
    {
      measure: `relay p50 (${r.relay.ratePerSec}/s)`,
      bot: ms(relayBot.p50Ms),
      floor: ms(relayFloor.p50Ms),
      ratio: x(r.relay.p50Ratio),
      target: `≤ ${GOAL.relayP50Ratio}×`,
      met: r.relay.p50Ratio <= GOAL.relayP50Ratio,
    },
    {
      measure: 'relay p99',
      bot: ms(relayBot.p99Ms),
      floor: ms(relayFloor.p99Ms),
      ratio: x(r.relay.p99Ratio),
      target: '≤ 2×',
      met: r.relay.p99Ratio <= 2,
    },
    {
      measure: 'relay max',
      bot: ms(relayBot.maxMs),
      floor: ms(relayFloor.maxMs),
      ratio: x(r.relay.maxRatio),
      target: '',
    },
    {
      measure: 'floor: Web API client vs raw http, p50',
      bot: ms(relayFloor.p50Ms),
      floor: ms(relayRaw.p50Ms),
      ratio: x(r.relay.floorVsRawP50Ratio),
      target: '',
    },
    {
      measure: 'click → decide p50',
      bot: ms(r.click.bot.p50Ms),
      floor: ms(r.click.floor.p50Ms),
      ratio: x(r.click.p50Ratio),
      target: `≤ ${GOAL.clickP50Ratio}×`,
      met: r.click.p50Ratio <= GOAL.clickP50Ratio,
    },
    {
      measure: 'click → decide p99',
      bot: ms(r.click.bot.p99Ms),
      floor: ms(r.click.floor.p99Ms),
      ratio: x(r.click.p99Ratio),
      target: '',
    },
    ...throughputRows(r.throughput),
    {
      measure: 'Redis round trips per approval',
      bot: String(r.redis.roundTripsPerApproval),
      floor: '1',
      ratio: '',
      target: '≤ 3',
      met: r.redis.roundTripsPerApproval <= 3,
    },
    {
      measure: 'Redis round trips per click (at the owner)',
      bot: String(r.redis.roundTripsPerClick),
      floor: '1',
      ratio: '',
      target: `≤ ${ROUND_TRIP_GOAL.perClick}`,
      met: r.redis.roundTripsPerClick <= ROUND_TRIP_GOAL.perClick,
    },
    {
      measure: 'Redis round trips per resolution (with its notices)',
      bot: String(r.redis.roundTripsPerResolution),
      floor: '',
      ratio: '',
      target: `≤ ${ROUND_TRIP_GOAL.perResolution}`,
      met: r.redis.roundTripsPerResolution <= ROUND_TRIP_GOAL.perResolution,
    },
    {
      measure: 'Redis commands per approval / click / resolution',
      bot: `${r.redis.commandsPerApproval} / ${r.redis.commandsPerClick} / ${r.redis.commandsPerResolution}`,
      floor: '1 / 1 / –',
      ratio: '',
      target: '',
    },
    {
      measure: `memory growth (RSS), ${r.memory.pending} pending; young generation: ${youngGeneration()}`,
      bot: `${r.memory.growthMB} MB (heap ${r.memory.heapGrowthMB} MB)`,
      floor: `idle ${r.memory.idleMB} MB (heap ${r.memory.heapIdleMB} MB)`,
      ratio: '',
      target: `≤ ${GOAL.rssGrowthMB} MB`,
      met: r.memory.growthMB <= GOAL.rssGrowthMB,
    },
    ...(r.scale ? scaleRows(r.scale, r.scaleCheck) : []),
    ...burstRows(r.burst),
    ...grantRows(r.grant, relayFloor),
    ...replicaRows(r.replicas),
  ];
}

/** The bursts under Slack's per-channel limit: nothing lost, doubled or late, at the channels' pace. */
export function burstRows(b: BurstResult & { withGrants?: BurstResult }): Row[] {
  return [
    ...oneBurstRows(b, 'burst'),
    ...(b.withGrants ? oneBurstRows(b.withGrants, 'burst, a grant answering half') : []),
  ];
}

function oneBurstRows(b: BurstResult, name: string): Row[] {
  const cards = b.approvals - (b.granted ?? 0);
  return [
    {
      measure: `${name}: ${b.approvals} over ${b.channels} channels at ${b.perChannelPerSecond}/s each — lost / duplicated / out of order${b.granted ? ' / cards of granted' : ''}`,
      bot: `${b.lost} / ${b.duplicated} / ${b.outOfOrder}${b.granted ? ` / ${b.cardsOfGranted}` : ''}`,
      floor: '',
      ratio: '',
      target: b.granted ? '0 / 0 / 0 / 0' : '0 / 0 / 0',
      met: b.lost + b.duplicated + b.outOfOrder + (b.cardsOfGranted ?? 0) === 0,
    },
    {
      measure: `${name}: updates refused / cards left stale`,
      bot: `${b.failedUpdates} / ${b.staleCards}`,
      floor: '',
      ratio: '',
      target: '0 / 0',
      met: b.failedUpdates + b.staleCards === 0,
    },
    {
      measure: `${name}: lines posted / due, after the cards (seconds to the last)`,
      bot: `${b.lines} / ${b.linesExpected} (${b.linesSeconds} s)`,
      floor: '',
      ratio: '',
      target: 'all',
      met: b.lines === b.linesExpected,
    },
    {
      measure: `${name}: seconds to the last of ${cards} cards (429s answered)`,
      bot: `${b.seconds} s (${b.rateLimited})`,
      floor: `${b.idealSeconds} s per channel at its limit; ${b.serialSeconds} s if one 429 paused all`,
      ratio: x(burstRatio(b)),
      target: `≤ ${GOAL.burstRatio}×`,
      met: burstRatio(b) <= GOAL.burstRatio,
    },
  ];
}

const count = (n: number) => n.toLocaleString('en-US');

/** `event max ms` for each latency event, and the slowest logged command: `none` when Redis logged nothing. */
function stallsOf(s: GrantResult['runs'][number]['redisStalls']): string {
  const events = s.events.map((e) => `${e.event} ${e.maxMs} ms`);
  const slowest = s.slowest[0];
  if (slowest) events.push(`${s.slowCommands} slow, worst ${slowest.command} ${slowest.ms.toFixed(1)} ms`);
  return events.length === 0 ? 'none' : events.join(', ');
}

/** Bot against the same-client floor, the medians of the interleaved rounds and each round. */
export function throughputRows(
  t: ThroughputResult & { rawFloorPerSecond: number; floorVsRawShare: number },
): Row[] {
  const each = (f: (round: ThroughputResult['rounds'][number]) => number | string) =>
    t.rounds.map(f).join(' / ');
  return [
    {
      measure: `throughput (approvals/s, one core), median of ${t.rounds.length} rounds`,
      bot: String(t.perSecond),
      floor: String(t.floorPerSecond),
      ratio: x(t.floorShare),
      target: `≥ ${GOAL.throughputShare.toFixed(2)}×`,
      met: t.floorShare >= GOAL.throughputShare,
    },
    {
      measure: 'throughput, each round (floor, then bot)',
      bot: each((round) => round.botPerSecond),
      floor: each((round) => round.floorPerSecond),
      ratio: each((round) => x(round.share)),
      target: '',
    },
    {
      measure: `CPU per approval (user + system, measured batch), median of ${t.rounds.length} rounds; ratio: floor / bot`,
      bot: ms(t.cpuMsPerApproval.bot),
      floor: ms(t.cpuMsPerApproval.floor),
      ratio: x(t.cpuShare),
      target: `≥ ${GOAL.cpuShare.toFixed(2)}×`,
      met: t.cpuShare >= GOAL.cpuShare,
    },
    {
      measure: 'CPU per approval, each round',
      bot: each((round) => ms(round.cpuMsPerApproval.bot)),
      floor: each((round) => ms(round.cpuMsPerApproval.floor)),
      ratio: '',
      target: '',
    },
    {
      measure: 'floor throughput: Web API client vs raw http',
      bot: String(t.floorPerSecond),
      floor: String(t.rawFloorPerSecond),
      ratio: x(t.floorVsRawShare),
      target: '',
    },
  ];
}

/** One row per pending count, then the largest count against the smallest. */
export function scaleRows(scale: ScaleRow[], check: ScaleCheck): Row[] {
  const first = scale[0]!;
  const last = scale[scale.length - 1]!;
  const versus = `${count(last.pending)} vs ${count(first.pending)} pending`;
  return [
    ...scale.map((row) => ({
      measure: `${count(row.pending)} pending: relay p50 (p99) · bot RSS after GC · Redis per pending (filled at ${count(row.fillPerSecond)}/s)`,
      bot: `${ms(row.relayP50Ms)} (${ms(row.relayP99Ms)}) · ${row.rssMB} MB · ${count(row.redisBytesPerPending)} B`,
      floor: '',
      ratio: '',
      target: '',
    })),
    {
      measure: `relay p50, ${versus}`,
      bot: ms(last.relayP50Ms),
      floor: ms(first.relayP50Ms),
      ratio: x(check.relayP50Ratio),
      target: `no growth (≤ ${SCALE_LIMIT}×)`,
      met: check.relayP50Ratio <= SCALE_LIMIT,
    },
    {
      measure: `Redis bytes per pending approval, ${versus}`,
      bot: `${count(last.redisBytesPerPending)} B`,
      floor: `${count(first.redisBytesPerPending)} B`,
      ratio: x(check.redisBytesPerPendingRatio),
      target: `no growth (≤ ${SCALE_LIMIT}×)`,
      met: check.redisBytesPerPendingRatio <= SCALE_LIMIT,
    },
  ];
}

/** One line per goal of issue 14: the run's figure, the goal, met or not. */
// biome-ignore lint/suspicious/noExplicitAny: see rows()
export function printGoals(results: any): void {
  const g: Goals = results.goals;
  const line = (name: string, figure: string, goal: string, met: boolean) =>
    `- ${name}: ${figure} (goal ${goal}): ${met ? 'met' : '**not met**'}`;
  const lines = [
    '',
    `Goals${g.met ? '' : ' (not all met)'}:`,
    line(
      'throughput, bot / same-client floor',
      x(g.throughputShare),
      `≥ ${GOAL.throughputShare}×`,
      g.throughputShare >= GOAL.throughputShare,
    ),
    line('CPU per approval, floor / bot', x(g.cpuShare), `≥ ${GOAL.cpuShare}×`, g.cpuShare >= GOAL.cpuShare),
    line(
      'relay p50, bot / floor',
      x(g.relayP50Ratio),
      `≤ ${GOAL.relayP50Ratio}×`,
      g.relayP50Ratio <= GOAL.relayP50Ratio,
    ),
    line(
      'click → decide p50, bot / floor',
      x(g.clickP50Ratio),
      `≤ ${GOAL.clickP50Ratio}×`,
      g.clickP50Ratio <= GOAL.clickP50Ratio,
    ),
    line(
      `RSS growth with ${count(results.memory?.pending ?? Number.NaN)} pending, young generation ${g.youngGeneration}`,
      `${g.rssGrowthMB} MB`,
      `≤ ${GOAL.rssGrowthMB} MB`,
      g.rssGrowthMB <= GOAL.rssGrowthMB,
    ),
  ];
  const redis: RedisCost | undefined = results.redis;
  if (redis)
    lines.push(
      line(
        'Redis round trips per resolution / per click at the owner',
        `${redis.roundTripsPerResolution} / ${redis.roundTripsPerClick}`,
        `≤ ${ROUND_TRIP_GOAL.perResolution} / ≤ ${ROUND_TRIP_GOAL.perClick}`,
        redis.roundTripsPerResolution <= ROUND_TRIP_GOAL.perResolution &&
          redis.roundTripsPerClick <= ROUND_TRIP_GOAL.perClick,
      ),
    );
  const standby: number | undefined = results.replicas?.standbyClickP50Ratio;
  if (standby !== undefined)
    lines.push(
      line(
        'click at a standby (forwarded) / at the owner, p50',
        x(standby),
        `≤ ${ROUND_TRIP_GOAL.standbyClickP50Ratio}×`,
        standby <= ROUND_TRIP_GOAL.standbyClickP50Ratio,
      ),
    );
  if (g.burstRatio !== undefined)
    lines.push(
      line(
        'burst under the per-channel limit, seconds / ideal (plain; a grant answering half)',
        `${x(g.burstRatio)}; ${x(g.burstWithGrantsRatio)}`,
        `≤ ${GOAL.burstRatio}× each`,
        g.burstRatio <= GOAL.burstRatio && g.burstWithGrantsRatio <= GOAL.burstRatio,
      ),
    );
  const check: ScaleCheck | undefined = results.scaleCheck;
  if (check)
    lines.push(
      line(
        'how cost grows: relay p50 and Redis bytes per pending, largest count / smallest',
        `${x(check.relayP50Ratio)} and ${x(check.redisBytesPerPendingRatio)}`,
        `≤ ${SCALE_LIMIT}× each`,
        check.met,
      ),
    );
  process.stdout.write(`${lines.join('\n')}\n`);
}

/**
 * Auto-decide by grant: the largest count against the single grant's run (same bot, same run)
 * and against the relay floor (one Redis write and one post per approval, same rate).
 */
export function grantRows(g: GrantResult, relayFloor: Summary): Row[] {
  const runs = g.runs;
  const base = runs[0]!;
  const counts = runs.map((run) => count(run.grants)).join(' / ');
  const each = (f: (run: GrantResult['runs'][number]) => number | string) => runs.map(f).join(' / ');
  const approvals = runs.reduce((a, run) => a + run.approvals, 0);
  const once = runs.reduce((a, run) => a + run.autoDecidedOnce, 0);
  const cards = runs.reduce((a, run) => a + run.cards + run.otherDecides, 0);
  const commands = runs.map((run) => run.redisCommandsPerApproval);
  return [
    {
      measure: `auto-decide by grant p99 (${g.ratePerSec}/s), ${count(g.grants)} grants stored`,
      bot: ms(g.p99Ms),
      floor: `relay floor ${ms(relayFloor.p99Ms)}`,
      ratio: x(g.p99Ratio),
      target: `≤ ${GRANT_GOAL.p99Ratio}×`,
      met: g.p99Ratio <= GRANT_GOAL.p99Ratio,
    },
    {
      measure: `auto-decide p99: ${count(g.grants)} vs ${count(base.grants)} grant stored`,
      bot: ms(g.p99Ms),
      floor: ms(base.p99Ms),
      ratio: x(g.p99GrowthRatio),
      target: 'no growth (≤ 1.5×)',
      met: g.p99GrowthRatio <= 1.5,
    },
    {
      measure: `auto-decide p50, ${counts} grants stored`,
      bot: each((run) => ms(run.p50Ms)),
      floor: `relay floor ${ms(relayFloor.p50Ms)}`,
      ratio: x(g.p50Ms / relayFloor.p50Ms),
      target: '',
    },
    {
      measure: `grant lookup alone p99 (one Redis round trip), ${counts} grants; ratio: last over first`,
      bot: each((run) => ms(run.lookup.p99Ms)),
      floor: '',
      ratio: x(g.lookupP99GrowthRatio),
      target: '',
    },
    {
      measure: `Redis alone: PING p99 at the same pace, same windows, ${counts} grants; ratio: last over first`,
      bot: each((run) => ms(run.redisPing.p99Ms)),
      floor: '',
      ratio: x(g.redisPingP99GrowthRatio),
      target: '',
    },
    {
      measure: `Redis commands per auto-decided approval (less the bot's traffic at rest), ${counts} grants`,
      bot: each((run) => run.redisCommandsPerApproval),
      floor: '',
      ratio: '',
      target: `≤ ${GRANT_GOAL.commandsPerApproval}, the same (± 10 %)`,
      met:
        g.commandsPerApproval <= GRANT_GOAL.commandsPerApproval &&
        Math.max(...commands) <= 1.1 * Math.min(...commands),
    },
    {
      measure: `Redis round trips per auto-decided approval (less the bot's traffic at rest), ${counts} grants`,
      bot: each((run) => run.redisRoundTripsPerApproval),
      floor: '',
      ratio: '',
      target: `≤ ${GRANT_GOAL.roundTripsPerApproval}`,
      met: g.roundTripsPerApproval <= GRANT_GOAL.roundTripsPerApproval,
    },
    {
      measure: `Redis bytes per grant (used_memory grown by seeding), ${counts} grants`,
      bot: each((run) => count(run.redisBytesPerGrant)),
      floor: '',
      ratio: '',
      target: `≤ ${GRANT_GOAL.redisBytesPerGrant} B`,
      met: g.redisBytesPerGrant <= GRANT_GOAL.redisBytesPerGrant,
    },
    {
      measure: `Redis stalls during each batch (LATENCY LATEST worst, slowlog ≥ 2 ms), ${counts} grants`,
      bot: each((run) => stallsOf(run.redisStalls)),
      floor: '',
      ratio: '',
      target: '',
    },
    {
      measure: 'approvals auto-decided once / cards or other decides',
      bot: `${once} of ${approvals} / ${cards}`,
      floor: '',
      ratio: '',
      target: `${approvals} / 0`,
      met: once === approvals && cards === 0,
    },
  ];
}

/**
 * Three replicas against one (same host, same run, same core). The figure in the bot column is
 * three replicas', the floor column one replica's.
 */
export function replicaRows(r: ReplicasResult): Row[] {
  const { one, three } = r;
  const takeovers = r.takeovers.map((t) => `${t.leaseLeftMs} / ${t.hostMs} / ${t.decideMs}`).join(', ');
  return [
    {
      measure: 'replicas: throughput (approvals/s, one host), 3 replicas vs 1',
      bot: String(three.throughputPerSec),
      floor: `1 replica: ${one.throughputPerSec}`,
      ratio: x(r.ratios.throughput),
      target: 'one owner relays: ≈ 1×',
    },
    {
      measure: `replicas: click → decide p50, clicks round-robin (${three.forwardedClicks} of ${three.n} forwarded)`,
      bot: ms(three.clickP50Ms),
      floor: `1 replica: ${ms(one.clickP50Ms)}`,
      ratio: x(r.ratios.clickP50),
      target: '',
    },
    {
      measure: 'replicas: click → decide p99, clicks round-robin',
      bot: ms(three.clickP99Ms),
      floor: `1 replica: ${ms(one.clickP99Ms)}`,
      ratio: x(r.ratios.clickP99),
      target: '',
    },
    {
      measure: 'replicas: click → decide p50, at a standby (forwarded) / at the owner',
      bot: `${ms(three.forwardedClickP50Ms ?? Number.NaN)} / ${ms(three.ownerClickP50Ms ?? Number.NaN)}`,
      floor: '',
      ratio: x(r.standbyClickP50Ratio),
      target: `≤ ${ROUND_TRIP_GOAL.standbyClickP50Ratio}×`,
      met: r.standbyClickP50Ratio <= ROUND_TRIP_GOAL.standbyClickP50Ratio,
    },
    {
      measure: `replicas: takeover after SIGKILL of the owner, to its new host process (median of ${r.takeovers.length}; lease left at the kill / new host / decide, ms: ${takeovers})`,
      bot: `${r.takeoverMs} ms`,
      floor: `lease ${r.leaseTtlMs} ms`,
      ratio: x(r.takeoverOverLease),
      target: '≤ 1.3× the lease',
      met: r.takeoverOverLease <= 1.3,
    },
    {
      measure: 'replicas: takeover, to the first decide through the new host (a click sent at the kill)',
      bot: `${r.takeoverDecideMs} ms`,
      floor: `lease ${r.leaseTtlMs} ms`,
      ratio: x(r.takeoverDecideOverLease),
      target: '',
    },
    {
      measure: 'replicas: takeover, from the lease running out to the new host process',
      bot: `${r.takeoverAfterLeaseMs} ms`,
      floor: `lease ${r.leaseTtlMs} ms`,
      ratio: x(r.takeoverAfterLeaseMs / r.leaseTtlMs),
      target: '',
    },
    {
      measure: 'replicas: cards / decides, 1 and 3 replicas (duplicates)',
      bot: `${three.cards} of ${three.approvals} / ${three.decides} of ${three.clicks} (${three.duplicateCards + three.duplicateDecides})`,
      floor: `${one.cards} of ${one.approvals} / ${one.decides} of ${one.clicks} (${one.duplicateCards + one.duplicateDecides})`,
      ratio: '',
      target: 'every one once',
      met:
        [one, three].every((run) => run.cards === run.approvals && run.decides === run.clicks) &&
        one.duplicateCards + one.duplicateDecides + three.duplicateCards + three.duplicateDecides === 0,
    },
  ];
}

// biome-ignore lint/suspicious/noExplicitAny: see rows()
export function printTable(results: any): void {
  printRows(rows(results));
}

export function printRows(table: Row[]): void {
  const lines = [
    '| measure | Countersign | floor | ratio | target | met |',
    '|---|---|---|---|---|---|',
    ...table.map(
      (r) =>
        `| ${r.measure} | ${r.bot} | ${r.floor} | ${r.ratio} | ${r.target} | ${r.met === undefined ? '' : r.met ? 'yes' : '**no**'} |`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
