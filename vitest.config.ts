import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Tiers by how long their files run: bench, then e2e, then integration, then the rest. */
const TIERS = ['/test/bench/', '/test/e2e/', '/test/integration/'];

function tierOf(spec: TestSpecification): number {
  const tier = TIERS.findIndex((dir) => spec.moduleId.includes(dir));
  return tier === -1 ? TIERS.length : tier;
}

/**
 * Vitest's order (longest first when it has timings, largest file first when it has none, as in
 * a fresh clone, that is CI), the slow tiers ahead. By file size the bench's smoke and chaos
 * files, small files that drive the whole harness (100 s and 50 s), came last, and the run's
 * tail was theirs alone: .ci/run took 903 s where its tests held three workers for ~680.
 */
class SlowTiersFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    // Array.prototype.sort is stable: within a tier, Vitest's own order stands.
    return sorted.sort((a, b) => tierOf(a) - tierOf(b));
  }
}

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The unit tier runs before this config, under vitest.unit.config.ts with its coverage floor
    // (`npm test` is `npm run test:coverage && vitest run`): there its files share threads and
    // their module cache, here each would load its imports afresh in a fork. .ci/run ran the tier
    // twice before, once for the floor and once inside the whole suite.
    exclude: ['test/unit/**', '**/node_modules/**'],
    globalSetup: ['test/support/globalSetup.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Each e2e file runs in its own forked worker with its own Redis db (freshRedisDb, from
    // VITEST_POOL_ID) and its own ports, so files run in parallel safely. At least two at once:
    // Vitest's default (one fewer than the cores) ran them one by one on a 2-core machine, where
    // an e2e file spends most of its time waiting (leases, timers, the fake host and Slack). Two
    // took the whole suite from 884 s to 524 s there, every test passing; three, on a slower day
    // of the same machine, from 854 s to 645 s (the whole .ci/run from 18.5 to 12.4 min).
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: Math.max(3, availableParallelism() - 1),
    sequence: { sequencer: SlowTiersFirst },
  },
});
