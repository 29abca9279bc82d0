// Dates as people type them. Date.parse rolls what the calendar does not have over (2026-02-30
// is 2 March) and reads a time without a zone in the machine's own zone: both would quietly move
// a time someone wrote, so what is read here is checked against the calendar and needs its zone.

/** Days in `month` (1 to 12) of `year`, by the Gregorian calendar Date.parse reads dates in. */
export function daysIn(year: number, month: number): number {
  if (month === 2) return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/**
 * Whether the digits (year, month, day and optionally hour, minute, second) name a real day and
 * time of the clock: no 30 February, no 24:00.
 */
export function isCalendarTime(digits: readonly (string | undefined)[]): boolean {
  const [year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0] = digits.map((d) => Number(d ?? 0));
  return (
    month >= 1 &&
    month <= 12 &&
    day >= 1 &&
    day <= daysIn(year, month) &&
    hour <= 23 &&
    minute <= 59 &&
    second <= 59
  );
}

/** An ISO 8601 date-time with its zone: `Z` or an offset, never the machine's local time. */
const ZONED_DATE_TIME =
  /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})$/;

/** Whether the text has the form of an ISO 8601 date-time with its zone (the calendar unchecked). */
export function isZonedDateTime(text: string): boolean {
  return ZONED_DATE_TIME.test(text);
}

/**
 * The instant (ms) of an ISO 8601 date-time with its zone on a day of the calendar; undefined
 * for anything else, so that no reader falls back on the machine's zone or a rolled-over day.
 */
export function zonedTimeOf(text: string): number | undefined {
  const match = ZONED_DATE_TIME.exec(text);
  if (!match || !isCalendarTime(match.slice(1))) return undefined;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : at;
}
