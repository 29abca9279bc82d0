// What one /countersign stats summary costs (docs/performance.md, "Decision analytics"): fills
// database 15 of REDIS_URL's Redis with N decision entries shaped as the bot writes them, then
// times DecisionStatsReader.summary uncached (the generation bumped before each round) and
// cached, and reads Redis's own time for the XREVRANGE. Needs `npm run build` first.
//
//   REDIS_URL=redis://127.0.0.1:6379 node bench/statsRead.mjs 20000

import { Redis } from 'ioredis';
import { DecisionStatsReader } from '../dist/store/decisionStatsReader.js';
import { keys } from '../dist/store/keys.js';

const redis = new Redis(`${process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'}/15`);
await redis.flushdb();
const entries = Number(process.argv[2] ?? 5000);
const vias = ['click', 'grant', 'timeout', 'policy'];
let pipe = redis.pipeline();
for (let i = 0; i < entries; i++) {
  pipe.xadd(
    keys.audit,
    '*',
    ...['kind', 'decision', 'approvalId', `01968f2d-2222-7aaa-8bbb-${String(i).padStart(12, '0')}`],
    ...['hostId', 'default', 'route', `route-${i % 12}`, 'tool', 'bash', 'userId', 'U0ALICE'],
    ...['via', vias[i % 4], 'resolvedBy', 'user', 'choiceId', 'allow_once', 'decision', 'approved'],
    ...['argsSha256', 'a'.repeat(64), 'waitedMs', String((i * 7919) % 600_000), 'steps', String(i % 3)],
    ...['slaMs', '300000', 'slaBreached', String(i % 5 === 0), 'command', 'git push'],
    ...['at', new Date().toISOString()],
  );
  if (i % 1000 === 999) {
    await pipe.exec();
    pipe = redis.pipeline();
  }
}
await pipe.exec();
await redis.config('RESETSTAT');
const reader = new DecisionStatsReader(redis);
const week = 7 * 86_400_000;
const uncached = [];
for (let round = 0; round < 7; round++) {
  await redis.incr(keys.statsGeneration);
  const start = process.hrtime.bigint();
  const summary = await reader.summary(week);
  uncached.push(Number(process.hrtime.bigint() - start) / 1e6);
  if (round === 0)
    console.log(`read ${summary.read} (capped: ${summary.capped}), ${summary.routes.length} routes`);
}
uncached.sort((a, b) => a - b);
const start = process.hrtime.bigint();
await reader.summary(week);
const cached = Number(process.hrtime.bigint() - start) / 1e6;
const stats = (await redis.info('commandstats')).split('\n').find((l) => l.startsWith('cmdstat_xrevrange'));
console.log(
  `${entries} entries: uncached median ${uncached[3].toFixed(1)} ms (min ${uncached[0].toFixed(1)}), cached ${cached.toFixed(2)} ms`,
);
console.log(`Redis: ${stats?.trim()}`);
console.log(`cached summary: ${(await redis.get(keys.statsCache(week)))?.length} bytes`);
await redis.flushdb();
redis.disconnect();
