// npm run bench:held: the V8 heap each approval holds while it waits for its card's post, for the
// relay floor and for the bot. Slack's chat.postMessage is held (the fake Slack answers none), a
// batch is asked at once over the channels, and a heap snapshot is taken once the process has
// gone idle, against one taken at idle before the batch. What a waiting approval holds is what a
// burst promotes to the old generation and the garbage collector copies (docs/performance.md).

import { readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { PROJECT_ROOT } from '../test/support/bot.js';
import { pinBenchOffMeasuredCore, untilIdle } from './lib/system.js';
import { TEMPLATE, TOOLS, World } from './lib/world.js';
import { runBatch } from './scenarios/relayLatency.js';

const WAITING = 1000;
const SIGNAL = '--heapsnapshot-signal=SIGUSR1';
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

interface Heap {
  bytes: number;
  /** Bytes by node kind: the type, or for objects and closures the constructor's name. */
  byKind: Map<string, number>;
}

/** Signals the process, waits for its snapshot file to be complete, and sums it. */
async function snapshot(pid: number, cwd: string): Promise<Heap> {
  const before = new Set(readdirSync(cwd));
  process.kill(pid, 'SIGUSR1');
  let file: string | undefined;
  for (let size = -1; ; ) {
    await sleep(500);
    file ??= readdirSync(cwd).find((f) => f.endsWith('.heapsnapshot') && !before.has(f));
    if (!file) continue;
    const now = statSync(join(cwd, file)).size;
    if (now > 0 && now === size) break;
    size = now;
  }
  const path = join(cwd, file);
  const snap = JSON.parse(readFileSync(path, 'utf8'));
  rmSync(path);
  const fields: string[] = snap.snapshot.meta.node_fields;
  const types: string[] = snap.snapshot.meta.node_types[0];
  const [type, name, size, step] = [
    fields.indexOf('type'),
    fields.indexOf('name'),
    fields.indexOf('self_size'),
    fields.length,
  ];
  const byKind = new Map<string, number>();
  let bytes = 0;
  for (let i = 0; i < snap.nodes.length; i += step) {
    const t = types[snap.nodes[i + type]]!;
    const kind = t === 'object' || t === 'closure' ? `${t} ${snap.strings[snap.nodes[i + name]]}` : t;
    const self = snap.nodes[i + size] as number;
    bytes += self;
    byKind.set(kind, (byKind.get(kind) ?? 0) + self);
  }
  return { bytes, byKind };
}

async function held(world: World, pid: number, tag: string, cwd: string): Promise<void> {
  await runBatch(world, `${tag}w`, 300, 0, TOOLS);
  await untilIdle(pid);
  const idle = await snapshot(pid, cwd);
  let release!: () => void;
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  world.slack.fault('chat.postMessage', { until: gate }, { times: Number.POSITIVE_INFINITY });
  try {
    await world.host.openBatch({
      prefix: `${tag}h`,
      count: WAITING,
      ratePerSec: 0,
      tools: TOOLS,
      template: TEMPLATE as never,
    });
    await sleep(1_000);
    await untilIdle(pid);
    const loaded = await snapshot(pid, cwd);
    const per = (bytes: number) => (bytes / WAITING / 1024).toFixed(1);
    console.log(
      `${tag}: ${per(loaded.bytes - idle.bytes)} KB of heap per waiting approval ` +
        `(idle ${(idle.bytes / 1e6).toFixed(1)} MB, with ${WAITING} waiting ${(loaded.bytes / 1e6).toFixed(1)} MB)`,
    );
    const grown = [...loaded.byKind]
      .map(([kind, bytes]) => [kind, bytes - (idle.byKind.get(kind) ?? 0)] as const)
      .sort((a, b) => b[1] - a[1])
      .slice(0, 10);
    for (const [kind, bytes] of grown)
      console.log(`  ${String(Math.round(bytes / WAITING)).padStart(6)} B  ${kind}`);
  } finally {
    world.slack.heal('chat.postMessage');
    release();
  }
}

pinBenchOffMeasuredCore();
const world = await World.start();
try {
  // Both write their snapshots into their working directory, the project's root.
  process.env.FLOOR_NODE_ARGS = SIGNAL;
  const floor = await world.startFloor('relay-floor.mjs', { FLOOR_MODE: 'webclient' });
  try {
    await held(world, floor.proc.pid!, 'floor', PROJECT_ROOT);
  } finally {
    await floor.stop();
  }
  const bot = await world.startBot({}, [SIGNAL]);
  try {
    await held(world, bot.proc.pid!, 'bot', PROJECT_ROOT);
  } finally {
    await bot.stop();
  }
} finally {
  await world.close();
}
process.exit(0);
