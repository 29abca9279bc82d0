import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/globalSetup.ts'],
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Each e2e file runs in its own forked worker with its own Redis db (freshRedisDb, from
    // VITEST_POOL_ID) and its own ports, so files run in parallel safely.
    pool: 'forks',
    fileParallelism: true,
  },
});
