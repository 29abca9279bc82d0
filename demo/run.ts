// `npm run demo`: see README "Try it without Slack". Reads DEMO_PORT, DEMO_INTERVAL_MS,
// REDIS_URL and DEMO_LOGS; prints one line with the URL to open; Ctrl-C stops everything.

import { startDemo } from './demo.js';
import { PortInUseError } from './pageServer.js';
import { DemoRedisError } from './redis.js';

class UsageError extends Error {}

function intFromEnv(name: string, fallback: number, min: number, max: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new UsageError(
      `countersign demo: ${name} must be a whole number from ${min} to ${max} (got "${raw}")`,
    );
  }
  return value;
}

async function main(): Promise<void> {
  const demo = await startDemo({
    port: intFromEnv('DEMO_PORT', 3000, 0, 65535),
    intervalMs: intFromEnv('DEMO_INTERVAL_MS', 4000, 100, 600_000),
    ...(process.env.REDIS_URL ? { redisUrl: process.env.REDIS_URL } : {}),
    botLogs: process.env.DEMO_LOGS === '1',
    warn: (line) => process.stderr.write(`${line}\n`),
  });
  process.stdout.write(
    `Countersign demo: open ${demo.url} (bot ${demo.botUrl}, Redis ${demo.redisUrl}${demo.privateRedisPid ? ', private' : ''}). Ctrl-C stops it.\n`,
  );
  let stopping = false;
  const shutdown = () => {
    if (stopping) process.exit(130); // a second Ctrl-C: give up waiting (children are killed on exit)
    stopping = true;
    demo.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', shutdown);
  process.on('SIGTERM', shutdown);
}

main().catch((err: unknown) => {
  const known = err instanceof UsageError || err instanceof DemoRedisError || err instanceof PortInUseError;
  process.stderr.write(
    known
      ? `${err.message}\n`
      : `countersign demo failed: ${err instanceof Error ? err.stack : String(err)}\n`,
  );
  process.exit(1);
});
