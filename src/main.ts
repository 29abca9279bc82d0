import { format } from 'node:util';
import { ConfigError, eachConfigError, loadConfig } from './config/config.js';
import { configSecrets } from './config/configSecrets.js';
import { redisRefusal } from './store/redisRefusals.js';
import { createLogger } from './util/log.js';
import { assemble } from './wiring/assemble.js';
import { createShutdown } from './wiring/shutdown.js';

// The process: settings, the logger, every part built (wiring/assemble.ts, one file per
// capability), the signals that end it, then start-up in order.

/** Mistakes only the operator can fix: one line on stderr for each, exit 1. */
function exitWithConfigError(err: ConfigError): never {
  process.stderr.write(
    eachConfigError(err)
      .map((e) => `countersign: ${e.message}\n`)
      .join(''),
  );
  process.exit(1);
}

function readConfig() {
  try {
    return loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) exitWithConfigError(err);
    throw err;
  }
}

async function main(): Promise<void> {
  const startedAt = new Date();
  const config = readConfig();
  const logger = createLogger({
    level: config.logLevel,
    pretty: process.stdout.isTTY === true,
    secrets: configSecrets(config),
    // Redis refusing the password is said by one line of its own (wiring/redis.ts), not by each
    // retry. A NOPERM refuses one command, not the connection: it is said where it happens.
    reportedElsewhere: (err) => {
      const refusal = redisRefusal(err);
      return refusal === 'WRONGPASS' || refusal === 'NOAUTH';
    },
  });
  // Libraries that write to the console (ioredis warns of a password Redis did not ask for) speak
  // through the log instead: a JSON line, scrubbed like the others, and stderr is left to the
  // one-line refusals above.
  console.warn = (...args: unknown[]) => logger.warn({ component: 'console' }, format(...args));
  const countersign = assemble(config, logger);

  let stopping = false;
  const shutdownOnce = createShutdown({ logger, ...countersign.stages, exit: (code) => process.exit(code) });
  const shutdown = (code: number, reason: string): Promise<void> => {
    stopping = true;
    return shutdownOnce(code, reason);
  };
  // Whatever way the process ends, the host's process group does not outlive it.
  process.on('exit', () => countersign.killHosts());
  // Nothing may die silently: a stray rejection (for example a Socket Mode reconnect that ran
  // out of retries) is logged and the process shuts down cleanly for its supervisor to restart.
  process.on('unhandledRejection', (reason) => {
    logger.fatal({ err: reason }, 'unhandled rejection');
    void shutdown(1, 'unhandled rejection');
  });
  // Likewise a throw nothing caught. Node's default would end the process on the spot: no drain,
  // the host left to the exit hook, and the stack on stderr only. The shutdown is the same bounded
  // one as SIGTERM's (it only stops things and waits against a deadline), and ends in exit 1.
  process.on('uncaughtException', (err) => {
    logger.fatal({ err }, 'uncaught exception');
    void shutdown(1, 'uncaught exception');
  });
  process.on('SIGTERM', () => void shutdown(0, 'SIGTERM'));
  process.on('SIGINT', () => void shutdown(0, 'SIGINT'));

  try {
    await countersign.start({ startedAt, stopping: () => stopping, shutdown });
  } catch (err) {
    // The port, or Redis refusing the bot, can say the settings are wrong before anything else
    // runs (the hosts start later); Redis goes with the process.
    if (err instanceof ConfigError) exitWithConfigError(err);
    throw err;
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`countersign: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
