// Slack's <!date^…> tokens, in the reader's own time zone as Slack shows them. A format with a
// token this page does not know falls back to the text the bot wrote after the `|`.

const DAY_MS = 86_400_000;

function ordinal(n) {
  const rest = n % 100;
  if (rest >= 11 && rest <= 13) return `${n}th`;
  return `${n}${['th', 'st', 'nd', 'rd'][n % 10] ?? 'th'}`;
}

function dateParts(d) {
  const month = d.toLocaleString('en-US', { month: 'long' });
  return {
    month,
    short: month.slice(0, 3),
    weekday: d.toLocaleString('en-US', { weekday: 'long' }),
    day: d.getDate(),
    year: d.getFullYear(),
  };
}

function relativeDay(d, now) {
  const startOf = (x) => new Date(x.getFullYear(), x.getMonth(), x.getDate()).getTime();
  const days = Math.round((startOf(d) - startOf(now)) / DAY_MS);
  return days === 0 ? 'Today' : days === -1 ? 'Yesterday' : days === 1 ? 'Tomorrow' : undefined;
}

function ago(d, now) {
  const seconds = Math.round((now.getTime() - d.getTime()) / 1000);
  const future = seconds < 0;
  const s = Math.abs(seconds);
  const [n, unit] =
    s < 60
      ? [s, 'second']
      : s < 3600
        ? [Math.floor(s / 60), 'minute']
        : s < 86_400
          ? [Math.floor(s / 3600), 'hour']
          : [Math.floor(s / 86_400), 'day'];
  if (unit === 'second' && n < 10) return future ? 'in a few seconds' : 'just now';
  const text = `${n} ${unit}${n === 1 ? '' : 's'}`;
  return future ? `in ${text}` : `${text} ago`;
}

/** The token's text, or `fallback` when the format uses something unknown. */
export function formatSlackDate(seconds, format, fallback, now = new Date()) {
  const d = new Date(seconds * 1000);
  if (Number.isNaN(d.getTime())) return fallback;
  const p = dateParts(d);
  const date = `${p.month} ${ordinal(p.day)}, ${p.year}`;
  const dateShort = `${p.short} ${p.day}, ${p.year}`;
  const dateLong = `${p.weekday}, ${date}`;
  const rel = relativeDay(d, now);
  const values = {
    date_num: `${p.year}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(p.day).padStart(2, '0')}`,
    date,
    date_short: dateShort,
    date_long: dateLong,
    date_pretty: rel ?? date,
    date_short_pretty: rel ?? dateShort,
    date_long_pretty: rel ?? dateLong,
    time: d.toLocaleTimeString('en-US', { hour: 'numeric', minute: '2-digit' }),
    time_secs: d.toLocaleTimeString('en-US', { hour: 'numeric', minute: '2-digit', second: '2-digit' }),
    ago: ago(d, now),
  };
  let known = true;
  const text = format.replace(/\{([a-z_]+)\}/g, (whole, name) => {
    if (Object.hasOwn(values, name)) return values[name];
    known = false;
    return whole;
  });
  return known ? text : fallback;
}
