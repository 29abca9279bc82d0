// Takes the tests' Redis for this run (runLock.ts: two runs on one server break each other), then
// builds the bot once (npm run build -> dist/) before any e2e test spawns `node dist/main.js`.
// SKIP_BUILD=1 skips the build, for runs that do not start the bot (e.g. the test/support
// self-tests).

import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { holdRunLock } from './runLock.js';
import { TEST_REDIS_URL } from './testRedis.js';

const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

export default async function setup(): Promise<() => Promise<void>> {
  const lock = await holdRunLock(TEST_REDIS_URL);
  try {
    build();
  } catch (err) {
    await lock.release();
    throw err;
  }
  return () => lock.release();
}

function build(): void {
  if (process.env.SKIP_BUILD === '1') return;
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const result = spawnSync(npm, ['run', 'build'], { cwd: PROJECT_ROOT, encoding: 'utf8' });
  if (result.error) throw new Error(`globalSetup: could not run npm run build: ${result.error.message}`);
  if (result.status !== 0) {
    const output = `${result.stdout ?? ''}${result.stderr ?? ''}`.trim();
    throw new Error(
      `globalSetup: npm run build failed (exit ${result.status}). Set SKIP_BUILD=1 to run tests that do not need the bot.\n${output}`,
    );
  }
}
