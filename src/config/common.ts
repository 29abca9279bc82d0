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

/**
 * The longest duration a setting that becomes a Node timer takes. A timer holds at most 2^31−1 ms
 * (about 24.8 days) and fires after 1 ms beyond that (TimeoutOverflowWarning): a 30d request
 * timeout would time every request out at once. 24d is the whole days under that.
 */
export const MAX_TIMER = { ms: 24 * 86_400_000, text: '24d' } as const;

/** Why MAX_TIMER, in the words of an error message. */
export const MAX_TIMER_WHY = "Node's timers wait no longer, and a longer one fires at once";
