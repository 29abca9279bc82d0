import type { Summary } from './lib/stats.js';

// The table `npm run bench` prints (Markdown, so README's Performance section can quote it).

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
  const b = r.burst;
  return [
    {
      measure: `relay p50 (${r.relay.ratePerSec}/s)`,
      bot: ms(relayBot.p50Ms),
      floor: ms(relayFloor.p50Ms),
      ratio: x(r.relay.p50Ratio),
      target: '≤ 1.5×',
      met: r.relay.p50Ratio <= 1.5,
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
      target: '≤ 1.5×',
      met: r.click.p50Ratio <= 1.5,
    },
    {
      measure: 'click → decide p99',
      bot: ms(r.click.bot.p99Ms),
      floor: ms(r.click.floor.p99Ms),
      ratio: x(r.click.p99Ratio),
      target: '',
    },
    {
      measure: 'throughput (approvals/s, one core)',
      bot: String(r.throughput.perSecond),
      floor: String(r.throughput.floorPerSecond),
      ratio: x(r.throughput.floorShare),
      target: '≥ 0.70×',
      met: r.throughput.floorShare >= 0.7,
    },
    {
      measure: 'floor throughput: Web API client vs raw http',
      bot: String(r.throughput.floorPerSecond),
      floor: String(r.throughput.rawFloorPerSecond),
      ratio: x(r.throughput.floorVsRawShare),
      target: '',
    },
    {
      measure: 'Redis round trips per approval',
      bot: String(r.redis.roundTripsPerApproval),
      floor: '1',
      ratio: '',
      target: '≤ 3',
      met: r.redis.roundTripsPerApproval <= 3,
    },
    {
      measure: 'Redis round trips per click',
      bot: String(r.redis.roundTripsPerClick),
      floor: '1',
      ratio: '',
      target: '≤ 3',
      met: r.redis.roundTripsPerClick <= 3,
    },
    {
      measure: 'Redis round trips per resolution',
      bot: String(r.redis.roundTripsPerResolution),
      floor: '',
      ratio: '',
      target: '',
    },
    {
      measure: 'Redis commands per approval / click / resolution',
      bot: `${r.redis.commandsPerApproval} / ${r.redis.commandsPerClick} / ${r.redis.commandsPerResolution}`,
      floor: '1 / 1 / –',
      ratio: '',
      target: '',
    },
    {
      measure: `memory growth (RSS), ${r.memory.pending} pending`,
      bot: `${r.memory.growthMB} MB (heap ${r.memory.heapGrowthMB} MB)`,
      floor: `idle ${r.memory.idleMB} MB (heap ${r.memory.heapIdleMB} MB)`,
      ratio: '',
      target: '≤ 50 MB',
      met: r.memory.growthMB <= 50,
    },
    {
      measure: `burst: ${b.approvals} over ${b.channels} channels at ${b.perChannelPerSecond}/s each — lost / duplicated / out of order`,
      bot: `${b.lost} / ${b.duplicated} / ${b.outOfOrder}`,
      floor: '',
      ratio: '',
      target: '0 / 0 / 0',
      met: b.lost + b.duplicated + b.outOfOrder === 0,
    },
    {
      measure: 'burst: updates refused / cards left stale',
      bot: `${b.failedUpdates} / ${b.staleCards}`,
      floor: '',
      ratio: '',
      target: '0 / 0',
      met: b.failedUpdates + b.staleCards === 0,
    },
    {
      measure: 'burst: seconds (429s answered)',
      bot: `${b.seconds} s (${b.rateLimited})`,
      floor: `${b.idealSeconds} s per channel alone; ${b.serialSeconds} s if one 429 paused all`,
      ratio: '',
      target: 'channels independent',
      met: b.seconds < (b.idealSeconds + b.serialSeconds) / 2,
    },
    { measure: 'auto-decide by grant p99', bot: 'not built yet', floor: '', ratio: '', target: '≤ 5 ms' },
  ];
}

// biome-ignore lint/suspicious/noExplicitAny: see rows()
export function printTable(results: any): void {
  const lines = [
    '| measure | Countersign | floor | ratio | target | met |',
    '|---|---|---|---|---|---|',
    ...rows(results).map(
      (r) =>
        `| ${r.measure} | ${r.bot} | ${r.floor} | ${r.ratio} | ${r.target} | ${r.met === undefined ? '' : r.met ? 'yes' : '**no**'} |`,
    ),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}
