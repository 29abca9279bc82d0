import { defineConfig } from 'vitest/config';

// The fast tier (`npm run test:unit`): test/unit only, no globalSetup (nothing here spawns
// dist/main.js, so no build) and no Redis. `npm test` runs it (with coverage) before
// vitest.config.ts, which runs every other tier. A unit file run alone: `npx vitest run -c
// vitest.unit.config.ts <file>`.
//
// On two shared cores most of the time went to loading every file's imports afresh in its own
// worker, so the files share threads and their module cache (isolate: false). A file that mocks a
// module with vi.mock would leak that mock into the files after it in the same worker: those run
// in a project of their own, isolated.
const ISOLATED = ['test/unit/slack/choicePressRoute.test.ts', 'test/unit/relay/records/openRecord.test.ts'];

const shared = { testTimeout: 20_000, hookTimeout: 30_000 };

export default defineConfig({
  test: {
    pool: 'threads',
    // `npm run test:coverage`: coverage of src/ by this tier. The e2e tests run the bot as a child
    // process (node dist/main.js), which the test process's v8 coverage does not see, so the floor
    // is measured on the unit tier, just under what it reached when set; CI fails below it.
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      reporter: ['text-summary', 'html', 'json-summary'],
      reportsDirectory: 'coverage',
      thresholds: { lines: 60, branches: 58, functions: 55, statements: 59 },
    },
    projects: [
      {
        test: {
          ...shared,
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          exclude: ISOLATED,
          isolate: false,
        },
      },
      { test: { ...shared, name: 'unit-isolated', include: ISOLATED, isolate: true } },
    ],
  },
});
