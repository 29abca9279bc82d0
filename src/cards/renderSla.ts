import { waitedFor } from '../domain/decisionStats.js';
import type { ApprovalRecord } from '../domain/record.js';
import { shortDuration } from '../util/shortDuration.js';
import { formatTimeLeft } from './slackDate.js';

// The route's `sla` on a card: while it waits, when it is due (Slack keeps the `{ago}` token
// current between renders: "in 4 minutes", then "2 minutes ago"); once decided, whether the
// decision came within it. Only times we computed go into the date token.

function dueToken(due: Date, now: Date): string {
  const seconds = Math.floor(due.getTime() / 1000);
  const late = due.getTime() <= now.getTime();
  const fallback = late ? 'already' : formatTimeLeft(due, now);
  return `<!date^${seconds}^{ago} ({time})|${fallback}>`;
}

/** One line, or undefined when the route has no `sla` or the card no longer waits for a person. */
export function slaLine(
  record: Pick<ApprovalRecord, 'phase' | 'openedAt' | 'escalation' | 'resolution'>,
  slaMs: number | undefined,
  now: Date,
  open: boolean,
): string | undefined {
  if (slaMs === undefined) return undefined;
  const sla = shortDuration(slaMs);
  if (open) {
    const start = Date.parse(record.escalation?.startedAt ?? record.openedAt);
    if (Number.isNaN(start)) return undefined;
    const due = new Date(start + slaMs);
    return due.getTime() <= now.getTime()
      ? `:hourglass: *Past its SLA* of ${sla}: it was due ${dueToken(due, now)}.`
      : `:hourglass_flowing_sand: *SLA* ${sla}: due ${dueToken(due, now)}.`;
  }
  if (record.phase !== 'resolved') return undefined;
  const waited = waitedFor(record);
  if (waited === undefined) return undefined;
  return waited > slaMs
    ? `:hourglass: Decided after ${shortDuration(waited)}, *past its SLA* of ${sla}.`
    : `:hourglass: Decided after ${shortDuration(waited)}, within its SLA of ${sla}.`;
}
