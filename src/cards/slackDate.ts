// Slack renders `<!date^…>` in each reader's own time zone. Only timestamps we parse ourselves go
// in it: the fallback is built from a Date, so no host text can reach the token.

function fallback(d: Date): string {
  return `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** A Slack date token for an ISO time, or undefined when `iso` is not a valid time. */
export function slackDate(iso: string): string | undefined {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return undefined;
  return `<!date^${Math.floor(d.getTime() / 1000)}^{date_short_pretty} {time}|${fallback(d)}>`;
}

/**
 * "3 minutes ago (Today 11:35)" as a Slack date token: Slack keeps `{ago}` current every time the
 * card is looked at, while a card is only re-rendered when the approval changes. The fallback
 * (for clients that cannot render tokens) is the age at render time.
 */
export function slackAge(iso: string, now: Date): string | undefined {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return undefined;
  return `<!date^${Math.floor(d.getTime() / 1000)}^{ago} ({date_short_pretty} {time})|${formatAge(d, now)} (${fallback(d)})>`;
}

/** "just now", "3 min ago", "2 h 5 min ago", "4 days ago". */
export function formatAge(from: Date, now: Date): string {
  const minutes = Math.floor((now.getTime() - from.getTime()) / 60_000);
  if (!(minutes >= 1)) return 'just now';
  if (minutes < 60) return `${minutes} min ago`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return minutes % 60 === 0 ? `${hours} h ago` : `${hours} h ${minutes % 60} min ago`;
  const days = Math.floor(hours / 24);
  return `${days} day${days === 1 ? '' : 's'} ago`;
}

/** "in 45 min", "in 3 h 5 min", "in 4 days": how long until `to`, at render time. */
export function formatTimeLeft(to: Date, now: Date): string {
  const minutes = Math.ceil((to.getTime() - now.getTime()) / 60_000);
  if (!(minutes >= 1)) return 'in under a minute';
  if (minutes < 60) return `in ${minutes} min`;
  const hours = Math.floor(minutes / 60);
  if (hours < 48) return minutes % 60 === 0 ? `in ${hours} h` : `in ${hours} h ${minutes % 60} min`;
  const days = Math.floor(hours / 24);
  return `in ${days} days`;
}
