/** Latency summary in milliseconds. */
export interface Summary {
  n: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function summarize(valuesMs: number[]): Summary {
  const sorted = [...valuesMs].sort((a, b) => a - b);
  return {
    n: sorted.length,
    p50Ms: round(percentile(sorted, 50)),
    p99Ms: round(percentile(sorted, 99)),
    maxMs: round(sorted[sorted.length - 1] ?? Number.NaN),
  };
}

export function ratio(value: number, floor: number): number {
  return round(value / floor, 2);
}

export function round(n: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

/** Nanoseconds between two process.hrtime.bigint() readings, in milliseconds. */
export function msBetween(from: bigint, to: bigint): number {
  return Number(to - from) / 1e6;
}

/** Seconds from the earliest of `starts` to the latest of `ends` (hrtime readings). */
export function spanSeconds(starts: Iterable<bigint>, ends: Iterable<bigint>): number {
  let first: bigint | undefined;
  let last: bigint | undefined;
  for (const s of starts) if (first === undefined || s < first) first = s;
  for (const e of ends) if (last === undefined || e > last) last = e;
  if (first === undefined || last === undefined) return Number.NaN;
  return msBetween(first, last) / 1000;
}
