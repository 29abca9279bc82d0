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
