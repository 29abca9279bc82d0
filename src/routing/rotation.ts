import type { OncallSource } from '../domain/route.js';

type Rotation = Extract<OncallSource, { kind: 'rotation' }>;

/** The wall-clock time in `timeZone` of an instant, as if it were UTC (ms). */
function wallClock(ms: number, timeZone: string): number {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    hourCycle: 'h23',
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
  }).formatToParts(new Date(ms));
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value ?? 0);
  return Date.UTC(
    get('year'),
    get('month') - 1,
    get('day'),
    get('hour'),
    get('minute'),
    get('second'),
    ms % 1000,
  );
}

const DAY_MS = 86_400_000;

/**
 * Who is on call now: the shift count since `start`. Shifts of whole days are counted in the
 * rotation's time zone, so a weekly handover at 09:00 stays at 09:00 local across a DST change.
 * Any other shift is counted in real time: the local clock repeats an hour in autumn and skips
 * one in spring, so counting it would hand a short shift back to the one before, or pass someone
 * by. Before the start, the first.
 */
export function rotationUser(
  rotation: Pick<Rotation, 'users' | 'startMs' | 'everyMs' | 'timezone'>,
  now: Date,
): string {
  const { users, startMs, everyMs, timezone } = rotation;
  const elapsed =
    everyMs % DAY_MS === 0
      ? wallClock(now.getTime(), timezone) - wallClock(startMs, timezone)
      : now.getTime() - startMs;
  const shift = elapsed < 0 ? 0 : Math.floor(elapsed / everyMs);
  return users[shift % users.length]!;
}
