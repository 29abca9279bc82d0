// npm run bench:profile: the throughput run once for the relay floor and once for the bot, each
// under --cpu-prof, and where each one's main thread went per approval, side by side. The
// .cpuprofile files (bench/profiles/) open in Chrome DevTools (Performance → Load profile).

import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../test/support/bot.js';
import { areaTimes } from './lib/profileSummary.js';
import { cpuMs, pinBenchOffMeasuredCore } from './lib/system.js';
import { TOOLS, World } from './lib/world.js';
import { runBatch } from './scenarios/relayLatency.js';

const WARMUP = 1000;
const COUNT = 3000;
const dir = join(PROJECT_ROOT, 'bench', 'profiles');
const profiled = (name: string) => [
  '--cpu-prof',
  `--cpu-prof-dir=${dir}`,
  `--cpu-prof-name=${name}.cpuprofile`,
];

pinBenchOffMeasuredCore();
const world = await World.start();
const stamp = Date.now();
const perApproval: Record<string, number> = {};
try {
  process.env.FLOOR_NODE_ARGS = profiled(`floor-${stamp}`).join(' ');
  const floor = await world.startFloor('relay-floor.mjs', { FLOOR_MODE: 'webclient' });
  await runBatch(world, 'pfw', WARMUP, 0, TOOLS);
  let before = cpuMs(floor.proc.pid!);
  await runBatch(world, 'pfloor', COUNT, 0, TOOLS);
  perApproval.floor = (cpuMs(floor.proc.pid!) - before) / COUNT;
  await floor.stop();
  delete process.env.FLOOR_NODE_ARGS;

  const bot = await world.startBot({}, profiled(`bot-${stamp}`));
  await runBatch(world, 'pbw', WARMUP, 0, TOOLS);
  before = cpuMs(bot.proc.pid!);
  await runBatch(world, 'pbot', COUNT, 0, TOOLS);
  perApproval.bot = (cpuMs(bot.proc.pid!) - before) / COUNT;
  await bot.stop();
} finally {
  await world.close();
}

// The profiles cover the whole process (start-up and warm-up too): shares, then scaled to the
// measured CPU per approval, are the fair comparison.
const files = readdirSync(dir);
const areas = Object.fromEntries(
  (['floor', 'bot'] as const).map((who) => {
    const file = files.find((f) => f === `${who}-${stamp}.cpuprofile`)!;
    const times = areaTimes(join(dir, file));
    const total = [...times.values()].reduce((a, b) => a + b, 0);
    return [who, new Map([...times].map(([area, ms]) => [area, (ms / total) * perApproval[who]! * 1000]))];
  }),
) as Record<'floor' | 'bot', Map<string, number>>;
const names = [...new Set([...areas.bot.keys(), ...areas.floor.keys()])].sort(
  (a, b) => (areas.bot.get(b) ?? 0) - (areas.bot.get(a) ?? 0),
);
const us = (v: number | undefined) => (v === undefined ? '' : `${Math.round(v)}`);
console.log(`| area (µs of CPU per approval) | bot | floor | bot − floor |`);
console.log('|---|---|---|---|');
for (const name of names) {
  const bot = areas.bot.get(name);
  const floor = areas.floor.get(name);
  console.log(`| ${name} | ${us(bot)} | ${us(floor)} | ${us((bot ?? 0) - (floor ?? 0))} |`);
}
console.log(
  `| **total** | ${us(perApproval.bot! * 1000)} | ${us(perApproval.floor! * 1000)} | ${us((perApproval.bot! - perApproval.floor!) * 1000)} |`,
);
process.stderr.write(`[bench] profiles: ${dir}/{bot,floor}-${stamp}.cpuprofile\n`);
process.exit(0);
