/** Exponential backoff bounds in milliseconds. */
export interface BackoffPolicy {
  initialMs: number;
  maxMs: number;
}

/**
 * Delay before retry number `attempt` (0 for the first retry): exponential, capped, with "equal
 * jitter" (half fixed, half random) so that many clients do not retry in step, yet no retry
 * comes sooner than half the nominal delay.
 */
export function backoffDelay(
  attempt: number,
  policy: BackoffPolicy,
  random: () => number = Math.random,
): number {
  const nominal = nominalDelay(attempt, policy);
  return Math.round(nominal / 2 + (random() * nominal) / 2);
}

/** Delay before retry number `attempt` without jitter: exponential from initialMs, capped at maxMs. */
export function nominalDelay(attempt: number, policy: BackoffPolicy): number {
  // Clamped so that a huge attempt number (meaning "as slow as allowed") stays finite.
  const exponent = Math.min(Math.max(0, attempt), 62);
  return Math.min(policy.maxMs, policy.initialMs * 2 ** exponent);
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
