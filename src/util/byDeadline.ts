export const LATE = Symbol('late');

/** Resolves with the value, or LATE once `deadline` (ms since the epoch) has passed; none: wait. */
export async function byDeadline<T>(
  promise: Promise<T>,
  deadline: number | undefined,
): Promise<T | typeof LATE> {
  if (deadline === undefined) return promise;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<typeof LATE>((resolve) => {
    timer = setTimeout(() => resolve(LATE), Math.max(0, deadline - Date.now()));
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}
