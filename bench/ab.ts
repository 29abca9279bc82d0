// npm run bench:ab -- <build> <build> … [--rounds N] [--count N]: the throughput scenario's rounds
// with several builds of the bot interleaved in each round (floor, then each build, the order
// reversed every other round), each against that round's floor. On a shared machine a 5–10 %
// difference does not show between two `npm run bench` runs made one after the other: the load
// moves more than that between them. A build is a directory under the project holding a compiled
// bot (`main.js`), such as a `dist/` of another commit copied to `dist-before/`; `dist` is this one.

import { parseArgs } from 'node:util';
import { cpuMs, pinBenchOffMeasuredCore, untilIdle } from './lib/system.js';
import { TOOLS, World } from './lib/world.js';
import { runBatch } from './scenarios/relayLatency.js';
import { median } from './scenarios/throughput.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { rounds: { type: 'string', default: '5' }, count: { type: 'string', default: '3000' } },
});
const builds = positionals.length > 0 ? positionals : ['dist'];
const rounds = Number(values.rounds);
const count = Number(values.count);
const WARMUP = 1000;

interface Measured {
  perSecond: number;
  cpuMs: number;
}

pinBenchOffMeasuredCore();
const world = await World.start();

/** A warm-up batch, then the measured one; batch prefixes are letters then digits (PostTracker). */
async function measure(pid: number, side: string, round: number): Promise<Measured> {
  await runBatch(world, `${side}w${round}`, WARMUP, 0, TOOLS);
  await untilIdle(pid);
  const before = cpuMs(pid);
  const run = await runBatch(world, `${side}${round}`, count, 0, TOOLS);
  await untilIdle(pid);
  return { perSecond: run.perSecond, cpuMs: (cpuMs(pid) - before) / count };
}

const floors: Measured[] = [];
const measured = new Map<string, Measured[]>(builds.map((b) => [b, []]));
const letters = (i: number) => `ab${String.fromCharCode(97 + i)}`;
try {
  for (let r = 0; r < rounds; r++) {
    const floor = await world.startFloor('relay-floor.mjs', { FLOOR_MODE: 'webclient' });
    try {
      floors.push(await measure(floor.proc.pid!, 'abfloor', r));
    } finally {
      await floor.stop();
    }
    const order = r % 2 ? [...builds].reverse() : builds;
    for (const build of order) {
      // Each build on an empty database, as the floor had it (startFloor empties it).
      await (await world.startFloor('relay-floor.mjs', { FLOOR_MODE: 'webclient' })).stop();
      process.env.BENCH_BOT_ENTRY = `${build}/main.js`;
      const bot = await world.startBot();
      try {
        measured.get(build)!.push(await measure(bot.proc.pid!, letters(builds.indexOf(build)), r));
      } finally {
        await bot.stop();
      }
    }
    const f = floors[r]!;
    const cells = builds.map((b) => {
      const m = measured.get(b)![r]!;
      return `${b} ${(m.perSecond / f.perSecond).toFixed(2)}× / ${(f.cpuMs / m.cpuMs).toFixed(2)}×`;
    });
    console.log(
      `round ${r + 1}: floor ${Math.round(f.perSecond)}/s, ${f.cpuMs.toFixed(3)} ms · ${cells.join(' · ')}`,
    );
  }
  console.log('medians over the rounds (throughput / CPU share against the floor; bot CPU per approval):');
  for (const build of builds) {
    const runs = measured.get(build)!;
    const share = median(runs.map((m, i) => m.perSecond / floors[i]!.perSecond));
    const cpu = median(runs.map((m, i) => floors[i]!.cpuMs / m.cpuMs));
    const ms = median(runs.map((m) => m.cpuMs));
    console.log(`  ${build}: ${share.toFixed(2)}× / ${cpu.toFixed(2)}×; ${ms.toFixed(3)} ms`);
  }
} finally {
  delete process.env.BENCH_BOT_ENTRY;
  await world.close();
}
