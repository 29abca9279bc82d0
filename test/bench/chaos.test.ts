import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { FAULT_NAMES } from '../../bench/lib/faults.js';
import { PROJECT_ROOT } from '../support/bot.js';

// Keeps `npm run chaos` from rotting: every fault at toy sizes (globalSetup has built dist/). What
// must hold at any size is asserted: every column of every fault is there, and nothing was lost,
// doubled, left stuck or mislabelled. The run merges its section into an existing results file.

it('npm run chaos --quick runs every fault and finds nothing lost, doubled, stuck or mislabelled', async () => {
  const out = join(mkdtempSync(join(tmpdir(), 'chaos-smoke-')), 'results.json');
  writeFileSync(out, `${JSON.stringify({ relay: { p50Ratio: 1.2 }, faults: { stale: true } })}\n`);
  const code = await new Promise<number | null>((resolve) => {
    const proc = spawn(process.execPath, ['--import', 'tsx', 'bench/chaos.ts', '--quick', '--out', out], {
      cwd: PROJECT_ROOT,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    proc.once('exit', resolve);
  });
  expect(code).toBe(0);
  const results = JSON.parse(readFileSync(out, 'utf8'));
  expect(results.relay).toEqual({ p50Ratio: 1.2 });
  const faults = results.faults;
  expect(faults).not.toHaveProperty('stale');
  expect(faults).toMatchObject({ quick: true, sizes: { approvals: expect.any(Number) } });
  expect(faults.cpus).toBeGreaterThan(0);
  for (const name of FAULT_NAMES) {
    const figures = faults[name];
    expect(Object.keys(figures).sort(), name).toEqual(
      ['approvals', 'cards', 'duplicatedCards', 'duplicatedDecisions', 'lost', 'mislabelled', 'stuck'].sort(),
    );
    expect(figures.approvals, name).toBeGreaterThanOrEqual(faults.sizes.approvals);
    expect(figures.cards, name).toBeGreaterThan(0);
    expect({
      name,
      lost: figures.lost,
      duplicatedCards: figures.duplicatedCards,
      duplicatedDecisions: figures.duplicatedDecisions,
      stuck: figures.stuck,
      mislabelled: figures.mislabelled,
    }).toEqual({ name, lost: 0, duplicatedCards: 0, duplicatedDecisions: 0, stuck: 0, mislabelled: 0 });
  }
}, 150_000);
