// What config.ts and the config file reader share; a module of its own so neither imports the other.

/** A configuration problem. The message is one line naming the variable and how to fix it. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(message.replace(/\s*\n\s*/g, ' '));
  }
}

/** Shows a non-secret value in an error message, on one line and shortened. */
export function shown(value: string): string {
  if (/^(?:xox[a-z]|xapp)-/i.test(value)) return '(a Slack token, not shown)';
  const json = JSON.stringify(value);
  return json.length > 60 ? `${json.slice(0, 57)}…"` : json;
}

/** A channel ID (public C…, private G…) or a #name, which chat.postMessage also accepts. */
export const CHANNEL_ID = /^(?:[CG][A-Z0-9]+|#[a-z0-9][a-z0-9._-]{0,79})$/;

const UNIT_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;
const DURATION = /^(?:\d+(?:ms|s|m|h|d|w))+$/;

/**
 * Parses a duration such as `30s`, `15m`, `8h`, `7d` or `1h30m` into milliseconds.
 * Returns undefined for anything else (including zero-length input).
 */
export function parseDuration(text: string): number | undefined {
  const trimmed = text.trim();
  if (!DURATION.test(trimmed)) return undefined;
  let total = 0;
  for (const [, amount, unit] of trimmed.matchAll(/(\d+)(ms|s|m|h|d|w)/g)) {
    total += Number(amount) * UNIT_MS[unit as keyof typeof UNIT_MS];
  }
  return Number.isSafeInteger(total) ? total : undefined;
}
