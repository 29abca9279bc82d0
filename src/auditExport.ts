// `npm run audit:export`: the audit trail as NDJSON on stdout, oldest first, one entry a line:
// decisions, refusals and grant events merged by time, narrowed with --since, --until and --kind
// (src/auditExportArgs.ts; docs/operations.md, "Exporting the trail").
// It reads the Redis variables only (REDIS_URL, or the Sentinel or Cluster ones), so an operator
// can run it without the bot's Slack settings.
import { parseExportArgs, UsageError } from './auditExportArgs.js';
import { ConfigError, eachConfigError, redisTargetOf } from './config/config.js';
import { exportAuditTo } from './store/auditExport.js';
import { createRedisClient } from './store/redisConnection.js';

async function run(): Promise<void> {
  const { filter, notes } = parseExportArgs(process.argv.slice(2), new Date());
  for (const note of notes) process.stderr.write(`countersign: ${note}\n`);
  const redis = createRedisClient(redisTargetOf(process.env).target, {
    maxRetriesPerRequest: 1,
    lazyConnect: true,
    enableAutoPipelining: false,
  });
  try {
    await redis.connect();
    const count = await exportAuditTo(redis, process.stdout, filter);
    process.stderr.write(`countersign: exported ${count} audit entries\n`);
  } finally {
    redis.disconnect();
  }
}

run().catch((err: unknown) => {
  if (err instanceof ConfigError) {
    // One line each, as the bot says them (main.ts): every invalid variable at once.
    for (const each of eachConfigError(err)) process.stderr.write(`countersign: ${each.message}\n`);
    process.exit(1);
  }
  if (err instanceof UsageError) {
    process.stderr.write(`countersign: ${err.message}\n`);
    process.exit(1);
  }
  process.stderr.write(
    `countersign: audit export failed: ${err instanceof Error ? err.message : String(err)}\n`,
  );
  process.exit(1);
});
