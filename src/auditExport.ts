// `npm run audit:export`: the audit stream as NDJSON on stdout, oldest first, one entry a line.
// It reads REDIS_URL only, so an operator can run it without the bot's Slack settings.
import { Redis } from 'ioredis';
import { DEFAULTS } from './config.js';
import { exportAudit } from './store/auditStream.js';

async function run(): Promise<void> {
  const redis = new Redis(process.env.REDIS_URL?.trim() || DEFAULTS.redisUrl, {
    maxRetriesPerRequest: 1,
    lazyConnect: true,
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
  process.stderr.write(
    `countersign: audit export failed: ${err instanceof Error ? err.message : String(err)}\n`,
  );
  process.exit(1);
});
