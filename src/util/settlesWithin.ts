import pTimeout from 'p-timeout';

/**
 * Resolves with true once `promise` settles (fulfilled or rejected), or with false when `ms`
 * passed first. Never rejects: the caller only wants to know whether to wait any longer.
 */
export function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const settled = promise.then(
    () => true,
    () => true,
  );
  return pTimeout(settled, { milliseconds: Math.max(1, ms), fallback: () => false });
}
