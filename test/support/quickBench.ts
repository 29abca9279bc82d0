// `npm run bench --quick` as the bench tests run it: on a redis-server of its own, since its Redis
// figures come from INFO (commands, reads, memory), which counts every client and database of
// the server, and the test files running beside it use the shared one.

import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PROJECT_ROOT } from './bot.js';
import { PrivateRedis } from './privateRedis.js';

/**
 * Runs bench/run.ts --quick with `args`; resolves with the results it wrote (as JSON.parse reads
 * them, unless the caller names their shape), rejects if it failed.
 */
export async function runQuickBench<T = ReturnType<typeof JSON.parse>>(args: readonly string[]): Promise<T> {
  const out = join(mkdtempSync(join(tmpdir(), 'bench-quick-')), 'results.json');
  const redis = await PrivateRedis.start();
  let code: number | null;
  try {
    code = await new Promise<number | null>((resolve) => {
      const proc = spawn(
        process.execPath,
        ['--import', 'tsx', 'bench/run.ts', '--quick', ...args, '--out', out],
        {
          cwd: PROJECT_ROOT,
          env: { ...process.env, TEST_REDIS_URL: redis.url, BENCH_REDIS_DB: '0', BENCH_NO_PIN: '1' },
          stdio: ['ignore', 'ignore', 'inherit'],
        },
      );
      proc.once('exit', resolve);
    });
  } finally {
    await redis.stop();
  }
  if (code !== 0) throw new Error(`npm run bench --quick ${args.join(' ')} exited with code ${code}`);
  return JSON.parse(readFileSync(out, 'utf8')) as T;
}
