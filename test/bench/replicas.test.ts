import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import type { ReplicasResult } from '../../bench/scenarios/replicas.js';
import { freshRedisDb, PROJECT_ROOT } from '../support/bot.js';

// The replicas scenario of npm run bench at toy sizes (`--quick --only replicas`: 60 approvals and
// 12 clicks with one replica and with three, one takeover). What must hold at any size is
// asserted: every approval one card, every click one decide, two clicks in three forwarded with
// three replicas, the takeover's decide carried out by the new host process, and every figure
// present. How fast is for the bench to say: beside other tests, 12 clicks' p99 is noise.

it('npm run bench --quick --only replicas relays and decides each approval once, with 1 and 3 replicas', async () => {
  const out = join(mkdtempSync(join(tmpdir(), 'bench-replicas-')), 'results.json');
  const db = await freshRedisDb();
  const code = await new Promise<number | null>((resolve) => {
    const proc = spawn(
      process.execPath,
      ['--import', 'tsx', 'bench/run.ts', '--quick', '--only', 'replicas', '--out', out],
      {
        cwd: PROJECT_ROOT,
        env: { ...process.env, BENCH_REDIS_DB: String(db), BENCH_NO_PIN: '1' },
        stdio: ['ignore', 'ignore', 'inherit'],
      },
    );
    proc.once('exit', resolve);
  });
  expect(code).toBe(0);
  const r = (JSON.parse(readFileSync(out, 'utf8')) as { replicas: ReplicasResult }).replicas;

  expect(r.leaseTtlMs).toBeGreaterThan(0);
  for (const [run, count] of [
    [r.one, 1],
    [r.three, 3],
  ] as const) {
    expect(run.replicas).toBe(count);
    expect(run.approvals).toBeGreaterThan(0);
    expect(run.clicks).toBeGreaterThan(run.n);
    expect(run).toMatchObject({
      cards: run.approvals,
      duplicateCards: 0,
      decides: run.clicks,
      duplicateDecides: 0,
    });
    for (const figure of [run.throughputPerSec, run.clickP50Ms, run.clickP99Ms]) {
      expect(Number.isFinite(figure) && figure > 0).toBe(true);
    }
  }
  expect(r.one.forwardedClicks).toBe(0);
  // Round-robin over three replicas, one of which runs the host.
  expect(r.three.forwardedClicks).toBe((r.three.n * 2) / 3);
  expect(Number.isFinite(r.three.forwardedClickP50Ms) && Number.isFinite(r.three.ownerClickP50Ms)).toBe(true);
  expect(r.standbyClickP50Ratio).toBeCloseTo(r.three.forwardedClickP50Ms! / r.three.ownerClickP50Ms!, 1);
  for (const figure of Object.values(r.ratios)) expect(Number.isFinite(figure) && figure > 0).toBe(true);

  expect(r.takeovers).toHaveLength(1);
  for (const t of r.takeovers) {
    expect(t.leaseLeftMs).toBeGreaterThan(0);
    expect(t.leaseLeftMs).toBeLessThanOrEqual(r.leaseTtlMs);
    expect(t.hostMs).toBeGreaterThan(0);
    expect(t.decideMs).toBeGreaterThanOrEqual(t.hostMs);
  }
  expect(r.takeoverMs).toBe(r.takeovers[0]!.hostMs);
  expect(r.takeoverOverLease).toBeCloseTo(r.takeoverMs / r.leaseTtlMs, 1);
}, 120_000);
