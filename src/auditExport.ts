// `npm run audit:export`: the audit trail as NDJSON on stdout, oldest first, one entry a line:
// decisions, refusals and grant events merged by time, narrowed with --since, --until and --kind
// (src/auditExportArgs.ts; docs/operations.md, "Exporting the trail").
// It reads the Redis variables only (REDIS_URL, or the Sentinel or Cluster ones), so an operator
// can run it without the bot's Slack settings.
import { parseExportArgs, UsageError } from './auditExportArgs.js';
import { ConfigError, eachConfigError, redisTargetOf } from './config/config.js';
import { exportAuditTo } from './store/auditExport.js';
import { createRedisClient, type RedisClient } from './store/redisConnection.js';
import { describeRedisRefusal, refusalSetting } from './store/redisRefusals.js';

async function run(): Promise<void> {
  const { filter, notes } = parseExportArgs(process.argv.slice(2), new Date());
  for (const note of notes) process.stderr.write(`countersign: ${note}\n`);
  const { target } = redisTargetOf(process.env);
  const redis = createRedisClient(target, {
    maxRetriesPerRequest: 1,
    lazyConnect: true,
    enableAutoPipelining: false,
  });
  const setting = refusalSetting(target);
  const met = errorsMet(redis, setting);
  try {
    await redis.connect();
    const count = await exportAuditTo(redis, process.stdout, filter, {
      // Said, not failed: what the streams still hold is exported all the same (exit code 0).
      trimmed: (stream, keptFromMs) =>
        process.stderr.write(
          `countersign: ${stream} was trimmed: entries before ${new Date(keptFromMs).toISOString()} are gone\n`,
        ),
    });
    process.stderr.write(`countersign: exported ${count} audit entries\n`);
  } catch (err) {
    // A refused AUTH fails connect() as "Connection is closed.": Redis's answer came as an event.
    const refusal = describeRedisRefusal(err, setting) ?? met.refusal;
    if (refusal !== undefined) throw new ConfigError(setting, refusal);
    throw met.last === undefined ? err : new Error(`${errorText(err)} (${met.last})`);
  } finally {
    redis.disconnect();
  }
}

/**
 * What the client met on its way: the first refusal, as the bot says it (store/redisRefusals.ts),
 * and the last error. Listening also keeps ioredis from printing each error, with its stack, as
 * unhandled.
 */
function errorsMet(redis: RedisClient, setting: string): { refusal?: string; last?: string } {
  const met: { refusal?: string; last?: string } = {};
  redis.on('error', (err: unknown) => {
    met.refusal ??= describeRedisRefusal(err, setting);
    met.last = errorText(err);
  });
  return met;
}

function errorText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
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
  process.stderr.write(`countersign: audit export failed: ${errorText(err)}\n`);
  process.exit(1);
});
