// npm run bench:ab -- <build> <build> … [--rounds N] [--count N] [--warmup N]: the throughput scenario's rounds
// with several builds of the bot interleaved in each round (floor, then each build, the order
// reversed every other round), each against that round's floor. On a shared machine a 5–10 %
// difference does not show between two `npm run bench` runs made one after the other: the load
// moves more than that between them. A build is a directory under the project holding a compiled
// bot (`main.js`), such as a `dist/` of another commit copied to `dist-before/`; `dist` is this one.

import { parseArgs } from 'node:util';
import { pinBenchOffMeasuredCore } from './lib/system.js';
import { World } from './lib/world.js';
import { type Measured, measure, median } from './scenarios/throughput.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    rounds: { type: 'string', default: '5' },
    count: { type: 'string', default: '3000' },
    warmup: { type: 'string', default: '1000' },
  },
});
const builds = positionals.length > 0 ? positionals : ['dist'];
const rounds = Number(values.rounds);
/** The throughput scenario's warm-up and measured batch, unless --warmup and --count say otherwise. */
const batches = { warmup: Number(values.warmup), count: Number(values.count) };

pinBenchOffMeasuredCore();
const world = await World.start();

const floors: Measured[] = [];
const measured = new Map<string, Measured[]>(builds.map((b) => [b, []]));
const letters = (i: number) => `ab${String.fromCharCode(97 + i)}`;
try {
  for (let r = 0; r < rounds; r++) {
    const floor = await world.startFloor('relay-floor.mjs', { FLOOR_MODE: 'webclient' });
    try {
      floors.push(await measure(world, floor.proc.pid!, 'abfloor', r, batches));
    } finally {
      await floor.stop();
    }
    const order = r % 2 ? [...builds].reverse() : builds;
    for (const build of order) {
      // Each build on an empty database, as the floor had it (startFloor empties it).
      await world.redis.flushdb();
      process.env.BENCH_BOT_ENTRY = `${build}/main.js`;
      const bot = await world.startBot();
      try {
        const side = letters(builds.indexOf(build));
        measured.get(build)!.push(await measure(world, bot.proc.pid!, side, r, batches));
      } finally {
        await bot.stop();
      }
    }
    const f = floors[r]!;
    const cells = builds.map((b) => {
      const m = measured.get(b)![r]!;
      return `${b} ${(m.perSecond / f.perSecond).toFixed(2)}× / ${(f.cpuMsPerApproval / m.cpuMsPerApproval).toFixed(2)}×`;
    });
    console.log(
      `round ${r + 1}: floor ${Math.round(f.perSecond)}/s, ${f.cpuMsPerApproval.toFixed(3)} ms · ${cells.join(' · ')}`,
    );
  }
  console.log('medians over the rounds (throughput / CPU share against the floor; bot CPU per approval):');
  for (const build of builds) {
    const runs = measured.get(build)!;
    const share = median(runs.map((m, i) => m.perSecond / floors[i]!.perSecond));
    const cpu = median(runs.map((m, i) => floors[i]!.cpuMsPerApproval / m.cpuMsPerApproval));
    const ms = median(runs.map((m) => m.cpuMsPerApproval));
    console.log(`  ${build}: ${share.toFixed(2)}× / ${cpu.toFixed(2)}×; ${ms.toFixed(3)} ms`);
  }
} finally {
  delete process.env.BENCH_BOT_ENTRY;
  await world.close();
}
