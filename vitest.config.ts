import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
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
  },
});
