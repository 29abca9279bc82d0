// `npm run audit:export`: the audit stream as NDJSON on stdout, oldest first, one entry a line.
// It reads the Redis variables only (REDIS_URL, or the Sentinel or Cluster ones), so an operator
// can run it without the bot's Slack settings.
import { ConfigError, redisTargetOf } from './config.js';
import { exportAudit } from './store/auditStream.js';
import { createRedisClient } from './store/redisConnection.js';

async function run(): Promise<void> {
  const redis = createRedisClient(redisTargetOf(process.env).target, {
    maxRetriesPerRequest: 1,
    lazyConnect: true,
    enableAutoPipelining: false,
  });
  try {
    await redis.connect();
    const count = await exportAudit(redis, (entry) => {
      process.stdout.write(`${JSON.stringify(entry)}\n`);
    });
    process.stderr.write(`countersign: exported ${count} audit entries\n`);
  } finally {
    redis.disconnect();
  }
}

run().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`countersign: ${err.message}\n`);
    process.exit(1);
  }
  process.stderr.write(
    `countersign: audit export failed: ${err instanceof Error ? err.message : String(err)}\n`,
  );
  process.exit(1);
});
