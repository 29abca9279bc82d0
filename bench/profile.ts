// npm run bench:profile: the throughput scenario once more, with the bot under --cpu-prof. Open
// the .cpuprofile it writes in Chrome DevTools (Performance → Load profile) or VS Code.

import { join } from 'node:path';
import { PROJECT_ROOT } from '../test/support/bot.js';
import { cpuMs, pinBenchOffMeasuredCore } from './lib/system.js';
import { TOOLS, World } from './lib/world.js';
import { runBatch } from './scenarios/relayLatency.js';

const dir = join(PROJECT_ROOT, 'bench', 'profiles');
pinBenchOffMeasuredCore();
const world = await World.start();
try {
  const bot = await world.startBot({}, ['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  await runBatch(world, 'pw', 1000, 0, TOOLS);
  const before = cpuMs(bot.proc.pid!);
  const run = await runBatch(world, 'prof', 3000, 0, TOOLS);
  const perApproval = (cpuMs(bot.proc.pid!) - before) / 3000;
  await bot.stop();
  process.stderr.write(
    `[bench] ${run.perSecond.toFixed(0)} approvals/s, ${perApproval.toFixed(2)} ms of bot CPU each; profile in ${dir}\n`,
  );
} finally {
  await world.close();
}
process.exit(0);
