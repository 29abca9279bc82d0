// `npm run audit:export`: the audit trail as NDJSON on stdout, oldest first, one entry a line:
// decisions and refusals merged by time, as before refusals had a stream of their own;
// `-- --refusals` for the refusals alone, `-- --no-refusals` for the rest alone.
// It reads the Redis variables only (REDIS_URL, or the Sentinel or Cluster ones), so an operator
// can run it without the bot's Slack settings.
import { ConfigError, redisTargetOf } from './config/config.js';
import { type AuditStreams, exportAudit } from './store/auditStream.js';
import { createRedisClient } from './store/redisConnection.js';

const FLAGS = new Map<string, AuditStreams>([
  ['--refusals', 'refusals'],
  ['--no-refusals', 'decisions'],
]);

/** A command line the export does not understand: said in one line, like a bad setting. */
class UsageError extends Error {}

/** Which streams the command line asks for: a word it does not know is a mistake, not ignored. */
function streamsOf(args: string[]): AuditStreams {
  if (args.length === 0) return 'all';
  const streams = args.length === 1 ? FLAGS.get(args[0]!) : undefined;
  if (streams === undefined) {
    throw new UsageError(
      `unknown arguments ${JSON.stringify(args.join(' '))}: give --refusals, --no-refusals or none`,
    );
  }
  return streams;
}

async function run(): Promise<void> {
  const streams = streamsOf(process.argv.slice(2));
  const redis = createRedisClient(redisTargetOf(process.env).target, {
    maxRetriesPerRequest: 1,
    lazyConnect: true,
    enableAutoPipelining: false,
  });
  try {
    await redis.connect();
    const count = await exportAudit(
      redis,
      (entry) => {
        process.stdout.write(`${JSON.stringify(entry)}\n`);
      },
      { streams },
    );
    process.stderr.write(`countersign: exported ${count} audit entries\n`);
  } finally {
    redis.disconnect();
  }
}

run().catch((err: unknown) => {
  if (err instanceof ConfigError || err instanceof UsageError) {
    process.stderr.write(`countersign: ${err.message}\n`);
    process.exit(1);
  }
  process.stderr.write(
    `countersign: audit export failed: ${err instanceof Error ? err.message : String(err)}\n`,
  );
  process.exit(1);
});
