import { createRequire } from 'node:module';
import type { Logger, LogLevel } from '@slack/bolt';
import pino from 'pino';
import { errWithoutArgs } from './errWithoutArgs.js';
import { REDACTED, SECRET_SET } from './redacted.js';
import { maskSlackCapabilities, maskSlackError, slackLine } from './slackLibraryText.js';

/**
 * Paths whose values never reach a log line. Two-level wildcards (`*.*.x`) are spelt out instead:
 * each one made every log line several times slower (docs/performance.md, "Logging").
 */
export const REDACT_PATHS: readonly string[] = [
  'token',
  '*.token',
  'botToken',
  '*.botToken',
  'config.slack.botToken',
  'appToken',
  '*.appToken',
  'config.slack.appToken',
  'signingSecret',
  '*.signingSecret',
  'config.slack.signingSecret',
  'secret',
  '*.secret',
  'replicaSecret',
  'config.replicaSecret',
  'password',
  '*.password',
  'routingKey',
  '*.routingKey',
  'config.pagerDuty.routingKey',
  'apiToken',
  '*.apiToken',
  'config.pagerDuty.apiToken',
  'authorization',
  '*.authorization',
  'Authorization',
  '*.Authorization',
  'headers.authorization',
  '*.headers.authorization',
  'headers.Authorization',
  '*.headers.Authorization',
  // Extra arguments of Bolt / WebClient log calls (see toBoltLogger).
  'args[*].token',
  'args[*].authorization',
  'args[*].headers.authorization',
  'args[*].headers.Authorization',
];

export interface LoggerOptions {
  level: pino.LevelWithSilent;
  /** Pretty-print through pino-pretty (pass `process.stdout.isTTY`). Ignored when `destination` is set. */
  pretty?: boolean;
  /** Where JSON lines go; stdout by default. Tests pass a stream to read them back. */
  destination?: pino.DestinationStream;
  /** Values no line may show, wherever they stand in it (the configuration's: configSecrets). */
  secrets?: Iterable<string>;
  /**
   * Errors one line of their own already reports (Redis refusing the password: wiring/redis.ts).
   * A `warn` line whose `err` is one of them (a retry loop's "could not …; trying again") is
   * written at `debug`: each retry would otherwise repeat that line with a stack trace.
   */
  reportedElsewhere?: (err: unknown) => boolean;
}

/** pino's hook that writes `warn` and `info` lines about errors reported elsewhere at `debug`. */
function demoteReported(reportedElsewhere: (err: unknown) => boolean): pino.LoggerOptions['hooks'] {
  const WARN = 40;
  const DEBUG = 20;
  return {
    logMethod(args, method, level) {
      const [first] = args as unknown[];
      const err = typeof first === 'object' && first !== null ? (first as { err?: unknown }).err : undefined;
      if (level > DEBUG && level <= WARN && err !== undefined && reportedElsewhere(err)) {
        this.debug(...(args as Parameters<pino.LogFn>));
        return;
      }
      method.apply(this, args);
    },
  };
}

/**
 * Shorter values are not scrubbed: they turn up inside ordinary words, numbers and times, and
 * replacing them would garble every line. The start-up line still hides them (redactedConfig).
 */
export const MIN_SCRUBBED_LENGTH = 8;

/**
 * The last line of defence: a line's text with every one of `secrets` replaced, as written, as
 * a JSON string spells it and as a URL does. Redaction by path and masking by shape come first;
 * this catches what they miss (a secret in an error message, under a key nobody foresaw).
 * Undefined when there is nothing to scrub.
 */
export function secretScrubber(secrets: Iterable<string>): ((line: string) => string) | undefined {
  const forms = new Set<string>();
  for (const secret of secrets) {
    if (secret.length < MIN_SCRUBBED_LENGTH) continue;
    forms.add(secret);
    forms.add(JSON.stringify(secret).slice(1, -1));
    forms.add(encodeURIComponent(secret));
  }
  if (forms.size === 0) return undefined;
  // Longest first: a secret that holds another is replaced whole.
  const ordered = [...forms].sort((a, b) => b.length - a.length);
  return (line) => {
    let out = line;
    for (const form of ordered) if (out.includes(form)) out = out.replaceAll(form, REDACTED);
    return out;
  };
}

/**
 * pino-pretty is a development dependency: the image installs production dependencies only, so a
 * terminal attached to it (`docker run -t`) gets JSON lines instead of a crash at start-up.
 */
export function prettyInstalled(
  resolve: (name: string) => string = createRequire(import.meta.url).resolve,
): boolean {
  try {
    resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}

/** The service's root logger: JSON lines on stdout, secrets redacted. */
export function createLogger({
  level,
  pretty = false,
  destination,
  secrets = [],
  reportedElsewhere,
}: LoggerOptions): pino.Logger {
  const scrub = secretScrubber(secrets);
  const options: pino.LoggerOptions = {
    level,
    // `[set]` is what redactedConfig shows for a secret that is set: it says nothing more.
    redact: { paths: [...REDACT_PATHS], censor: (value) => (value === SECRET_SET ? value : REDACTED) },
    // Runs only for lines with an `err`: a failed Redis command's arguments stay out.
    serializers: { err: errWithoutArgs },
    // Before any destination or transport: pretty-printed lines are scrubbed too.
    hooks: {
      ...(scrub ? { streamWrite: scrub } : {}),
      ...(reportedElsewhere ? demoteReported(reportedElsewhere) : {}),
    },
  };
  if (destination) return pino(options, destination);
  if (pretty && prettyInstalled()) {
    return pino({
      ...options,
      transport: { target: 'pino-pretty', options: { colorize: true, translateTime: 'SYS:standard' } },
    });
  }
  // Asynchronous writes: under load lines are batched into few writes instead of one blocking
  // write each; pino flushes what is left when the process exits.
  return pino(options, pino.destination({ dest: 1, sync: false }));
}

type LogMethod = 'debug' | 'info' | 'warn' | 'error';

/** Bolt's levels are debug/info/warn/error; pino's extra ones fold onto the nearest. */
function boltLevel(level: string): LogLevel {
  switch (level) {
    case 'trace':
    case 'debug':
      return 'debug' as LogLevel;
    case 'info':
      return 'info' as LogLevel;
    case 'warn':
      return 'warn' as LogLevel;
    default:
      return 'error' as LogLevel;
  }
}

/** A string argument of a Slack library's log call, with its capabilities hidden. */
function masked(arg: unknown): unknown {
  return typeof arg === 'string' ? maskSlackCapabilities(arg) : arg;
}

function forward(p: pino.Logger, method: LogMethod, msg: unknown[]): void {
  // Most of Slack's lines are at debug: nothing is built for one the level drops.
  if (!p.isLevelEnabled(method)) return;
  const [first, ...rest] = msg;
  const args = rest.length ? { args: rest.map(masked) } : {};
  if (first instanceof Error) {
    const err = maskSlackError(first);
    p[method]({ err, ...args }, err.message);
  } else if (typeof first === 'string') {
    const line = slackLine(first);
    if (line.fields || rest.length) p[method]({ ...line.fields, ...args }, line.msg);
    else p[method](line.msg);
  } else {
    p[method]({ args: msg.map(masked) }, 'slack');
  }
}

/** Adapts pino to the @slack/logger interface that Bolt and its WebClient take (slack-platform.md §2.7). */
export function toBoltLogger(p: pino.Logger): Logger {
  return {
    debug: (...msg: unknown[]) => forward(p, 'debug', msg),
    info: (...msg: unknown[]) => forward(p, 'info', msg),
    warn: (...msg: unknown[]) => forward(p, 'warn', msg),
    error: (...msg: unknown[]) => forward(p, 'error', msg),
    setLevel: (level: LogLevel) => {
      p.level = String(level).toLowerCase();
    },
    getLevel: () => boltLevel(p.level),
    setName: () => {},
  };
}
