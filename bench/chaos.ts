// npm run chaos: a burst of approvals under each fault in turn (host crash, bot SIGKILL, Redis
// frozen, Slack 5xx and 429 storms, lost post answers), each in a fresh world, and the figures
// that show nothing was lost, doubled, left stuck or mislabelled. `--quick` is the few-second
// variant the test suite runs; `--out FILE` merges the `faults` section into FILE instead of
// bench/results.json; `--only a,b` runs some faults alone.

import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { parseArgs } from 'node:util';
import type { Figures } from './lib/audit.js';
import { type ChaosSizes, runFault } from './lib/chaosRun.js';
import { FAULT_NAMES, FAULTS, type FaultName } from './lib/faults.js';
import { faultTable } from './lib/faultTable.js';
import { round } from './lib/stats.js';

const { values: args } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    out: { type: 'string', default: 'bench/results.json' },
    only: { type: 'string' },
  },
});

const sizes: ChaosSizes = args.quick
  ? {
      approvals: 24,
      ratePerSec: 12,
      faultWindowMs: 1_000,
      redisPauseMs: 1_500,
      settleMs: 20_000,
      againAfterMs: 2_000,
      slowestPressMs: 400,
      quietMs: 500,
      policyAfterMs: 1_000,
      lostGraceMs: 1_000,
    }
  : {
      approvals: 200,
      ratePerSec: 20,
      faultWindowMs: 4_000,
      redisPauseMs: 5_000,
      settleMs: 60_000,
      againAfterMs: 3_000,
      slowestPressMs: 1_500,
      quietMs: 1_000,
      policyAfterMs: 2_000,
      lostGraceMs: 1_000,
    };

function log(line: string): void {
  process.stderr.write(`[chaos] ${line}\n`);
}

function chosenFaults(): FaultName[] {
  if (!args.only) return [...FAULT_NAMES];
  const names = args.only.split(',').map((n) => n.trim());
  for (const n of names) {
    if (!(FAULT_NAMES as readonly string[]).includes(n))
      throw new Error(`--only: unknown fault ${JSON.stringify(n)} (known: ${FAULT_NAMES.join(', ')})`);
  }
  return names as FaultName[];
}

/** Puts `faults` into the results file, leaving every other section as it is. */
function mergeInto(path: string, faults: Record<string, unknown>): void {
  const results = existsSync(path) ? (JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>) : {};
  results.faults = faults;
  writeFileSync(path, `${JSON.stringify(results, null, 2)}\n`);
}

async function main(): Promise<void> {
  const started = Date.now();
  const figures: Partial<Record<FaultName, Figures>> = {};
  const seconds: Partial<Record<FaultName, number>> = {};
  const settledAfterSeconds: Partial<Record<FaultName, number | null>> = {};
  for (const name of chosenFaults()) {
    log(`${name}: ${sizes.approvals} approvals at ${sizes.ratePerSec}/s`);
    const run = await runFault(FAULTS[name], sizes, log);
    figures[name] = run.audit.figures;
    seconds[name] = round(run.seconds, 1);
    settledAfterSeconds[name] = run.settled ? round(run.settleSeconds, 1) : null;
    log(
      `${name}: ${run.settled ? `settled ${round(run.settleSeconds, 1)} s after the burst` : 'did NOT settle before the deadline'}; ${run.seconds.toFixed(1)} s in all`,
    );
    log(`  ${run.activity}`);
    for (const u of run.audit.unseen)
      log(
        `  no card, not counted as lost: ${u.approvalId} (${u.outcome}, pending ${u.exposureMs} ms while a host was up)`,
      );
    for (const finding of run.audit.details.slice(0, 10))
      log(`  ${finding.column} ${finding.approvalId}: ${finding.why}`);
    if (run.findingsFile)
      log(`  every finding, with the card, the host's record and the bot's log lines: ${run.findingsFile}`);
  }
  const faults = {
    generatedAt: new Date().toISOString(),
    quick: args.quick,
    cpus: availableParallelism(),
    node: process.version,
    sizes,
    seconds,
    settledAfterSeconds,
    durationSeconds: round((Date.now() - started) / 1000, 0),
    ...figures,
  };
  mergeInto(args.out!, faults);
  process.stdout.write(faultTable(figures));
  log(`wrote faults into ${args.out} in ${faults.durationSeconds} s`);
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
