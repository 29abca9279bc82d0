import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { freshRedisDb, PROJECT_ROOT } from '../support/bot.js';

// Keeps bench/ from rotting: the whole harness, every scenario and both floors, at toy sizes.
// Figures from a run this small (and beside other tests) mean nothing, so only what must hold
// at any size is asserted: every card once and in order, and every figure present.

it('npm run bench --quick runs every scenario and writes every figure', async () => {
  const out = join(mkdtempSync(join(tmpdir(), 'bench-smoke-')), 'results.json');
  const db = await freshRedisDb();
  const code = await new Promise<number | null>((resolve) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts', '--quick', '--out', out], {
      cwd: PROJECT_ROOT,
      env: { ...process.env, BENCH_REDIS_DB: String(db), BENCH_NO_PIN: '1' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    proc.once('exit', resolve);
  });
  expect(code).toBe(0);
  const r = JSON.parse(readFileSync(out, 'utf8'));
  for (const figure of [
    r.relay.p50Ratio,
    r.relay.p99Ratio,
    r.click.p50Ratio,
    r.throughput.perSecond,
    r.throughput.floorShare,
    r.redis.roundTripsPerApproval,
    r.redis.roundTripsPerClick,
    r.memory.growthMB,
  ]) {
    expect(Number.isFinite(figure)).toBe(true);
  }
  expect(r.throughput.perSecond).toBeGreaterThan(0);
  expect(r.burst).toMatchObject({ lost: 0, duplicated: 0, outOfOrder: 0, failedUpdates: 0, staleCards: 0 });
  expect(r.burst.rateLimited).toBeGreaterThan(0);
  // The grant scenario's own checks are in grant.test.ts; here only that it ran in the full bench.
  expect(r.grant.runs).toHaveLength(3);
  expect(Number.isFinite(r.grant.p99Ms) && Number.isFinite(r.grant.vsRelayFloorP99Ratio)).toBe(true);
  // The replicas scenario's own checks are in replicas.test.ts.
  expect(r.replicas.three.replicas).toBe(3);
  expect(Number.isFinite(r.replicas.ratios.throughput) && Number.isFinite(r.replicas.takeoverMs)).toBe(true);
}, 120_000);
